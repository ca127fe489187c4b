"""Benchmark: the evaluator's CPU per missed monitor in the hour-start burst, in process.

N cron monitors (default 10,000) with the same ``0 * * * *`` schedule and grace,
none pinged since the last hour began, notifying 100 webhook channels (N / 100
monitors each, as bench/burst.py); every one is missed at the same instant D.
Ticks at D until nothing is due (the batched path, ``evaluator.evaluate_many``)
and prints the evaluator's own CPU (``time.process_time``), the wall time and,
when the database is a local PostgreSQL, the CPU of its server processes (from
/proc), each per missed monitor, plus the statements per batch of 100. The heap
is settled before the burst as a worker's prefork child settles it at its start
(``cronradar.celery.settle_heap``).

``--mixed`` adds monitors that take the other paths (an escalation policy, a
maintenance window, a failure threshold, an incident already open, a stuck run,
flapping, every channel, no alerting row, interval and other time zones);
``--dump FILE`` writes every row the burst wrote (incidents, events,
deliveries, runs, the monitors' evaluation fields, alerting), keyed by monitor
name so two builds can be compared (``diff``); ``--profile`` prints cProfile's
top functions.

Run: ``.venv/bin/python bench/evaluator_burst.py [N] [--mixed] [--dump F] [--profile]``
(SQLite in a temporary directory), or with ``BENCH_DATABASE_URL=postgres://...``
against that scratch PostgreSQL database (flushed first!). Results: bench/README.md.
"""
import argparse
import json
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import _django

# no outage logic: measure the burst; setup() below migrates and flushes
_django.setup("scratch", migrate=False, CRONRADAR_LIVENESS_INTERVAL="0", REDIS_URL=None)
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from accounts.models import Organisation  # noqa: E402
from alerts.models import (  # noqa: E402
    Alerting,
    Channel,
    Delivery,
    EscalationPolicy,
    EscalationTier,
    Incident,
    IncidentEvent,
    MaintenanceWindow,
)
from cronradar.celery import settle_heap  # noqa: E402
from monitors import evaluator  # noqa: E402
from monitors.models import Monitor, Run  # noqa: E402

SLOT = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
GRACE = timedelta(seconds=30)
D = SLOT + GRACE  # every monitor is missed at D
CHANNELS = 100


