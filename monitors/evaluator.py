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

Under ``concurrency: forbid``, a slot that came due while a run that started
before it was still open, and got no run by slot + grace, is recorded
``skipped`` (detection ``skipped``), not ``missed``. Slots whose grace ended
while CronRadar's own ping endpoint was down are recorded ``unknown``, not
``missed`` (:mod:`monitors.liveness`; reason ``outage``); once such an outage has
settled, ``outage_settled`` is sent for each affected project. A slot whose first
ping was refused by a ping rate limit is recorded ``unknown`` with reason
``rate_limited`` (:func:`refused_in`), no detection; it never counts in an outage.

:func:`edit` is the only way a monitor's settings change: it judges the monitor
under the old settings, then under the new ones, at the moment of the edit, so
an edit never forgives a slot that was overdue under either. Deleted monitors
are removed here once their last notifications are done (:func:`evaluate_monitor`).
"""
from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F

from accounts import audit
from accounts.models import AuditEntry, Project
from core import logs, metrics, sql
from monitors import detections, history, liveness, signals, slots
from monitors.detections import Detection, Kind
from monitors.liveness import Liveness
from monitors.models import Monitor, Outage, OutageImpact, Run
from monitors.runs import claimed_slots, pending_runs, pending_runs_of

log = logging.getLogger(__name__)
BATCH = 1000  # monitors a tick evaluates between two looks at its time budget
READ = 20 * BATCH  # due monitors a tick reads at a time (fair_due)
TICK_BUDGET = 5.0  # seconds after which a tick stops taking more batches (the next goes on)
CHUNK = 100  # monitors evaluated together in one transaction (evaluate_many)
# Fields whose change moves the expected slots, and limits a run is judged by.
SCHEDULE_FIELDS = frozenset({"kind", "schedule", "timezone", "cron_semantics", "period"})
LIMIT_FIELDS = frozenset({"grace", "max_runtime", "deadline"})
PURGE_RETRY = timedelta(seconds=5)  # a deleted monitor waiting for its deliveries
EVALUATION_RETRY, EVALUATION_RETRY_MAX = timedelta(minutes=1), timedelta(hours=1)


@dataclass
class Decision:
    """What one evaluation found: detections plus the state changes to write.

    stuck_runs / deadline_runs: ids of runs to mark; missed_slots / unknown_slots /
    skipped_slots: slots to record as ``missed`` / ``unknown`` (reason ``outage``) /
    ``skipped`` runs (the most recent ones); rate_limited_slots: slots to record
    ``unknown`` with reason ``rate_limited`` (their first ping was refused: never
    missed, never in an outage's count);
    unknown_by_outage: unknown slots per outage start (exact counts);
    next_expected_at: the monitor's new expected slot.
    """

    detections: list[Detection] = field(default_factory=list)
    stuck_runs: list[int] = field(default_factory=list)
    deadline_runs: list[int] = field(default_factory=list)
    missed_slots: list[datetime] = field(default_factory=list)
    unknown_slots: list[datetime] = field(default_factory=list)
    skipped_slots: list[datetime] = field(default_factory=list)
    rate_limited_slots: list[datetime] = field(default_factory=list)
    unknown_by_outage: dict[datetime, int] = field(default_factory=dict)
    next_expected_at: datetime | None = None


def decide(monitor, runs, succeeded_slots: set, now: datetime,
           alive: Liveness | None = None, ended: list[Run] | tuple = (),
           claimed: frozenset[datetime] = frozenset()) -> Decision:
    """Pure decision for one monitor at ``now``.

    monitor: has the fields of :class:`Monitor`; runs: its pending runs (see
    :func:`monitors.runs.pending_runs`); succeeded_slots: slots that already have a
    succeeded run (a deadline is met when any run of the slot succeeded in time);
    alive: the web tier's liveness (default: always up). Slots whose grace ended
    after ``alive.known_until`` wait for a later evaluation. ended: under
    ``concurrency: forbid``, the runs that ended after ``next_expected_at`` (with
    the open ones of ``runs``, they tell which overdue slots were ``skipped``
    rather than missed: :func:`slots.skipped`). claimed: slots from
    ``next_expected_at`` on that already have a run (never ``missed`` nor
    ``skipped``; see :func:`monitors.runs.claimed_slots`). Reads its arguments only;
    :func:`apply_to_runs` applies the result to the runs.
    """
    d = Decision(next_expected_at=monitor.next_expected_at)
    met = set(succeeded_slots)  # a slot gets one deadline detection
    if monitor.paused:
        return d
    if monitor.last_ping_at is not None:
        until = now if alive is None else min(now, alive.known_until)
        overdue = slots.overdue(monitor, until, alive, claimed)
        if overdue is not None:
            d.missed_slots, d.unknown_slots = overdue.missed, overdue.unknown
            d.unknown_by_outage = overdue.unknown_by_outage
            d.next_expected_at = overdue.next_expected
            count, skip = overdue.missed_count, None
            if monitor.concurrency == Monitor.Concurrency.FORBID:
                skip = slots.skipped(monitor, overdue, [*runs, *ended], alive, claimed)
                count -= skip.count
                d.skipped_slots = [slot for slot, _ in skip.slots]
                taken = set(d.skipped_slots)
                d.missed_slots = [slot for slot in overdue.missed if slot not in taken]
            d.rate_limited_slots = [s for s in d.missed_slots if refused_in(monitor, s)]
            if d.rate_limited_slots:
                count -= len(d.rate_limited_slots)
                d.missed_slots = [s for s in d.missed_slots if s not in d.rate_limited_slots]
            if count:
                listed = d.missed_slots or [monitor.next_expected_at]
                what = "1 expected run did not start" if count == 1 else (
                    f"{count} expected runs did not start")
                d.detections.append(Detection(
                    Kind.MISSED, now, f"{what} (grace {_secs(monitor.grace)})", count=count,
                    detail={"first_slot": listed[0].isoformat(),
                            "last_slot": listed[-1].isoformat()}))
            if skip is not None and skip.count:
                d.detections.append(_skipped(monitor, skip, now))
    for run in runs:
        if run.outcome == Run.Outcome.RUNNING and run.timeout_at and run.timeout_at <= now:
            d.stuck_runs.append(run.pk)
            d.detections.append(Detection(
                Kind.STUCK, now,
                f"run started at {detections.local_time(run.started_at, monitor.timezone)} is "
                f"still open after max_runtime {_secs(run.timeout_at - run.started_at)}",
                detail={"run": run.pk}))
        if run.deadline_at and not run.deadline_checked and run.deadline_at <= now:
            d.deadline_runs.append(run.pk)
            if run.slot_at not in met:
                d.detections.append(Detection(
                    Kind.DEADLINE, now,
                    f"the run for {detections.local_time(run.slot_at, monitor.timezone)} had "
                    f"not succeeded {_secs(run.deadline_at - run.slot_at)} after its "
                    "scheduled time",
                    detail={"run": run.pk, "slot": run.slot_at.isoformat()}))
                met.add(run.slot_at)
    return d


def refused_in(monitor, slot: datetime) -> bool:
    """Whether the monitor's latest refusal streak (pings refused by a rate limit,
    ``refused_since`` to ``refused_until``: :func:`monitors.ratelimit.refused`)
    overlaps ``slot``'s grace, from the slot to slot + grace: a slot that got no run
    then had its first ping refused (an accepted one would have made its run)."""
    since, until = monitor.refused_since, monitor.refused_until
    return (since is not None and until is not None
            and since <= slot + monitor.grace and until > slot)


def _skipped(monitor, skip: slots.Skipped, now: datetime) -> Detection:
    """The ``skipped`` detection of ``skip``'s slots (coded: ``detail["code"]``)."""
    (first, _), (last, blocker) = skip.slots[0], skip.slots[-1]
    code = detections.Code.STILL_RUNNING
    return Detection(
        Kind.SKIPPED, now,
        detections.sentence(code, monitor.timezone, count=skip.count, slot=last,
                            since=blocker.started_at),
        count=skip.count,
        detail={"code": code.value, "first_slot": first.isoformat(),
                "last_slot": last.isoformat(), "running_since": blocker.started_at.isoformat(),
                "blocking_run": blocker.pk})


