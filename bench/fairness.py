"""Benchmark: fair shares between organisations (issue 22). Run it with
bench/fairness.sh, which starts PostgreSQL and Redis and sets this build against
another (today's code) round after round.

Organisation A has MONITORS monitors (default 20,000) notifying 50 webhook
channels (MONITORS / 50 each); organisation B has one monitor on a channel of its
own, created last (so the highest id). All have the same ``0 * * * *`` schedule
and grace and none was pinged this hour: every one becomes ``missed`` at the
same instant D = slot + grace, about LEAD seconds ahead. The webhooks go to one
receiver in a process of its own, which tells A's from B's by their path.

SHAPE ``production``: a Celery worker on the ``celery`` queue (``--concurrency
2``: two evaluator processes), two Celery workers on the ``deliveries`` queue
(one process each, ``nice 10``) and Celery beat, on DATABASE_URL (PostgreSQL,
``track_commit_timestamp`` on: an incident's time is when its transaction
committed) and REDIS_URL, as bench/burst.py. SHAPE ``embedded``: the embedded
default, SQLite in a scratch data directory, the evaluator and the delivery
loop in this process as ``manage.py serve`` runs them (an incident's time is
when a reader 50 ms apart first saw it).

Prints, in seconds after D, B's incident and B's webhook, A's last incident, and
A's first and last webhook (its drain), how many of A's webhooks came before B's,
then the same as one JSON line (fairness.sh reads it). The code measured is the
tree this file sits in (``bench/..``).

Usage: bench/fairness.sh ROUNDS [MONITORS] [BASE_TREE]; alone:
``DATABASE_URL=... REDIS_URL=... .venv/bin/python bench/fairness.py production
[MONITORS]`` or ``.venv/bin/python bench/fairness.py embedded [MONITORS]``.
"""
import json
import os
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import _django

SHAPE = sys.argv[1] if len(sys.argv) > 1 else "embedded"
MONITORS = int(sys.argv[2]) if len(sys.argv) > 2 else 20_000
QUIET = {"CRONRADAR_LIVENESS_INTERVAL": "0",  # no outage logic: measure the claims
         "LOG_LEVEL": os.environ.get("LOG_LEVEL", "WARNING")}  # not a line per delivery
if SHAPE == "production":  # the caller's DATABASE_URL (migrated: fairness.sh)
    _django.setup("env", migrate=False, **QUIET)
elif SHAPE == "embedded":
    _django.setup("embedded", REDIS_URL=None, **QUIET)
else:
    sys.exit(f"SHAPE: production or embedded, not {SHAPE!r}")
ROOT = _django.ROOT
from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402

from accounts.models import Organisation  # noqa: E402
from alerts.models import Alerting, Channel, Incident  # noqa: E402
from monitors.models import Monitor  # noqa: E402

CHANNELS = 50
LEAD = 20.0 + MONITORS / 1000  # s from the set-up's start to D: the set-up, the processes

