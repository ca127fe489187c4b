"""Duration drift: whether a run that just succeeded took much longer than usual.

A monitor with a ``slow_factor`` reports ``slow`` (:mod:`monitors.detections`)
when a succeeded run took longer than ``slow_factor`` times the nearest-rank p95
duration of its latest :data:`SLOW_BASELINE` succeeded runs before it; with
fewer than :data:`SLOW_MIN_BASELINE` of them nothing is judged. Ping ingest
calls :func:`slow` when a run succeeds. Durations are whole seconds where they
are shown, rounded down, as the runs list and the run statistics
(:mod:`insights.stats`) show them.
"""
from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from decimal import Decimal

from monitors.detections import Detection, Kind
from monitors.models import Run

SECOND = timedelta(seconds=1)
# the baseline: the latest SLOW_BASELINE succeeded runs before the run judged;
# fewer than SLOW_MIN_BASELINE of them and nothing is judged
SLOW_BASELINE, SLOW_MIN_BASELINE = 50, 20


def seconds(td: timedelta) -> int:
    """``td`` in whole seconds, rounded down (exact: no float)."""
    return td // SECOND


def percentile(ordered: Sequence, p: int):
    """Nearest-rank ``p``-th percentile (1-100) of ``ordered`` (sorted ascending):
    its ceil(p/100 * n)-th smallest value; None when it is empty."""
    if not ordered:
        return None
    rank = max(1, (p * len(ordered) + 99) // 100)  # integer ceil, no float rounding
    return ordered[rank - 1]


def slow_threshold(baseline: Sequence[timedelta], factor: Decimal) -> timedelta | None:
    """How long a succeeded run may take before it is slow: ``factor`` times the
    nearest-rank p95 of ``baseline`` (the durations of the latest succeeded runs
    before it); None (nothing is judged) with fewer than ``SLOW_MIN_BASELINE``."""
    if len(baseline) < SLOW_MIN_BASELINE:
        return None
    return percentile(sorted(baseline), 95) * float(factor)


def slow(monitor, run, now: datetime) -> Detection | None:
    """A ``slow`` detection for ``run``, which just succeeded at ``now``, when the
    monitor has a ``slow_factor`` and the run took longer than
    :func:`slow_threshold` of the latest ``SLOW_BASELINE`` succeeded runs that
    ended before it (runs without a start have no duration and are left out);
    else None (the caller then reports ``recovered``)."""
    factor = monitor.slow_factor
    if factor is None or run.started_at is None or run.ended_at is None:
        return None
    # the partial index run_started_end (monitor, -ended_at; runs with a start and
    # an end: not the heartbeats'), its condition in the query
    baseline = [end - start for start, end in Run.objects.filter(
        monitor=monitor, outcome=Run.Outcome.SUCCEEDED, ended_at__lte=run.ended_at,
        started_at__isnull=False, ended_at__isnull=False).exclude(pk=run.pk)
        .order_by("-ended_at", "-pk").values_list("started_at", "ended_at")[:SLOW_BASELINE]]
    limit = slow_threshold(baseline, factor)
    duration = run.ended_at - run.started_at
    if limit is None or duration <= limit:
        return None
    p95 = percentile(sorted(baseline), 95)
    shown = format(factor.normalize(), "f") if isinstance(factor, Decimal) else str(factor)
    return Detection(
        Kind.SLOW, now,
        f"run succeeded after {seconds(duration)}s, more than {shown}x the p95 duration "
        f"of the last {len(baseline)} succeeded runs ({seconds(p95)}s)",
        detail={"run": run.pk, "duration": duration.total_seconds(),
                "p95": p95.total_seconds(), "slow_factor": shown,
                "baseline_runs": len(baseline)})
