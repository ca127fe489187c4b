"""Celery tasks that send notifications, and the hand-off from incident code.

Each delivery is its own ``deliver`` task, so a failing channel never delays or
stops the others. With a broker (production) retries are Celery retries with a
countdown. In the embedded default Celery runs eagerly: ``dispatch`` runs the
task on a thread pool (never on the caller's thread, which may be serving a
ping), and a retry waits on a timer, not in a pool thread, so a slow or dead
channel cannot hold up the others. :func:`redispatch_stale` re-sends deliveries
whose task was lost (process restart, broker down at commit, crashed worker).
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from functools import partial

from celery import shared_task
from django.conf import settings
from django.db import close_old_connections, connections, transaction
from django.db.models import Max, Q
from django.utils import timezone

from alerts.delivery import BACKOFF_CAP, attempt, backoff
from alerts.models import Delivery

logger = logging.getLogger(__name__)

# Embedded mode only: where eager deliveries run, off the request/evaluator thread.
# Each attempt holds a thread for at most CRONRADAR_DELIVERY_TIMEOUT seconds, and
# one channel may hold at most PER_CHANNEL of them: a channel's further
# deliveries wait in its own line, so a slow channel cannot take every thread.
_executor = ThreadPoolExecutor(max_workers=16, thread_name_prefix="cronradar-delivery")
PER_CHANNEL = 4
_lock = threading.Lock()
_busy: dict[int, int] = {}  # channel id -> attempts in flight
_waiting: dict[int, deque[int]] = {}  # channel id -> delivery ids waiting for a slot


# The attempt budget is CRONRADAR_DELIVERY_MAX_ATTEMPTS, enforced by ``attempt``
# (it marks the delivery failed), so Celery's own retry limit is disabled.
@shared_task(bind=True, max_retries=None, ignore_result=True)
def deliver(self, delivery_id: int) -> None:
    """Make one attempt of ``Delivery`` ``delivery_id`` and schedule the next.

    A retryable failure is retried after ``backoff(attempts)`` seconds:
    ``self.retry`` with a broker; eagerly, a timer that resubmits to the pool
    (or, with ``CRONRADAR_DELIVERY_INLINE``, a sleep on this thread). A delivery
    that no longer exists or is not ``pending`` (already sent, or claimed by
    another worker) is left alone.
    """
    delivery = Delivery.objects.filter(pk=delivery_id).first()
    if delivery is None:
        return
    result = attempt(delivery)
    if not result.retry:
        return
    delay = backoff(result.attempts)
    if not self.request.is_eager:
        raise self.retry(countdown=delay)
    if settings.CRONRADAR_DELIVERY_INLINE:
        time.sleep(delay)
        deliver.apply(args=[delivery_id])
    else:
        timer = threading.Timer(delay, _submit, args=[delivery_id])
        timer.daemon = True
        timer.start()


@shared_task(ignore_result=True)
def redispatch() -> int:
    """Periodic safety net (Celery beat): :func:`redispatch_stale` at the current time."""
    return redispatch_stale(timezone.now())


def redispatch_stale(now: datetime, *, everything: bool = False) -> int:
    """Send again deliveries whose task was lost; returns how many were re-sent.

    Stale: ``pending`` with no activity (creation or last attempt) for longer
    than the longest backoff plus a margin, or ``sending`` (claimed) for longer
    than a request can take, i.e. its worker died; those are put back to
    ``pending`` with a compare-and-set. ``everything``: every ``pending`` one
    (the embedded server at start-up, when no timer of an earlier process
    survives). Re-sending is safe: ``attempt`` claims a delivery before sending.
    """
    margin = timedelta(seconds=60)
    claim_cutoff = now - timedelta(seconds=settings.CRONRADAR_DELIVERY_TIMEOUT) - margin
    Delivery.objects.filter(status=Delivery.Status.SENDING, claimed_at__lt=claim_cutoff) \
        .update(status=Delivery.Status.PENDING)
    pending = Delivery.objects.filter(status=Delivery.Status.PENDING)
    if not everything:
        cutoff = now - timedelta(seconds=BACKOFF_CAP) - margin
        pending = pending.annotate(last_attempt=Max("log__at")).filter(
            Q(last_attempt__lt=cutoff) | Q(last_attempt__isnull=True, created_at__lt=cutoff))
    ids = list(pending.values_list("pk", flat=True)[:1000])
    for delivery_id in ids:
        _enqueue(delivery_id)
    if ids:
        logger.warning("re-sending %d stale deliveries", len(ids))
    return len(ids)


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
            _submit(delivery_id)
    except Exception:
        logger.exception("delivery %s could not be started", delivery_id)


def _submit(delivery_id: int) -> None:
    _executor.submit(_deliver_in_thread, delivery_id)


def _deliver_in_thread(delivery_id: int) -> None:
    """Pool job: run ``deliver`` eagerly with this thread's own DB connection, unless
    the delivery's channel already has ``PER_CHANNEL`` attempts in flight; then it
    waits in the channel's line and the thread is free at once."""
    close_old_connections()
    channel_id = None
    try:
        channel_id = (Delivery.objects.filter(pk=delivery_id)
                      .values_list("channel_id", flat=True).first())
        if channel_id is None:
            return
        with _lock:
            if _busy.get(channel_id, 0) >= PER_CHANNEL:
                _waiting.setdefault(channel_id, deque()).append(delivery_id)
                channel_id = None  # not ours to release
                return
            _busy[channel_id] = _busy.get(channel_id, 0) + 1
        deliver.apply(args=[delivery_id])
    except Exception:
        logger.exception("delivery %s crashed", delivery_id)
    finally:
        connections.close_all()  # this pool thread's own connections
        if channel_id is not None:
            _release(channel_id)


def _release(channel_id: int) -> None:
    """Free a channel slot and start the next delivery waiting for that channel."""
    with _lock:
        _busy[channel_id] -= 1
        line = _waiting.get(channel_id)
        following = line.popleft() if line else None
        if not line:
            _waiting.pop(channel_id, None)
        if not _busy[channel_id]:
            del _busy[channel_id]
    if following is not None:
        _submit(following)