RECEIVER = r"""
import sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
lock = threading.Lock()
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real receivers
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with lock:
            print(self.path[1], time.time(), flush=True)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
ThreadingHTTPServer.request_queue_size = 1024
server = ThreadingHTTPServer(("127.0.0.1", 0), H)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def setup(port: int) -> tuple[datetime, int]:
    """A's monitors and channels, then B's; returns (D, B's monitor id)."""
    hook = f"http://127.0.0.1:{port}"
    now = datetime.now(UTC)
    slot = now.replace(minute=0, second=0, microsecond=0)  # this hour's fire time
    due = now + timedelta(seconds=LEAD)

    def tenant(name: str, monitors: int, channels: int) -> list[Monitor]:
        project = Organisation.objects.create(name=name).projects.create(name=name)
        hooks = Channel.objects.bulk_create(
            Channel(project=project, kind="webhook", name=f"hook-{i}",
                    config={"url": f"{hook}/{name}/{i}", "secret": "bench"})
            for i in range(channels))
        made = Monitor.objects.bulk_create(
            Monitor(project=project, name=f"job-{i}", slug=f"job-{i}", kind="cron",
                    schedule="0 * * * *", timezone="UTC", grace=due - slot,
                    last_ping_at=slot - timedelta(hours=1) + timedelta(seconds=5),
                    next_expected_at=slot, next_evaluation_at=due)
            for i in range(monitors))
        alerting = Alerting.objects.bulk_create(Alerting(monitor=m, all_channels=False)
                                                for m in made)
        per = max(1, monitors // channels)
        Alerting.channels.through.objects.bulk_create(
            Alerting.channels.through(alerting_id=a.pk, channel_id=hooks[i // per % channels].pk)
            for i, a in enumerate(alerting))
        return made

    tenant("a", MONITORS, CHANNELS)
    return due, tenant("b", 1, 1)[0].pk


def production() -> list[subprocess.Popen]:
    """The Celery processes of the production shape (bench/burst.py's)."""
    env = {**os.environ, **QUIET, "PYTHONPATH": str(ROOT)}
    celery = [sys.executable, "-m", "celery", "-A", "cronradar"]
    quiet = ["--loglevel=WARNING", "--without-gossip", "--without-mingle"]
    scratch = Path(os.environ.get("BENCH_SCRATCH", "/tmp"))
    return [
        subprocess.Popen([*celery, "worker", *quiet, "-Q", "celery", "--concurrency=2",
                          "-n", "evaluator@%h"], cwd=ROOT, env=env),
        *(subprocess.Popen(["nice", "-n", "10", *celery, "worker", *quiet, "-Q", "deliveries",
                            "--concurrency=1", "-n", f"deliveries{i}@%h"], cwd=ROOT, env=env)
          for i in range(2)),
        subprocess.Popen([*celery, "beat", "--loglevel=WARNING", "--schedule",
                          str(scratch / f"beat-{os.getpid()}")], cwd=ROOT, env=env),
    ]


def embedded(stop: threading.Event) -> None:
    """The evaluator and the delivery loop of ``manage.py serve``, in threads."""
    from alerts.senders import delivery_loop
    from cronradar.management.commands.serve import evaluator_loop
    threading.Thread(target=evaluator_loop, args=(stop, settings.CRONRADAR_TICK_SECONDS),
                     daemon=True).start()
    threading.Thread(target=delivery_loop, args=(stop,), daemon=True).start()


def committed(b_monitor: int) -> tuple[float, float]:
    """PostgreSQL: when B's incident's and A's last incident's transactions
    committed (epoch seconds; track_commit_timestamp)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT monitor_id = %s, EXTRACT(EPOCH FROM pg_xact_commit_timestamp(xmin))"
                       f" FROM {Incident._meta.db_table} WHERE cause = 'missed'", [b_monitor])
        times = cursor.fetchall()
    return (max(float(t) for b, t in times if b),
            max(float(t) for b, t in times if not b))


def main() -> None:
    receiver = subprocess.Popen([sys.executable, "-c", RECEIVER], stdout=subprocess.PIPE,
                                text=True)
    arrivals: dict[str, list[float]] = {"a": [], "b": []}
    port = int(receiver.stdout.readline())

    def listen():
        for line in receiver.stdout:
            who, at = line.split()
            arrivals[who].append(float(at))

    threading.Thread(target=listen, daemon=True).start()
    t = time.time()
    due, b_monitor = setup(port)
    print(f"{SHAPE}, {ROOT}: {MONITORS} monitors of A on {CHANNELS} channels and B's one, "
          f"set up in {time.time() - t:.1f} s; all missed at {due:%H:%M:%S} UTC")
    stop, procs = threading.Event(), []
    if SHAPE == "production":
        procs = production()
    else:
        embedded(stop)
    seen: dict[str, float] = {}  # who -> when a reader first saw its last incident
    try:
        d = due.timestamp()
        give_up = d + 60 + MONITORS / 100
        while time.time() < give_up and (len(arrivals["a"]) < MONITORS or not arrivals["b"]):
            if "a" not in seen and time.time() > d - 1:
                n = Incident.objects.filter(cause="missed", monitor_id=b_monitor).count()
                if n and "b" not in seen:
                    seen["b"] = time.time()
                if Incident.objects.filter(cause="missed").count() >= MONITORS + 1:
                    seen["a"] = time.time()
            time.sleep(0.05)
        if SHAPE == "production":
            seen["b"], seen["a"] = committed(b_monitor)
        result = {
            "shape": SHAPE, "tree": str(ROOT), "monitors": MONITORS,
            "b_incident": seen.get("b", d) - d if "b" in seen else None,
            "b_webhook": arrivals["b"][0] - d if arrivals["b"] else None,
            "a_incident_last": seen["a"] - d if "a" in seen else None,
            "a_webhook_first": min(arrivals["a"]) - d if arrivals["a"] else None,
            "a_webhook_last": max(arrivals["a"]) - d if arrivals["a"] else None,
            "a_webhooks": len(arrivals["a"]),
            "a_webhooks_before_b": sum(1 for x in arrivals["a"]
                                       if arrivals["b"] and x < arrivals["b"][0]),
        }
        print(", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                        for k, v in result.items() if k not in ("shape", "tree")))
        print(json.dumps(result))
    finally:
        stop.set()
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(30)
        receiver.kill()


if __name__ == "__main__":
    main()
