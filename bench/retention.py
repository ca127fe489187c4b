"""Benchmark: table sizes stay flat under steady load once retention runs.

Replays pings through the ingest path (``monitors.pings.ingest``, the ping URL's
code below HTTP) with a simulated clock: MONITORS monitors, RATE pings per
simulated second in all (paired start/success with a rid, so each run has two
pings), a retention step (``monitors.tasks.prune``) every simulated
CRONRADAR_PRUNE_INTERVAL. Settings for the replay: runs older than 10 simulated
minutes go (CRONRADAR_RUN_RETENTION_DAYS), so the first cycle ends within the
replay. Prints the row counts of pings and runs after each simulated 5 minutes,
and the p50/p99 of ingest while a prune step was running in another thread
against ingest without one (real time: how much a prune holds pings back).

Run: `.venv/bin/python bench/retention.py [SIMULATED_MINUTES] [RATE]` (defaults
30 and 100). With ``BENCH_DATABASE_URL=postgres://...`` it runs against that
(scratch!) PostgreSQL database. Results in bench/README.md.
"""
import statistics
import sys
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta

import _django

_django.setup("scratch", CRONRADAR_RUN_RETENTION_DAYS=str(10 / 1440),
              CRONRADAR_PRUNE_BATCH="500", CRONRADAR_LIVENESS_INTERVAL="0")
from django.db import close_old_connections, connection  # noqa: E402

from accounts.models import Organisation  # noqa: E402
from monitors import retention  # noqa: E402
from monitors.models import Monitor, Ping, Run  # noqa: E402
from monitors.pings import PingInput, ingest  # noqa: E402

MINUTES = float(sys.argv[1]) if len(sys.argv) > 1 else 30
RATE = int(sys.argv[2]) if len(sys.argv) > 2 else 100
MONITORS = 100
T0 = datetime(2026, 1, 1, tzinfo=UTC)
org, _ = Organisation.objects.get_or_create(name=f"bench-retention-{uuid.uuid4().hex[:6]}")
project = org.projects.create(name="bench")
monitors = [Monitor.objects.create(project=project, name=f"m{i}", slug=f"m{i}",
                                   period=timedelta(seconds=60), grace=timedelta(hours=1))
            for i in range(MONITORS)]
ids = [m.pk for m in monitors]


def sizes() -> tuple[int, int]:
    return (Ping.objects.filter(monitor_id__in=ids).count(),
            Run.objects.filter(monitor_id__in=ids).count())


print(f"{connection.vendor}: {MONITORS} monitors, {RATE} pings/s simulated for {MINUTES} min, "
      f"prune every 60 s simulated; keep {100} pings and {100} runs per monitor, runs "
      "older than 10 min")
print("simulated minute | pings | runs | real seconds")
started = time.monotonic()
step = timedelta(seconds=1 / RATE)
EVERY = 60 if MINUTES >= 600 else 5 if MINUTES >= 10 else 1  # report every EVERY sim. minutes
now, n, rids, next_prune, next_report = T0, 0, {}, T0 + timedelta(seconds=60), EVERY
while now < T0 + timedelta(minutes=MINUTES):
    m = ids[(n // 2) % MONITORS]
    if n % 2 == 0:
        rids[m] = uuid.uuid4()
        ingest(m, PingInput("start", rid=rids[m]), now)
    else:
        ingest(m, PingInput("success", rid=rids[m]), now)
    n += 1
    now += step
    if now >= next_prune:
        retention.prune(now)
        next_prune += timedelta(seconds=60)
    if now >= T0 + timedelta(minutes=next_report):
        print(f"{next_report:16d} | {sizes()[0]:5d} | {sizes()[1]:4d} | "
              f"{time.monotonic() - started:.0f}", flush=True)
        next_report += EVERY


# --- p99 of ingest with and without a prune running beside it (real time) -------------
def timed_pings(count: int) -> list[float]:
    out, at = [], now
    for i in range(count):
        t = time.perf_counter()
        ingest(ids[i % MONITORS], PingInput("success"), at + timedelta(milliseconds=i))
        out.append((time.perf_counter() - t) * 1000)
    return out


def quantiles(xs):
    q = statistics.quantiles(xs, n=100)
    return f"p50 {statistics.median(xs):.2f} ms, p99 {q[98]:.2f} ms"


quiet = timed_pings(2000)
# a backlog for the prune: 300 more pings per monitor, then prune while pinging
for m in ids:
    for i in range(300):
        ingest(m, PingInput("success"), now + timedelta(seconds=i))
now += timedelta(days=1)
pruned = []


def prune_all():
    pruned.append(retention.prune(now, everything=True))
    close_old_connections()


thread = threading.Thread(target=prune_all)
thread.start()
during = []
while thread.is_alive():
    during += timed_pings(50)
thread.join()
print(f"ingest alone: {quantiles(quiet)}")
print(f"ingest while a prune deletes {pruned[0].pings} pings and {pruned[0].runs} runs: "
      f"{quantiles(during)} ({len(during)} pings)")