def apply_to_runs(d: Decision, runs) -> list[Run]:
    """Set what ``d`` decided on the in-memory ``runs`` (``stuck``, deadline
    checked); returns the runs that changed. The caller writes exactly these
    objects, so the rows and the state computed from them cannot diverge."""
    changed = []
    for run in runs:
        if run.pk in d.stuck_runs:
            run.outcome = Run.Outcome.STUCK
        if run.pk in d.deadline_runs:
            run.deadline_checked = True
        if run.pk in d.stuck_runs or run.pk in d.deadline_runs:
            changed.append(run)
    return changed


def evaluate_monitor(monitor_id: int, now: datetime, alive: Liveness | None = None
                     ) -> Decision | None:
    """Evaluate one monitor if it is still due; returns the applied decision or None.

    alive: the web tier's liveness (default: read from the database). A deleted
    monitor is removed instead, unless a ``purge_requested`` receiver objects.
    """
    with transaction.atomic():
        qs = Monitor.objects.filter(pk=monitor_id, next_evaluation_at__lte=now)
        if connection.features.has_select_for_update_skip_locked:
            qs = qs.select_for_update(skip_locked=True)
        monitor = qs.first()
        if monitor is None:
            return None  # handled by another evaluator, or no longer due
        if monitor.deleted_at is not None:
            _purge(monitor, now)
            return Decision()
        return _evaluate(monitor, now, liveness.load(now) if alive is None else alive)


