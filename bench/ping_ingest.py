"""Benchmark: queries and time per ingested ping (``monitors.pings.ingest``).

Creates a monitor in a scratch SQLite file database (WAL, ``BEGIN IMMEDIATE``:
the embedded default's settings) and times N ``ingest`` calls for each ping
pattern, counting statements with ``CaptureQueriesContext`` (BEGIN, SAVEPOINT,
RELEASE SAVEPOINT and COMMIT included). Pings are spaced a minute apart on an
interval monitor with a 60 s period, so every ping is on time.

Run: `.venv/bin/python bench/ping_ingest.py [N]` (default N=1000; results in
bench/README.md). With ``BENCH_DATABASE_URL=postgres://...`` it runs against that
(scratch!) PostgreSQL database instead: it migrates it and writes to it.
"""
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta

import _django

_django.setup("scratch")
from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from accounts.models import Organisation  # noqa: E402
from monitors.models import Monitor, Run  # noqa: E402
from monitors.pings import PingInput, ingest  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
T0 = datetime(2026, 1, 1, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
organisation, _ = Organisation.objects.get_or_create(name="bench-pings")
project, _ = organisation.projects.get_or_create(name="bench-pings")


def new_monitor(name: str) -> Monitor:
    Monitor.objects.filter(project=project, slug=name).delete()
    return Monitor.objects.create(
        project=project, name=name, slug=name, period=MINUTE, grace=timedelta(seconds=30),
        max_runtime=timedelta(minutes=10), next_expected_at=T0, next_evaluation_at=T0 + MINUTE)


def run(pattern: str, pings_of, history: int = 0) -> None:
    """Ingest, for each minute i < N / pings per minute, ``pings_of(i)``: a list of
    (label, PingInput, seconds into the minute); prints one line per label.

    history: finished runs the monitor already has (a year of a job running every
    5 minutes is about 100,000)."""
    m = new_monitor(pattern.split()[0])
    Run.objects.bulk_create([
        Run(monitor=m, slot_at=T0 - i * MINUTE, started_at=T0 - i * MINUTE,
            ended_at=T0 - i * MINUTE, outcome=Run.Outcome.SUCCEEDED)
        for i in range(history, 0, -1)], batch_size=5000)
    if history and connection.vendor == "postgresql":
        with connection.cursor() as cursor:  # as autovacuum would, before planning
            cursor.execute("ANALYZE monitors_run")
    per_minute = len(pings_of(0))
    stats: dict[str, tuple[list[int], list[float]]] = {}
    for i in range(N // per_minute):
        for label, ping, secs in pings_of(i):
            connection.queries_log.clear()  # it is capped at 9,000 queries
            with CaptureQueriesContext(connection) as ctx:
                t = time.perf_counter()
                ingest(m.pk, ping, T0 + i * MINUTE + timedelta(seconds=secs))
                elapsed = time.perf_counter() - t
            queries, times = stats.setdefault(label, ([], []))
            queries.append(len(ctx.captured_queries))
            times.append(elapsed)
    for label, (queries, times) in stats.items():
        print(f"{pattern + ': ' + label:<40} {len(times):>6} {statistics.mean(queries):>8.1f} "
              f"{statistics.mean(times) * 1000:>8.2f} {statistics.median(times) * 1000:>9.2f}")


def start_then(end: str, rid: bool):
    def pings(i):
        r = uuid.uuid4() if rid else None
        with_rid = " rid" if rid else " no rid"
        return [("start" + with_rid, PingInput("start", rid=r), 0),
                (end + with_rid, PingInput(end, rid=r), 20)]
    return pings


print(f"database: {connection.vendor}, N={N} pings per pattern")
print(f"{'pattern: ping':<40} {'pings':>6} {'queries':>8} {'mean ms':>8} {'median ms':>9}")
run("heartbeat", lambda i: [("success", PingInput("success"), 0)])
run("paired", start_then("success", rid=True))
run("unpaired", start_then("success", rid=False))
run("failing", lambda i: [("fail", PingInput("fail"), 0)])
run("heartbeat-100k-runs", lambda i: [("success", PingInput("success"), 0)], history=100_000)
