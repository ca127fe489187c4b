"""Ping ingest: the hot path from a received ping to stored rows and state changes.

:func:`ingest` is the only writer for pings. In one transaction, holding the
monitor's row lock, it stores the ping, opens/closes the run it belongs to,
advances the monitor's expected slot, and emits detections (failed, overlap,
double_launch, too_fast, slow, recovered; see :mod:`monitors.detections`).

Run pairing (documented in docs/pinging.md):

- ``start`` with ``rid`` opens a run with that id; the same ``start`` + ``rid``
  again is a duplicate (curl ``--retry``): stored, flagged, no state change.
- an end ping (success / fail / exit status) with ``rid`` closes that run; if the
  run already ended, the ping is a duplicate. An unknown ``rid`` records a run
  that has no start.
- an end ping without ``rid`` closes the most recently started open run (with
  ``slot``: of that slot); if no run is open it records a run that has no start (a
  job that only pings at the end; a ``double_launch`` when its cron slot already
  has a succeeded run or ``max_attempts`` runs).

Which slot a new run belongs to: :func:`monitors.slots.slot_for`, or the one the
ping names (``?slot=``, :func:`monitors.slots.named_slot`), docs/slots.md.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from uuid import UUID

from django.db import (
    IntegrityError,
    InterfaceError,
    NotSupportedError,
    OperationalError,
    connection,
    transaction,
)

from accounts.models import Project
from core import logs, sql
from monitors import creation, detections, drift, history, schedule, slots
from monitors.detections import Code, Detection, Kind, sentence
from monitors.models import Monitor, Ping, PingLog, Run
from monitors.runs import (
    PENDING,
    RUNS,
    WITH_RID,
    WRITTEN_OFF,
    claimed_slots,
    pending_runs,
)
from monitors.slots import SlotError

log = logging.getLogger(__name__)
NEVER = datetime.min.replace(tzinfo=UTC)  # sorts a run without a start first


@dataclass(frozen=True)
class PingInput:
    """A parsed ping.

    kind: ``success`` | ``start`` | ``fail`` | ``log``; exit_status: 0-255 or None;
    rid: run id or None; slot: the slot the ping names (``?slot=``, aware UTC;
    checked against the monitor by :func:`ingest`) or None; body: at most the
    stored limit; body_size: bytes received.
    """

    kind: str
    exit_status: int | None = None
    rid: UUID | None = None
    slot: datetime | None = None
    method: str = "GET"
    remote_addr: str | None = None
    user_agent: str = ""
    body: bytes = b""
    body_size: int = 0

    @property
    def body_truncated(self) -> bool:
        return self.body_size > len(self.body)


class MethodRefused(ValueError):
    """The monitor takes no ping of this HTTP method (its ``methods`` is
    ``"POST"``: GET and HEAD are refused); nothing was stored. str(e): the
    monitor's ``methods``."""


def ingest(monitor_id: int, ping: PingInput, now: datetime) -> Ping | PingLog:
    """Store ``ping`` for monitor ``monitor_id`` at ``now`` and apply its effects.

    ``now`` is the ping's arrival time: the ping, its run and the detections keep
    it (incident events never go backwards, see :mod:`alerts.incidents`). Returns
    the stored ping: a :class:`Ping` row, or on PostgreSQL a heartbeat's ping kept
    in its run (:func:`_kept_in_run`) as the :class:`PingLog` the pings list reads
    (:func:`kept_ping`; its ``pk`` is the run's). Raises ``Monitor.DoesNotExist`` if the monitor was
    deleted meanwhile, :class:`SlotError` (nothing stored) when the slot the ping
    names cannot be one of the monitor's, :class:`MethodRefused` (nothing stored)
    when the monitor takes no pings of the ping's ``method`` (``methods``). Never
    drops a ping it returns: if applying its effects fails (a bug, a schedule
    that cannot be computed), that part is rolled back and logged, and the ping
    is stored alone.
    """
    stored = ingest_at(("id = %s", [monitor_id]), ping, now)
    if stored is None:
        raise Monitor.DoesNotExist(f"no monitor {monitor_id}")
    return kept_ping(stored) if isinstance(stored, Run) else stored


