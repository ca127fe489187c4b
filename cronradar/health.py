"""Readiness: whether this CronRadar can do its work now (docs/operations.md#health).

:func:`check` reads the parts at a time ``now``, each a :class:`Part` (a coded
:class:`Status` and, when it is not ``ok``, a short sentence with figures):

- ``database``: the first read answers (``unreachable`` otherwise; the parts that
  read the database are then ``unknown``).
- ``migrations``: every migration this code has is recorded as applied (its
  apps' leaf migrations, found once per process; ``unapplied`` otherwise).
- ``redis``: a ``PING`` with a short timeout when ``REDIS_URL`` is set
  (``unreachable``), ``off`` when it is not.
- ``evaluator``: its last tick is at most ``CRONRADAR_READY_EVALUATOR_LAG``
  seconds old, and no monitor has been due for longer than that (``stalled``
  either way: stopped, or ticking but far behind). With liveness off
  (``CRONRADAR_LIVENESS_INTERVAL=0``) no tick is recorded: ``off``, unless the
  due monitors show it stalled.
- ``deliveries``: the oldest delivery that could be sent now
  (:func:`alerts.backlog.oldest_claimable`) has waited at most
  ``CRONRADAR_READY_DELIVERY_LAG`` seconds (``backlog``).

Four small reads of the database (one when only ``database`` and ``migrations``
are asked for) and one Redis round trip. :func:`check` never raises for what it
finds: an unexpected error becomes that part's ``unknown`` with its reason.

:func:`readyz` answers ``GET /readyz`` with them (:mod:`cronradar.probes` routes it
there, ahead of Django); :class:`ReadinessCollector` exports them as
``cronradar_ready{part}``. Both read through :func:`check_within`: on the probes'
background thread (:mod:`cronradar.guard`), waited for at most
``CRONRADAR_READY_TIMEOUT`` seconds, so that a database that does not answer
never holds a request thread.
"""
from __future__ import annotations

import functools
import json
import logging
import math
from collections.abc import Callable, Iterable, Iterator
from contextlib import nullcontext, suppress
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from urllib.parse import parse_qs

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily

from alerts import backlog
from cronradar import guard
from monitors import evaluator, liveness

log = logging.getLogger(__name__)
DATABASE, MIGRATIONS, REDIS, EVALUATOR, DELIVERIES = PARTS = (
    "database", "migrations", "redis", "evaluator", "deliveries")
REDIS_TIMEOUT = 0.5  # seconds to connect and to answer PING: a probe must not hang
NAMED = 3  # unapplied migrations named in the detail
UNREACHED = "the database is unreachable"  # why the parts it holds are unknown


class Status(StrEnum):
    """A part's state. ``ok`` and ``off`` are ready; every other one is a failure."""

    OK = "ok"
    """Working."""
    OFF = "off"
    """Not configured (no ``REDIS_URL``; liveness off): nothing to check, not a failure."""
    UNREACHABLE = "unreachable"
    """The database or Redis did not answer."""
    UNAPPLIED = "unapplied"
    """Migrations of this code are not applied to the database."""
    STALLED = "stalled"
    """The evaluator has not ticked, or has fallen behind, for longer than allowed."""
    BACKLOG = "backlog"
    """A delivery that could be sent now has waited longer than allowed."""
    UNKNOWN = "unknown"
    """Could not be read: the database is unreachable, or an unexpected error."""


READY = (Status.OK, Status.OFF)


@dataclass(frozen=True)
class Part:
    """One part's reading: ``status`` (a :class:`Status`) and ``detail``, empty or
    a short sentence saying why, with figures (``last tick 45 s ago (limit 30 s)``)."""

    status: Status
    detail: str = ""

    @property
    def failing(self) -> bool:
        """True unless ``ok`` or ``off``."""
        return self.status not in READY


OK = Part(Status.OK)