def _evaluate(monitor: Monitor, now: datetime, alive: Liveness) -> Decision:
    """Decide and apply for ``monitor`` (row locked by the caller) at ``now``."""
    d, changed, written_off = _judge(monitor, pending_runs(monitor), now, alive,
                                     claimed_slots([monitor])[monitor.pk])
    if changed:
        Run.objects.bulk_update(changed, ["outcome", "deadline_checked"])
    sql.insert_many(Run, WRITTEN_OFF_FIELDS, written_off)
    monitor.save(update_fields=MONITOR_FIELDS)
    detections.emit(monitor, d.detections)
    return d


MONITOR_FIELDS = ["next_expected_at", "next_evaluation_at", "evaluation_error",
                  "evaluation_failures"]
WRITTEN_OFF_FIELDS = ("monitor_id", "slot_at", "outcome", "deadline_checked", "reason")


def _judge(monitor: Monitor, runs: list[Run], now: datetime, alive: Liveness,
           claimed: frozenset[datetime]) -> tuple[Decision, list[Run], list[tuple]]:
    """:func:`decide` for ``monitor`` (row locked) with its pending ``runs``, applied
    in memory: returns (decision, runs changed, written-off runs to insert as
    ``WRITTEN_OFF_FIELDS`` rows, by slot); the monitor's ``MONITOR_FIELDS`` are set
    for the caller to write. Reads the succeeded slots a deadline needs, under
    ``concurrency: forbid`` with a slot overdue the runs that ended after it
    (which tell a ``skipped`` slot from a missed one), and records unknown slots
    (outages)."""
    # decide() only asks about the slots of runs whose deadline has come
    deadline_slots = [r.slot_at for r in runs
                      if r.deadline_at and not r.deadline_checked and r.deadline_at <= now]
    done = set()
    if deadline_slots:
        done = set(history.of_slots(monitor, deadline_slots).filter(
            outcome=Run.Outcome.SUCCEEDED).values_list("slot_at", flat=True))
    ended = []
    first = monitor.next_expected_at
    if (monitor.concurrency == Monitor.Concurrency.FORBID and not monitor.paused
            and monitor.last_ping_at is not None and first is not None
            and first + monitor.grace <= now):
        # a slot is overdue: was a run open at it? (only then: a slot is written off
        # anyway; the monitor's runs are few, retention keeps them so)
        ended = list(Run.objects.filter(monitor=monitor, started_at__lt=now, ended_at__gt=first))
    d = decide(monitor, runs, done, now, alive, ended, claimed)
    changed = apply_to_runs(d, runs)
    written_off = sorted(
        [(monitor.pk, s, Run.Outcome.MISSED, False, "") for s in d.missed_slots]
        + [(monitor.pk, s, Run.Outcome.UNKNOWN, False, Run.Reason.OUTAGE)
           for s in d.unknown_slots]
        + [(monitor.pk, s, Run.Outcome.UNKNOWN, False, Run.Reason.RATE_LIMITED)
           for s in d.rate_limited_slots]
        + [(monitor.pk, s, Run.Outcome.SKIPPED, False, "") for s in d.skipped_slots],
        key=lambda r: r[1])
    if d.unknown_by_outage:
        _count_unknown(monitor.project_id, d.unknown_by_outage, alive)
    monitor.next_expected_at = d.next_expected_at
    following = slots.next_evaluation(monitor, runs)
    if following is not None and following <= now:
        # a grace end after the web tier's last beat: look again after its next one
        following = now + timedelta(seconds=max(settings.CRONRADAR_LIVENESS_INTERVAL, 0.1))
    monitor.next_evaluation_at = following
    monitor.evaluation_error, monitor.evaluation_failures = "", 0  # it works (again)
    return d, changed, written_off


