"""Celery tasks of the monitors app."""
from celery import shared_task
from django.utils import timezone

from monitors import evaluator


@shared_task(ignore_result=True)
def evaluate() -> int:
    """One evaluator tick (scheduled by Celery beat every CRONRADAR_TICK_SECONDS)."""
    return evaluator.tick(timezone.now())
