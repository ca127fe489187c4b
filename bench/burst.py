"""Benchmark: the hour-start burst (run it with bench/burst.sh, which starts
PostgreSQL and Redis).

MONITORS monitors (default 10,000) with the same ``0 * * * *`` schedule and the
same grace, none pinged since the last hour began, so every one of them becomes
``missed`` at the same instant D = slot + grace (set about LEAD seconds ahead).
The database is analysed once they are made: a real installation's monitors
exist long before the top of the hour, and autovacuum has counted them (made 25 s
before the burst and not analysed, the 50,000 monitors' channels were read by a
plan for an empty table, 7-8 ms a batch of 100 instead of 1).
They notify 100 webhook channels (MONITORS / 100 monitors each) that all point at
one local receiver. The production shape does the work: a Celery worker
on the ``celery`` queue (``--concurrency`` WORKERS, default 2: two evaluator
processes), DELIVERY_WORKERS (default 2) Celery workers on the ``deliveries``
queue (one process each, with its sender threads, at a lower CPU priority: ``nice
10``, as docker/compose.yaml's ``cpu_shares``) and Celery beat (the ``evaluate``
and ``deliver`` tasks every CRONRADAR_TICK_SECONDS) on PostgreSQL and Redis.

Prints, in seconds after D: when the first, median and last ``missed`` incident
was committed (PostgreSQL's commit timestamps: bench/_services.sh turns on
``track_commit_timestamp``), and when the first, median
and last webhook reached the receiver; the CPU each process tree used meanwhile
(from /proc), per notification (the deliveries workers', with PostgreSQL's, and
every process's of the service), and each tree's RSS and PSS before the
deadline (idle) and at its peak. Targets (issue 24): with ``CORES=1`` (every
process of the service, PostgreSQL and Redis included, pinned to CPU 0 with
``taskset``; the receiver and this process's polling move to the other CPUs:
:func:`leave_service_cpus`)
10,000 missed: incidents within 5 s, webhooks within 15 s; on two cores 50,000:
webhooks within 45 s.

Needs DATABASE_URL and REDIS_URL (bench/burst.sh sets them).
Usage: [CORES=1] bench/burst.sh [MONITORS] [WORKERS]
"""
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import _django

# no outage logic: measure the burst; setup() below migrates
_django.setup("env", migrate=False, CRONRADAR_LIVENESS_INTERVAL="0")
ROOT = _django.ROOT
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from accounts.models import Organisation  # noqa: E402
from alerts.models import Alerting, Channel, DeliveryAttempt, Incident  # noqa: E402
from monitors.models import Monitor  # noqa: E402

MONITORS = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
WORKERS = int(sys.argv[2]) if len(sys.argv) > 2 else 2
DELIVERY_WORKERS = int(os.environ.get("DELIVERY_WORKERS", "2"))  # worker processes
CHANNELS, LEAD = 100, 25.0
received: list[float] = []


