"""Flapping: a monitor whose incidents open and resolve again and again.

A monitor that opens more than ``CRONRADAR_FLAPPING_INCIDENTS`` incidents within
an hour is marked flapping (``Alerting.flapping_since``): the incident that
crosses the line is notified once, saying so, and the incidents that open while
it flaps are recorded but not notified. Once ``CRONRADAR_FLAPPING_QUIET``
seconds (1 h) pass without a new incident, the tick ends it: a held-back
incident still open then is notified at once (the job is down now, not
flapping), a notified one that is still open escalates as usual; when all are
resolved, the monitor's channels (its first tier, with a policy) get one "stable
again" notice (event ``stable`` on the last notified incident: the one that
crossed the line, or a later one notified since).

This module decides and writes nothing: :func:`on_opening` says what an opening
incident means for the monitor's flapping, :func:`ending` what ending it does;
the incident state machine (:mod:`alerts.incidents`) writes both.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings

from alerts import batch
from alerts.models import Alerting, Incident
from alerts.timeline import alerting_of

WINDOW = timedelta(hours=1)
BATCH = 500  # monitors whose flapping may end, read per tick at most


def quiet() -> timedelta:
    """How long a flapping monitor must open no incident before it is stable."""
    return timedelta(seconds=settings.CRONRADAR_FLAPPING_QUIET)


@dataclass(frozen=True)
class Flap:
    """What an incident opening means: ``state`` "normal", "starts" (it crosses the
    line: notify it, saying so) or "flapping" (hold it back); ``recent``: incidents
    in the last hour with this one (0 while flapping); ``changes``: the fields of
    the monitor's :class:`Alerting` to set."""

    state: str
    recent: int
    changes: dict = field(default_factory=dict)


def on_opening(monitor, at: datetime) -> Flap:
    """The :class:`Flap` of an incident of ``monitor`` opening at ``at`` (row lock
    held)."""
    if alerting_of(monitor).flapping_since is not None:
        return Flap("flapping", 0, {"stable_check_at": at + quiet()})
    recent = batch.recent_incidents(monitor, at - WINDOW) + 1
    if recent <= settings.CRONRADAR_FLAPPING_INCIDENTS:
        return Flap("normal", recent)
    return Flap("starts", recent, {"flapping_since": at, "stable_check_at": at + quiet()})


def due(now: datetime) -> list[int]:
    """Ids of the monitors whose flapping may end at ``now`` (at most ``BATCH``)."""
    return list(Alerting.objects.filter(stable_check_at__lte=now)
                .values_list("monitor_id", flat=True)[:BATCH])


@dataclass(frozen=True)
class Ending:
    """What ending a monitor's flapping does (its Alerting's ``flapping_since`` and
    ``stable_check_at`` are cleared in any case): ``notify_now``, the id of a
    held-back incident still open, to be notified at once; ``stable``, the
    incident whose timeline gets the "stable again" notice; both None: nothing
    more (an open incident that was notified escalates as usual)."""

    notify_now: int | None = None
    stable: Incident | None = None


def ending(monitor) -> Ending:
    """The :class:`Ending` of ``monitor``'s flapping (its row lock held)."""
    last = Incident.objects.filter(monitor=monitor).order_by("-opened_at", "-pk").first()
    if last is None:
        return Ending()
    if last.resolved_at is None:
        return Ending(notify_now=last.pk if last.tier < 0 else None)
    # the one notified, saying "flapping", or a later one notified since
    crossed = (Incident.objects.filter(monitor=monitor, tier__gte=0)
               .order_by("-opened_at", "-pk").first())
    return Ending(stable=crossed)