def ingest_at(where: tuple[str, list], ping: PingInput, now: datetime, *,
              _retry: bool = True) -> Ping | Run | None:
    """:func:`ingest` for the monitor a SQL condition picks (the ping URL's lookup,
    see :func:`lookup`), locked and read in one statement; None when no
    (undeleted) monitor matches. Returns the stored ping as its row, or the
    :class:`Run` that keeps it (:func:`_kept_in_run`; :func:`kept_ping` makes the
    :class:`PingLog` :func:`ingest` returns; the ping route only asks whether a ping
    was stored).

    The common pings cost one transaction of two statements besides BEGIN and
    COMMIT on PostgreSQL: lock the monitor and read the runs it can touch
    (:func:`_lock_reading`; a third statement reads the runs again when another
    transaction changed the monitor meanwhile), then write the run, update the
    monitor (reading the subscribers' state) and insert the ping in one
    (:func:`_write`); five statements on SQLite. tests/test_query_counts.py pins them.
    Effects are computed and written first; if anything raises, the transaction
    is rolled back and the ping is stored alone in a second one.

    On PostgreSQL, a connection error from the first statement (a persistent
    connection cut while idle, as by a database restart: the transaction did
    nothing) closes the connection and the ping is tried once more on a new one
    (what Django's per-request health check did, paid only when it fails); any
    other database error is raised (the ping route answers 503: nothing was stored).
    A statement PostgreSQL refuses after a migration changed the types it returns
    (``cached plan must not change result type``) is tried once more too.
    """
    started = False
    try:
        with transaction.atomic():
            if sql.vendor() == "postgresql" and ping.kind != Ping.Kind.LOG:
                monitor, read = _lock_reading(where, ping.rid)
            else:
                monitor, read = _lock(where), None
            started = True
            if monitor is None:
                return None
            if monitor.methods == "POST" and ping.method != "POST":
                raise MethodRefused(monitor.methods)
            return _apply(monitor, ping, now, read)
    except (SlotError, MethodRefused):  # the ping's own mistake: answered 4xx, nothing stored
        raise
    except (InterfaceError, OperationalError):
        if (started or not _retry or connection.in_atomic_block
                or sql.vendor() != "postgresql"):
            raise
        connection.close()
        return ingest_at(where, ping, now, _retry=False)
    except NotSupportedError as exc:
        # PostgreSQL refuses a prepared statement (core.sql) whose result types a
        # migration changed; the rollback made psycopg forget them all: once more
        if _retry and not connection.in_atomic_block:
            return ingest_at(where, ping, now, _retry=False)
        failure = exc
    except Exception as exc:  # noqa: BLE001  (a bug or a schedule that cannot be computed)
        failure = exc
    problem = f"a ping's effects could not be applied: {type(failure).__name__}: {failure}"
    with transaction.atomic():
        monitor = _lock(where)
        with logs.bound(monitor=monitor and monitor.pk):
            log.error("ping stored without applying its effects (%s: %s)",
                      type(failure).__name__, failure, exc_info=failure)
        if monitor is None:
            return None
        stored = _insert_ping(monitor.pk, None, ping, now, False)
        monitor.evaluation_error = problem[:500]  # shown by the API and the dashboard
        if ping.kind != Ping.Kind.LOG:  # counted as _apply would have
            monitor.n_pings += 1
        sql.update(monitor, ["evaluation_error", "n_pings"])
    if _failed(ping):
        _report_failure(where, ping, now, problem)
    return stored


def _report_failure(where: tuple[str, list], ping: PingInput, now: datetime,
                    problem: str) -> None:
    """A failure whose run could not be recorded still raises ``failed`` (after
    the ping is stored, in a transaction of its own: if this fails too, the ping
    stays)."""
    try:
        with transaction.atomic():
            monitor = _lock(where)
            if monitor is not None and not monitor.paused:
                detections.emit(monitor, [Detection(
                    Kind.FAILED, now, f"run failed{_status(ping)}; {problem}"[:500],
                    detail={"exit_status": ping.exit_status})])
    except Exception:
        log.exception("reporting a failed run of a monitor whose pings cannot be applied")


def lookup(uuid: UUID | None = None, ping_key: str = "", slug: str = "") -> tuple[str, list]:
    """The SQL condition (for :func:`ingest_at`) of the monitor with ping URL
    ``/ping/<uuid>`` or ``/ping/<ping_key>/<slug>``."""
    if uuid is not None:
        return "uuid = %s", [sql.prep(Monitor, "uuid", uuid)]
    return (f"slug = %s AND project_id = (SELECT id FROM {Project._meta.db_table} "
            "WHERE ping_key = %s)", [slug, ping_key])


