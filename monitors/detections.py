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
one, for a good run, a pause and a deletion. ``LOWEST`` (``slow``, ``skipped``,
``double_launch``) have the lowest precedence: any other problem raises an open
incident of one of them to its own cause (:mod:`alerts.incidents`).

``skipped`` and ``double_launch`` detections are coded: ``detail["code"]`` is a
:class:`Code`, and the message is made from it (:func:`sentence`).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from zoneinfo import ZoneInfo


class Kind(StrEnum):
    MISSED = "missed"  # no first ping by slot + grace
    STUCK = "stuck"  # a run open longer than max_runtime
    DEADLINE = "deadline"  # no succeeded run by slot + deadline
    FAILED = "failed"  # a /fail ping or a non-zero exit status
    OVERLAP = "overlap"  # a start while a run is open, under concurrency forbid
    TOO_FAST = "too_fast"  # a success sooner than min_runtime
    SLOW = "slow"  # a success much longer than usual (slow_factor x the recent p95)
    SKIPPED = "skipped"  # concurrency forbid: a slot came due while an earlier run was open
    DOUBLE_LAUNCH = "double_launch"  # a second run of one cron slot (or more than max_attempts)
    RECOVERED = "recovered"  # a run succeeded
    PAUSED = "paused"  # the monitor was paused
    DELETED = "deleted"  # the monitor was deleted


PROBLEMS = (Kind.MISSED, Kind.STUCK, Kind.DEADLINE, Kind.FAILED, Kind.OVERLAP, Kind.TOO_FAST,
            Kind.SLOW, Kind.SKIPPED, Kind.DOUBLE_LAUNCH)
CLOSING = (Kind.RECOVERED, Kind.PAUSED, Kind.DELETED)
# the lowest precedence: another problem raises an open incident of these
LOWEST = (Kind.SLOW, Kind.SKIPPED, Kind.DOUBLE_LAUNCH)


class Code(StrEnum):
    """Why a ``skipped`` or ``double_launch`` detection was made (its
    ``detail["code"]``), with the facts each sentence needs (:func:`sentence`)."""

    STILL_RUNNING = "still_running"
    """skipped: a run that started before the slot was still open at it (``count``:
    slots skipped, ``slot``: the last of them, ``since``: when that run started)."""

    OPEN_RUN = "open_run"
    """double_launch: another run of the slot is still open (``attempt``: this
    run's number in its slot, ``slot``, ``since``: when the open run started)."""

    SUCCEEDED = "succeeded"
    """double_launch: the slot already has a succeeded run (``attempt``, ``slot``,
    ``at``: when that run succeeded)."""

    ATTEMPTS = "attempts"
    """double_launch: more runs than ``max_attempts`` (``attempt``, ``slot``,
    ``max_attempts``)."""


_SENTENCES = {
    Code.STILL_RUNNING: "the {slot} run was skipped: the run that started at {since} was "
                        "still running",
    Code.OPEN_RUN: "run {attempt} of the {slot} slot started while its run that started at "
                   "{since} was still open",
    Code.SUCCEEDED: "run {attempt} of the {slot} slot started although the slot's run "
                    "succeeded at {at}",
    Code.ATTEMPTS: "run {attempt} of the {slot} slot started: more than max_attempts "
                   "({max_attempts})",
}
_SKIPPED_MANY = ("{count} runs were skipped, the last the {slot} run: the run that started "
                 "at {since} was still running")


def sentence(code: Code, timezone: str, **facts) -> str:
    """The message for ``code`` with its ``facts`` (the names :class:`Code`
    documents); datetime facts are shown as clock times in ``timezone`` (an IANA
    name: the monitor's), with the date when they fall on different days, and the
    zone named after the sentence unless it is UTC. Raises KeyError when a fact is
    missing."""
    zone = ZoneInfo(timezone)
    times = {k: v.astimezone(zone) for k, v in facts.items() if isinstance(v, datetime)}
    dated = len({t.date() for t in times.values()}) > 1
    shown = {k: _clock(t, dated) for k, t in times.items()}
    many = code == Code.STILL_RUNNING and facts.get("count", 1) > 1
    text = (_SKIPPED_MANY if many else _SENTENCES[code]).format(**{**facts, **shown})
    if shown and timezone != "UTC":
        text += f" ({timezone} time)"
    return text


def _clock(t: datetime, dated: bool) -> str:
    """09:00, or 09:00:06 when the seconds are not zero; the date first if ``dated``."""
    text = f"{t:%H:%M}" if t.second == 0 and t.microsecond == 0 else f"{t:%H:%M:%S}"
    return f"{t:%Y-%m-%d} {text}" if dated else text


@dataclass(frozen=True)
class Detection:
    """One finding about a monitor.

    kind: a :class:`Kind`. at: when it was detected (aware UTC). message: one
    human sentence for summaries and timelines. count: how many slots a
    ``missed`` or ``skipped`` detection covers (1 otherwise). detail: JSON-able extras.
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
