"""Celery tasks of the monitors app."""
from celery import shared_task
from django.utils import timezone

from monitors import evaluator, retention, signals


@shared_task(ignore_result=True)
def evaluate() -> int:
    """One evaluator tick (scheduled by Celery beat every CRONRADAR_TICK_SECONDS)."""
    return evaluator.tick(timezone.now())


@shared_task(ignore_result=True)
def prune() -> None:
    """One retention step (scheduled by Celery beat every CRONRADAR_PRUNE_INTERVAL):
    pings and runs (:mod:`monitors.retention`), then the ``prune`` signal's
    receivers (incidents: :mod:`alerts.retention`)."""
    now = timezone.now()
    retention.prune(now)
    signals.prune.send(sender=None, now=now)
