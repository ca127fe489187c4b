"""The alerting side's Celery tasks (beat sends them; see ``CELERY_BEAT_SCHEDULE``)."""
from celery import shared_task

from alerts import senders


@shared_task(ignore_result=True)
def deliver() -> int:
    """Send the deliveries that are due: :func:`alerts.senders.deliver_in_burst` (beat,
    every tick, and after each commit that created deliveries); returns how many
    were claimed."""
    return senders.deliver_in_burst()