def _apply(monitor: Monitor, ping: PingInput, now: datetime,
           read: _Read | None = None) -> Ping | Run:
    """Store the ping with its effect on runs, the expected slot and incidents:
    its row, or the run that keeps it (:func:`_kept_in_run`).
    ``read``: the runs :func:`_lock_reading` read with the lock, when still valid."""
    if ping.kind == Ping.Kind.LOG:
        run = Run.objects.filter(monitor=monitor, rid=ping.rid).first() if ping.rid else None
        return _insert_ping(monitor.pk, run, ping, now, False)
    # Every run this ping can close, replace or count as open, plus the ones
    # next_evaluation needs and a written-off row of the slot a new run would take
    # (read with the lock, else by one query); updated in memory as they are written.
    # Slots later than the expected one that already have a run: a query only
    # when there can be one (runs.may_have_claimed), never for a heartbeat.
    claimed = claimed_slots([monitor])[monitor.pk]
    if ping.slot is not None:
        slot = slots.named_slot(monitor, ping.slot, now)
    elif ping.rid and ping.kind != Ping.Kind.START:
        slot = None
    else:
        slot = slots.slot_for(monitor, now, claimed)
    runs = read.runs(slot) if read is not None else None
    if runs is None:
        runs = pending_runs(monitor, rid=ping.rid, slot=slot)
    found: list[Detection] = []
    if ping.kind == Ping.Kind.START:
        run, duplicate = _start(monitor, ping, now, runs, found, slot, claimed)
    else:
        run, duplicate = _end(monitor, ping, now, runs, found, slot, claimed,
                              slot_named=ping.slot is not None)
    if duplicate:
        return _insert_ping(monitor.pk, run, ping, now, True)
    monitor.last_ping_at = now
    monitor.n_pings += 1  # under the row lock: written with the other ping fields
    runs = [r for r in runs if r.pk != run.pk] + [run]  # run as it is now; may be new
    monitor.next_evaluation_at = slots.next_evaluation(monitor, runs)
    if _kept_in_run(ping, run):
        run.ping_method, run.ping_remote_addr = ping.method, ping.remote_addr
        run.ping_user_agent = ping.user_agent[:300]
        _write(monitor, run, None)
        stored = run
    else:
        stored = _write(monitor, run, _ping_row(monitor.pk, run, ping, now, False))
    if ping.kind != Ping.Kind.START and (judged := _judge(monitor, ping, run, now)):
        found.append(judged)
    if not monitor.paused:  # a paused monitor keeps its runs but raises nothing
        detections.emit(monitor, found)
    return stored


# --- the hot path's statements, as SQL (see core.sql) --------------------------------

MONITOR_PING_FIELDS = ("last_ping_at", "last_start_at", "next_expected_at",
                       "next_evaluation_at", "n_pings")
RUN_FIELDS = ("monitor_id", "rid", "slot_at", "started_at", "ended_at", "outcome",
              "exit_status", "timeout_at", "deadline_at", "deadline_checked", "reason",
              "ping_method", "ping_remote_addr", "ping_user_agent")


def _kept_in_run(ping: PingInput, run: Run) -> bool:
    """Whether ``ping`` is stored in ``run`` alone, without a ping row (PostgreSQL
    only: issue 24's bytes per heartbeat; SQLite stores every ping as a row): a
    heartbeat, i.e. an end ping without a rid or a body whose kind is what the
    run's outcome says (``success`` with no or a zero exit status, ``fail``
    otherwise) and that opens a new run (``run`` unsaved: not closing an open run
    nor taking over a written-off slot's row). Everything the ping was is then in
    the run: kind and exit status (outcome, exit_status), time (ended_at), method,
    address and User-Agent (the ping_* columns); it lives as long as its run."""
    return (sql.vendor() == "postgresql" and run.pk is None and ping.rid is None
            and not ping.body_size and ping.kind in (Ping.Kind.SUCCESS, Ping.Kind.FAIL)
            and (ping.kind == Ping.Kind.FAIL) == _failed(ping))


def kept_ping(run: Run) -> PingLog:
    """The ping kept in ``run`` (saved, with its ``ping_method`` set) as the
    :class:`PingLog` row the view reads for it (its ``run`` cached): what
    :func:`ingest` returns for it (10 us; the ping route does without). Built from
    its values in column order (:func:`core.sql.loaded`), without the keyword
    arguments' walk of the fields."""
    failed = run.outcome == Run.Outcome.FAILED
    hour = run.ended_at.astimezone(UTC).replace(minute=0, second=0, microsecond=0, tzinfo=None)
    ping = sql.loaded(PingLog, _PINGLOG_COLUMNS, (
        run.pk, run.monitor_id, run.pk, run.ended_at,
        Ping.Kind.FAIL if failed else Ping.Kind.SUCCESS, run.exit_status, None,
        run.ping_method, run.ping_remote_addr, run.ping_user_agent or "", b"", 0, False,
        False, hour))
    PingLog.run.field.set_cached_value(ping, run)
    return ping


