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
"""
from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction

from alerts import batch
from alerts.models import Alerting, Incident, IncidentEvent

WINDOW = timedelta(hours=1)


def quiet() -> timedelta:
    return timedelta(seconds=settings.CRONRADAR_FLAPPING_QUIET)


def on_opening(monitor, at: datetime) -> tuple[str, int]:
    """Called as an incident of ``monitor`` opens at ``at`` (row lock held):
    ("normal" | "starts" | "flapping", incidents in the last hour with this one).
    "starts": it crosses the line (notify it, saying so); "flapping": hold it back."""
    from alerts.escalation import alerting_of

    alerting = alerting_of(monitor)
    if alerting.flapping_since is not None:
        alerting.stable_check_at = at + quiet()
        alerting.save()
        return "flapping", 0
    recent = batch.recent_incidents(monitor, at - WINDOW) + 1
    if recent <= settings.CRONRADAR_FLAPPING_INCIDENTS:
        return "normal", recent
    alerting.flapping_since, alerting.stable_check_at = at, at + quiet()
    alerting.save()
    return "starts", recent


def check(now: datetime, notify) -> int:
    """End flapping that has been quiet long enough (the evaluator's tick); returns
    how many monitors it ended for."""
    due = list(Alerting.objects.filter(stable_check_at__lte=now)
               .values_list("monitor_id", flat=True)[:500])
    for monitor_id in due:
        with transaction.atomic():
            _end(monitor_id, now, notify)
    return len(due)


def _end(monitor_id: int, now: datetime, notify) -> None:
    from alerts import escalation, incidents
    from monitors.models import Monitor

    monitor = Monitor.objects.select_for_update().filter(pk=monitor_id).first()
    alerting = Alerting.objects.filter(monitor_id=monitor_id, stable_check_at__lte=now).first()
    if monitor is None or alerting is None:
        return
    alerting.flapping_since = alerting.stable_check_at = None
    alerting.save()
    last = Incident.objects.filter(monitor=monitor).order_by("-opened_at", "-pk").first()
    if last is None:
        return
    if last.resolved_at is None:
        if last.tier < 0:  # held back and down now: notify it at once
            Incident.objects.filter(pk=last.pk).update(next_escalation_at=now)
        return  # an open incident that was notified escalates as usual: not "stable"
    crossed = (Incident.objects.filter(monitor=monitor, tier__gte=0)
               .order_by("-opened_at", "-pk").first())  # the one notified, saying "flapping"
    if crossed is None:
        return
    at = incidents.stamp(crossed, now)
    event = IncidentEvent.objects.create(
        incident=crossed, kind=IncidentEvent.Kind.STABLE, at=at,
        step=f"stable:{int(at.timestamp())}",
        message=f"stable again: no new incident for {int(quiet().total_seconds())}s")
    crossed.save(update_fields=["last_event_at"])
    monitor.alerting = alerting
    notify(event, escalation.first_channels(monitor, lambda: incidents.targets(monitor)))
