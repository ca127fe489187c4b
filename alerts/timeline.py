"""The primitives every writer of an incident's timeline needs, below the incident
state machine (:mod:`alerts.incidents`) and what it consults (escalation,
flapping, channels):

- :func:`alerting_of`: a monitor's alerting settings;
- :func:`targets`: the channels an incident of a monitor opens on;
- :func:`notified_channels`: the channels holding an incident open;
- :func:`stamp`: the time of a new event (times never go backwards in a timeline);
- :func:`notify` / :func:`deliver`: the deliveries of an event (or a notice,
  :mod:`alerts.notices`), claimed as soon as the transaction commits.
"""
from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from alerts import batch
from alerts.models import Alerting, Channel, Delivery, Incident, IncidentEvent
from alerts.senders import dispatch
from core import sql, tablestats


def alerting_of(monitor) -> Alerting:
    """The monitor's :class:`Alerting` (an unsaved default one when it has none),
    cached on the monitor object."""
    try:
        return monitor.alerting
    except Alerting.DoesNotExist:
        default = Alerting(monitor=monitor)
        monitor.alerting = default
        return default


def stamp(incident: Incident, at: datetime) -> datetime:
    """The time for a new event of ``incident``: ``at``, or its latest event's time
    if that is later (times never go backwards in a timeline); records it on the
    incident (the caller saves ``last_event_at``)."""
    if incident.last_event_at is not None and incident.last_event_at > at:
        at = incident.last_event_at
    incident.last_event_at = at
    return at


def targets(monitor) -> list[int]:
    """Ids of the channels an incident of ``monitor`` opens on: every live channel of
    its project (the default, ``Alerting.all_channels``), else the live channels
    its :class:`Alerting` lists."""
    alerting = alerting_of(monitor)
    if alerting.all_channels:
        known = batch.project_channels(monitor.project_id)
        if known is not None:
            return list(known)
        qs = Channel.objects.filter(project_id=monitor.project_id)
    else:
        known = batch.chosen_channels(monitor)
        if known is not None:
            return list(known)
        qs = alerting.channels.all()
    return list(qs.filter(deleted_at__isnull=True).values_list("pk", flat=True))


def notified_channels(incident: Incident) -> list[int]:
    """Ids of the channels holding ``incident`` open: sent its ``opened``,
    ``escalated`` or ``renotified`` events (not all abandoned), not yet sent a
    ``channel_removed`` resolve."""
    sent = Delivery.objects.filter(incident=incident)
    opened = set(sent.filter(event__kind__in=IncidentEvent.PAGING)
                 .exclude(status=Delivery.Status.FAILED).values_list("channel_id", flat=True))
    closed = set(sent.filter(event__kind=IncidentEvent.Kind.CHANNEL_REMOVED)
                 .values_list("channel_id", flat=True))
    return sorted(opened - closed)


def notify(event: IncidentEvent, channel_ids: Iterable[int]) -> None:
    """One delivery of ``event`` per channel, due at the event's time."""
    deliver([(event.pk, event.incident_id, ch, event.at, event.at)
             for ch in channel_ids])


DELIVERY_FIELDS = ("event_id", "incident_id", "channel_id", "created_at",
                   "next_attempt_at")


def deliver(rows: list[tuple]) -> None:
    """Insert deliveries, given as ``DELIVERY_FIELDS`` rows (the others take their
    defaults: pending, no attempt yet; rows are the schedule), and have them
    claimed as soon as the transaction commits (and, after a burst of them, the
    table's statistics kept current: :mod:`core.tablestats`)."""
    if rows:
        sql.insert_many(Delivery, DELIVERY_FIELDS, rows)
        tablestats.inserted(Delivery, len(rows))
        dispatch()
