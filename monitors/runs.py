"""The runs a monitor still has to be watched for, and arming a new monitor.

:func:`pending_runs` (one monitor, on every ping) and :func:`pending_runs_of` (the
evaluator's batches) read the open runs and the ones whose deadline is not checked
yet; :func:`rearm` sets a new monitor's first slot and next evaluation. Ping
ingest, the evaluator, the API and the importers all use them, so they live here,
below both :mod:`monitors.pings` and :mod:`monitors.evaluator`.
"""
from __future__ import annotations

from datetime import datetime
from functools import reduce
from operator import or_
from uuid import UUID

from django.db.models import Q

from core import sql
from monitors import history, slots
from monitors.models import Monitor, Run

# The sentence of each coded Run.reason (the API's schema and the dashboard's run rows)
REASONS = {
    Run.Reason.OUTAGE: "CronRadar's ping endpoint was down when its grace ended",
    Run.Reason.RATE_LIMITED: "its first ping was refused by a ping rate limit (429)",
}

# The ids of the pending runs of the monitors {monitor} picks. One SELECT per partial
# index (run_open, run_deadline_unchecked; run_written_off_slot in pending_runs), their
# conditions in the text: a prepared statement's generic plan (core.sql) then reads
# only the rows it returns, however many runs a monitor has (with an OR, it read them all).
RUNS = Run._meta.db_table
OPEN, WRITTEN_OFF = (", ".join(f"'{o}'" for o in outcomes)
                     for outcomes in (Run.OPEN_OUTCOMES, Run.WRITTEN_OFF))
PENDING = (f"SELECT id FROM {RUNS} WHERE {{monitor}} AND outcome IN ({OPEN}) UNION ALL "
           f"SELECT id FROM {RUNS} WHERE {{monitor}} AND deadline_at IS NOT NULL "
           "AND NOT deadline_checked")
WITH_RID = f"SELECT id FROM {RUNS} WHERE {{monitor}} AND rid = %s"  # the run a ping names


def pending_runs(monitor: Monitor, rid: UUID | None = None,
                 slot: datetime | None = None) -> list[Run]:
    """Runs the evaluator still has to watch: open ones and unchecked deadlines.

    With ``rid``, also the run with that id, whatever its state (the run a ping
    names); with ``slot``, also a ``missed`` / ``unknown`` row of that slot (which
    a new run for it takes over), so a ping needs one query for all of them.
    Ordered by ``pk``.
    """
    ids, params = [PENDING.format(monitor="monitor_id = %s")], [monitor.pk, monitor.pk]
    if rid is not None:
        ids.append(WITH_RID.format(monitor="monitor_id = %s"))
        params += [monitor.pk, sql.prep(Run, "rid", rid)]
    if slot is not None:
        ids.append(f"SELECT id FROM {RUNS} WHERE monitor_id = %s AND slot_at = %s "
                   f"AND outcome IN ({WRITTEN_OFF})")
        params += [monitor.pk, sql.prep(Run, "slot_at", slot)]
    return sql.select(Run, f"id IN ({' UNION ALL '.join(ids)})", params, "ORDER BY id")


def pending_runs_of(monitor_ids: list[int]) -> list[Run]:
    """:func:`pending_runs` (without a rid or slot) of several monitors in one
    query (the evaluator's batches), ordered by ``pk``."""
    if not monitor_ids:
        return []
    where, params = sql.where_in(Run, "monitor_id", monitor_ids)
    return sql.select(Run, f"id IN ({PENDING.format(monitor=where)})", params * 2,
                      "ORDER BY id")


def may_have_claimed(monitor: Monitor) -> bool:
    """Whether a slot from the cron ``monitor``'s ``next_expected_at`` on can have a
    run already. A run is filed under a slot no later than its first ping, or under
    a fire time at most 60 s after it (early, or named), which is later than the
    expected slot only when that is before the ping (two fire times are at least a
    minute apart); so such a run means a ping after the expected slot, and the
    monitor's last ping is later than it. A heartbeat, on time or early, needs no
    query for it."""
    return (monitor.kind == Monitor.Kind.CRON and monitor.next_expected_at is not None
            and monitor.last_ping_at is not None
            and monitor.last_ping_at > monitor.next_expected_at)


def claimed_slots(monitors: list[Monitor]) -> dict[int, frozenset[datetime]]:
    """Monitor id -> the slots from its ``next_expected_at`` on that already have a
    run (a later slot's run came while an earlier slot was still within its grace;
    see :func:`monitors.slots.slot_for`). One query for all of them, none when no
    monitor :func:`may_have_claimed` (retention keeps a monitor's runs few)."""
    asked = [m for m in monitors if may_have_claimed(m)]
    found: dict[int, set[datetime]] = {m.pk: set() for m in monitors}
    if asked:
        # a run of a slot is at most SLOT_LEAD older than it: each an index range
        rows = history.runs(None).filter(reduce(or_, (
            Q(monitor_id=m.pk, slot_at__gte=m.next_expected_at)
            & history.not_before(m.next_expected_at - history.SLOT_LEAD) for m in asked)))
        for monitor_id, slot in rows.values_list("monitor_id", "slot_at"):
            found[monitor_id].add(slot)
    return {pk: frozenset(s) for pk, s in found.items()}


def rearm(monitor: Monitor, now: datetime) -> None:
    """Arm a monitor being created at ``now`` (the caller saves): its first slot and
    next evaluation. Slots before ``now`` are not held against it."""
    monitor.next_expected_at = slots.first_slot(monitor, now)
    monitor.next_evaluation_at = slots.next_evaluation(
        monitor, pending_runs(monitor) if monitor.pk else [])