def evaluate_many(monitor_ids: list[int], now: datetime, alive: Liveness) -> int:
    """Evaluate the monitors of ``monitor_ids`` (at most a few hundred) that are
    still due, together: one transaction holding all their row locks, one query
    for their pending runs (and one for each ``forbid`` monitor with an overdue
    slot: its runs that ended after it, see :func:`_judge`), one statement each
    for the runs and monitors written
    (monitors with equal new values: one for all), and their detections applied
    as one batch (:func:`detections.emit_many`). Returns how many were
    evaluated. Deleted monitors, and every monitor of a batch in which anything
    raised, go through :func:`evaluate_monitor` one by one instead, so one bad
    monitor never holds the others back."""
    alone: list[int] = []
    failed: dict[int, Exception] = {}
    n = 0
    try:
        with _batch_transaction():
            where, params = sql.where_in(Monitor, "id", monitor_ids)
            skip = connection.features.has_select_for_update_skip_locked
            monitors = sql.select(
                Monitor, f"{where} AND next_evaluation_at <= %s",
                [*params, sql.prep(Monitor, "next_evaluation_at", now)],
                "ORDER BY id FOR UPDATE SKIP LOCKED" if skip else "ORDER BY id")
            alone = [m.pk for m in monitors if m.deleted_at is not None]
            live = [m for m in monitors if m.deleted_at is None]
            runs: dict[int, list[Run]] = {m.pk: [] for m in live}
            for run in pending_runs_of([m.pk for m in live]):
                runs[run.monitor_id].append(run)
            claimed = claimed_slots(live)
            judged, changed, written_off = [], [], []
            for m in live:
                try:
                    with logs.bound(monitor=m.pk):
                        d, c, w = _judge(m, runs[m.pk], now, alive, claimed[m.pk])
                except Exception as exc:  # noqa: BLE001  (backed off below, alone)
                    failed[m.pk] = exc
                    continue
                judged.append((m, d))
                changed += c
                written_off += w
            if changed:
                Run.objects.bulk_update(changed, ["outcome", "deadline_checked"])
            sql.insert_many(Run, WRITTEN_OFF_FIELDS, written_off)
            if judged:
                sql.update_many([m for m, _ in judged], MONITOR_FIELDS)
            detections.emit_many([(m, d.detections) for m, d in judged])
            n = len(judged)
    except Exception:
        log.exception("evaluating a batch of %d monitors failed: one by one", len(monitor_ids))
        alone, failed, n = list(monitor_ids), {}, 0
    for pk, exc in failed.items():
        with logs.bound(monitor=pk):
            log.error("evaluating monitor %s failed", pk, exc_info=exc)
        _back_off(pk, now, exc)
    for pk in alone:
        with logs.bound(monitor=pk):
            try:
                if evaluate_monitor(pk, now, alive) is not None:
                    n += 1
            except Exception as exc:
                log.exception("evaluating monitor %s failed", pk)
                _back_off(pk, now, exc)
    return n


@contextmanager
def _batch_transaction():
    """``transaction.atomic()`` whose foreign keys are checked at the end of each
    statement, not at COMMIT (PostgreSQL: Django makes them ``DEFERRABLE INITIALLY
    DEFERRED``). A batch's inserts (runs, incidents, events, deliveries: 6 checks
    a missed monitor) cost PostgreSQL about 7 % less CPU than when queued to the
    commit (bench/evaluator_burst.py, the median of 16 interleaved pairs). Inside
    an enclosing transaction the checks are deferred again after the block (on an
    error, rolling back to the block's savepoint restores that too)."""
    postgres, nested = sql.vendor() == "postgresql", connection.in_atomic_block
    with transaction.atomic():
        if postgres:
            with connection.cursor() as cursor:
                cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        yield
        if postgres and nested:
            with connection.cursor() as cursor:
                cursor.execute("SET CONSTRAINTS ALL DEFERRED")


