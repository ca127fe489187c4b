"""Bounded storage for incidents and notifications: old ones deleted in small
batches, off the ping path and the evaluator's tick (see :mod:`monitors.retention`
for pings and runs).

An incident resolved longer than ``CRONRADAR_INCIDENT_RETENTION_DAYS`` ago
(default 365) is deleted with its timeline events, deliveries and their attempts,
once none of its deliveries is still pending or being sent; so is a notice of no
incident (an outage summary, a test notification, a channel's health: see
:mod:`alerts.notices`) made longer ago than that, with its deliveries, and an
outage of CronRadar itself summarized longer ago than that, with its impacts. At
most ``CRONRADAR_PRUNE_BATCH`` incidents per statement. An organisation's plan's
``incident_retention_days`` overrides the setting for its monitors' incidents
(one query per distinct value, docs/multi-tenant.md); notices and outages keep
the setting's.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction

from accounts.models import Plan
from alerts.models import Delivery, Incident, IncidentEvent
from monitors.models import Outage

MAX_BATCHES = 20


def prune(now: datetime) -> int:
    """Delete what has aged out (see the module docstring); returns how many
    incidents, outages and notices were deleted."""
    before = now - timedelta(days=settings.CRONRADAR_INCIDENT_RETENTION_DAYS)
    batch = max(1, settings.CRONRADAR_PRUNE_BATCH // 10)  # each has events, deliveries
    deleted = 0
    for aged in _aged_incidents(now):
        old = aged.exclude(deliveries__status__in=Delivery.ACTIVE)
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


def _aged_incidents(now: datetime) -> list:
    """The resolved incidents past their retention at ``now``, as one queryset per
    retention: the setting's for monitors of organisations whose plan says nothing,
    then one per distinct ``incident_retention_days`` of the plans that say it."""
    plan = "monitor__project__organisation__plan__in"
    days_of: dict[int, list[int]] = {}
    for pk, days in Plan.objects.filter(incident_retention_days__isnull=False).values_list(
            "pk", "incident_retention_days"):
        days_of.setdefault(days, []).append(pk)
    default = timedelta(days=settings.CRONRADAR_INCIDENT_RETENTION_DAYS)
    aged = [Incident.objects.filter(resolved_at__lt=now - default)
            .exclude(**{plan: [pk for pks in days_of.values() for pk in pks]})]
    return aged + [Incident.objects.filter(resolved_at__lt=now - timedelta(days=days),
                                           **{plan: pks})
                   for days, pks in sorted(days_of.items())]