def setup(n: int, mixed: bool) -> None:
    """The scratch database with ``n`` monitors due at D (see the module docstring)."""
    call_command("migrate", verbosity=0)
    call_command("flush", interactive=False, verbosity=0)
    project = Organisation.objects.create(name="burst").projects.create(name="burst")
    channels = Channel.objects.bulk_create(
        Channel(project=project, kind="webhook", name=f"hook-{i}",
                config={"url": "http://127.0.0.1:9/hook", "secret": "bench"})
        for i in range(CHANNELS))
    monitors = Monitor.objects.bulk_create(
        Monitor(project=project, name=f"job-{i}", slug=f"job-{i}", kind="cron",
                schedule="0 * * * *", timezone="UTC", grace=GRACE,
                last_ping_at=SLOT - timedelta(hours=1) + timedelta(seconds=5),
                next_expected_at=SLOT, next_evaluation_at=D)
        for i in range(n))
    alerting = Alerting.objects.bulk_create(Alerting(monitor=m, all_channels=False)
                                            for m in monitors)
    per = max(1, n // CHANNELS)
    Alerting.channels.through.objects.bulk_create(
        Alerting.channels.through(alerting_id=a.pk, channel_id=channels[i // per % CHANNELS].pk)
        for i, a in enumerate(alerting))
    if mixed:
        _vary(project, monitors, alerting, channels)


def _vary(project, monitors, alerting, channels) -> None:
    """Monitors of the mixed burst that take the other paths (one kind every k-th)."""
    policy = EscalationPolicy.objects.create(project=project, name="on-call", repeat=1)
    first = EscalationTier.objects.create(policy=policy, position=0, delay=timedelta(0))
    first.channels.set(channels[:2])
    second = EscalationTier.objects.create(policy=policy, position=1, delay=timedelta(minutes=5))
    second.channels.set(channels[2:3])
    later = EscalationPolicy.objects.create(project=project, name="later")
    EscalationTier.objects.create(policy=later, position=0,
                                  delay=timedelta(minutes=2)).channels.set(channels[3:4])
    for i, (m, a) in enumerate(zip(monitors, alerting, strict=True)):
        if i % 7 == 1:
            a.escalation_policy = policy
        elif i % 7 == 2:
            a.escalation_policy, a.urgency = later, "low"
        if i % 11 == 3:
            MaintenanceWindow.objects.create(project=project, name=f"mw-{i}", monitor=m,
                                             starts_at=SLOT, ends_at=SLOT + timedelta(hours=1))
        if i % 13 == 4:
            a.failure_threshold = 2
            Run.objects.create(monitor=m, slot_at=SLOT - timedelta(hours=1 + i % 2),
                               outcome="failed")
        if i % 17 == 5:
            Incident.objects.create(monitor=m, cause="failed", summary="down", opened_at=SLOT,
                                    last_event_at=SLOT + timedelta(seconds=40), tier=0)
        if i % 19 == 6:
            a.all_channels = True
        if i % 23 == 7:
            a.renotify = timedelta(minutes=10)
        if i % 29 == 8:
            a.severity = "warning"
        if i % 31 == 9:
            Run.objects.create(monitor=m, slot_at=SLOT - timedelta(hours=1),
                               started_at=SLOT - timedelta(hours=1), outcome="running",
                               timeout_at=SLOT + timedelta(seconds=10))
        if i % 37 == 10:
            for k in range(5):
                Incident.objects.create(monitor=m, cause="failed", summary="flap",
                                        opened_at=SLOT - timedelta(minutes=50 - k),
                                        resolved_at=SLOT - timedelta(minutes=49 - k))
        if i % 41 == 11:
            m.kind, m.period, m.schedule = "interval", timedelta(minutes=30), ""
        if i % 43 == 12:
            m.timezone, m.schedule = "Europe/Berlin", "0 13 * * *"
        if i % 47 == 13:
            m.tags = ["db"]
        a.save()
        m.save()
    MaintenanceWindow.objects.create(project=project, name="db nights", tag="db",
                                     schedule="0 12 * * *", timezone="UTC",
                                     duration=timedelta(minutes=10))
    Alerting.objects.filter(monitor_id__in=[m.pk for i, m in enumerate(monitors)
                                            if i % 53 == 14]).delete()


def _postgres_cpu() -> float | None:
    """CPU seconds of the local PostgreSQL server's processes so far, or None."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cur:
        cur.execute("SELECT pg_backend_pid()")
        backend = cur.fetchone()[0]
    try:
        parent = int(Path(f"/proc/{backend}/stat").read_text().rsplit(")", 1)[1].split()[1])
        pids = [parent, *map(int, Path(f"/proc/{parent}/task/{parent}/children")
                             .read_text().split())]
    except OSError:
        return None  # not on this machine
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:  # the server's (with its exited children's) and its live children's
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(map(int, fields[11:15] if pid == parent else fields[11:13]))
    return total / tick


def burst() -> int:
    """Tick at D until nothing is due; returns how many monitors were evaluated."""
    n = 0
    while done := evaluator.tick(D):
        n += done
    return n


def dump(path: str) -> None:
    """Every row the burst wrote, keyed by monitor name, as JSON (stable order)."""
    names = dict(Monitor.objects.values_list("pk", "name"))
    chans = dict(Channel.objects.values_list("pk", "name"))

    def rows(qs, *fields, key):
        return sorted(([str(v) for v in r] for r in qs.values_list(*fields)), key=key)

    out = {
        "monitors": rows(Monitor.objects.all(), "name", "next_expected_at", "next_evaluation_at",
                         "evaluation_error", "evaluation_failures", key=lambda r: r),
        "alerting": rows(Alerting.objects.all(), "monitor__name", "flapping_since",
                         "stable_check_at", key=lambda r: r),
        "runs": rows(Run.objects.all(), "monitor__name", "slot_at", "started_at", "outcome",
                     "timeout_at", "deadline_checked", key=lambda r: r),
        "incidents": rows(Incident.objects.all(), "monitor__name", "cause", "summary",
                          "severity", "opened_at", "resolved_at", "last_event_at",
                          "missed_count", "failure_count", "tier", "round", "renotified",
                          "next_escalation_at", key=lambda r: r),
        "events": rows(IncidentEvent.objects.all(), "incident__monitor__name",
                       "incident__opened_at", "kind", "at", "count", "last_at", "message",
                       "detail", "step", key=lambda r: r),
        "deliveries": sorted(
            [names[m], str(opened), kind, chans[ch], status, str(created), str(nxt), n]
            for m, opened, kind, ch, status, created, nxt, n in Delivery.objects.values_list(
                "incident__monitor_id", "incident__opened_at", "event__kind", "channel_id",
                "status", "created_at", "next_attempt_at", "attempts")),
    }
    Path(path).write_text(json.dumps(out, indent=0, sort_keys=True))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("n", type=int, nargs="?", default=10_000)
    ap.add_argument("--mixed", action="store_true")
    ap.add_argument("--dump")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()

    setup(100, args.mixed)  # statements of one batch (and a warm-up)
    with CaptureQueriesContext(connection) as ctx:
        evaluated = burst()
    per_batch = len(ctx.captured_queries)

    setup(args.n, args.mixed)
    due = Monitor.objects.filter(next_evaluation_at__lte=D).count()
    connection.close()  # a fresh backend, as a worker's
    settle_heap()  # as a worker's prefork child does at its start
    pg0 = _postgres_cpu()
    if args.profile:
        import cProfile
        import pstats
        prof = cProfile.Profile()
        prof.enable()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    evaluated = burst()
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    pg = _postgres_cpu()
    if args.profile:
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(45)
        pstats.Stats(prof).sort_stats("tottime").print_stats(30)
    missed = Incident.objects.filter(cause="missed").count()
    print(f"{connection.vendor}: {due} due, {evaluated} evaluated, {missed} missed incidents, "
          f"{Delivery.objects.count()} deliveries; statements for a tick of 100: {per_batch}")
    line = (f"per evaluated monitor: python CPU {cpu / evaluated * 1000:.3f} ms, "
            f"wall {wall / evaluated * 1000:.3f} ms")
    if pg is not None and pg0 is not None:
        line += f", PostgreSQL CPU {(pg - pg0) / evaluated * 1000:.3f} ms"
    print(line + f" (total: python {cpu:.2f} s, wall {wall:.2f} s)")
    if args.dump:
        dump(args.dump)


if __name__ == "__main__":
    main()
