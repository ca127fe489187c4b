"""The sender pool: who runs the delivery engine (:mod:`alerts.delivery`) in a
process, and the hand-off from incident code (:func:`dispatch`).

Each process that sends notifications has one pool of sender threads
(``CRONRADAR_DELIVERY_THREADS``) and works in three steps, so the database sees
batches while a channel that hangs holds only its own claims:

1. :func:`deliver_due` claims as many due deliveries as the pool has free threads
   (one statement), loads them and builds their requests (a few queries for the
   batch: :func:`delivery.prepare`) and hands each to a sender thread. It returns
   at once.
2. A sender thread only makes the HTTP attempt (no database), then queues its
   outcome. A channel that hangs holds at most its own claims
   (``CRONRADAR_CHANNEL_CONCURRENCY``) of threads; everyone else's alerts keep going out.
3. One recorder thread per process writes the queued outcomes in one transaction
   per batch (:func:`delivery.record`): it gathers them for up to
   ``RECORD_WAIT`` seconds (or ``RECORD_BATCH`` of them) after the first. A sender
   thread is free again as soon as its request is done, so gathering never holds
   up sending; until its outcome is written the row stays ``sending`` under an
   unexpired claim, so it still counts toward its channel's cap.

Who calls :func:`deliver_due`:

- Embedded default (``manage.py serve``): :func:`delivery_loop`, every
  ``LOOP_SECONDS`` and at once when a transaction that created deliveries commits
  or half the pool's threads are free (a claim costs a few statements however
  many rows it takes, so it claims for many threads at once, not one a send).
- Production (Celery): beat sends the ``deliver`` task (:mod:`alerts.tasks`) every
  ``CRONRADAR_TICK_SECONDS`` and a commit that created deliveries sends one too.
  The task (:func:`deliver_in_burst`) claims once and
  leaves a claimer thread in that worker process that goes on claiming as threads
  get free while deliveries are due (at most ``KEEP_SENDING`` seconds), so a burst
  drains at the pool's pace without holding the worker process.

Nothing is kept only in memory: a delivery waiting to be retried is a row with a
later ``next_attempt_at``, and one whose sender or recorder died (or whose outcome
could not be written) is claimed again when its claim expires.
"""
from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from celery import current_app
from django.conf import settings
from django.db import close_old_connections, connections, transaction
from django.utils import timezone

from alerts import delivery
from core import logs

logger = logging.getLogger(__name__)
LOOP_SECONDS = 0.25
KEEP_SENDING = 5.0  # seconds a Celery worker's claimer thread goes on claiming
IDLE_CLOSE = 1.0  # seconds without outcomes after which the recorder closes its connection
RECORD_WAIT = 0.02  # seconds the recorder gathers outcomes after the first
RECORD_BATCH = 200  # outcomes that start a write at once
DELIVER_TASK = "alerts.tasks.deliver"  # the Celery task a commit that created deliveries sends

_lock = threading.Lock()
_busy = 0  # claims taken by this process whose request is not done yet
_unwritten = 0  # attempts made whose outcome is not written yet
_pool: ThreadPoolExecutor | None = None
_wake = threading.Event()  # the claimer: a thread got free, or deliveries were created
_idle = threading.Condition(_lock)  # notified when _busy or _unwritten goes down
_outcomes: list[delivery.Attempt] = []  # made attempts waiting for the recorder
_recorded = threading.Condition(_lock)  # notified when _outcomes gets one
_recorder: threading.Thread | None = None
_claimer: threading.Thread | None = None
_claimed = [0.0]  # time.monotonic() of the last claim


def deliver_due(now=None) -> int:
    """Claim the deliveries due at ``now`` (default: the current time) that this
    process's free sender threads can take, build their requests and start
    sending them; returns how many were claimed. Does not wait for the sends."""
    global _busy, _pool, _recorder
    threads = settings.CRONRADAR_DELIVERY_THREADS
    with _lock:
        free = threads - _busy
        if free <= 0 or (_busy and free < _batch(threads)
                         and time.monotonic() - _claimed[0] < LOOP_SECONDS):
            return 0  # claim in batches: a claim's cost is mostly fixed
        _claimed[0] = time.monotonic()
        _busy += free  # reserved: a claimer on another thread (Celery's) sees them taken
        if _pool is None:
            _pool = ThreadPoolExecutor(threads, thread_name_prefix="cronradar-delivery")
        if _recorder is None or not _recorder.is_alive():
            _recorder = threading.Thread(target=_record_loop, name="cronradar-recorder",
                                         daemon=True)
            _recorder.start()
    claims: list[delivery.Claim] = []
    attempts: list[delivery.Attempt] = []
    try:
        claims = delivery.claim_due(now or timezone.now(), free)
        attempts = delivery.prepare(claims)
    finally:  # the reservation not used, and claims not handed to a thread (lost,
        # or the database failed: they expire), are freed; waking the claimer only
        # if something was claimed (else it would spin while nothing is due)
        _done(free - len(attempts), wake=bool(claims))
    for a in attempts:
        _pool.submit(_attempt, a)
    return len(claims)


def drain(timeout: float = 30.0) -> bool:
    """Wait until this process's claims are all sent and written; False on timeout."""
    end = time.monotonic() + timeout
    with _idle:
        while _busy or _unwritten:
            left = end - time.monotonic()
            if left <= 0:
                return False
            _idle.wait(left)
    return True


