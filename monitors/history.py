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

from datetime import UTC, datetime

from django.conf import settings
from django.db import connection
from django.db.models import DateTimeField, F, Func, Q, QuerySet, Value
from django.db.models.functions import Coalesce

from monitors.models import Monitor, Ping, PingLog, Run

NEGATIVE_INFINITY = datetime(1, 1, 1)  # noqa: DTZ001  (a naive UTC hour, as PostgreSQL's)


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


def runs(monitor: Monitor | int) -> QuerySet:
    """The runs of ``monitor`` annotated with ``at`` (:func:`run_time`) and, on
    PostgreSQL, ``hour`` (its UTC hour); unordered: see :func:`newest_first`."""
    qs = Run.objects.filter(monitor=monitor).annotate(at=run_time())
    return qs.annotate(hour=Hour(run_time())) if _pg() else qs


def newest_first(qs: QuerySet, time: str = "at") -> QuerySet:
    """``qs`` (from :func:`runs` or :func:`pings`) newest first: by the hour (on
    PostgreSQL, the index's key), the time ``time``, then the id, all descending."""
    keys = [F(time).desc(nulls_last=True), F("pk").desc()]
    return qs.order_by(F("hour").desc(nulls_last=True), *keys) if _pg() else qs.order_by(*keys)


def runs_newest_first(monitor: Monitor | int) -> QuerySet:
    """:func:`runs` newest first (index: run_monitor_hour / run_monitor_time)."""
    return newest_first(runs(monitor))


def pings(monitor: Monitor | int) -> QuerySet:
    """Every stored ping of ``monitor`` (:class:`PingLog`): ping rows and pings
    kept in runs, whatever their age; unordered."""
    return PingLog.objects.filter(monitor=monitor)


def pings_newest_first(monitor: Monitor | int) -> QuerySet:
    """:func:`pings` newest first (time, then id)."""
    return newest_first(pings(monitor), "received_at")


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


def keep_count(monitor: Monitor) -> int:
    """How many pings ``monitor`` keeps: its plan's ``pings_kept``, else
    ``CRONRADAR_KEEP_PINGS``."""
    plan = getattr(monitor.project.organisation, "plan", None) if monitor.project_id else None
    kept = getattr(plan, "pings_kept", None) if plan is not None else None
    return settings.CRONRADAR_KEEP_PINGS if kept is None else kept


def kept_pings(monitor: Monitor, keep: int | None = None) -> QuerySet:
    """The pings ``monitor`` still has, newest first: its newest ``keep`` (default
    :func:`keep_count`) of :func:`pings`, in one statement. Ping rows are pruned to
    that many (:mod:`monitors.retention`); a ping kept in its run stays as long as
    the run but counts as a ping only while it is among the newest ``keep``.

    On PostgreSQL the hour is bounded below by the ``keep``-th newest ping row's
    (its newest ``keep`` pings are all at least that recent), so a monitor whose
    runs keep no pings is not read through its whole run history."""
    keep = keep_count(monitor) if keep is None else keep
    qs = pings(monitor)
    if _pg():
        nth = (Ping.objects.filter(monitor=monitor).order_by("-received_at", "-pk")
               .annotate(h=Hour("received_at")).values("h")[keep - 1:keep])
        from django.db.models import Subquery
        qs = qs.filter(hour__gte=Coalesce(Subquery(nth), Value(NEGATIVE_INFINITY,
                                                               output_field=DateTimeField())))
    ids = newest_first(qs, "received_at").values("pk")[:keep]
    return newest_first(PingLog.objects.filter(monitor=monitor, pk__in=ids), "received_at")


def latest_ping(monitor: Monitor | int) -> PingLog | None:
    """The newest stored ping of ``monitor``, or None."""
    return pings_newest_first(monitor).first()


def latest_run(monitor: Monitor | int) -> Run | None:
    """The newest run of ``monitor`` by time (:func:`run_time`), or None."""
    return runs_newest_first(monitor).first()


def newest_runs_of(monitor_ids: list[int], n: int, fields: tuple[str, ...] = ()) -> list:
    """The newest ``n`` runs (by time) of each monitor in ``monitor_ids``, as
    :class:`Run` instances (or ``fields`` value tuples), grouped by monitor in the
    order given, each newest first. One statement: a UNION ALL of each monitor's
    LIMIT (each an index range)."""
    if not monitor_ids or n <= 0:
        return []
    parts = [runs_newest_first(pk)[:n] for pk in monitor_ids]
    if fields:
        parts = [p.values_list(*fields) for p in parts]
    if len(parts) == 1:
        return list(parts[0])
    return list(parts[0].union(*parts[1:], all=True))
