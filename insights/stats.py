"""Run statistics: what a monitor's run history says about its job.

:func:`summarize` is a pure function from a list of runs to a :class:`RunStats`
(no ORM, no clock); :func:`select_runs` reads the runs a stats request covers.
``GET /api/v1/monitors/<id>/stats/`` (:class:`insights.api.MonitorStats`) is
:func:`select_runs` then :func:`summarize`. The duration-drift check ping ingest
makes when a run succeeds (``slow``) is the monitor core's: :mod:`monitors.drift`.

Units and definitions (docs/analytics.md, "Run statistics", says the same):

- Every figure in seconds is a whole number of seconds, rounded down (floor), as
  the runs list's ``duration``: a 59.9 s run is 59, a ping 0.5 s early is -1.
- Percentiles are **nearest-rank**: the p-th percentile of n values is the
  ceil(p/100 * n)-th smallest (1-based), so it is always one of the values (a
  real run's figure); p50 of [10, 20, 30, 40] is 20, p95 of 20 values is the 19th.
  No values: null.
- **duration**: ``ended_at - started_at`` of the runs that have both (whatever
  their outcome: a failed run's duration counts, a run that only pinged at its
  end or is still open has none).
- **success rate**: succeeded / judged, where judged = succeeded + failed +
  stuck + missed (the outcomes the failure threshold counts as good or bad).
  ``running``, ``replaced`` (cut short by ``concurrency: replace``), ``skipped``
  and ``unknown`` (CronRadar could not receive pings) runs are left out. Rounded to
  4 decimals; null when no run was judged.
- **failures by exit status**: the ``failed`` runs per exit status (keys are the
  status as a string, "none" for a ``/fail`` ping without one).
- **overlaps**: runs that started while an earlier run (an earlier start; the
  same start: a lower id) was still open: not ended, or ended at or after this
  start (so a run closed as ``replaced`` by this start counts). Only runs that
  have a start take part, and only the selected runs are compared.
- **late start**: first ping minus slot, for runs with a slot and a ping: the
  first ping is ``started_at``, or ``ended_at`` for a run that only pinged at its
  end. Negative when the ping came before its slot (a clock running fast). With
  a histogram over :data:`LATE_EDGES`.
- **missed**: runs whose outcome is ``missed`` (a late run that took over its
  slot's row is not missed).
- **skipped**: runs whose outcome is ``skipped`` (``concurrency: forbid``: no run
  started for the slot while an earlier run was still open; a late run that took
  over the row is not skipped). Not in judged, like the double launches.
- **double launches**: runs whose first ping (the start, or the end of a run that
  pinged only at its end) came for a slot (the same ``slot_at``) that already had
  another run still open then (not ended, or ended after it), or a run that had
  succeeded (ended at or before it), or ``max_attempts`` runs already (runs of the
  slot in order of first ping, a lower id first). Only the selected runs are
  compared.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import NamedTuple

from monitors import history
from monitors.drift import percentile, seconds

MAX_RUNS = 10000  # the most runs one stats answer covers
# Late-start histogram bucket edges, seconds: [None, 0), [0, 10), …, [3600, None).
LATE_EDGES = (0, 10, 30, 60, 300, 900, 3600)
JUDGED = ("succeeded", "failed", "stuck", "missed")
WRITTEN_OFF = ("missed", "skipped", "unknown")  # slots without a run
OUTCOMES = ("running", "succeeded", "failed", "stuck", "replaced", "missed", "skipped",
            "unknown")


class RunRow(NamedTuple):
    """The fields of a run the statistics read (a :class:`monitors.models.Run`
    has them too, so either can be passed)."""

    pk: int
    slot_at: datetime | None
    started_at: datetime | None
    ended_at: datetime | None
    outcome: str
    exit_status: int | None


@dataclass(frozen=True)
class Spread:
    """``count`` values, their nearest-rank ``p50`` and ``p95`` and ``max``, whole
    seconds (null when ``count`` is 0)."""

    count: int = 0
    p50: int | None = None
    p95: int | None = None
    max: int | None = None


@dataclass(frozen=True)
class Bucket:
    """``count`` values in [``from_``, ``to``) seconds; None: unbounded."""

    from_: int | None
    to: int | None
    count: int


@dataclass(frozen=True)
class LateStart(Spread):
    """A :class:`Spread` of late starts, with a ``histogram`` (every bucket of
    :data:`LATE_EDGES`, empty ones included, earliest first)."""

    histogram: list[Bucket] = field(default_factory=list)


@dataclass(frozen=True)
class RunStats:
    """What :func:`summarize` finds in a list of runs (definitions: module docstring).

    runs: how many runs were given. outcomes: runs per outcome (every outcome,
    zeros included). duration, late_start: in whole seconds. judged, succeeded:
    the success rate's denominator and numerator; success_rate: 0-1, 4 decimals,
    or None. failures_by_exit_status: {"<status>" or "none": failed runs}, by
    status, "none" last. overlaps, missed, skipped, double_launches: run counts.
    """

    runs: int
    outcomes: dict[str, int]
    duration: Spread
    judged: int
    succeeded: int
    success_rate: float | None
    failures_by_exit_status: dict[str, int]
    overlaps: int
    missed: int
    skipped: int
    double_launches: int
    late_start: LateStart


def spread(values: Iterable[int]) -> Spread:
    """The :class:`Spread` of ``values`` (whole seconds)."""
    ordered = sorted(values)
    if not ordered:
        return Spread()
    return Spread(len(ordered), percentile(ordered, 50), percentile(ordered, 95), ordered[-1])


def histogram(values: Iterable[int], edges: Sequence[int] = LATE_EDGES) -> list[Bucket]:
    """Counts of ``values`` per bucket [edge i-1, edge i), with an open bucket below
    the first edge and above the last."""
    bounds = [None, *edges, None]
    counts = Counter()
    for v in values:
        counts[sum(1 for e in edges if v >= e)] += 1  # the bucket's index
    return [Bucket(bounds[i], bounds[i + 1], counts[i]) for i in range(len(edges) + 1)]


def overlaps(runs: Iterable) -> int:
    """How many of ``runs`` started while an earlier one was still open (module
    docstring). A sweep in start order keeping the latest end seen so far."""
    started = sorted((r for r in runs if r.started_at is not None),
                     key=lambda r: (r.started_at, r.pk))
    count, latest_end, open_before = 0, None, False
    for r in started:
        if open_before or (latest_end is not None and latest_end >= r.started_at):
            count += 1
        if r.ended_at is None:
            open_before = True  # open: every later start overlaps it
        elif latest_end is None or r.ended_at > latest_end:
            latest_end = r.ended_at
    return count


def double_launches(runs: Iterable, max_attempts: int = 1) -> int:
    """How many of ``runs`` are double launches of their slot (module docstring):
    the slot's runs in order of first ping, each first ping held against the runs
    before it."""
    by_slot: dict[datetime, list] = {}
    for r in runs:
        if r.slot_at is not None and r.outcome not in WRITTEN_OFF:
            by_slot.setdefault(r.slot_at, []).append(r)
    count = 0
    for slot_runs in by_slot.values():
        slot_runs.sort(key=lambda r: (r.started_at or r.ended_at, r.pk))
        for i, r in enumerate(slot_runs):
            first = r.started_at or r.ended_at  # a run that pinged only at its end: then
            before = slot_runs[:i]
            if i >= max_attempts or any(
                    b.ended_at is None or b.ended_at > first
                    or b.outcome == "succeeded" for b in before):
                count += 1
    return count


def late_start(run) -> timedelta | None:
    """First ping minus slot (``started_at``, else ``ended_at``); None without a
    slot or a ping."""
    first = run.started_at or run.ended_at
    if run.slot_at is None or first is None:
        return None
    return first - run.slot_at


def summarize(runs: Sequence, max_attempts: int = 1) -> RunStats:
    """The :class:`RunStats` of ``runs`` (any order; :class:`RunRow` or ``Run``) of a
    monitor whose slots may take ``max_attempts`` runs."""
    outcomes = Counter(r.outcome for r in runs)
    durations = [seconds(r.ended_at - r.started_at) for r in runs
                 if r.started_at is not None and r.ended_at is not None]
    late = [seconds(d) for d in map(late_start, runs) if d is not None]
    judged = sum(outcomes[o] for o in JUDGED)
    succeeded = outcomes["succeeded"]
    by_status = Counter(r.exit_status for r in runs if r.outcome == "failed")
    failures = {str(s): by_status[s] for s in sorted(s for s in by_status if s is not None)}
    if None in by_status:
        failures["none"] = by_status[None]
    late_spread = spread(late)
    return RunStats(
        runs=len(runs),
        outcomes={o: outcomes[o] for o in OUTCOMES},
        duration=spread(durations),
        judged=judged,
        succeeded=succeeded,
        success_rate=round(succeeded / judged, 4) if judged else None,
        failures_by_exit_status=failures,
        overlaps=overlaps(runs),
        missed=outcomes["missed"],
        skipped=outcomes["skipped"],
        double_launches=double_launches(runs, max_attempts),
        late_start=LateStart(**vars(late_spread), histogram=histogram(late)),
    )


# --- reading runs (the only query of this module) -------------------------------------

def select_runs(monitor, runs: int | None = None, since: datetime | None = None,
                until: datetime | None = None) -> tuple[list[RunRow], bool]:
    """The runs a stats request covers: (rows, limited).

    ``runs``: the newest ``runs`` runs, as ``/runs/?limit=`` lists them (by time,
    then id: :mod:`monitors.history`).
    Else the runs whose time (start, else end, else slot: the runs list's
    ``since``/``until``) is in [``since``, ``until``); at most the newest
    :data:`MAX_RUNS` of them, ``limited`` when more were there.
    """
    qs = history.runs(monitor)
    n = runs
    if runs is None:
        n = MAX_RUNS
        if since is not None:
            qs = history.since(qs, since)
        if until is not None:
            qs = history.before(qs, until)
    rows = [RunRow(*values) for values in history.newest_first(qs).values_list(
        "pk", "slot_at", "started_at", "ended_at", "outcome", "exit_status")[:n + 1]]
    return rows[:n], runs is None and len(rows) > n
