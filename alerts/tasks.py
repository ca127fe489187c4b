"""Who runs the delivery engine (:mod:`alerts.delivery`), and the hand-off from
incident code.

Each process that sends notifications has one pool of sender threads
(``CRONRADAR_DELIVERY_THREADS``). :func:`deliver_due` claims as many due
deliveries as the pool has free threads and hands them to it; it returns at once,
so a channel that hangs holds at most its own claims (``CRONRADAR_CHANNEL_CONCURRENCY``)
of threads and everyone else's alerts keep going out.

- Embedded default (``manage.py serve``): :func:`delivery_loop` calls it every
  ``LOOP_SECONDS`` and at once when a transaction that created deliveries commits.
- Production (Celery): beat sends the ``deliver`` task every ``CRONRADAR_TICK_SECONDS``
  and a commit that created deliveries sends one too; a worker runs
  :func:`deliver_due` in its own process, whose pool does the sending.

Nothing is kept only in memory: a delivery waiting to be retried is a row with a
later ``next_attempt_at``, and one whose sender died is claimed again when its
claim expires.
"""
from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from celery import shared_task
from django.conf import settings
from django.db import close_old_connections, connections, transaction
from django.utils import timezone

from alerts import delivery

logger = logging.getLogger(__name__)
LOOP_SECONDS = 0.25

_lock = threading.Lock()
_busy = 0
_pool: ThreadPoolExecutor | None = None
_wake = threading.Event()
_idle = threading.Condition(_lock)


def deliver_due(now=None, keep_sending: bool = False) -> int:
    """Claim the deliveries due at ``now`` (default: the current time) that this
    process's free sender threads can take, and start sending them; returns how
    many were claimed. Does not wait for the sends. ``keep_sending``: see
    :func:`_send`."""
    global _busy, _pool
    threads = settings.CRONRADAR_DELIVERY_THREADS
    with _lock:
        free = threads - _busy
        if _pool is None:
            _pool = ThreadPoolExecutor(threads, thread_name_prefix="cronradar-delivery")
    claims = delivery.claim_due(now or timezone.now(), free)
    for claim in claims:
        with _lock:
            _busy += 1
        _pool.submit(_send, claim, keep_sending)
    return len(claims)


def drain(timeout: float = 30.0) -> bool:
    """Wait until this process's sender threads are idle; False on timeout."""
    end = time.monotonic() + timeout
    with _idle:
        while _busy:
            left = end - time.monotonic()
            if left <= 0:
                return False
            _idle.wait(left)
    return True


KEEP_SENDING = 5.0  # seconds a sender thread goes on claiming due deliveries itself


def _send(claim: delivery.Claim, keep_sending: bool = False) -> None:
    """Sender thread: the attempt ``claim`` was made for; with ``keep_sending`` (a
    Celery worker's ``deliver`` task), then, while deliveries are due (for at most
    ``KEEP_SENDING`` seconds), the next one it claims itself: a burst drains at the
    pool's pace, not one pool-full per beat, and the thread keeps its database
    connection between attempts. (The embedded loop is woken by every thread that
    gets free instead.)"""
    global _busy
    close_old_connections()
    end = time.monotonic() + (KEEP_SENDING if keep_sending else 0)
    try:
        while claim is not None:
            try:
                delivery.send(claim)
            except Exception:
                logger.exception("delivery %s crashed", claim.delivery_id)
            claim = None
            if time.monotonic() < end:
                try:
                    claim = next(iter(delivery.claim_due(timezone.now(), 1)), None)
                except Exception:  # the database may be down: the next tick claims them
                    logger.exception("claiming the next delivery failed")
    finally:
        connections.close_all()
        with _idle:
            _busy -= 1
            _idle.notify_all()
        _wake.set()  # a thread is free: more may be due


@shared_task(ignore_result=True)
def deliver() -> int:
    """Celery task (beat, and after each commit that created deliveries):
    :func:`deliver_due` in this worker process, its threads claiming more while a
    burst lasts."""
    return deliver_due(keep_sending=True)


def delivery_loop(stop: threading.Event) -> None:
    """Embedded default: :func:`deliver_due` every ``LOOP_SECONDS``, and at once when
    woken (a commit created deliveries, a sender thread got free), until ``stop``."""
    while not stop.is_set():
        _wake.wait(LOOP_SECONDS)
        _wake.clear()
        try:
            deliver_due()
        except Exception:  # the database may be down; try again next time
            logger.exception("claiming deliveries failed")
        finally:
            close_old_connections()


def dispatch() -> None:
    """Call inside the transaction that created ``Delivery`` rows: once it commits,
    the deliveries are claimed at once instead of on the next tick (a ``deliver``
    task with a broker, else a wake-up of this process's delivery loop). They are
    rows already: if this nudge is lost, the next tick sends them. One nudge per
    transaction however many calls (a batch of the evaluator opens hundreds of
    incidents): Django keeps the pending callbacks as (savepoints, func, robust)."""
    if not any(fn is _nudge for _, fn, *_ in transaction.get_connection().run_on_commit):
        transaction.on_commit(_nudge)


def _nudge() -> None:
    if settings.CELERY_TASK_ALWAYS_EAGER:
        _wake.set()
        return
    try:
        deliver.delay()
    except Exception:  # the broker is down: beat's next tick, or the loop, sends them
        logger.warning("could not start a deliver task", exc_info=True)
