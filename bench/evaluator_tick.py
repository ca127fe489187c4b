"""Benchmark: an evaluator tick costs O(monitors due), not O(monitors).

Creates N idle monitors (next evaluation far in the future) plus D due ones in a
scratch SQLite file database (WAL, as the embedded default), then times
`evaluator.tick` over the due ones (median of 5) and an empty tick (best of 5),
and counts the statements per due monitor (BEGIN and COMMIT included).
Run: `.venv/bin/python bench/evaluator_tick.py [N ...]` (default N: 1000 10000
100000; results in bench/README.md). With ``BENCH_DATABASE_URL=postgres://...`` it
runs against that (scratch!) PostgreSQL database instead (bench/tick_pg.sh starts
one and runs it with 1,000,000 monitors).
"""
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta

import _django

_django.setup("scratch")
from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from accounts.models import Organisation  # noqa: E402
from monitors import evaluator  # noqa: E402
from monitors.models import Monitor  # noqa: E402

T0 = datetime(2026, 1, 1, tzinfo=UTC)
project = Organisation.objects.create(name="bench").projects.create(name="bench")
s = timedelta(seconds=1)


def populate(idle: int) -> None:
    Monitor.objects.all().delete()
    Monitor.objects.bulk_create([
        Monitor(project=project, name=f"m{i}", slug=f"m{i}", period=60 * s, grace=s,
                last_ping_at=T0, next_expected_at=T0 + 3600 * s, next_evaluation_at=T0 + 3601 * s)
        for i in range(idle)], batch_size=5000)


def make_due(due: int) -> None:
    """(Re)create ``due`` monitors whose slot T0+10s is missed at T0+11s."""
    Monitor.objects.filter(slug__startswith="d").delete()
    Monitor.objects.bulk_create([
        Monitor(project=project, name=f"d{i}", slug=f"d{i}", period=60 * s, grace=s,
                last_ping_at=T0, next_expected_at=T0 + 10 * s, next_evaluation_at=T0 + 11 * s)
        for i in range(due)])


def timed(fn, repeat=5):
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


DUE = 50
print(f"{'monitors':>9} {'due':>4} {'empty tick ms':>14} {'tick of due ms':>15} "
      f"{'queries/due':>12}")
print(connection.vendor)
for idle in [int(a) for a in sys.argv[1:]] or [1_000, 10_000, 100_000]:
    populate(idle)
    empty = timed(lambda: evaluator.tick(T0 + 12 * s))
    runs = []
    for _ in range(5):
        make_due(DUE)
        t = time.perf_counter()
        n = evaluator.tick(T0 + 12 * s)
        runs.append(time.perf_counter() - t)
        assert n == DUE, n
    make_due(DUE)  # once more, counting queries (not timed)
    with CaptureQueriesContext(connection) as ctx:
        evaluator.tick(T0 + 12 * s)
    per_due = (len(ctx.captured_queries) - 1) / DUE  # minus the tick's select of due ids
    print(f"{idle:>9} {DUE:>4} {empty * 1000:>14.2f} {statistics.median(runs) * 1000:>15.1f} "
          f"{per_due:>12.1f}")
