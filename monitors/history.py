"""Reading a monitor's run and ping history in time order, by index.

A run's time is its start, else its end, else its slot (:func:`run_time`); a
ping's is its arrival. Every reader of the history goes through here, newest
first, ties broken by the higher id first.

On PostgreSQL the runs' one time index is ``run_monitor_hour`` (monitor_id and
the UTC hour of the run's time: its repeated keys deduplicate to a few bytes a
run, issue 24's storage target), so a time-ordered read is an index range of
hours plus an Incremental Sort within each hour; every query here orders by the
hour first (:func:`hour_of`) and bounds it where it can. On SQLite the index is
``run_monitor_time`` (the time itself), so the hour is left out.

Pings: :class:`monitors.models.PingLog` reads the ping rows and the pings kept in
their run (a heartbeat's, on PostgreSQL) as one; :func:`kept_pings` are the
pings a monitor still has (its newest ``pings_kept``), newest first.
"""
from __future__ import annotations

import re
import threading
from datetime import UTC, datetime

from django.conf import settings
from django.db import connection
from django.db.models import DateTimeField, F, Func, Q, QuerySet, Subquery, Value
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce

from core import sql
from monitors import slots
from monitors.models import Monitor, Ping, PingLog, Run


class Hour(Func):
    """The UTC hour of a datetime expression, as run_monitor_hour indexes it:
    ``date_trunc('hour', x AT TIME ZONE 'UTC')`` on PostgreSQL (a naive UTC
    timestamp); on SQLite the text of the hour (used only in orderings that
    no index serves there: :func:`ordered` leaves it out)."""

    output_field = DateTimeField()

    def as_postgresql(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection,
                           template="date_trunc('hour', %(expressions)s AT TIME ZONE 'UTC')",
                           **extra)

    def as_sql(self, compiler, connection, **extra):
        if connection.vendor != "postgresql" and "template" not in extra:
            extra["template"] = "strftime('%%Y-%%m-%%d %%H:00:00', %(expressions)s)"
        return super().as_sql(compiler, connection, **extra)


def run_time():
    """A run's time: its start, else its end, else its slot (the expression both
    databases' time index hold, word for word)."""
    return Coalesce("started_at", "ended_at", "slot_at")


def hour_of(at: datetime):
    """The hour bound for ``at`` (aware): an expression comparable with
    ``Hour(run_time())`` and ``PingLog.hour``, folded to a constant by the planner
    (so it is an index condition)."""
    return Hour(Value(at.astimezone(UTC), output_field=DateTimeField()))


def _pg() -> bool:
    return connection.vendor == "postgresql"


def runs(monitor: Monitor | int | None) -> QuerySet:
    """The runs of ``monitor`` (None: of every monitor, to filter by
    :func:`not_after` and the like) annotated with ``at`` (:func:`run_time`) and,
    on PostgreSQL, ``hour`` (its UTC hour); unordered: see :func:`newest_first`."""
    qs = Run.objects.all() if monitor is None else Run.objects.filter(monitor=monitor)
    qs = qs.annotate(at=run_time())
    return qs.annotate(hour=Hour(run_time())) if _pg() else qs


def not_before(at: datetime) -> Q:
    """The condition on ``hour`` that every row whose time is ``at`` or later meets
    (always true on SQLite): the lower bound of an index range."""
    return Q(hour__gte=hour_of(at)) if _pg() else Q()


def not_after(at: datetime) -> Q:
    """The condition on ``hour`` (of :func:`runs` or :func:`pings`) that every row
    whose time is ``at`` or earlier meets (always true on SQLite): the upper
    bound of an index range."""
    return Q(hour__lte=hour_of(at)) if _pg() else Q()


def newest_first(qs: QuerySet, time: str = "at") -> QuerySet:
    """``qs`` (from :func:`runs` or :func:`pings`) newest first: by the hour (on
    PostgreSQL, the index's key), the time ``time``, then the id, all descending."""
    # plain DESC: a backward scan of the ascending index (nulls: none in practice)
    keys = [F(time).desc(), F("pk").desc()]
    return qs.order_by(F("hour").desc(), *keys) if _pg() else qs.order_by(*keys)


def runs_newest_first(monitor: Monitor | int) -> QuerySet:
    """:func:`runs` newest first (index: run_monitor_hour / run_monitor_time)."""
    return newest_first(runs(monitor))


def pings(monitor: Monitor | int) -> QuerySet:
    """Every stored ping of ``monitor`` (:class:`PingLog`): ping rows and pings
    kept in runs, whatever their age; unordered."""
    return PingLog.objects.filter(monitor=monitor)




def since(qs: QuerySet, at: datetime, time: str = "at") -> QuerySet:
    """Rows of ``qs`` whose ``time`` is ``at`` or later, bounded by hour."""
    qs = qs.filter(**{f"{time}__gte": at})
    return qs.filter(hour__gte=hour_of(at)) if _pg() else qs


