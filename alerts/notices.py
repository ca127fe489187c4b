"""Notices of no incident: ``channel.failing`` and ``channel.recovered``
(:mod:`alerts.health`).

A notice is an :class:`~alerts.models.IncidentEvent` without an incident, so it
takes its id from the one sequence every event does; ``detail`` holds what it
says. :func:`issue` stores it and one :class:`~alerts.models.Delivery` per
channel, and the delivery engine sends each through its channel kind's
``build_notice(channel, event)``.
"""
from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from alerts.models import IncidentEvent
from alerts.timeline import deliver

KINDS = (IncidentEvent.Kind.CHANNEL_FAILING, IncidentEvent.Kind.CHANNEL_RECOVERED)


def issue(kind: str, project_id: int, at: datetime, detail: dict,
          channel_ids: Iterable[int]) -> IncidentEvent:
    """Store a notice of ``kind`` (one of :data:`KINDS`) of project ``project_id``
    at ``at`` saying ``detail``, and its deliveries to ``channel_ids`` (due at
    ``at``, claimed once the transaction commits); returns the event. Raises
    ``ValueError`` for another kind."""
    if kind not in KINDS:
        raise ValueError(f"{kind!r} is not a notice")
    event = IncidentEvent.objects.create(incident=None, kind=kind, at=at,
                                         detail={**detail, "project_id": project_id})
    deliver([(event.pk, None, None, ch, at, at) for ch in channel_ids])
    return event
