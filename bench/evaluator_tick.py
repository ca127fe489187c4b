"""Benchmark: an evaluator tick costs O(monitors due), not O(monitors).

Creates N idle monitors (next evaluation far in the future) plus D due ones in a
scratch SQLite database, then times `evaluator.tick` over the due ones and an
empty tick. Run: `.venv/bin/python bench/evaluator_tick.py` (results in
bench/README.md).
"""
import os
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.pop("DATABASE_URL", None)
os.environ["CRONRADAR_DATA_DIR"] = tempfile.mkdtemp()
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cronradar.settings")

import django  # noqa: E402

django.setup()
from django.core.management import call_command  # noqa: E402

from monitors import evaluator  # noqa: E402
from monitors.models import Monitor, Project  # noqa: E402

call_command("migrate", verbosity=0)
T0 = datetime(2026, 1, 1, tzinfo=UTC)
project = Project.objects.create(name="bench")
s = timedelta(seconds=1)


def populate(idle: int, due: int) -> None:
    Monitor.objects.all().delete()
    rows = [Monitor(project=project, name=f"m{i}", slug=f"m{i}", period=60 * s, grace=s,
                    last_ping_at=T0, next_slot_at=T0 + 3600 * s,
                    next_evaluation_at=T0 + 3601 * s) for i in range(idle)]
    rows += [Monitor(project=project, name=f"d{i}", slug=f"d{i}", period=60 * s, grace=s,
                     last_ping_at=T0, next_slot_at=T0 + 10 * s,
                     next_evaluation_at=T0 + 11 * s) for i in range(due)]
    Monitor.objects.bulk_create(rows, batch_size=2000)


def timed(fn, repeat=5):
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


print(f"{'monitors':>9} {'due':>4} {'empty tick ms':>14} {'tick of due ms':>15}")
for idle in (1_000, 10_000, 100_000):
    populate(idle, 0)
    empty = timed(lambda: evaluator.tick(T0 + 12 * s))
    populate(idle, 50)
    t = time.perf_counter()
    n = evaluator.tick(T0 + 12 * s)
    due_ms = (time.perf_counter() - t) * 1000
    assert n == 50, n
    print(f"{idle:>9} {50:>4} {empty * 1000:>14.2f} {due_ms:>15.1f}")