def check(now: datetime, parts: Iterable[str] | None = None) -> dict[str, Part]:
    """Read the readiness parts at ``now``: ``{part: Part}`` in :data:`PARTS` order,
    of ``parts`` only when given (names from :data:`PARTS`; ValueError for any
    other). Never raises otherwise (see the module docstring)."""
    wanted = PARTS if parts is None else _known(parts)
    out: dict[str, Part] = {}
    if {DATABASE, MIGRATIONS, EVALUATOR, DELIVERIES} & set(wanted):
        out[DATABASE], out[MIGRATIONS] = _database()
        reachable = out[DATABASE].status == Status.OK
        for name, read in ((EVALUATOR, _evaluator), (DELIVERIES, _deliveries)):
            if name in wanted:
                out[name] = (_guarded(read, now) if reachable
                             else Part(Status.UNKNOWN, UNREACHED))
    if REDIS in wanted:
        out[REDIS] = _redis()
    return {name: out[name] for name in PARTS if name in wanted}


def check_within(now: datetime, parts: Iterable[str] | None = None) -> dict[str, Part]:
    """:func:`check`, its reads waited for at most ``CRONRADAR_READY_TIMEOUT``
    seconds (:func:`cronradar.guard.within`): what the probes answer. When the
    database reads do not answer in time, or an earlier one is still stuck, at
    once :func:`silent`. ``redis`` alone (no database read) is checked inline:
    its own timeouts bound it. ValueError for an unknown part name."""
    wanted = PARTS if parts is None else _known(parts)
    if not {DATABASE, MIGRATIONS, EVALUATOR, DELIVERIES} & set(wanted):
        return check(now, wanted)
    answered, results = guard.within(lambda: check(now, wanted))
    return results if answered else silent(wanted)


def silent(parts: Iterable[str]) -> dict[str, Part]:
    """The answer when the database reads did not answer within
    ``CRONRADAR_READY_TIMEOUT``: ``database`` is ``unreachable`` (``no answer
    within 1 s``), every other part of ``parts`` ``unknown``."""
    waited = f"{settings.CRONRADAR_READY_TIMEOUT:g}"
    late = {DATABASE: Part(Status.UNREACHABLE, f"no answer within {waited} s"),
            REDIS: Part(Status.UNKNOWN, f"not checked: the database did not answer "
                                        f"within {waited} s")}
    return {name: late.get(name, Part(Status.UNKNOWN, UNREACHED))
            for name in PARTS if name in set(parts)}


def _known(parts: Iterable[str]) -> tuple[str, ...]:
    parts = tuple(parts)
    if unknown := [p for p in parts if p not in PARTS]:
        raise ValueError(f'unknown part "{unknown[0]}": use {", ".join(PARTS)}')
    return parts


# --- database and migrations ----------------------------------------------------------

@functools.cache
def leaves() -> frozenset[tuple[str, str]]:
    """The ``(app, name)`` of every app's last migrations on disk: when they are
    recorded, all are applied. Read once per process (loading the migration files
    takes a good part of a second)."""
    return frozenset(MigrationLoader(None, ignore_no_migrations=True).graph.leaf_nodes())


def _database() -> tuple[Part, Part]:
    """The ``database`` and ``migrations`` parts, from one read of django_migrations."""
    try:
        wanted, broken = leaves(), None
    except Exception as exc:  # noqa: BLE001  (a migration file that does not load)
        wanted, broken = frozenset(), exc
    try:
        recorded = _recorded(wanted)
    except Exception as exc:  # noqa: BLE001  (whatever the driver raises: the probe answers)
        return _unreadable(exc)
    if broken is not None:
        return OK, _failed(broken)
    missing = sorted(f"{app}.{name}" for app, name in wanted - recorded)
    if not missing:
        return OK, OK
    more = f" and {len(missing) - NAMED} more" if len(missing) > NAMED else ""
    return OK, Part(Status.UNAPPLIED, f"not applied: {', '.join(missing[:NAMED])}{more}")


