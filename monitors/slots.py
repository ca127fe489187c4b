"""What a monitor expects and when: slots, missed slots and the next evaluation time.

A *slot* is the scheduled time a run belongs to. For ``cron`` monitors slots are
the schedule's fire times (see :mod:`monitors.schedule`); for ``interval``
monitors the next slot is the previous run's first ping plus ``period``.

Everything here is a pure function of a monitor's fields, its open runs and a
clock passed in: no queries, no ``now()``.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from monitors import schedule
from monitors.models import Monitor, Run

INTERVAL, RUNNING = Monitor.Kind.INTERVAL, Run.Outcome.RUNNING

# A run whose first ping comes this early before a cron slot belongs to that slot
# (clock skew between the job's host and us, or a scheduler that fires a little
# early), when the slot before it is already accounted for. Capped at half the
# gap between slots.
EARLY_TOLERANCE = timedelta(seconds=60)
# At most this many ``missed`` / ``unknown`` run rows are written per evaluation;
# the counts stay exact (a monitor evaluated after a long outage would otherwise
# write a row per slot).
MAX_RUN_ROWS = 100
_MICRO = timedelta(microseconds=1)


def slot_for(monitor, at: datetime) -> datetime:
    """The slot (aware UTC) that a run whose first ping arrives ``at`` belongs to.

    cron: the latest fire time at or before ``at`` while that slot is still open
    for a first ping: the monitor expects it (``next_expected_at`` is not later) and
    its grace has not run out. Otherwise (it already has a run, was written off,
    or is past its grace) the next fire time when that is at most
    ``EARLY_TOLERANCE`` (and at most half the slot gap) away: a host whose clock
    runs up to 60 s fast is filed under the right slot whether its job pings at
    the start or only at the end, while a 50 s job on ``* * * * *`` that pings
    only when it ends (grace covering its run, as end-only jobs need) still
    belongs to the minute it started in.
    interval: the expected time ``next_expected_at`` when it has come, else ``at``.
    """
    if monitor.kind == INTERVAL:
        if monitor.next_expected_at is not None and monitor.next_expected_at <= at:
            return monitor.next_expected_at
        return at
    expr, tz, sem = monitor.schedule, monitor.timezone, monitor.cron_semantics
    nxt = schedule.next_fire(expr, tz, at - _MICRO, sem)
    prev = schedule.previous_fire(expr, tz, at, sem)
    if prev is None:
        return nxt
    if prev == at:
        return prev
    expected = monitor.next_expected_at
    still_open = (expected is None or expected <= prev) and at <= prev + monitor.grace
    if not still_open and nxt - at <= min(EARLY_TOLERANCE, (nxt - prev) / 2):
        return nxt
    return prev


def slot_after(monitor, slot: datetime, first_ping_at: datetime) -> datetime:
    """The slot expected after a run for ``slot`` whose first ping came at ``first_ping_at``."""
    if monitor.kind == INTERVAL:
        return schedule.next_interval(first_ping_at, monitor.period)
    return schedule.next_fire(monitor.schedule, monitor.timezone, slot, monitor.cron_semantics)


def first_slot(monitor, now: datetime) -> datetime:
    """The first slot expected for a monitor (re)armed at ``now`` (creation, resume)."""
    if monitor.kind == INTERVAL:
        return schedule.next_interval(now, monitor.period)
    return schedule.next_fire(monitor.schedule, monitor.timezone, now, monitor.cron_semantics)


def slot_after_edit(monitor, pending: datetime | None, old_period: timedelta | None,
                    now: datetime) -> datetime:
    """The slot a monitor expects after its schedule was edited at ``now``.

    pending: ``next_expected_at`` before the edit (every earlier slot is accounted
    for: a run, or written off); old_period: the period before the edit when the
    monitor was an interval monitor, else None. ``monitor`` has the new fields.

    interval -> interval: the new period counts from the same anchor as the old
    one (the last run's first ping, or the last slot written off), as
    Healthchecks does, so a run already later than the new period is due at once.
    cron: the first fire time of the new schedule at or after the earlier of
    ``pending`` and ``now``: a slot that was already due stays due (and is judged
    with the new grace) when the new schedule has it too; fire times of the new
    schedule before that were never expected and are not held against the job.
    Anything else (a change of kind, a monitor never armed): as if armed at ``now``.
    """
    if monitor.kind == INTERVAL:
        if pending is not None and old_period is not None:
            return pending - old_period + monitor.period
        return first_slot(monitor, now)
    start = now if pending is None else min(pending, now)
    return schedule.next_fire(monitor.schedule, monitor.timezone, start - _MICRO,
                              monitor.cron_semantics)


@dataclass
class Overdue:
    """Slots whose grace has run out with no run started.

    missed / unknown: the most recent of them (at most ``MAX_RUN_ROWS`` in all,
    oldest first), split by whether CronRadar could have received their pings
    (see :mod:`monitors.liveness`). missed_count: exact number of missed slots;
    unknown_by_outage: exact number of unknown slots per outage start.
    next_expected: the first slot whose grace has not run out yet.
    """

    missed: list[datetime]
    missed_count: int
    unknown: list[datetime]
    unknown_by_outage: dict[datetime, int]
    next_expected: datetime


def overdue(monitor, until: datetime, liveness=None) -> Overdue | None:
    """The slots from ``next_expected_at`` on whose grace ended at or before ``until``.

    liveness: a :class:`monitors.liveness.Liveness` (default: always up). Returns
    None when no slot is overdue. Counts are exact however many slots there are:
    interval slots by arithmetic, cron ones with :func:`schedule.count_fires`.
    """
    first = monitor.next_expected_at
    if first is None or until < first + monitor.grace:
        return None
    grace, horizon = monitor.grace, until - monitor.grace  # slots <= horizon are overdue
    unknown_by_outage: dict[datetime, int] = {}
    for w in (liveness.windows if liveness else ()):
        lo = max(first, w.start - grace)
        hi = horizon if w.end is None else min(horizon, w.end - grace)
        n = _count(monitor, first, lo, hi)
        if n:
            unknown_by_outage[w.outage_start] = n
    total = _count(monitor, first, first, horizon)
    if monitor.kind == INTERVAL:
        period = monitor.period
        recent = [first + i * period for i in range(max(0, total - MAX_RUN_ROWS), total)]
        following = first + total * period
    else:
        expr, tz, sem = monitor.schedule, monitor.timezone, monitor.cron_semantics
        recent = schedule.last_fires(expr, tz, first - _MICRO, horizon, sem, MAX_RUN_ROWS)
        following = schedule.next_fire(expr, tz, horizon, sem)
    missed, unknown = [], []
    for slot in recent:
        late = liveness is not None and liveness.window_at(slot + grace) is not None
        (unknown if late else missed).append(slot)
    return Overdue(missed, total - sum(unknown_by_outage.values()), unknown,
                   unknown_by_outage, following)


def _count(monitor, first: datetime, lo: datetime, hi: datetime) -> int:
    """How many of the monitor's slots from ``first`` on lie in [lo, hi]."""
    if hi < lo:
        return 0
    if monitor.kind == INTERVAL:
        period = monitor.period
        i0 = -((first - lo) // period)  # ceil((lo - first) / period)
        return max(0, (hi - first) // period - max(i0, 0) + 1)
    return schedule.count_fires(monitor.schedule, monitor.timezone, lo - _MICRO, hi,
                                monitor.cron_semantics)


def next_evaluation(monitor, open_runs) -> datetime | None:
    """The earliest time the evaluator must look at ``monitor`` again.

    ``open_runs``: runs still running or waiting for their deadline check, each
    with ``timeout_at`` / ``deadline_at`` / ``outcome`` / ``deadline_checked``.
    Other runs may be included: only a ``running`` run's timeout and an unchecked
    deadline count (callers pass the runs they just updated in memory).
    None means nothing can happen without a ping (paused, or new and idle).
    """
    if monitor.paused:
        return None
    times = []
    if monitor.next_expected_at is not None and monitor.last_ping_at is not None:
        times.append(monitor.next_expected_at + monitor.grace)
    for run in open_runs:
        if run.outcome == RUNNING and run.timeout_at is not None:
            times.append(run.timeout_at)
        if run.deadline_at is not None and not run.deadline_checked:
            times.append(run.deadline_at)
    return min(times, default=None)


def status(monitor, now: datetime, *, running: bool, incident_open: bool) -> str:
    """Display status: ``paused``, ``new``, ``down``, ``running``, ``late`` or ``up``.

    running: the monitor has an open run; incident_open: it has an open incident.
    ``late`` means the expected slot has passed but its grace has not.
    """
    if monitor.paused:
        return "paused"
    if monitor.last_ping_at is None:
        return "new"
    if incident_open:
        return "down"
    if running:
        return "running"
    if monitor.next_expected_at is not None and now > monitor.next_expected_at:
        return "late" if now < monitor.next_expected_at + monitor.grace else "down"
    return "up"


@dataclass
class Skipped:
    """The overdue slots of a ``concurrency: forbid`` monitor that came due while a
    run that started before them was still open.

    slots: those of :attr:`Overdue.missed` (oldest first), each with the run open at
    it (the earliest started); count: exact, however many slots there are.
    """

    slots: list[tuple[datetime, object]]
    count: int


def skipped(monitor, due: Overdue, runs, liveness=None,
            claimed: frozenset[datetime] = frozenset()) -> Skipped:
    """Which of ``due``'s missed slots were skipped: a run of ``runs`` (any with a
    start; the caller passes the open ones and those that ended after the first
    overdue slot) started before the slot and had not ended at it (ended after
    it, or not at all). Slots recorded ``unknown`` (an outage of CronRadar's:
    ``liveness``, as :func:`overdue` was given) stay unknown; ``claimed`` slots
    (from ``next_expected_at`` on, with a run already) are not overdue at all.

    Pure, like :func:`overdue`; exact counts by the same arithmetic."""
    spans = sorted(((r.started_at, r.ended_at, r) for r in runs if r.started_at is not None),
                   key=lambda span: (span[0], span[2].pk or 0))
    listed = []
    for slot in due.missed:
        blocker = next((r for start, end, r in spans
                        if start < slot and (end is None or end > slot)), None)
        if blocker is not None:
            listed.append((slot, blocker))
    if not listed:
        return Skipped([], 0)
    first, grace = monitor.next_expected_at, monitor.grace
    last = max(due.missed + due.unknown)
    merged: list[list] = []  # open intervals (start, end or None: still open)
    for start, end, _ in spans:
        if merged and (merged[-1][1] is None or start < merged[-1][1]):
            if merged[-1][1] is not None and (end is None or end > merged[-1][1]):
                merged[-1][1] = end
        else:
            merged.append([start, end])
    def count(lo: datetime, hi: datetime) -> int:
        return _count(monitor, first, lo, hi) - sum(1 for c in claimed if lo <= c <= hi)

    n = 0
    for start, end in merged:
        lo = max(first, start + _MICRO)
        hi = last if end is None else min(last, end - _MICRO)
        n += count(lo, hi)
        for w in (liveness.windows if liveness else ()):  # those stay unknown
            n -= count(max(lo, w.start - grace), hi if w.end is None else min(hi, w.end - grace))
    return Skipped(listed, n)