class Receiver(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the receivers of webhooks and paging APIs

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        received.append(time.time())
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def setup(url: str) -> datetime:
    call_command("migrate", verbosity=0)
    org = Organisation.objects.create(name=f"burst-{time.time_ns()}")
    project = org.projects.create(name="burst")
    channels = Channel.objects.bulk_create(
        Channel(project=project, kind="webhook", name=f"hook-{i}",
                config={"url": url, "secret": "bench"})
        for i in range(CHANNELS))
    now = datetime.now(UTC)
    slot = now.replace(minute=0, second=0, microsecond=0)  # this hour's fire time
    due = now + timedelta(seconds=LEAD)
    grace = due - slot
    monitors = Monitor.objects.bulk_create(
        Monitor(project=project, name=f"job-{i}", slug=f"job-{i}", kind="cron",
                schedule="0 * * * *", timezone="UTC", grace=grace,
                last_ping_at=slot - timedelta(hours=1) + timedelta(seconds=5),
                next_expected_at=slot, next_evaluation_at=due)
        for i in range(MONITORS))
    alerting = Alerting.objects.bulk_create(Alerting(monitor=m, all_channels=False)
                                            for m in monitors)
    per = max(1, MONITORS // CHANNELS)
    Alerting.channels.through.objects.bulk_create(
        Alerting.channels.through(alerting_id=a.pk, channel_id=channels[i // per % CHANNELS].pk)
        for i, a in enumerate(alerting))
    with connection.cursor() as cursor:  # as autovacuum has long done in a real installation
        cursor.execute("ANALYZE")
    return due


def cpu_seconds(roots: dict[str, int]) -> dict[str, float]:
    """CPU seconds (user + system) used so far by each named process tree in
    ``roots`` (name: pid): its live processes, and the ended ones its root waited
    for (PostgreSQL's backends), from /proc (Linux). "bench" is this process (the
    receiver and the polling)."""
    tick = os.sysconf("SC_CLK_TCK")
    parent, used = {}, {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rpartition(")")[2].split()
            except OSError:
                continue
            parent[int(entry)] = int(fields[1])
            used[int(entry)] = [int(x) / tick for x in fields[11:15]]  # utime stime cutime cstime
    names = {pid: name for name, pid in {**roots, "bench": os.getpid()}.items()}
    totals = dict.fromkeys(names.values(), 0.0)
    for pid, (utime, stime, cutime, cstime) in used.items():
        p = pid
        while p in parent and p not in names:
            p = parent[p]
        if p in names:
            totals[names[p]] += utime + stime + (cutime + cstime if p == pid else 0.0)
    return totals


def memory(roots: dict[str, int]) -> dict[str, tuple[int, int]]:
    """(RSS, PSS) in KiB of each named process tree in ``roots`` (name: pid), summed
    over its live processes, from /proc/PID/smaps_rollup (Linux)."""
    parent, sizes = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                parent[int(entry)] = int(f.read().rpartition(")")[2].split()[1])
            with open(f"/proc/{entry}/smaps_rollup") as f:
                rollup = dict(line.split(":", 1) for line in f if ":" in line)
            sizes[int(entry)] = (int(rollup["Rss"].split()[0]), int(rollup["Pss"].split()[0]))
        except (OSError, KeyError, ValueError):
            continue
    names = {pid: name for name, pid in roots.items()}
    totals = dict.fromkeys(roots, (0, 0))
    for pid, (rss, pss) in sizes.items():
        p = pid
        while p in parent and p not in names:
            p = parent[p]
        if p in names:
            r, q = totals[names[p]]
            totals[names[p]] = (r + rss, q + pss)
    return totals


def leave_service_cpus() -> set[int]:
    """Move this process (the receiver and the polling; its children, the service's
    processes, keep the CPUs they were started on) to the CPUs ``CORES`` left to
    others, when it left any: the receiver stands for the receivers on the
    internet (Slack, PagerDuty, a customer's webhook), not for work of the service,
    and on the one core it took 7.4 of a 10,000 burst's 53 s. Affinity is per
    thread on Linux, so each of this process's threads is moved; the receiver's
    request threads inherit it from its server thread. Returns the service's CPUs."""
    service = os.sched_getaffinity(0)
    others = set(range(os.cpu_count() or 1)) - service
    for tid in os.listdir("/proc/self/task") if others else ():
        os.sched_setaffinity(int(tid), others)
    return service


def spread(xs: list[float]) -> str:
    if not xs:
        return "none"
    xs = sorted(xs)
    return f"{xs[0]:.2f} / {statistics.median(xs):.2f} / {xs[-1]:.2f}"


def main() -> None:
    ThreadingHTTPServer.request_queue_size = 1024  # a real receiver's backlog, not 5
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    t = time.time()
    due = setup(f"http://127.0.0.1:{server.server_address[1]}/hook")
    print(f"{MONITORS} monitors, {CHANNELS} webhook channels, set up in {time.time() - t:.1f} s;"
          f" all missed at {due:%H:%M:%S} UTC; evaluator worker --concurrency {WORKERS}, "
          f"{DELIVERY_WORKERS} delivery workers, beat")
    env = {**os.environ, "CRONRADAR_LIVENESS_INTERVAL": "0"}
    celery = [sys.executable, "-m", "celery", "-A", "cronradar"]
    procs = [
        subprocess.Popen([*celery, "worker", "--loglevel=WARNING", "--without-gossip",
                          "--without-mingle", "-Q", "celery", f"--concurrency={WORKERS}",
                          "-n", "evaluator@%h"], cwd=ROOT, env=env),
        *(subprocess.Popen(["nice", "-n", "10", *celery, "worker", "--loglevel=WARNING",
                            "--without-gossip", "--without-mingle", "-Q", "deliveries",
                            "--concurrency=1", "-n", f"deliveries{i}@%h"], cwd=ROOT, env=env)
          for i in range(DELIVERY_WORKERS)),
        subprocess.Popen([*celery, "beat", "--loglevel=WARNING", "--schedule",
                          str(Path(os.environ.get("BENCH_SCRATCH", "/tmp")) / "beat-schedule")],
                         cwd=ROOT, env=env),
    ]
    service_cpus = leave_service_cpus()
    roots = dict(zip(["evaluator", *(f"deliveries{i}" for i in range(DELIVERY_WORKERS)),
                      "beat"], [p.pid for p in procs], strict=True))
    postmaster = Path(os.environ.get("BENCH_SCRATCH", "/nonexistent")) / "pg" / "postmaster.pid"
    if postmaster.exists():  # bench/_services.sh's PostgreSQL
        roots["postgres"] = int(postmaster.read_text().split()[0])
    try:
        d = due.timestamp()
        time.sleep(max(0.0, d - 1 - time.time()))  # the processes have started by then
        before, idle = cpu_seconds(roots), memory(roots)
        peak = dict(idle)
        seen, deadline = 0, d + 120 + MONITORS / 100
        while time.time() < deadline and (seen < MONITORS or len(received) < MONITORS):
            if seen < MONITORS:
                seen = Incident.objects.filter(cause="missed").count()
            for name, (rss, pss) in memory(roots).items():
                peak[name] = (max(rss, peak[name][0]), max(pss, peak[name][1]))
            time.sleep(0.5)
        with connection.cursor() as cursor:  # when each incident's transaction committed
            cursor.execute("SELECT EXTRACT(EPOCH FROM pg_xact_commit_timestamp(xmin)) FROM "
                           f"{Incident._meta.db_table} WHERE cause = 'missed'")
            written = [float(t) - d for (t,) in cursor.fetchall()]
        webhooks = [r - d for r in received]
        print(f"incidents written: {seen} of {MONITORS}; s after slot+grace, first / median / "
              f"last: {spread(written)}")
        failed = DeliveryAttempt.objects.exclude(error="").count()
        print(f"attempts that failed (retried): {failed}")
        print(f"webhooks received: {len(webhooks)} of {MONITORS}; s after slot+grace, first / "
              f"median / last: {spread(webhooks)}")
        after = cpu_seconds(roots)
        used = {name: after[name] - before[name] for name in after}
        print("CPU seconds used meanwhile: " + ", ".join(
            f"{name} {value:.1f}" for name, value in used.items()))
        senders = sum(v for name, v in used.items() if name.startswith("deliveries"))
        total = sum(used.values()) - used["bench"]  # the receiver is not the service's
        n = max(1, len(webhooks))
        print(f"CPU per notification: deliveries processes {1000 * senders / n:.2f} ms, "
              f"deliveries + PostgreSQL {1000 * (senders + used.get('postgres', 0)) / n:.2f} ms "
              f"(PostgreSQL also ran the evaluator's writes), every process of the service "
              f"{1000 * total / n:.2f} ms")
        print("memory, MiB RSS / PSS, idle -> peak: " + ", ".join(
            f"{name} {idle[name][0] / 1024:.0f}/{idle[name][1] / 1024:.0f} -> "
            f"{peak[name][0] / 1024:.0f}/{peak[name][1] / 1024:.0f}" for name in roots))
        print(f"load average at the end: {Path('/proc/loadavg').read_text().strip()}; "
              f"CPUs of the service: {sorted(service_cpus)}, of the receiver: "
              f"{sorted(os.sched_getaffinity(0))}")
        print(json.dumps({"monitors": MONITORS, "workers": WORKERS,
                          "incidents_last": max(written, default=None),
                          "webhooks_last": max(webhooks, default=None),
                          "cpu_ms_per_notification": round(1000 * total / n, 3),
                          "sender_cpu_ms_per_notification": round(1000 * senders / n, 3)}))
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(30)
        server.shutdown()


if __name__ == "__main__":
    main()