# PingLog's columns in the order kept_ping gives their values (a test checks the model)
_PINGLOG_COLUMNS = ("id", "monitor_id", "run_id", "received_at", "kind", "exit_status", "rid",
                    "method", "remote_addr", "user_agent", "body", "body_size",
                    "body_truncated", "duplicate", "hour")


def _lock(where: tuple[str, list]) -> Monitor | None:
    """The undeleted monitor ``where`` picks, row-locked (SQLite: the transaction
    holds the database's write lock from BEGIN IMMEDIATE)."""
    condition, params = where
    lock = "FOR UPDATE" if connection.features.has_select_for_update else ""
    found = sql.select(Monitor, f"{condition} AND deleted_at IS NULL", params, lock)
    return found[0] if found else None


@dataclass
class _Read:
    """What :func:`_lock_reading` read with the lock: the monitor's pending runs and
    the run its ping's rid names (``pending``), and its written-off row of the latest
    slot (``latest_off``; a slot is written off once, so there is one such row)."""

    pending: list[Run]
    latest_off: Run | None

    def runs(self, slot: datetime | None) -> list[Run] | None:
        """What :func:`pending_runs` would return with ``slot``, or None when only
        it can tell (a written-off row later than ``slot`` exists, so one of
        ``slot`` may too)."""
        off = self.latest_off
        if slot is None or off is None or off.slot_at < slot:
            return self.pending
        if off.slot_at > slot:
            return None
        return sorted({r.pk: r for r in [*self.pending, off]}.values(), key=lambda r: r.pk)


@cache
def _lock_reading_sql(condition: str, with_rid: bool) -> str:
    """The statement of :func:`_lock_reading` for a monitor ``condition``."""
    table, cols = Monitor._meta.db_table, sql.columns(Monitor)
    names = ", ".join(f"m.{connection.ops.quote_name(f.column)}"
                      for f in Monitor._meta.concrete_fields)
    rid = f" UNION ALL {WITH_RID.format(monitor='monitor_id = m.id')}" if with_rid else ""
    return (
        f"WITH m AS (SELECT {cols}, xmin AS version FROM {table} "
        f"WHERE {condition} AND deleted_at IS NULL FOR UPDATE), "
        f"o AS MATERIALIZED (SELECT id FROM {RUNS} WHERE monitor_id = (SELECT id FROM m) "
        f"AND outcome IN ({WRITTEN_OFF}) ORDER BY slot_at DESC LIMIT 1) "
        f"SELECT {names}, "
        f"(SELECT s.xmin FROM {table} s WHERE s.id = m.id) = m.version, "
        f"(SELECT id FROM o), r.* FROM m LEFT JOIN LATERAL "
        f"(SELECT {sql.columns(Run)} FROM {RUNS} WHERE id IN "
        f"({PENDING.format(monitor='monitor_id = m.id')}{rid} "
        f"UNION ALL SELECT id FROM o)) r ON true ORDER BY r.id")


def _lock_reading(where: tuple[str, list], rid: UUID | None
                  ) -> tuple[Monitor | None, _Read | None]:
    """PostgreSQL: :func:`_lock` and the runs a ping needs in one statement:
    (monitor, what was read), (None, None) when no monitor matches.

    What was read is None when another transaction changed the monitor's row
    after this statement's snapshot: the statement waited for that transaction's
    lock (or it committed just before), and PostgreSQL then locks the new row but
    reads the runs as they were before (READ COMMITTED). The caller reads them in
    a statement of its own then (:func:`pending_runs`). Whoever changes a
    monitor's runs holds its lock and updates its row in the same transaction (the
    ping path, the evaluator, an edit), so an unchanged row version means the runs
    read are current; a lock taken only to read changes no runs.
    """
    condition, params = where
    rows = sql.fetchall(_lock_reading_sql(condition, rid is not None),
                        [*params, *([sql.prep(Run, "rid", rid)] if rid is not None else [])])
    if not rows:
        return None, None
    width = len(Monitor._meta.concrete_fields)
    monitor = sql.instance(Monitor, rows[0][:width])
    fresh, off_id = rows[0][width], rows[0][width + 1]
    if not fresh:
        return monitor, None
    pending, latest_off = [], None
    for row in rows:
        if row[width + 2] is None:  # no runs: the LEFT JOIN's one row
            continue
        run = sql.instance(Run, row[width + 2:])
        if run.pk == off_id:
            latest_off = run
            if not (run.outcome in Run.OPEN_OUTCOMES or (rid is not None and run.rid == rid)
                    or (run.deadline_at is not None and not run.deadline_checked)):
                continue  # only as the written-off row
        pending.append(run)
    return monitor, _Read(pending, latest_off)


