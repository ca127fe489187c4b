"""Celery tasks of the monitors app. A database outage inside one is logged once a
minute (:func:`core.logs.quiet_outage`), not as a traceback per tick."""
import logging

from celery import shared_task
from django.utils import timezone

from core import logs
from monitors import evaluator, retention, signals, usage

log = logging.getLogger(__name__)


@shared_task(ignore_result=True)
@logs.quiet_outage(log)
def evaluate() -> int:
    """One evaluator tick (scheduled by Celery beat every CRONRADAR_TICK_SECONDS)."""
    return evaluator.tick(timezone.now())


@shared_task(ignore_result=True)
@logs.quiet_outage(log)
def prune() -> None:
    """One retention step (scheduled by Celery beat every CRONRADAR_PRUNE_INTERVAL):
    pings, runs and audit log entries (:mod:`monitors.retention`), then the ``prune`` signal's
    receivers (incidents: :mod:`alerts.retention`)."""
    now = timezone.now()
    retention.prune(now)
    signals.prune.send(sender=None, now=now)


@shared_task(ignore_result=True)
@logs.quiet_outage(log)
def flush_ping_usage() -> int:
    """Add the ping counters to the database (:func:`monitors.usage.flush`; beat
    sends it every minute)."""
    return usage.flush()
