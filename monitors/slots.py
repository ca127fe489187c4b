"""What a monitor expects and when: slots, missed slots and the next evaluation time.

A *slot* is the scheduled time a run belongs to. For ``cron`` monitors slots are
the schedule's fire times (see :mod:`monitors.schedule`); for ``interval``
monitors the next slot is the previous run's first ping plus ``period``.

Everything here is a pure function of a monitor's fields, its open runs and a
clock passed in: no queries, no ``now()``.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from monitors import schedule

# A start ping this early before a cron slot belongs to that slot (clock skew
# between the job's host and us, or a scheduler that fires a little early).
# Capped at half the gap between slots. A run's first ping that is an *end*
# ping came after the run's start, so it gets only END_EARLY_TOLERANCE: a job
# that runs 50 s and pings only at the end of a `* * * * *` schedule belongs to
# the minute it started in, not the next one.
EARLY_TOLERANCE = timedelta(seconds=60)
END_EARLY_TOLERANCE = timedelta(seconds=1)
# At most this many ``missed`` run rows are written per evaluation; the incident
# still counts every missed slot, up to MAX_MISSED_COUNT per evaluation (a cron
# monitor evaluated after a long outage would otherwise enumerate every slot).
MAX_MISSED_RUN_ROWS = 100
MAX_MISSED_COUNT = 10_000


def slot_for(monitor, at: datetime, started: bool = True) -> datetime:
    """The slot (aware UTC) that a run whose first ping arrives ``at`` belongs to.

    started: the first ping is a start ping (else an end ping: the run began earlier).
    cron: the latest fire time at or before ``at``, or the next one when ``at`` is
    at most ``EARLY_TOLERANCE`` (``END_EARLY_TOLERANCE`` for end pings; at most
    half the slot gap) before it.
    interval: the expected time ``next_slot_at`` when it has come, else ``at``.
    """
    if monitor.kind == "interval":
        if monitor.next_slot_at is not None and monitor.next_slot_at <= at:
            return monitor.next_slot_at
        return at
    expr, tz, sem = monitor.schedule, monitor.timezone, monitor.cron_semantics
    nxt = schedule.next_fire(expr, tz, at - timedelta(microseconds=1), sem)
    prev = schedule.previous_fire(expr, tz, at, sem)
    if prev is None:
        return nxt
    if prev == at:
        return prev
    early = EARLY_TOLERANCE if started else END_EARLY_TOLERANCE
    if nxt - at <= min(early, (nxt - prev) / 2):
        return nxt
    return prev


def slot_after(monitor, slot: datetime, first_ping_at: datetime) -> datetime:
    """The slot expected after a run for ``slot`` whose first ping came at ``first_ping_at``."""
    if monitor.kind == "interval":
        return schedule.next_interval(first_ping_at, monitor.period)
    return schedule.next_fire(monitor.schedule, monitor.timezone, slot, monitor.cron_semantics)


def first_slot(monitor, now: datetime) -> datetime:
    """The first slot expected for a monitor (re)armed at ``now`` (creation, resume, edit)."""
    if monitor.kind == "interval":
        return schedule.next_interval(now, monitor.period)
    return schedule.next_fire(monitor.schedule, monitor.timezone, now, monitor.cron_semantics)


def overdue_slots(monitor, now: datetime) -> tuple[list[datetime], int, datetime]:
    """Slots whose grace has run out with no run started, as of ``now``.

    Returns ``(slots, count, next_slot)``: up to ``MAX_MISSED_RUN_ROWS`` of the most
    recent missed slots, the total number missed (for cron capped at
    ``MAX_MISSED_COUNT``), and the first slot whose grace has not yet run out.
    ``count`` is 0 when nothing is overdue.
    """
    first = monitor.next_slot_at
    if first is None or now < first + monitor.grace:
        return [], 0, first
    horizon = now - monitor.grace  # slots at or before this are overdue
    if monitor.kind == "interval":
        count = (horizon - first) // monitor.period + 1
        slots = [first + i * monitor.period
                 for i in range(max(0, count - MAX_MISSED_RUN_ROWS), count)]
        return slots, count, first + count * monitor.period
    expr, tz, sem = monitor.schedule, monitor.timezone, monitor.cron_semantics
    later = schedule.fires_between(expr, tz, first, horizon, sem, limit=MAX_MISSED_COUNT - 1)
    slots = [first, *later]
    return slots[-MAX_MISSED_RUN_ROWS:], len(slots), schedule.next_fire(expr, tz, horizon, sem)


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
    if monitor.next_slot_at is not None and monitor.last_ping_at is not None:
        times.append(monitor.next_slot_at + monitor.grace)
    for run in open_runs:
        if run.outcome == "running" and run.timeout_at is not None:
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
    if monitor.next_slot_at is not None and now > monitor.next_slot_at:
        return "late" if now < monitor.next_slot_at + monitor.grace else "down"
    return "up"