def before(qs: QuerySet, at: datetime, time: str = "at", *, inclusive: bool = False
           ) -> QuerySet:
    """Rows of ``qs`` whose ``time`` is before ``at`` (or at it: ``inclusive``),
    bounded by hour."""
    qs = qs.filter(**{f"{time}__{'lte' if inclusive else 'lt'}": at})
    return qs.filter(hour__lte=hour_of(at)) if _pg() else qs


def older_than(qs: QuerySet, at: datetime, pk: int, time: str = "at") -> QuerySet:
    """Rows of ``qs`` after the row (``at``, ``pk``) newest first: earlier, or as
    old with a lower id (keyset paging)."""
    qs = qs.filter(Q(**{f"{time}__lt": at}) | Q(**{time: at, "pk__lt": pk}))
    return qs.filter(hour__lte=hour_of(at)) if _pg() else qs


# A run filed under a slot has a time (its first ping, or the slot itself) no
# earlier than this before the slot: a ping files its run under a fire time at most
# EARLY_TOLERANCE after it (early), or names one at most NAMED_AHEAD ahead (monitors.slots).
SLOT_LEAD = max(slots.NAMED_AHEAD, slots.EARLY_TOLERANCE)


def of_slots(monitor: Monitor | int, slot_times) -> QuerySet:
    """The runs (:func:`runs`) of ``monitor`` filed under any of ``slot_times``
    (non-empty), read from the earliest one's hour on (:data:`SLOT_LEAD`): not
    through the whole history."""
    slot_times = list(slot_times)
    return since(runs(monitor), min(slot_times) - SLOT_LEAD).filter(slot_at__in=slot_times)


def keep_count(monitor: Monitor) -> int:
    """How many pings ``monitor`` keeps: its organisation's plan's ``pings_kept``,
    else ``CRONRADAR_KEEP_PINGS``. No query when the monitor was read with
    ``select_related("project__organisation__plan")``, else one."""
    if (Monitor.project.is_cached(monitor)
            and type(monitor.project).organisation.is_cached(monitor.project)
            and type(monitor.project.organisation).plan.is_cached(monitor.project.organisation)):
        plan = monitor.project.organisation.plan
        kept = plan.pings_kept if plan is not None else None
    else:
        kept = (Monitor.objects.filter(pk=monitor.pk)
                .values_list("project__organisation__plan__pings_kept", flat=True).first())
    return settings.CRONRADAR_KEEP_PINGS if kept is None else kept


def newest_pings(monitor: Monitor | int, n: int) -> QuerySet:
    """The newest ``n`` of :func:`pings` of ``monitor``, newest first (sliced).

    On PostgreSQL the hour is bounded below by the ``n``-th newest ping row's (the
    newest ``n`` pings are all at least that recent), so a monitor whose runs keep
    no pings is not read through its whole run history (run_monitor_hour)."""
    qs = pings(monitor)
    if _pg():
        nth = (Ping.objects.filter(monitor=monitor).order_by("-received_at", "-pk")
               .annotate(h=Hour("received_at")).values("h")[n - 1:n])
        # no n-th ping row: every hour ('-infinity' is PostgreSQL's, of the naive
        # UTC type Hour gives; a Python value would be a naive datetime to Django)
        qs = qs.filter(hour__gte=Coalesce(Subquery(nth), RawSQL(
            "'-infinity'::timestamp", (), output_field=DateTimeField())))
    return newest_first(qs, "received_at")[:n]


def kept_pings(monitor: Monitor, keep: int | None = None) -> QuerySet:
    """The pings ``monitor`` still has, newest first: its newest ``keep`` (default
    :func:`keep_count`) of :func:`pings` (:func:`newest_pings`), one statement,
    unsliced (to filter and page). Ping rows are pruned to that many
    (:mod:`monitors.retention`); a ping kept in its run stays as long as the run
    but is listed as a ping only while it is among the newest ``keep``."""
    keep = keep_count(monitor) if keep is None else keep
    return newest_first(PingLog.objects.filter(
        monitor=monitor, pk__in=newest_pings(monitor, keep).values("pk")), "received_at")


def latest_ping(monitor: Monitor | int) -> PingLog | None:
    """The newest stored ping of ``monitor``, or None."""
    return next(iter(newest_pings(monitor, 1)), None)




# a monitor id no monitor has: :func:`_each` compiles a statement with it once and
# puts each monitor's id in its place
_SENTINEL = -(2**62) - 7
_CHUNK = 200  # parts a statement on SQLite (500 at most in one compound SELECT)


_compiled = threading.local()  # _each's compiled statements, by key, on this thread


