"""What a monitor expects and when: slots, missed slots and the next evaluation time.

A *slot* is the scheduled time a run belongs to. For ``cron`` monitors slots are
the schedule's fire times (see :mod:`monitors.schedule`); for ``interval``
monitors the next slot is the previous run's first ping plus ``period``.

Everything here is a pure function of a monitor's fields, its open runs and a
clock passed in: no queries, no ``now()``.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

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
# A ping may name a slot at most this far ahead (a host whose clock runs fast).
NAMED_AHEAD = timedelta(seconds=60)


class SlotError(ValueError):
    """A slot a ping names (``?slot=``) that cannot be one of the monitor's;
    str(e) is the reason, for the ping's 400 answer."""


def slot_for(monitor, at: datetime, claimed: frozenset[datetime] = frozenset()) -> datetime:
    """The slot (aware UTC) that a run whose first ping arrives ``at`` belongs to.

    claimed: slots at or after ``next_expected_at`` that already have a run
    (:func:`monitors.runs.claimed_slots`); every slot before ``next_expected_at``
    is accounted for (a run, or written off). In this order (docs/slots.md):

    cron:
    1. the latest fire time at or before ``at`` that is still within its grace and
       has no run (a grace wider than the gap between fire times keeps several
       open: the ping goes to the latest; earlier ones go ``missed`` at their own
       slot + grace);
    2. else the next fire time when it is at most ``EARLY_TOLERANCE`` (and at most
       half the slot gap) away: a host whose clock runs up to 60 s fast is filed
       under the right slot whether its job pings at the start or only at the end,
       while a 50 s job on ``* * * * *`` that pings only when it ends (grace
       covering its run, as end-only jobs need) still belongs to the minute it
       started in (rule 1);
    3. else the latest fire time at or before ``at``: another run of a slot that
       already has one (within grace: an attempt under ``max_attempts``, else a
       double launch), or a late run past its grace (it takes over the slot's
       ``missed``, ``skipped`` or ``unknown`` row).
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
    # walk back over the slots within grace: those before next_expected_at are
    # accounted for, so at most len(claimed) + 1 steps
    floor = prev if monitor.next_expected_at is None else monitor.next_expected_at
    candidate = prev
    while candidate >= floor and at <= candidate + monitor.grace:
        if candidate not in claimed:
            return candidate
        candidate = schedule.previous_fire(expr, tz, candidate - _MICRO, sem)
        if candidate is None:
            break
    if nxt - at <= min(EARLY_TOLERANCE, (nxt - prev) / 2):
        return nxt
    return prev


def named_slot(monitor, slot: datetime, now: datetime) -> datetime:
    """``slot`` (aware) as the monitor's slot in UTC, when a ping at ``now`` may
    name it (``?slot=``): a fire time of a cron monitor's schedule, at most
    ``NAMED_AHEAD`` after ``now``. Raises :class:`SlotError` with the reason
    otherwise (interval monitors have no fire times to name)."""
    if monitor.kind == INTERVAL:
        raise SlotError("slot: an interval monitor has no fire times to name; "
                        "leave slot out")
    utc = slot.astimezone(UTC)
    if utc > now + NAMED_AHEAD:
        raise SlotError(f"slot {_shown(utc)} is in the future: at most "
                        f"{NAMED_AHEAD.seconds} seconds after now ({_shown(now)})")
    if utc.year < 1970:
        raise SlotError(f"slot {_shown(utc)} is before 1970: not supported")
    expr, tz, sem = monitor.schedule, monitor.timezone, monitor.cron_semantics
    try:
        following = schedule.next_fire(expr, tz, utc - _MICRO, sem)
        before = schedule.previous_fire(expr, tz, utc, sem)
    except schedule.ScheduleError as exc:
        raise SlotError(f"slot {_shown(utc)}: {exc}") from None
    if following != utc:
        near = " and ".join(_shown(t) for t in (before, following) if t is not None)
        raise SlotError(f"slot {_shown(utc)} is not a fire time of '{expr}' ({tz}); "
                        f"the nearest are {near}")
    return utc


def _shown(at: datetime) -> str:
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


def advance(monitor, slot: datetime, first_ping_at: datetime,
            claimed: frozenset[datetime] = frozenset()) -> datetime:
    """``next_expected_at`` once a run for ``slot`` (first ping at
    ``first_ping_at``) exists: the earliest slot still unaccounted for.

    claimed: as for :func:`slot_for`. cron: a run for an
    earlier slot than the expected one changes nothing, one for a later slot
    neither (the expected slot is still open: it gets a run or goes ``missed`` at
    its own slot + grace); a run for the expected slot moves it to the first
    later fire time without a run. interval: the slot after the run, when later.
    """
    expected = monitor.next_expected_at
    if monitor.kind == INTERVAL:
        following = slot_after(monitor, slot, first_ping_at)
        return following if expected is None or following > expected else expected
    if expected is not None and slot != expected:
        return expected
    return _unclaimed_after(monitor, slot, claimed)


def _unclaimed_after(monitor, slot: datetime, claimed: frozenset[datetime]) -> datetime:
    """The first fire time after ``slot`` that is not in ``claimed``."""
    following = slot
    while True:
        following = schedule.next_fire(monitor.schedule, monitor.timezone, following,
                                       monitor.cron_semantics)
        if following not in claimed:
            return following


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


GAP_FIRES = 1000  # the shortest gap between fire times is measured over this many


def warnings(monitor, now: datetime) -> list[dict[str, str]]:
    """What may surprise about how ``monitor``'s runs are assigned to slots, as
    ``{"code", "message"}`` items (the API's read-only ``warnings``).

    ``grace_covers_gap``: the grace is at least the shortest gap between fire times
    (over the next ``GAP_FIRES`` fire times from the start of ``now``'s hour, the
    same answer for a whole hour: cached): several slots are open at once and a
    first ping goes to the latest of them (docs/slots.md); or, for an interval
    monitor, at least its period: a whole run can be left out unnoticed (the next
    slot counts from each first ping, so a ping within grace is the expected run).
    """
    grace = monitor.grace
    if grace is None:
        return []
    if monitor.kind == INTERVAL:
        period = monitor.period
        if period is None or grace < period:
            return []
        return [{"code": "grace_covers_gap", "message": (
            f"grace {_seconds(grace)} is at least the period ({_seconds(period)}): a run "
            "can be left out without an alert, since a first ping within grace is the "
            "expected run and the next one counts from it")}]
    hour = now.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    try:
        gap = schedule.shortest_gap(monitor.schedule, monitor.timezone, hour,
                                    monitor.cron_semantics, GAP_FIRES)
    except schedule.ScheduleError:  # saved around validation: evaluation_error says
        return []
    if gap is None or grace < gap:
        return []
    return [{"code": "grace_covers_gap", "message": (
        f"grace {_seconds(grace)} is at least the shortest gap between fire times "
        f"({_seconds(gap)}): several slots "
        "are open at once; a first ping goes to the latest of them that has no run, and "
        "an earlier one without a run is reported missed at its own slot + grace")}]


def _seconds(td: timedelta) -> str:
    return f"{int(td.total_seconds())} s"


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


def overdue(monitor, until: datetime, liveness=None,
            claimed: frozenset[datetime] = frozenset()) -> Overdue | None:
    """The slots from ``next_expected_at`` on whose grace ended at or before ``until``
    and that have no run.

    liveness: a :class:`monitors.liveness.Liveness` (default: always up); claimed:
    slots from ``next_expected_at`` on that already have a run
    (:func:`monitors.runs.claimed_slots`: a later slot's run came while an earlier
    one was still within its grace). Returns None when no slot is overdue. Counts
    are exact however many slots there are: interval slots by arithmetic, cron
    ones with :func:`schedule.count_fires`.
    """
    first = monitor.next_expected_at
    if first is None or until < first + monitor.grace:
        return None
    grace, horizon = monitor.grace, until - monitor.grace  # slots <= horizon are overdue
    taken = sorted(c for c in claimed if c >= first)

    def count(lo: datetime, hi: datetime) -> int:
        return _count(monitor, first, lo, hi) - sum(1 for c in taken if lo <= c <= hi)

    unknown_by_outage: dict[datetime, int] = {}
    for w in (liveness.windows if liveness else ()):
        lo = max(first, w.start - grace)
        hi = horizon if w.end is None else min(horizon, w.end - grace)
        n = count(lo, hi)
        if n:
            unknown_by_outage[w.outage_start] = n
    total = count(first, horizon)
    if monitor.kind == INTERVAL:
        period = monitor.period
        recent = [first + i * period for i in range(max(0, total - MAX_RUN_ROWS), total)]
        following = first + total * period
    else:
        expr, tz, sem = monitor.schedule, monitor.timezone, monitor.cron_semantics
        recent = [slot for slot in schedule.last_fires(
            expr, tz, first - _MICRO, horizon, sem, MAX_RUN_ROWS + len(taken))
            if slot not in claimed][-MAX_RUN_ROWS:]
        following = _unclaimed_after(monitor, horizon, claimed)
    if liveness is None or not liveness.windows:  # no outage: every slot is missed
        missed, unknown = recent, []
    else:
        missed, unknown = [], []
        for slot in recent:
            (unknown if liveness.window_at(slot + grace) is not None else missed).append(slot)
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
