"""Celery tasks that send notifications, and the hand-off from incident code.

Each delivery is its own ``deliver`` task, so a failing channel never delays or
stops the others. With a broker (production) retries are Celery retries with a
countdown; in the embedded default Celery runs eagerly, so ``dispatch`` runs the
task on a small thread pool (never on the caller's thread, which may be serving
a ping) and the task sleeps between attempts itself.
"""
from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from celery import shared_task
from django.conf import settings
from django.db import close_old_connections, transaction

from alerts.delivery import attempt, backoff
from alerts.models import Delivery

logger = logging.getLogger(__name__)

# Embedded mode only: where eager deliveries run, off the request/evaluator thread.
_executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="cronradar-delivery")


# The attempt budget is CRONRADAR_DELIVERY_MAX_ATTEMPTS, enforced by ``attempt``
# (it marks the delivery failed), so Celery's own retry limit is disabled.
@shared_task(bind=True, max_retries=None, ignore_result=True)
def deliver(self, delivery_id: int) -> None:
    """Send ``Delivery`` ``delivery_id`` until it is delivered or failed.

    One attempt per run; a retryable failure is retried after
    ``backoff(attempts)`` seconds (``self.retry`` with a broker, ``time.sleep``
    when eager). A delivery that no longer exists or is not ``pending`` (already
    sent, or claimed by another worker) is left alone.
    """
    delivery = Delivery.objects.filter(pk=delivery_id).first()
    if delivery is None:
        return
    result = attempt(delivery)
    while result.retry:
        if not self.request.is_eager:
            raise self.retry(countdown=backoff(result.attempts))
        time.sleep(backoff(result.attempts))
        result = attempt(delivery)


def dispatch(delivery_ids: list[int]) -> None:
    """Send the given deliveries once the current transaction commits.

    Call it inside the transaction that created the ``Delivery`` rows (outside
    one, it sends right away). With a broker each id becomes a ``deliver.delay``;
    eagerly it is submitted to the ``cronradar-delivery`` thread pool. With
    ``CRONRADAR_DELIVERY_INLINE`` set (tests) it runs synchronously at commit.
    Each id is its own on-commit callback that logs its own errors, so one
    failing (broker down, a crash) does not stop the rest.
    """
    for delivery_id in delivery_ids:
        transaction.on_commit(partial(_enqueue, delivery_id))


def _enqueue(delivery_id: int) -> None:
    try:
        if settings.CRONRADAR_DELIVERY_INLINE:
            deliver.apply(args=[delivery_id])
        elif not settings.CELERY_TASK_ALWAYS_EAGER:
            deliver.delay(delivery_id)
        else:
            _executor.submit(_deliver_in_thread, delivery_id)
    except Exception:
        logger.exception("delivery %s could not be started", delivery_id)


def _deliver_in_thread(delivery_id: int) -> None:
    """Pool job: run ``deliver`` eagerly with this thread's own DB connection."""
    close_old_connections()
    try:
        deliver.apply(args=[delivery_id])
    except Exception:
        logger.exception("delivery %s crashed", delivery_id)
    finally:
        close_old_connections()