def _batch(threads: int) -> int:
    """Free threads that make a claim worth its cost while others are busy: half
    the pool (a claim costs a few statements however many rows it takes)."""
    return max(1, threads // 2)


def _done(n: int, wake: bool = True) -> None:
    """``n`` claims are done (sent, or never handed to a thread): free their
    threads. Wakes the claimer only when that makes a claim worth it (half the
    pool free, or none busy), not once a send."""
    global _busy
    if n:
        with _idle:
            _busy -= n
            _idle.notify_all()
            threads = settings.CRONRADAR_DELIVERY_THREADS
            free = threads - _busy
            worth = not _busy or free - n < _batch(threads) <= free  # it crossed the batch
        if wake and worth:
            _wake.set()  # threads are free: more may be due


def _attempt(a: delivery.Attempt) -> None:
    """Sender thread: the HTTP attempt; the outcome goes to the recorder and the
    thread is free for the next claim."""
    global _unwritten
    with logs.bound(delivery=a.claim.delivery_id, incident=a.delivery.incident_id):
        try:
            delivery.attempt(a)
        except Exception:  # attempt() handles send errors; this is a bug: the claim expires
            logger.exception("delivery %s crashed", a.claim.delivery_id)
        else:
            with _recorded:
                _outcomes.append(a)
                _unwritten += 1
                if len(_outcomes) == 1 or len(_outcomes) >= RECORD_BATCH:
                    _recorded.notify()  # the recorder waits for the first, then a full batch
    _done(1)


def _record_loop() -> None:
    """Recorder thread: write the outcomes that queue up within ``RECORD_WAIT`` of
    the first (at most ``RECORD_BATCH`` at once), one transaction a batch; close
    the database connection when idle."""
    global _unwritten
    while True:
        with _recorded:
            if not _outcomes and not _recorded.wait_for(lambda: _outcomes, IDLE_CLOSE):
                batch = None
            else:
                _recorded.wait_for(lambda: len(_outcomes) >= RECORD_BATCH, RECORD_WAIT)
                batch, _outcomes[:] = list(_outcomes), []
        if batch is None:
            connections.close_all()
            continue
        try:
            close_old_connections()
            delivery.record(batch)
            logs.recovered(logger)
        except Exception as exc:  # the database may be down: the claims expire and are sent again
            logs.report(logger, f"writing {len(batch)} delivery outcomes failed", exc)
            connections.close_all()
        finally:
            with _idle:
                _unwritten -= len(batch)
                _idle.notify_all()
            _wake.set()  # their channels have slots again: more may be claimable


def deliver_in_burst() -> int:
    """What the Celery ``deliver`` task does (:mod:`alerts.tasks`): :func:`deliver_due`
    in this worker process, then a claimer thread there keeps claiming while a
    burst lasts (at most ``KEEP_SENDING`` seconds); returns how many were claimed."""
    global _claimer
    n = deliver_due()
    with _lock:  # also when sends or writes are under way: they free slots to claim
        if (n or _busy or _unwritten) and (_claimer is None or not _claimer.is_alive()):
            _claimer = threading.Thread(target=_keep_claiming, name="cronradar-claimer",
                                        daemon=True)
            _claimer.start()
    return n


def _keep_claiming() -> None:
    end = time.monotonic() + KEEP_SENDING
    try:
        while time.monotonic() < end:
            _wake.wait(LOOP_SECONDS)
            _wake.clear()
            try:
                if not deliver_due() and not _busy and not _unwritten:
                    return
            except Exception as exc:  # the database may be down: the next tick claims them
                logs.report(logger, "claiming deliveries failed", exc)
                return
    finally:
        connections.close_all()


def delivery_loop(stop: threading.Event) -> None:
    """Embedded default: :func:`deliver_due` every ``LOOP_SECONDS``, and at once when
    woken (a commit created deliveries, a sender thread got free), until ``stop``."""
    while not stop.is_set():
        _wake.wait(LOOP_SECONDS)
        _wake.clear()
        try:
            deliver_due()
            logs.recovered(logger)
        except Exception as exc:  # the database may be down; try again next time
            logs.report(logger, "claiming deliveries failed", exc)
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


class BrokerDown(logs.Outage):
    """:class:`core.logs.Outage` of the broker (Redis), for the nudger's lines: a
    lost nudge costs nothing but time, so WARNING, never a traceback."""

    def __init__(self):
        super().__init__("broker", "deliver nudge(s) lost",
                         ", beat's next deliver tick sends them", level=logging.WARNING)


broker = BrokerDown()  # only the nudger thread touches it
_nudges = threading.Event()  # set: a deliver task is wanted
_nudger: threading.Thread | None = None


def _nudge() -> None:
    """After a commit that created deliveries: wake this process's delivery loop
    (embedded default), or ask the nudger thread to send one ``deliver`` task.
    Never waits for the broker: a broker that hangs or refuses costs a ping or
    a tick nothing (the deliveries are rows; beat's next tick claims them)."""
    global _nudger
    if settings.CELERY_TASK_ALWAYS_EAGER:
        _wake.set()
        return
    _nudges.set()
    if _nudger is None or not _nudger.is_alive():  # also after a fork
        with _lock:
            if _nudger is None or not _nudger.is_alive():
                _nudger = threading.Thread(target=_nudge_loop, name="cronradar-nudger",
                                           daemon=True)
                _nudger.start()


def _nudge_loop() -> None:
    """The nudger: one ``deliver`` task however many nudges came while the last
    one was being sent. No publish retries (``retry=False``) and the broker
    timeouts of ``CELERY_BROKER_TRANSPORT_OPTIONS`` bound each attempt; a failure
    goes to :data:`broker` (one line a minute)."""
    while True:
        _nudges.wait()
        _nudges.clear()
        try:  # by name: the task's module (alerts.tasks) imports this one
            current_app.send_task(DELIVER_TASK, retry=False)
        except Exception as exc:  # the broker is down: beat's next tick sends them
            broker.failed(logger, exc)
        else:
            broker.ok(logger)
