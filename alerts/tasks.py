"""The alerting side's Celery tasks (beat sends them; see ``CELERY_BEAT_SCHEDULE``).
A database outage inside one is logged once a minute (:func:`core.logs.quiet_outage`)."""
import logging

from celery import shared_task

from alerts import senders
from core import logs

log = logging.getLogger(__name__)


@shared_task(ignore_result=True)
@logs.quiet_outage(log)
def deliver() -> int:
    """Send the deliveries that are due: :func:`alerts.senders.deliver_in_burst` (beat,
    every tick, and after each commit that created deliveries); returns how many
    were claimed."""
    return senders.deliver_in_burst()