def _recorded(wanted: frozenset[tuple[str, str]]) -> set[tuple[str, str]]:
    """Which of ``wanted`` django_migrations records. A connection cut while idle
    (a database restart: this process's persistent connection is broken) is
    closed and the read tried once more on a new one."""
    def read():
        # django_migrations has no index but its key: it is a few hundred rows
        with _isolated():
            rows = MigrationRecorder.Migration.objects.values_list("app", "name")
            if not wanted:  # the leaves are unknown: whether the database answers
                return set(rows[:1]) & wanted
            return set(rows.filter(app__in={a for a, _ in wanted},
                                   name__in={n for _, n in wanted})) & wanted

    try:
        return read()
    except (InterfaceError, OperationalError):
        if connection.in_atomic_block or connection.vendor != "postgresql":
            raise
        connection.close()
        return read()


def _unreadable(exc: Exception) -> tuple[Part, Part]:
    """The first read failed with ``exc``: a database never migrated (no
    django_migrations table) answers, anything else is unreachable. Whether the
    table is there is asked only on a connection that opened (not a third wait
    for a database that does not answer)."""
    migrated = True
    if connection.connection is not None:
        try:
            with _isolated():
                migrated = MigrationRecorder(connection).has_table()
        except Exception:  # noqa: BLE001  (the connection broke: it does not answer)
            pass
    if not migrated:
        return OK, Part(Status.UNAPPLIED, "no migration applied")
    if not connection.in_atomic_block:
        with suppress(Exception):  # closing a broken connection may raise too
            connection.close()  # the next probe starts on a new connection
    return Part(Status.UNREACHABLE, _first_line(exc)), Part(Status.UNKNOWN, UNREACHED)


def _isolated():
    """A savepoint when called inside a transaction, so that a failing read does
    not break the caller's transaction (PostgreSQL refuses every later statement
    of a transaction after an error); nothing otherwise (no statements added)."""
    return transaction.atomic() if connection.in_atomic_block else nullcontext()


# --- the evaluator and the deliveries -----------------------------------------------

def _evaluator(now: datetime) -> Part:
    limit = timedelta(seconds=settings.CRONRADAR_READY_EVALUATOR_LAG)
    if liveness.enabled():
        last = liveness.last_beat(liveness.EVALUATOR)
        if last is None:
            return Part(Status.STALLED, "no tick recorded")
        if now - last > limit:
            return Part(Status.STALLED, f"last tick {_s(now - last)} s ago (limit {_s(limit)} s)")
    # ticking is not enough: a tick that never catches up leaves monitors due
    due = evaluator.oldest_due(now)
    if due is not None and now - due > limit:
        return Part(Status.STALLED, f"a monitor has been due for {_s(now - due)} s "
                                    f"(limit {_s(limit)} s)")
    return OK if liveness.enabled() else Part(Status.OFF)


def _deliveries(now: datetime) -> Part:
    limit = timedelta(seconds=settings.CRONRADAR_READY_DELIVERY_LAG)
    oldest = backlog.oldest_claimable(now)
    if oldest is not None and now - oldest > limit:
        return Part(Status.BACKLOG, f"the oldest delivery that can be sent has waited "
                                    f"{_s(now - oldest)} s (limit {_s(limit)} s)")
    return OK


def _guarded(read: Callable[[datetime], Part], now: datetime) -> Part:
    """``read(now)``, or ``unknown`` with the reason of whatever it raised."""
    try:
        with _isolated():
            return read(now)
    except Exception as exc:  # noqa: BLE001  (readiness answers; the reason says what broke)
        log.warning("readiness: %s could not be read: %s", read.__name__.strip("_"),
                    _failed(exc).detail)
        return _failed(exc)


def _failed(exc: Exception) -> Part:
    """``unknown`` because of an unexpected ``exc``: its type and first line."""
    return Part(Status.UNKNOWN, f"{type(exc).__name__}: {_first_line(exc)}")


# --- Redis ------------------------------------------------------------------------------

def _redis() -> Part:
    if not settings.REDIS_URL:
        return Part(Status.OFF)
    try:
        _redis_client(settings.REDIS_URL).ping()
    except Exception as exc:  # noqa: BLE001  (refused, timed out, a bad URL: not reachable)
        return Part(Status.UNREACHABLE, _first_line(exc))
    return OK