def _state() -> dict[str, str]:
    """The subscribers' state (:data:`detections.STATE`), read by the statement
    that updates the monitor. Not by the one that locks it: on PostgreSQL a
    statement that waited for the lock reads other tables as they were before it
    waited, so an incident opened by the transaction that held the lock (the
    evaluator's) would be missed; the update comes after the lock, with a
    snapshot of its own."""
    table = Monitor._meta.db_table
    return {name: expr.format(monitor_id=f"{table}.id")
            for name, expr in detections.STATE.items()}


PING_FIELDS = ("monitor_id", "run_id", "received_at", "kind", "exit_status", "rid", "method",
               "remote_addr", "user_agent", "body", "body_size", "body_truncated",
               "duplicate")


def _ping_row(monitor_id: int, run: Run | None, ping: PingInput, now: datetime,
              duplicate: bool) -> Ping:
    return sql.new(Ping, monitor_id=monitor_id, run=run, received_at=now, kind=ping.kind,
                   exit_status=ping.exit_status, rid=ping.rid, method=ping.method,
                   remote_addr=ping.remote_addr, user_agent=ping.user_agent[:300],
                   body=ping.body, body_size=ping.body_size,
                   body_truncated=ping.body_truncated, duplicate=duplicate)


def _insert_ping(monitor_id: int, run: Run | None, ping: PingInput, now: datetime,
                 duplicate: bool) -> Ping:
    row = _ping_row(monitor_id, run, ping, now, duplicate)
    sql.insert(row, PING_FIELDS)
    return row


def _write(monitor: Monitor, run: Run, row: Ping | None) -> Ping | None:
    """Write ``run`` (insert it, or all its fields), the monitor's ping fields
    (reading the subscribers' state: :func:`_state`) and insert the ping ``row``
    of ``run`` (None: a ping kept in its run, :func:`_kept_in_run`); returns
    ``row``, stored. On PostgreSQL one statement (data-modifying
    CTEs, one snapshot, taken after the lock like the update's own); elsewhere three.
    Raises RuntimeError if the run to update is gone (deleted meanwhile)."""
    if sql.vendor() != "postgresql":
        if run.pk is None:
            sql.insert(run, RUN_FIELDS)
        else:
            sql.update(run, RUN_FIELDS[1:])
        sql.update(monitor, MONITOR_PING_FIELDS, _state())
        if row is not None:
            row.run = run  # its id, now that it has one
            sql.insert(row, PING_FIELDS)
        return row
    state = _state()
    run_sql, run_params = (sql.insert_statement(run, RUN_FIELDS) if run.pk is None else
                           sql.update_statement(run, RUN_FIELDS[1:], {"pk": "id"}))
    monitor_sql, monitor_params = sql.update_statement(monitor, MONITOR_PING_FIELDS, state)
    if row is None:
        got = sql.fetchone(f"WITH r AS ({run_sql}), m AS ({monitor_sql}) SELECT * FROM r, m",
                           [*run_params, *monitor_params])
    else:
        ping_sql, ping_params = sql.insert_statement(row, PING_FIELDS,
                                                     {"run_id": "(SELECT id FROM r)"})
        got = sql.fetchone(f"WITH r AS ({run_sql}), m AS ({monitor_sql}), p AS ({ping_sql}) "
                           "SELECT * FROM r, m, p", [*run_params, *monitor_params, *ping_params])
    if got is None:
        raise RuntimeError(f"run {run.pk} of monitor {monitor.pk} was deleted meanwhile")
    if run.pk is None:
        sql.saved(run, got[0])
    for name, value in zip(state, got[1:1 + len(state)], strict=True):
        setattr(monitor, name, value)
    if row is not None:
        sql.saved(row, got[-1])
        row.run = run
    return row


def _open(runs: list[Run]) -> list[Run]:
    return [r for r in runs if r.outcome in Run.OPEN_OUTCOMES and r.ended_at is None]


def _with_rid(runs: list[Run], rid: UUID) -> Run | None:
    return next((r for r in runs if r.rid == rid), None)


