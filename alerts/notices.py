"""Notices of no incident: an outage summary, a channel's test notification, a
channel's health (``channel.failing`` / ``channel.recovered``).

Each is an :class:`~alerts.models.IncidentEvent` row with ``incident`` null and
its ``project``, so it takes its id from the same sequence as every incident
event: the ``event_id`` (and Standard Webhooks' ``webhook-id``) of no two
notifications is the same. Its deliveries are rows like an incident event's
(:func:`alerts.timeline.deliver`); the delivery engine builds them with each
integration's ``build_notice(channel, event)``.
"""
from __future__ import annotations

from datetime import datetime

from django.db import IntegrityError, transaction

from alerts.integrations.common import isoformat
from alerts.models import IncidentEvent
from alerts.timeline import deliver


def issue(kind: str, project_id: int, at: datetime, detail: dict, channel_ids: list[int],
          *, step: str | None = None, message: str = "") -> IncidentEvent:
    """Store a notice of ``kind`` (one of ``IncidentEvent.NOTICES``) of project
    ``project_id`` at ``at`` with its facts ``detail`` (JSON), and one delivery of
    it per channel of ``channel_ids``, due at ``at`` (claimed once the transaction
    commits). ``step``: a name unique among notices (``outage:<impact id>``): a
    second notice with the same step is not issued, the stored one is returned
    and no delivery is added. Raises ``ValueError`` for a kind that is not a
    notice's."""
    if kind not in IncidentEvent.NOTICES:
        raise ValueError(f"{kind!r} is not a notice kind")
    if step is not None:
        try:
            with transaction.atomic():
                event = IncidentEvent.objects.create(
                    incident=None, project_id=project_id, kind=kind, at=at, detail=detail,
                    step=step, message=message)
        except IntegrityError:  # issued already (a repeated signal, a retried task)
            return IncidentEvent.objects.get(incident=None, step=step)
    else:
        event = IncidentEvent.objects.create(incident=None, project_id=project_id, kind=kind,
                                             at=at, detail=detail, message=message)
    deliver([(event.pk, None, ch, at, at) for ch in channel_ids])
    return event


def outage_summary(impact, channel_ids: list[int]) -> IncidentEvent:
    """The ``outage.summary`` notice of ``impact`` (an
    :class:`monitors.models.OutageImpact`, its outage settled) to ``channel_ids``:
    detail ``{"impact", "outage", "started_at", "ended_at", "unknown_slots"}``
    (ISO-8601 UTC), at the outage's ``summarized_at``; one per impact."""
    outage = impact.outage
    return issue("outage.summary", impact.project_id, outage.summarized_at, {
        "impact": impact.pk, "outage": outage.pk, "started_at": isoformat(outage.started_at),
        "ended_at": isoformat(outage.ended_at), "unknown_slots": impact.unknown_slots,
    }, channel_ids, step=f"outage:{impact.pk}")
