"""Bounded storage for incidents and notifications: old ones deleted in small
batches, off the ping path and the evaluator's tick (see :mod:`monitors.retention`
for pings and runs).

An incident resolved longer than ``CRONRADAR_INCIDENT_RETENTION_DAYS`` ago
(default 365) is deleted with its timeline events, deliveries and their attempts,
once none of its deliveries is still pending or being sent; so is a notice of no
incident (an outage summary, a test notification, a channel's health: see
:mod:`alerts.notices`) made longer ago than that, with its deliveries, and an
outage of CronRadar itself summarized longer ago than that, with its impacts. At
most ``CRONRADAR_PRUNE_BATCH`` incidents per statement.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction

from alerts.models import Delivery, Incident, IncidentEvent
from monitors.models import Outage

MAX_BATCHES = 20


def prune(now: datetime) -> int:
    """Delete what has aged out (see the module docstring); returns how many
    incidents, outages and notices were deleted."""
    before = now - timedelta(days=settings.CRONRADAR_INCIDENT_RETENTION_DAYS)
    batch = max(1, settings.CRONRADAR_PRUNE_BATCH // 10)  # each has events, deliveries
    old = (Incident.objects.filter(resolved_at__lt=before)
           .exclude(deliveries__status__in=Delivery.ACTIVE))
    deleted = 0
    for _ in range(MAX_BATCHES):
        ids = list(old.order_by("pk").values_list("pk", flat=True)[:batch])
        if not ids:
            break
        with transaction.atomic():
            Incident.objects.filter(pk__in=ids).delete()  # cascades
        deleted += len(ids)
    ids = list(Outage.objects.filter(summarized_at__lt=before).values_list("pk", flat=True)
               [:batch])
    if ids:
        Outage.objects.filter(pk__in=ids).delete()
        deleted += len(ids)
    notices = (IncidentEvent.objects.filter(incident__isnull=True, at__lt=before)
               .exclude(deliveries__status__in=Delivery.ACTIVE))
    ids = list(notices.order_by("pk").values_list("pk", flat=True)[:batch])
    if ids:
        IncidentEvent.objects.filter(pk__in=ids).delete()  # with their deliveries
        deleted += len(ids)
    return deleted