def _start(monitor: Monitor, ping: PingInput, now: datetime, runs: list[Run],
           found: list, slot: datetime | None, claimed: frozenset[datetime]
           ) -> tuple[Run, bool]:
    """The run a start ping opens, in memory (written by :func:`_write`; runs it
    replaces are written here): (run, duplicate). ``runs``: from
    :func:`pending_runs` with the ping's rid and ``slot`` (the one it named, if
    any: the run is that slot's even when the slot already has a run); claimed: as
    for :func:`slots.slot_for`. A second run of a cron slot is a ``double_launch``
    (:func:`_launched`), which under ``forbid`` takes the place of the ``overlap``."""
    if ping.rid:
        existing = _with_rid(runs, ping.rid)
        if existing is not None:
            return existing, True
    open_runs = _open(runs)
    if launched := _launched(monitor, slot, runs, claimed, now):
        found.append(launched)  # under forbid, instead of the overlap
    elif open_runs and monitor.concurrency == Monitor.Concurrency.FORBID:
        found.append(Detection(
            Kind.OVERLAP, now,
            f"a run started while {len(open_runs)} earlier run(s) were still open "
            "(concurrency: forbid)",
            detail={"open_runs": [r.pk for r in open_runs]},
        ))
    if open_runs and monitor.concurrency == Monitor.Concurrency.REPLACE:
        for r in open_runs:
            r.outcome, r.ended_at = Run.Outcome.REPLACED, now
        Run.objects.bulk_update(open_runs, ["outcome", "ended_at"])
    run = _new_run(monitor, ping.rid, now, runs, slot, claimed)
    run.started_at = now
    run.outcome = Run.Outcome.RUNNING
    run.timeout_at = now + monitor.max_runtime if monitor.max_runtime else None
    monitor.last_start_at = now
    return run, False


def double_launch(slot_runs: list[Run], max_attempts: int) -> tuple[Code, Run | None] | None:
    """Whether a run starting for a slot that already has ``slot_runs`` (its runs,
    not a written-off row; oldest first) is a double launch: (why, the run it
    concerns), else None. Another of them still open (``open_run``), one that
    succeeded (``succeeded``), or more runs than ``max_attempts`` (``attempts``).
    Pure: the caller finds the slot's runs, however the slot was chosen."""
    still_open = [r for r in slot_runs if r.outcome in Run.OPEN_OUTCOMES and r.ended_at is None]
    if still_open:
        return Code.OPEN_RUN, still_open[-1]
    succeeded = [r for r in slot_runs if r.outcome == Run.Outcome.SUCCEEDED]
    if succeeded:
        return Code.SUCCEEDED, succeeded[-1]
    if len(slot_runs) + 1 > max_attempts:
        return Code.ATTEMPTS, None
    return None


def _slot_runs(monitor: Monitor, slot: datetime | None, runs: list[Run],
               claimed: frozenset[datetime] = frozenset()) -> list[Run]:
    """The runs cron slot ``slot`` already has (oldest first), for
    :func:`double_launch`. Nothing is read when the slot is the expected one or later
    and not in ``claimed`` (slots before ``next_expected_at`` are accounted for, a
    run or written off; from it on only the ``claimed`` ones, if a slot assignment
    lets a run take a later slot first, have a run) or was written off (no run
    started for it); else one query (a retry, a second run of a slot: not a plain
    start). Interval monitors: none (each run makes its own slot)."""
    if (monitor.kind != Monitor.Kind.CRON or slot is None or monitor.next_expected_at is None
            or (slot >= monitor.next_expected_at and slot not in claimed)
            or any(r.slot_at == slot and r.outcome in Run.WRITTEN_OFF for r in runs)):
        return []
    return list(history.of_slots(monitor, [slot]).exclude(outcome__in=Run.WRITTEN_OFF)
                .order_by("pk"))


def _launched(monitor: Monitor, slot: datetime | None, runs: list[Run],
              claimed: frozenset[datetime], now: datetime) -> Detection | None:
    """The ``double_launch`` detection (coded) of a new run for ``slot``, when
    :func:`double_launch` says it is one, else None (``runs``, ``claimed``: as for
    :func:`_slot_runs`)."""
    slot_runs = _slot_runs(monitor, slot, runs, claimed)
    launched = double_launch(slot_runs, monitor.max_attempts)
    if launched is None:
        return None
    code, other = launched
    attempt = len(slot_runs) + 1
    facts = {"attempt": attempt, "slot": slot, "max_attempts": monitor.max_attempts}
    if code == Code.OPEN_RUN:
        facts["since"] = other.started_at
    elif code == Code.SUCCEEDED:
        facts["at"] = other.ended_at
    return Detection(Kind.DOUBLE_LAUNCH, now, sentence(code, monitor.timezone, **facts),
                     detail={"code": code.value, "slot": slot.isoformat(), "attempt": attempt,
                             **({"other_run": other.pk} if other is not None else {})})