def edit(monitor_id: int, changes: dict, now: datetime) -> Monitor:
    """Change a monitor's fields at ``now``, holding its row lock; returns it saved.

    changes: field name -> new value (model values: ``timedelta`` durations).
    Raises ``Monitor.DoesNotExist`` for a missing or deleted monitor. Callers
    that change more in the same transaction (the alerting side's channels) wrap
    it in theirs: the row lock is held until that commits.

    - Schedule or limit changes (``SCHEDULE_FIELDS``, ``LIMIT_FIELDS``): the monitor
      is first judged under the old settings at ``now`` (whatever was already
      overdue is reported), then under the new ones (a slot overdue by the new
      grace is reported at once; one still within it is due at slot + new grace).
      A new schedule keeps the pending slot where it has it too
      (:func:`slots.slot_after_edit`). Open runs follow the new ``max_runtime``
      and pending deadline checks the new ``deadline``.
    - ``paused`` true: a ``paused`` detection (the alerting side resolves the open
      incident, "monitor paused"); the monitor raises nothing while paused.
      ``paused`` false (resume): re-armed at ``now``; slots during the pause are
      not held against it.

    The change goes to the audit log: ``pause``/``resume`` when ``paused``
    changes, else ``update``, with the fields changed (nothing when none did).
    """
    with transaction.atomic():
        monitor = Monitor.objects.select_for_update().get(pk=monitor_id, deleted_at__isnull=True)
        changed = {k for k, v in changes.items() if getattr(monitor, k) != v}
        before = audit.fields_of(monitor, changed)
        judged = changed & (SCHEDULE_FIELDS | LIMIT_FIELDS)
        alive = liveness.load(now)
        if judged and not monitor.paused:
            _evaluate(monitor, now, alive)
        pending, old_kind, old_period = monitor.next_expected_at, monitor.kind, monitor.period
        for name, value in changes.items():
            setattr(monitor, name, value)
        if "paused" in changed:
            if monitor.paused:
                detections.emit(monitor, [Detection(Kind.PAUSED, now, "monitor paused")])
            else:
                monitor.next_expected_at = slots.first_slot(monitor, now)
        elif changed & SCHEDULE_FIELDS:
            monitor.next_expected_at = slots.slot_after_edit(
                monitor, pending, old_period if old_kind == Monitor.Kind.INTERVAL else None, now)
        if changed & {"max_runtime", "deadline"}:
            _apply_limits(monitor)
        if judged and not monitor.paused:
            _evaluate(monitor, now, alive)
        else:
            monitor.next_evaluation_at = slots.next_evaluation(monitor, pending_runs(monitor))
        monitor.save()
        _audit_edit(monitor, before)
        return monitor


def _audit_edit(monitor: Monitor, before: dict) -> None:
    """The audit entry of :func:`edit` (``before``: the changed fields' old values)."""
    after = audit.fields_of(monitor, before)
    if "paused" in before:
        action = AuditEntry.Action.PAUSE if monitor.paused else AuditEntry.Action.RESUME
        audit.record(action, monitor.project.organisation, target=monitor,
                     changes=audit.diff(before, after))
    elif before:
        audit.record_update(monitor.project.organisation, monitor, before, after)


def _apply_limits(monitor: Monitor) -> None:
    """Open runs follow the monitor's current ``max_runtime``; runs whose deadline is
    not checked yet (and open runs, when a deadline is set) its current ``deadline``."""
    for run in Run.objects.filter(monitor=monitor, outcome=Run.Outcome.RUNNING,
                                  started_at__isnull=False):
        run.timeout_at = run.started_at + monitor.max_runtime if monitor.max_runtime else None
        run.save(update_fields=["timeout_at"])
    waiting = Run.objects.filter(monitor=monitor, deadline_checked=False, slot_at__isnull=False,
                                 deadline_at__isnull=False)
    if monitor.deadline:
        waiting = waiting | Run.objects.filter(
            monitor=monitor, deadline_checked=False, slot_at__isnull=False,
            outcome__in=(Run.Outcome.RUNNING, Run.Outcome.STUCK))
    for run in waiting.distinct():
        run.deadline_at = run.slot_at + monitor.deadline if monitor.deadline else None
        run.save(update_fields=["deadline_at"])


