"""What the monitors side finds, in one vocabulary, and who hears of it.

Ping ingest and the evaluator describe what happened to a monitor as
:class:`Detection` values; they never call the alerting side. Whoever cares (the
``alerts`` app, from its ``AppConfig.ready``) subscribes with :func:`subscribe`;
:func:`emit` calls each subscriber inside the caller's transaction, holding the
monitor's row lock, so what a subscriber writes commits or rolls back with the
detection. No Django imports here.

:class:`Kind` is the one list of detection kinds. ``PROBLEMS`` are the kinds that
open or extend an incident (the alerting side builds its incident causes and
timeline event kinds from them); ``RECOVERED``, ``PAUSED`` and ``DELETED`` close
one, for a good run, a pause and a deletion. ``SLOW`` has the lowest precedence:
any other problem raises an open ``slow`` incident's cause (:mod:`alerts.incidents`).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum


class Kind(StrEnum):
    MISSED = "missed"  # no first ping by slot + grace
    STUCK = "stuck"  # a run open longer than max_runtime
    DEADLINE = "deadline"  # no succeeded run by slot + deadline
    FAILED = "failed"  # a /fail ping or a non-zero exit status
    OVERLAP = "overlap"  # a start while a run is open, under concurrency forbid
    TOO_FAST = "too_fast"  # a success sooner than min_runtime
    SLOW = "slow"  # a success much longer than usual (slow_factor x the recent p95)
    RECOVERED = "recovered"  # a run succeeded
    PAUSED = "paused"  # the monitor was paused
    DELETED = "deleted"  # the monitor was deleted


PROBLEMS = (Kind.MISSED, Kind.STUCK, Kind.DEADLINE, Kind.FAILED, Kind.OVERLAP, Kind.TOO_FAST,
            Kind.SLOW)
CLOSING = (Kind.RECOVERED, Kind.PAUSED, Kind.DELETED)


@dataclass(frozen=True)
class Detection:
    """One finding about a monitor.

    kind: a :class:`Kind`. at: when it was detected (aware UTC). message: one
    human sentence for summaries and timelines. count: how many slots a
    ``missed`` detection covers (1 otherwise). detail: JSON-able extras.
    """

    kind: Kind
    at: datetime
    message: str
    count: int = 1
    detail: dict = field(default_factory=dict)


Subscriber = Callable[[object, list[Detection]], None]
BatchSubscriber = Callable[[list[tuple[object, list[Detection]]]], None]
_subscribers: list[tuple[Subscriber, BatchSubscriber | None]] = []
# attribute name -> SQL expression read with a monitor on the ping path (see subscribe)
STATE: dict[str, str] = {}


def subscribe(fn: Subscriber, many: BatchSubscriber | None = None,
              state: dict[str, str] | None = None) -> None:
    """Have ``fn(monitor, detections)`` called for every :func:`emit` (once per fn),
    and ``many([(monitor, detections), ...])`` for every :func:`emit_many` (else
    ``fn`` for each pair). ``state``: attribute name -> an SQL expression over the
    monitor row (``{monitor_id}`` stands for its id column) that ping ingest reads
    in the statement that updates the monitor (after locking it) and sets on it,
    so a subscriber can skip a query of its own (the alerting side: whether an
    incident is open)."""
    if all(fn is not f for f, _ in _subscribers):
        _subscribers.append((fn, many))
    STATE.update(state or {})


def emit_many(found: list[tuple[object, list[Detection]]]) -> None:
    """:func:`emit` for several monitors at once (the evaluator's batches), inside
    the transaction that holds all their row locks; pairs without detections are
    left out."""
    found = [(m, ds) for m, ds in found if ds]
    if found:
        for fn, many in _subscribers:
            if many is not None:
                many(found)
            else:
                for monitor, ds in found:
                    fn(monitor, ds)


def emit(monitor, detections: list[Detection]) -> None:
    """Hand ``detections`` about ``monitor`` to every subscriber, in order.

    Called inside the transaction that holds ``monitor``'s row lock; an exception
    from a subscriber propagates (and rolls that transaction back).
    """
    if detections:
        for fn, _ in _subscribers:
            fn(monitor, detections)