@functools.lru_cache(maxsize=4)
def _redis_client(url: str):
    """One client (and connection pool) per process and URL; no retries: the
    probe's answer is the first attempt's."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return redis.Redis.from_url(url, socket_timeout=REDIS_TIMEOUT,
                                socket_connect_timeout=REDIS_TIMEOUT,
                                retry=Retry(NoBackoff(), 0), retry_on_timeout=False)


# --- helpers ------------------------------------------------------------------------------

def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0].strip()[:200] if text else type(exc).__name__


def _s(duration: timedelta) -> str:
    """Whole seconds, rounded up: ``45``, ``102`` (for 101.4 s), so that a figure
    past a whole limit never reads as the limit (``31 s ago (limit 30 s)``)."""
    return str(math.ceil(duration.total_seconds()))


# --- GET /readyz ------------------------------------------------------------------------

def readyz(environ: dict, start_response) -> list[bytes]:
    """``GET /readyz`` (WSGI; also ``HEAD``): ``200`` with ``{part: status}`` when
    every part is ``ok`` or ``off``, else ``503`` with the same keys and
    ``"detail": {part: sentence}`` for the failing ones. ``?parts=a,b`` checks
    only those (an unknown name: ``400``); other methods: ``405``. Never cached."""
    method = environ.get("REQUEST_METHOD", "GET")
    if method not in ("GET", "HEAD"):
        return _answer(start_response, "405 Method Not Allowed",
                       {"detail": f'Method "{method}" not allowed.'}, head=False,
                       extra=[("Allow", "GET, HEAD")])
    try:
        parts = _asked(environ.get("QUERY_STRING", ""))
    except ValueError as exc:
        return _answer(start_response, "400 Bad Request", {"parts": [str(exc)]}, method == "HEAD")
    results = check_within(timezone.now(), parts)
    body: dict = {name: str(part.status) for name, part in results.items()}
    failing = {name: part.detail for name, part in results.items() if part.failing}
    if failing:
        body["detail"] = failing
    return _answer(start_response, "503 Service Unavailable" if failing else "200 OK", body,
                   method == "HEAD")


def _asked(query: str) -> tuple[str, ...] | None:
    """``?parts=``: comma-separated names (the parameter may repeat); None when absent."""
    given = parse_qs(query, keep_blank_values=True).get("parts")
    if given is None:
        return None
    names = [n.strip() for value in given for n in value.split(",") if n.strip()]
    if not names:
        raise ValueError(f"name one or more of {', '.join(PARTS)}")
    return _known(names)


def _answer(start_response, status: str, body: dict, head: bool,
            extra: Iterable[tuple[str, str]] = ()) -> list[bytes]:
    data = json.dumps(body).encode()
    start_response(status, [("Content-Type", "application/json"),
                            ("Content-Length", str(len(data))),
                            ("Cache-Control", "no-store"), *extra])
    return [b"" if head else data]


# --- cronradar_ready{part} -------------------------------------------------------------

class ReadinessCollector:
    """A ``prometheus_client`` collector: ``cronradar_ready{part}``, 1 when the part
    is ``ok`` or ``off``, 0 when it fails, read by :func:`check_within` at each scrape
    (register it with ``registry.register(ReadinessCollector())``)."""

    def describe(self) -> Iterator[GaugeMetricFamily]:
        """The family without samples: registering reads nothing."""
        yield self._family()

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """One sample per part of :data:`PARTS`."""
        family = self._family()
        for name, part in check_within(timezone.now()).items():
            family.add_metric([name], 0 if part.failing else 1)
        yield family

    @staticmethod
    def _family() -> GaugeMetricFamily:
        return GaugeMetricFamily("cronradar_ready", "Whether a part of CronRadar is ready "
                                 "(1: ok or not configured, 0: failing; see /readyz).",
                                 labels=["part"])
