"""The evaluator: one tick holds every *due* monitor against its schedule and limits.

A tick selects monitors whose indexed ``next_evaluation_at`` has come (so it
costs O(monitors due), not O(monitors)), and for each one, in its own
transaction holding the monitor's row lock, :func:`decide` computes what
happened and :func:`evaluate_monitor` applies it.

Two evaluators can run at once against one database: on PostgreSQL the row is
claimed with ``SELECT ... FOR UPDATE SKIP LOCKED``; on SQLite write
transactions are serialized (``BEGIN IMMEDIATE``). In both cases the
``next_evaluation_at <= now`` condition is re-checked under the lock, so a
monitor already handled by the other evaluator is skipped and no detection (and
so no notification) is produced twice.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection, transaction

from alerts import incidents
from alerts.incidents import Detection
from monitors import slots
from monitors.models import Monitor, Run
from monitors.pings import pending_runs

log = logging.getLogger(__name__)
BATCH = 500


@dataclass
class Decision:
    """What one evaluation found: detections plus the state changes to write.

    stuck_runs / deadline_runs: ids of runs to mark; missed_slots: slots to record
    as ``missed`` runs; next_slot_at: the monitor's new expected slot.
    """

    detections: list[Detection] = field(default_factory=list)
    stuck_runs: list[int] = field(default_factory=list)
    deadline_runs: list[int] = field(default_factory=list)
    missed_slots: list[datetime] = field(default_factory=list)
    next_slot_at: datetime | None = None


def decide(monitor, runs, succeeded_slots: set, now: datetime) -> Decision:
    """Pure decision for one monitor at ``now``.

    monitor: has the fields of :class:`Monitor`; runs: its pending runs (see
    :func:`monitors.pings.pending_runs`); succeeded_slots: slots that already have a
    succeeded run (a deadline is met when any run of the slot succeeded in time).
    """
    d = Decision(next_slot_at=monitor.next_slot_at)
    if monitor.paused:
        return d
    if monitor.last_ping_at is not None:
        missed, count, following = slots.overdue_slots(monitor, now)
        if count:
            d.missed_slots = missed
            d.next_slot_at = following
            first = missed[0] if count == len(missed) else None
            what = "1 expected run did not start" if count == 1 else (
                f"{count} expected runs did not start")
            d.detections.append(Detection(
                "missed", now, f"{what} (grace {_secs(monitor.grace)})", count=count,
                detail={"first_slot": (first or missed[0]).isoformat(),
                        "last_slot": missed[-1].isoformat()}))
    for run in runs:
        if run.outcome == Run.Outcome.RUNNING and run.timeout_at and run.timeout_at <= now:
            d.stuck_runs.append(run.pk)
            d.detections.append(Detection(
                "stuck", now,
                f"run started at {run.started_at:%Y-%m-%d %H:%M:%S} UTC is still open after "
                f"max_runtime {_secs(monitor.max_runtime)}",
                detail={"run": run.pk}))
        if run.deadline_at and not run.deadline_checked and run.deadline_at <= now:
            d.deadline_runs.append(run.pk)
            if run.slot_at not in succeeded_slots:
                d.detections.append(Detection(
                    "deadline", now,
                    f"the run for {run.slot_at:%Y-%m-%d %H:%M:%S} UTC had not succeeded "
                    f"{_secs(monitor.deadline)} after its scheduled time",
                    detail={"run": run.pk, "slot": run.slot_at.isoformat()}))
                succeeded_slots.add(run.slot_at)  # one deadline detection per slot
    return d


def evaluate_monitor(monitor_id: int, now: datetime) -> Decision | None:
    """Evaluate one monitor if it is still due; returns the applied decision or None."""
    with transaction.atomic():
        qs = Monitor.objects.filter(pk=monitor_id, next_evaluation_at__lte=now)
        if connection.features.has_select_for_update_skip_locked:
            qs = qs.select_for_update(skip_locked=True)
        monitor = qs.first()
        if monitor is None:
            return None  # handled by another evaluator, or no longer due
        runs = pending_runs(monitor)
        # decide() only asks about the slots of runs whose deadline has come
        deadline_slots = [r.slot_at for r in runs
                          if r.deadline_at and not r.deadline_checked and r.deadline_at <= now]
        done = set()
        if deadline_slots:
            done = set(Run.objects.filter(
                monitor=monitor, outcome=Run.Outcome.SUCCEEDED, slot_at__in=deadline_slots,
            ).values_list("slot_at", flat=True))
        d = decide(monitor, runs, done, now)
        if d.stuck_runs:
            Run.objects.filter(pk__in=d.stuck_runs).update(outcome=Run.Outcome.STUCK)
        if d.deadline_runs:
            Run.objects.filter(pk__in=d.deadline_runs).update(deadline_checked=True)
        if d.missed_slots:
            Run.objects.bulk_create([
                Run(monitor=monitor, slot_at=s, outcome=Run.Outcome.MISSED)
                for s in d.missed_slots])
        for run in runs:  # the same updates in memory (new missed rows are never pending)
            if run.pk in d.stuck_runs:
                run.outcome = Run.Outcome.STUCK
            if run.pk in d.deadline_runs:
                run.deadline_checked = True
        monitor.next_slot_at = d.next_slot_at
        monitor.next_evaluation_at = slots.next_evaluation(monitor, runs)
        monitor.save(update_fields=["next_slot_at", "next_evaluation_at"])
        incidents.apply(monitor, d.detections)
        return d


def tick(now: datetime) -> int:
    """Evaluate every monitor due at ``now``; returns how many were evaluated.

    One failing monitor (e.g. a schedule that cannot be computed) is logged and
    skipped, never stopping the others.
    """
    # Hits the next_evaluation_at index: only due monitors are read.
    due = list(Monitor.objects.filter(next_evaluation_at__lte=now)
               .order_by("next_evaluation_at").values_list("pk", flat=True)[:BATCH])
    n = 0
    for pk in due:
        try:
            if evaluate_monitor(pk, now) is not None:
                n += 1
        except Exception:
            log.exception("evaluating monitor %s failed", pk)
    return n


def _secs(td) -> str:
    return f"{int(td.total_seconds())}s"


def rearm(monitor: Monitor, now: datetime) -> None:
    """Recompute a monitor's expected slot and next evaluation after it was created,
    edited or resumed at ``now`` (the caller saves). Slots before ``now`` are not
    held against it."""
    monitor.next_slot_at = slots.first_slot(monitor, now)
    monitor.next_evaluation_at = slots.next_evaluation(
        monitor, pending_runs(monitor) if monitor.pk else [])