def _end(monitor: Monitor, ping: PingInput, now: datetime, runs: list[Run], found: list,
         slot: datetime | None, claimed: frozenset[datetime], *,
         slot_named: bool = False) -> tuple[Run, bool]:
    """The run an end ping closes, closed in memory (written by :func:`_write`):
    (run, duplicate). ``runs``: from :func:`pending_runs` with the ping's rid and
    ``slot``; slot_named: the ping named ``slot``: without a rid it closes that
    slot's most recently started open run. A run with no start (nothing to close)
    for a cron slot that already has a succeeded run, or ``max_attempts`` runs, is
    a ``double_launch`` as a second start is (added to ``found``)."""
    if ping.rid:
        run = _with_rid(runs, ping.rid)
        if run is not None and run.ended_at is not None:
            return run, True
    else:  # the most recently started open run (one without started_at counts as oldest)
        candidates = [r for r in _open(runs) if not slot_named or r.slot_at == slot]
        run = max(candidates, key=lambda r: (r.started_at or NEVER, r.pk), default=None)
    if run is None:
        # read before _new_run moves next_expected_at past the slot (no query for an
        # on-time end-only run); an unknown rid's run (slot None here): not judged
        if launched := _launched(monitor, slot, runs, claimed, now):
            found.append(launched)
        run = _new_run(monitor, ping.rid, now, runs, slot, claimed)
    run.ended_at = now
    run.exit_status = ping.exit_status
    run.outcome = Run.Outcome.FAILED if _failed(ping) else Run.Outcome.SUCCEEDED
    return run, False


def _failed(ping: PingInput) -> bool:
    return ping.kind == Ping.Kind.FAIL or ping.exit_status not in (None, 0)


def _judge(monitor: Monitor, ping: PingInput, run: Run, now: datetime) -> Detection | None:
    """What the run an end ping closed (written: its id is known, and the
    queries of :func:`_attempt` and :func:`drift.slow` see it) says:
    ``failed`` (at its last attempt; else None), ``too_fast``, ``slow`` or ``recovered``."""
    if _failed(ping):
        attempt = _attempt(monitor, run)
        if attempt < monitor.max_attempts:  # a later attempt may still succeed
            return None
        of = "" if monitor.max_attempts <= 1 else (
            f", attempt {attempt} of {monitor.max_attempts}" if attempt <= monitor.max_attempts
            else f", attempt {attempt}: more than max_attempts ({monitor.max_attempts})")
        return Detection(Kind.FAILED, now, f"run failed{_status(ping)}{of}",
                         detail={"run": run.pk, "exit_status": ping.exit_status})
    if monitor.min_runtime and run.duration is not None and run.duration < monitor.min_runtime:
        return Detection(
            Kind.TOO_FAST, now,
            f"run succeeded after {run.duration.total_seconds():.0f}s, "
            f"less than min_runtime {monitor.min_runtime.total_seconds():.0f}s",
            detail={"run": run.pk, "duration": run.duration.total_seconds()})
    # slot and first ping: an incident of skipped slots or a double launch resolves
    # only on a run that started after them (alerts.incidents)
    first = run.started_at or run.ended_at
    # a run much slower than usual is a problem, not a recovery (slow_factor)
    return (drift.slow(monitor, run, now)
            or Detection(Kind.RECOVERED, now, "a run succeeded", detail={
                "run": run.pk, "slot": run.slot_at.isoformat() if run.slot_at else None,
                "first_ping": first.isoformat()}))


def _status(ping: PingInput) -> str:
    return f" (exit status {ping.exit_status})" if ping.exit_status is not None else ""


def _attempt(monitor: Monitor, run: Run) -> int:
    """Which failed attempt of its slot ``run`` is (1 without ``max_attempts``).

    cron: the failed runs of the same slot. interval (whose slots follow the runs):
    the failed runs in a row up to this one, since the last run that did not fail.
    """
    if monitor.max_attempts <= 1 or run.slot_at is None:
        return 1
    if monitor.kind == Monitor.Kind.CRON:
        return history.of_slots(monitor, [run.slot_at]).filter(
            outcome=Run.Outcome.FAILED).count()
    latest = (history.runs_newest_first(monitor).exclude(outcome__in=Run.OPEN_OUTCOMES)
              .values_list("outcome", flat=True)[:monitor.max_attempts])
    streak = 0
    for outcome in latest:
        if outcome != Run.Outcome.FAILED:
            break
        streak += 1
    return streak