def delete(monitor_id: int, now: datetime) -> None:
    """Delete a monitor at ``now`` (raises ``Monitor.DoesNotExist`` if already gone).

    A ``deleted`` detection goes out (the alerting side resolves the open
    incident, "monitor deleted", and tells every notified channel); the monitor
    disappears from the API and its ping URLs at once, and its rows are removed
    by the evaluator once no ``purge_requested`` receiver objects
    (:func:`evaluate_monitor`).
    """
    with transaction.atomic():
        monitor = Monitor.objects.select_for_update().get(pk=monitor_id, deleted_at__isnull=True)
        detections.emit(monitor, [Detection(Kind.DELETED, now, "monitor deleted")])
        monitor.deleted_at = now
        monitor.next_evaluation_at = now
        monitor.save(update_fields=["deleted_at", "next_evaluation_at"])
        audit.record(AuditEntry.Action.DELETE, monitor.project.organisation, target=monitor)


def _purge(monitor: Monitor, now: datetime) -> None:
    """Remove a deleted monitor unless a ``purge_requested`` receiver still needs it."""
    answers = signals.purge_requested.send(sender=Monitor, monitor=monitor)
    if any(answer is False for _, answer in answers):
        monitor.next_evaluation_at = now + PURGE_RETRY
        monitor.save(update_fields=["next_evaluation_at"])
    else:
        monitor.delete()


# --- outages of CronRadar itself -------------------------------------------------------

def _count_unknown(project_id: int, by_outage: dict[datetime, int], alive: Liveness) -> None:
    """Add unknown slots to the project's :class:`OutageImpact` of each outage."""
    for window in alive.windows:
        n = by_outage.get(window.outage_start)
        if not n:
            continue
        outage, _ = Outage.objects.get_or_create(started_at=window.outage_start,
                                                 defaults={"ended_at": window.outage_end})
        impact = OutageImpact.objects.filter(outage=outage, project_id=project_id)
        if impact.update(unknown_slots=F("unknown_slots") + n):
            continue
        try:
            with transaction.atomic():
                OutageImpact.objects.create(outage=outage, project_id=project_id,
                                            unknown_slots=n)
        except IntegrityError:  # created by another evaluator meanwhile
            impact.update(unknown_slots=F("unknown_slots") + n)


def summarize_outages(now: datetime, alive: Liveness) -> int:
    """Send ``outage_settled`` for each project of each outage that turned slots into
    ``unknown`` and ended at least twice the threshold ago (every unknown slot of it
    is counted by then; the alerting side sends ``outage.summary``); returns how
    many outages were summarized. Claimed with compare-and-set, so sent once even
    with several evaluators."""
    ends = {w.outage_start: w.outage_end for w in alive.windows}
    settled = now - 2 * liveness.threshold()
    sent = 0
    for outage in Outage.objects.filter(summarized_at__isnull=True):
        end = ends.get(outage.started_at, outage.ended_at)
        if end != outage.ended_at:
            Outage.objects.filter(pk=outage.pk).update(ended_at=end)
        if end is None or end > settled:
            continue
        with transaction.atomic():
            if not Outage.objects.filter(pk=outage.pk, summarized_at__isnull=True) \
                    .update(summarized_at=now):
                continue
            outage.summarized_at = now
            for impact in outage.impacts.filter(unknown_slots__gt=0).order_by("pk"):
                signals.outage_settled.send(sender=OutageImpact, impact=impact)
        sent += 1
    return sent


# --- the tick ----------------------------------------------------------------------------

def oldest_due(now: datetime) -> datetime | None:
    """The earliest ``next_evaluation_at`` at or before ``now``: how far behind the
    evaluator is (``now`` minus it); None when no monitor is due (one read of the
    ``next_evaluation_at`` index)."""
    return (Monitor.objects.filter(next_evaluation_at__lte=now).order_by("next_evaluation_at")
            .values_list("next_evaluation_at", flat=True).first())