def _each(make, monitor_ids: list[int], model, fields: tuple[str, ...] = (),
          key: tuple | None = None) -> list:
    """The rows of ``make(pk)`` (a sliced queryset of one monitor's rows) for every
    pk of ``monitor_ids``: ``make``'s SQL compiled once (the ORM compiling a
    queryset per monitor cost a batch of notifications more than everything else
    it did), each monitor's part an index range; the order of the rows is not
    kept. On PostgreSQL one statement, ``make``'s SQL as a ``LATERAL`` subquery of
    ``unnest`` of the ids, one text whatever their number, bound on the server
    (:mod:`core.sql`: psycopg prepares it; a ``UNION ALL`` of a part per monitor
    cost PostgreSQL 2-6 ms to plan at every batch); on SQLite that ``UNION ALL``,
    one statement per 200. ``fields`` given: value tuples of them; else ``model``
    instances (every concrete column read). ``key``: names what ``make`` builds (its
    SQL depends on nothing else but the database): the compiled statement is kept
    for the next call on this thread."""
    if not monitor_ids:
        return []
    names = fields or tuple(f.attname for f in model._meta.concrete_fields)
    cache = _compiled.__dict__.setdefault(connection.alias, {})
    compiled = cache.get((key, model, names)) if key is not None else None
    if compiled is None:
        compiler = make(_SENTINEL).values_list(*names).query.get_compiler(connection.alias)
        statement, params = compiler.as_sql()
        # the ORM's own conversions of each column (SQLite's datetimes, decimals...)
        converters = compiler.get_converters([col for col, *_ in compiler.select])
        holes = [i for i, p in enumerate(params) if p == _SENTINEL]
        assert holes, "the monitor id is not a parameter of the statement"
        if _pg():
            statement, params = _lateral(statement, params, holes, model, names), [
                p for i, p in enumerate(params) if i not in holes]
        compiled = compiler, statement, params, converters, holes
        if key is not None:
            cache[(key, model, names)] = compiled
    compiler, statement, params, converters, holes = compiled
    if _pg():
        found = sql.fetchall(statement, [list(monitor_ids), *params])
        rows = ([tuple(r) for r in compiler.apply_converters(found, converters)]
                if converters else found)
    else:
        rows = []
        for start in range(0, len(monitor_ids), _CHUNK):
            chunk = monitor_ids[start:start + _CHUNK]
            text = " UNION ALL ".join(f"SELECT * FROM ({statement}) u{i}"
                                      for i in range(len(chunk)))
            values = []
            for pk in chunk:
                values += [pk if i in holes else p for i, p in enumerate(params)]
            with connection.cursor() as cursor:
                cursor.execute(text, values)
                found = cursor.fetchall()
            rows += [tuple(r) for r in compiler.apply_converters(found, converters)] \
                if converters else found
    if fields:
        return rows
    return [model.from_db(connection.alias, names, row) for row in rows]


def _lateral(statement: str, params: list, holes: list[int], model, names: tuple[str, ...]
             ) -> str:
    """PostgreSQL: ``statement`` (one monitor's, its ``params``' ``holes`` that
    monitor's id) as a ``LATERAL`` subquery of each id of an array, the first
    placeholder; the columns ``names`` of ``model`` read as :func:`core.sql.read_as`
    says (what Django's converters expect of core.sql's binary results)."""
    parts, n = re.split(r"(%%|%s)", statement), 0
    for i, part in enumerate(parts):
        if part == "%s":
            if n in holes:
                parts[i] = "_m.id"
            n += 1
    assert n == len(params)
    fields = {f.attname: f for f in model._meta.concrete_fields}
    cols = [sql.read_as(fields[name], f"u.c{i}") if name in fields else f"u.c{i}"
            for i, name in enumerate(names)]
    return (f"SELECT {', '.join(cols)} FROM unnest(%s::bigint[]) AS _m(id) CROSS JOIN LATERAL "
            f"({''.join(parts)}) AS u({', '.join(f'c{i}' for i in range(len(names)))})")


def newest_runs_of(monitor_ids: list[int], n: int, fields: tuple[str, ...] = (),
                   where: Q | None = None) -> list:
    """The newest ``n`` runs (by time; those ``where`` picks) of each monitor in
    ``monitor_ids``, as :class:`Run` instances (or ``fields`` value tuples). One
    statement: a UNION ALL of each monitor's LIMIT, each an index range; the order
    of the rows is not kept (group them by monitor and sort)."""
    if n <= 0:
        return []

    def newest(pk):
        qs = runs_newest_first(pk)
        return (qs.filter(where) if where is not None else qs)[:n]

    return _each(newest, monitor_ids, Run, fields,
                 key=("newest_runs", n, where) if where is None or isinstance(where, Q) else None)


def newest_pings_of(monitor_ids: list[int]) -> dict[int, PingLog]:
    """Monitor id -> its newest stored ping (monitors without one left out), one
    statement for all of them (as :func:`newest_runs_of`)."""
    return {p.monitor_id: p for p in _each(lambda pk: newest_pings(pk, 1), monitor_ids, PingLog,
                                           key=("newest_pings",))}
