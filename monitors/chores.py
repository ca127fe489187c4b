"""Chores: site work done once per interval however many processes could do it
(:class:`~monitors.models.Chore` rows; the watchdog's ping is one).

Every process that runs the evaluator may try a chore; the one whose
compare-and-set on ``due_at`` succeeds does it, the others see it done. No lock is
held and nothing needs a leader. The row is the truth; a process may remember
:func:`claim`'s answer to skip asking again before then (:mod:`cronradar.watchdog`
does).
"""
from __future__ import annotations

from datetime import datetime, timedelta

from django.db import IntegrityError, transaction

from monitors.models import Chore


def claim(name: str, now: datetime, every: timedelta) -> tuple[bool, datetime]:
    """Claim chore ``name`` at ``now`` if it is due, moving it to ``now + every``.

    Returns ``(claimed, due_at)``: whether this caller got it (it is then to do
    it, once), and when the chore is next due. A chore never seen before is due at
    once. Two callers racing for one due chore: one wins (its conditional UPDATE
    matches the ``due_at`` both read), the other gets ``(False, the winner's
    due_at)``. One indexed read when not due, plus one UPDATE when due.
    """
    due = _due(name)
    if due is None:
        try:
            with transaction.atomic():  # savepoint: a lost race must not spoil the caller's
                Chore.objects.create(name=name, due_at=now + every)
            return True, now + every
        except IntegrityError:  # another process created it first: it has it
            return False, _due(name)
    if due > now:
        return False, due
    # Compare-and-set: only the caller that read this due_at moves it.
    if Chore.objects.filter(name=name, due_at=due).update(due_at=now + every):
        return True, now + every
    return False, _due(name)


def _due(name: str) -> datetime | None:
    # the unique index on name
    return Chore.objects.filter(name=name).values_list("due_at", flat=True).first()


def done(name: str, now: datetime, result: str) -> None:
    """Record that chore ``name`` was done at ``now`` with ``result`` (a coded
    value of the chore's owner, at most 32 characters)."""
    Chore.objects.filter(name=name).update(last_at=now, last_result=result)