def _new_run(monitor: Monitor, rid: UUID | None, now: datetime, runs: list[Run],
             slot: datetime | None, claimed: frozenset[datetime]) -> Run:
    """An unsaved run for the slot ``now`` belongs to; advances the expected slot
    (:func:`slots.advance`: never past a slot that has no run yet).

    A run arriving for a slot already written off (``missed``, ``skipped``, or
    ``unknown`` during an outage) takes over that row, so the slot's history shows what
    really happened. ``slot``: :func:`slots.slot_for` at ``now`` (or the slot
    the ping named), when the caller computed it and :func:`pending_runs` read its
    written-off row with ``runs``; None: computed here and the row looked up.
    claimed: as for :func:`slots.slot_for`.
    """
    if slot is None:  # an end ping with a rid no run has: rare
        slot = slots.slot_for(monitor, now, claimed)
        runs = list(Run.objects.filter(monitor=monitor, slot_at=slot,
                                       outcome__in=Run.WRITTEN_OFF)[:1])
    taken = [r for r in runs if r.slot_at == slot and r.outcome in Run.WRITTEN_OFF]
    run = taken[0] if taken else sql.new(Run, monitor=monitor, slot_at=slot)
    run.rid, run.reason = rid, ""  # a written-off row taken over is no longer unknown
    if monitor.deadline:
        run.deadline_at = slot + monitor.deadline
        run.deadline_checked = False
    monitor.next_expected_at = slots.advance(monitor, slot, now, claimed)
    return run


CREATE_DEFAULTS = {"period": 86400, "grace": 3600}  # as Healthchecks: daily, 1 h grace


def create_on_ping(project_id: int, slug: str, params, now: datetime,
                   slot: datetime | None = None) -> tuple[int, bool]:
    """The monitor ``slug`` of project ``project_id``, made if it does not exist
    (``/ping/<ping key>/<slug>?create=1``): (monitor id, created). slot: the slot
    the ping names (``?slot=``), checked against the new monitor before it is
    made (:func:`slots.named_slot`), so a refused ping makes no monitor either.

    params: the ping's query parameters: ``schedule`` (a cron expression: a cron
    monitor) and ``timezone``, else ``period`` (seconds, default 1 day); ``grace``
    (seconds, default 1 hour). Raises ValueError with a message for a bad slug or
    parameter, :class:`SlotError` for a slot the new monitor cannot have,
    :class:`accounts.plans.PlanLimit` when the plan allows no more monitors
    (nothing is made). The new
    monitor notifies all the project's channels, as the API's default does. Two
    pings creating the same slug at once make one monitor.
    """
    existing = Monitor.objects.filter(project_id=project_id, slug=slug,
                                      deleted_at__isnull=True).values_list("pk", flat=True)
    if found := existing.first():
        return found, False
    if not (len(slug) <= 100 and all(c.isascii() and (c.isalnum() or c in "-_") for c in slug)):
        raise ValueError("a new monitor's slug is letters, digits, - and _ (at most 100)")
    if params.get("schedule") and params.get("period"):
        raise ValueError("give schedule (a cron monitor) or period (an interval one), not both")
    fields = {"name": slug, "slug": slug, "kind": Monitor.Kind.INTERVAL, "timezone": "UTC"}
    seconds = {}
    for name in ("period", "grace"):
        raw = params.get(name, str(CREATE_DEFAULTS[name]))
        if not (raw.isascii() and raw.isdigit() and 1 <= int(raw) <= 10 * 365 * 86400):
            raise ValueError(f"{name} must be a whole number of seconds from 1 to 315360000")
        seconds[name] = int(raw)
    try:
        fields["timezone"] = params.get("timezone") or "UTC"
        schedule.validate_timezone(fields["timezone"])
        if params.get("schedule"):
            fields.update(kind=Monitor.Kind.CRON, schedule=schedule.validate_cron(
                params["schedule"], fields["timezone"], Monitor.Semantics.DEBIAN))
        else:
            fields["period"] = timedelta(seconds=seconds["period"])
    except schedule.ScheduleError as exc:
        raise ValueError(str(exc)) from None
    monitor = Monitor(project_id=project_id, grace=timedelta(seconds=seconds["grace"]),
                      **fields)
    if slot is not None:
        slots.named_slot(monitor, slot, now)  # SlotError (a ValueError): made nothing
    try:
        creation.create(Project.objects.select_related("organisation").get(pk=project_id),
                        monitor, now)
    except IntegrityError:  # another ping made it first
        return existing.get(), False
    log.info("monitor %s created by a ping (slug %s)", monitor.pk, slug)
    return monitor.pk, True
