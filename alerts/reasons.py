"""Why an incident's notification was held back or an escalation step taken, as
coded values.

An event that was held (its ``opened`` or ``raised`` notification not sent) or
that escalates stores the code under ``detail["code"]``; the sentence people read
is made from the code and the facts (:func:`sentence`) and stored beside it, as
``detail["suppressed"]`` (held) or ``detail["reason"]`` (a tier notified). Code
that must know why reads the code, never the sentence.
"""
from __future__ import annotations

from enum import StrEnum


class Reason(StrEnum):
    """The reasons, with the facts each sentence needs."""

    MAINTENANCE = "maintenance"
    """Held: a maintenance window covers the monitor (``window``: its name,
    ``until``: when the maintenance ends, ISO 8601)."""

    FLAPPING = "flapping"
    """Held: the monitor is flapping (:mod:`alerts.flapping`)."""

    FLAPPING_ENDED = "flapping_ended"
    """A held-back incident is notified: still open after the monitor stopped flapping."""

    MAINTENANCE_ENDED = "maintenance_ended"
    """A held-back incident is notified: its maintenance window ended."""

    TIER_DELAY = "tier_delay"
    """The first tier is notified its ``delay`` (seconds) after the incident opened."""

    NO_CHANNEL = "no_channel"
    """The next tier is notified: tier ``tier`` (1-based) had no channel left."""

    ALL_FAILED = "all_failed"
    """The next tier is notified: every notification of tier ``tier`` failed."""

    NOT_TAKEN = "not_taken"
    """The next tier is notified: no channel of tier ``tier`` took the notification
    in time (none delivered, some still being tried)."""

    NOT_ACKNOWLEDGED = "not_acknowledged"
    """The next tier is notified: tier ``tier`` was told and nobody acknowledged."""


_SENTENCES = {
    Reason.MAINTENANCE: "maintenance window {window!r} until {until}",
    Reason.FLAPPING: "the monitor is flapping",
    Reason.FLAPPING_ENDED: "still open after the monitor stopped flapping",
    Reason.MAINTENANCE_ENDED: "its maintenance window ended",
    Reason.TIER_DELAY: "{delay}s after the incident opened",
    Reason.NO_CHANNEL: "tier {tier} had no channel left to notify",
    Reason.ALL_FAILED: "every notification of tier {tier} failed",
    Reason.NOT_TAKEN: "no channel of tier {tier} took the notification in time",
    Reason.NOT_ACKNOWLEDGED: "not acknowledged after tier {tier}",
}


def sentence(code: Reason, **facts) -> str:
    """The sentence for ``code`` with its ``facts`` (the names :class:`Reason`
    documents for it). Raises KeyError when a fact is missing."""
    return _SENTENCES[code].format(**facts)


def held(code: Reason, **facts) -> dict:
    """The detail of an event whose notification is held back for ``code``:
    ``{"code": code, "suppressed": sentence}``."""
    return {"code": code.value, "suppressed": sentence(code, **facts)}
