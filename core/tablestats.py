"""Table statistics kept current after a burst of inserts (PostgreSQL).

The hour-start burst inserts ten thousand incidents, events and deliveries into
tables that were nearly empty a moment before, faster than autovacuum looks at
them (``autovacuum_naptime``, 60 s by default). The plans the connections cached
for their prepared statements (generic plans, :mod:`core.sql`) were made for the
small table and stay until an ``ANALYZE`` of it invalidates them: a read of
deliveries by primary key became a sequential scan, 5.5 ms a call, and the
deliveries' cost to PostgreSQL grew with the backlog (issue 24).

So the writers of such tables report what they inserted (:func:`inserted`, inside
the transaction); once that transaction commits, a process that inserted at least
``MIN_ROWS`` rows into a table, and more than ``SCALE`` of the rows PostgreSQL
last counted in it (``pg_class.reltuples``), runs ``ANALYZE`` of it (:func:`due`
is that decision). At most one look a table every ``INTERVAL`` seconds per
process; one process at a time analyses a table (a transaction-level advisory
lock; the others skip), and never waits more than ``LOCK_TIMEOUT`` for the
table's lock (autovacuum may hold it). ``ANALYZE`` blocks no read or write. A
failure is logged and costs the caller nothing. On SQLite nothing is done.
"""
from __future__ import annotations

import logging
import threading
import time
from functools import partial

from django.db import connection, transaction

from core import sql

log = logging.getLogger(__name__)

MIN_ROWS = 1000  # rows a process inserted into a table since it last looked, at least
SCALE = 0.2  # ... and more than this fraction of the table's rows at its last ANALYZE
INTERVAL = 1.0  # seconds between two looks at one table, per process
LOCK_TIMEOUT = "100ms"  # waiting for the table's lock (autovacuum's) at most
_LOCK = 7_311_002  # pg_try_advisory_xact_lock(_LOCK, table oid): one analyser a table

_lock = threading.Lock()
_pending: dict[str, int] = {}  # table -> rows inserted by this process, not yet looked at
_looked: dict[str, float] = {}  # table -> time.monotonic() of this process's last look


def due(inserted: int, reltuples: float, min_rows: int = MIN_ROWS, scale: float = SCALE
        ) -> bool:
    """Whether a table into which ``inserted`` rows were inserted since its
    statistics were last looked at, and which held ``reltuples`` rows at its last
    ``ANALYZE`` (``pg_class.reltuples``: -1 for never analysed, read as 0), needs
    an ``ANALYZE`` now: at least ``min_rows`` rows and more than ``scale`` of
    ``reltuples``."""
    return inserted >= min_rows and inserted > scale * max(reltuples, 0.0)


def inserted(model, n: int) -> None:
    """Call inside the transaction that inserted ``n`` rows of ``model``: once it
    commits they count towards an ``ANALYZE`` of its table (see the module's
    docstring). Rolled back, they do not. Outside a transaction: at once."""
    if n <= 0 or sql.vendor() != "postgresql":
        return
    transaction.on_commit(partial(_committed, model._meta.db_table, n))


def _committed(table: str, n: int, clock=time.monotonic) -> bool:
    """Count ``n`` committed rows of ``table``; look at its statistics when this
    process inserted ``MIN_ROWS`` rows into it and its last look is ``INTERVAL``
    seconds old. Returns whether it ran ``ANALYZE``."""
    with _lock:
        pending = _pending[table] = _pending.get(table, 0) + n
        now = clock()
        if pending < MIN_ROWS or now - _looked.get(table, -INTERVAL) < INTERVAL:
            return False
        _looked[table] = now
    try:
        ran = analyze_if_due(table, pending)
    except Exception as exc:  # noqa: BLE001  (statistics are an optimisation, never the caller's error)
        log.warning("analysing %s failed (%s); looking again in %s s", table, exc, INTERVAL)
        return False
    if ran is not None:  # analysed (here or by another process): what came meanwhile stays
        with _lock:
            _pending[table] -= pending
    return bool(ran)


def analyze_if_due(table: str, pending: int) -> bool | None:
    """One look at ``table`` (a trusted name) into which ``pending`` rows were
    inserted: ``ANALYZE`` it if :func:`due` by ``pg_class.reltuples``, unless
    another process is analysing it or its lock is not free within
    ``LOCK_TIMEOUT`` (then it raises). Returns True when analysed, False when
    another process holds the lock (it analyses the table), None when not due (the
    rows stay pending)."""
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute("SELECT reltuples, oid::int FROM pg_class WHERE oid = %s::regclass",
                    [table])
        reltuples, oid = cur.fetchone()
        if not due(pending, reltuples):
            return None
        cur.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", [_LOCK, oid])
        if not cur.fetchone()[0]:
            return False  # another process analyses it now
        cur.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
        started = time.monotonic()
        cur.execute(f'ANALYZE "{table}"')
    log.info("analysed %s (%d rows inserted, %.0f counted before) in %.0f ms", table,
             pending, reltuples, (time.monotonic() - started) * 1000)
    return True
