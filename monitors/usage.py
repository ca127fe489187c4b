"""Ping counts in the database: the rate limiter's counters (:mod:`monitors.ratelimit`)
added each minute to :class:`~monitors.models.PingUsage` (per monitor per UTC month)
and to the monitors' ``dropped_pings``, and read back per month.

:func:`flush` runs every :data:`FLUSH_SECONDS`: a Celery beat entry in production
(``flush-ping-usage``: the counters are in Redis, any process may flush them) and a
thread of ``manage.py serve`` on the embedded default (the counters are that
process's memory).
"""
from __future__ import annotations

import logging
from datetime import date, datetime

from django.db import IntegrityError, transaction
from django.db.models import F, Sum
from redis.exceptions import RedisError

from monitors import ratelimit
from monitors.models import Monitor, PingUsage

log = logging.getLogger(__name__)
FLUSH_SECONDS = 60


def month_of(now: datetime) -> date:
    """The first day of ``now``'s UTC month (a :class:`PingUsage` row's ``month``)."""
    return date(now.year, now.month, 1)


def flush() -> int:
    """Add the counts since the last flush to the database; returns how many
    (monitor, month) rows were written. Counts of monitors deleted meanwhile are
    dropped. When the database write fails the counts go back to the counters
    (and the error is raised); Redis unreachable: nothing is flushed (logged once a
    minute, :data:`monitors.ratelimit.cache_down`), the counts wait in Redis."""
    try:
        counts = ratelimit.drain()
    except RedisError as exc:
        ratelimit.cache_down.failed(log, exc)
        return 0
    if not counts:
        return 0
    try:
        with transaction.atomic():
            alive = set(Monitor.objects.filter(pk__in={m for m, _ in counts})
                        .values_list("pk", flat=True))
            written = 0
            for (monitor_id, month), (accepted, refused) in sorted(counts.items()):
                if monitor_id not in alive:
                    continue
                _add(monitor_id, month, accepted, refused)
                if refused:
                    Monitor.objects.filter(pk=monitor_id).update(
                        dropped_pings=F("dropped_pings") + refused)
                written += 1
    except Exception:
        ratelimit.give_back(counts)
        raise
    return written


def _add(monitor_id: int, month: date, accepted: int, refused: int) -> None:
    row = PingUsage.objects.filter(monitor_id=monitor_id, month=month)  # the unique index
    if row.update(pings=F("pings") + accepted, refused=F("refused") + refused):
        return
    try:
        with transaction.atomic():  # savepoint: another flush may create it first
            PingUsage.objects.create(monitor_id=monitor_id, month=month, pings=accepted,
                                     refused=refused)
    except IntegrityError:
        row.update(pings=F("pings") + accepted, refused=F("refused") + refused)


def totals(monitors, month: date) -> dict[str, int]:
    """``{"pings": n, "refused": n}`` of the monitors of queryset ``monitors`` in
    ``month`` (flushed counts: at most a minute behind). One query."""
    got = PingUsage.objects.filter(monitor__in=monitors, month=month).aggregate(
        pings=Sum("pings"), refused=Sum("refused"))
    return {"pings": got["pings"] or 0, "refused": got["refused"] or 0}