def fair_due(now: datetime, limit: int) -> list[int]:
    """Ids of up to ``limit`` monitors due at ``now``, shared round-robin across
    organisations: each organisation's first due monitor (``next_evaluation_at``,
    then id), then each one's second, and so on (so one organisation's burst never
    pushes another's monitor behind it). Every due monitor is read (the
    ``next_evaluation_at`` index serves the range), so :func:`tick` reads once for
    up to ``READ`` of them; only the projects of due monitors are read, by primary
    key (a join of every project hashed all of them at each read: 17-19 ms with
    10,000 due of 1,000,000 monitors in 100,000 projects, 8-9 ms so). On
    PostgreSQL the CTE ``due``, read twice, is computed once."""
    monitors, projects = Monitor._meta.db_table, Project._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH due AS (SELECT id, next_evaluation_at, project_id FROM {monitors} "
            "WHERE next_evaluation_at <= %s), "
            f"org AS (SELECT id, organisation_id FROM {projects} "
            "WHERE id IN (SELECT project_id FROM due)) "
            "SELECT id FROM (SELECT d.id, d.next_evaluation_at, ROW_NUMBER() OVER ("
            "PARTITION BY org.organisation_id ORDER BY d.next_evaluation_at, d.id) AS turn "
            "FROM due d JOIN org ON org.id = d.project_id) fair "
            "ORDER BY turn, next_evaluation_at, id LIMIT %s",
            [sql.prep(Monitor, "next_evaluation_at", now), int(limit)])
        return [pk for (pk,) in cursor.fetchall()]


_last_beat: list[datetime] = []


def tick(now: datetime) -> int:
    """Evaluate every monitor due at ``now``; returns how many were evaluated.

    Reads up to ``READ`` due monitors in their fair order (:func:`fair_due`) and
    evaluates them ``BATCH`` at a time until none are left or ``TICK_BUDGET``
    seconds have passed (another evaluator, or the next tick, takes the rest). Also
    records the evaluator's liveness, and when it has caught up (every due monitor
    read and taken) sends settled outage summaries and ``tick_done`` (for
    housekeeping elsewhere). One failing monitor (e.g. a schedule that cannot be computed) is
    logged and skipped, never stopping the others. Timed in
    ``cronradar_evaluator_tick_duration_seconds``.
    """
    with metrics.TICK_DURATION.time():
        return _tick(now)


def _tick(now: datetime) -> int:
    if liveness.enabled() and (not _last_beat or now - _last_beat[0] >= timedelta(
            seconds=settings.CRONRADAR_LIVENESS_INTERVAL)):
        liveness.beat(liveness.EVALUATOR, now)
        _last_beat[:] = [now]
    alive = liveness.load(now)
    n, until, caught_up = 0, time.monotonic() + TICK_BUDGET, False
    while not caught_up:  # a burst (the top of the hour) goes on without waiting
        # One fair read for many batches: what is due at ``now`` only shrinks
        # during the tick, and the read costs O(monitors due), not O(BATCH).
        due, done, b = fair_due(now, READ), 0, 0
        while b < len(due) and (b == 0 or time.monotonic() <= until):
            batch = due[b:b + BATCH]
            for i in range(0, len(batch), CHUNK):
                done += evaluate_many(batch[i:i + CHUNK], now, alive)
            b += BATCH
        n += done
        caught_up = b >= len(due) and len(due) < READ
        if not done or time.monotonic() > until:
            break
    try:
        signals.tick.send(sender=None, now=now)
    except Exception:
        log.exception("a tick receiver failed")
    if caught_up:
        try:
            summarize_outages(now, alive)
            signals.tick_done.send(sender=None, now=now)
        except Exception:
            log.exception("outage summaries / housekeeping failed")
    return n


def _back_off(monitor_id: int, now: datetime, exc: Exception) -> None:
    """A monitor whose evaluation raised: record why and look again later (1 min,
    doubling up to 1 h), so broken monitors never crowd out healthy ones."""
    failures = (Monitor.objects.filter(pk=monitor_id)
                .values_list("evaluation_failures", flat=True).first() or 0) + 1
    delay = min(EVALUATION_RETRY * 2 ** min(failures - 1, 6), EVALUATION_RETRY_MAX)
    Monitor.objects.filter(pk=monitor_id).update(
        next_evaluation_at=now + delay, evaluation_failures=failures,
        evaluation_error=f"{type(exc).__name__}: {exc}"[:500])


def _secs(td) -> str:
    return f"{int(td.total_seconds())}s"
