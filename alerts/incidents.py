"""Turn detections into incidents, timeline events and notifications.

A *detection* is what the ping ingest or the evaluator found about one monitor
(``missed``, ``stuck``, ``deadline``, ``failed``, ``overlap``, ``too_fast``,
``recovered``). :func:`apply` folds detections into the monitor's single open
incident:

- a problem with no open incident opens one (event ``opened``), which notifies
  every channel of the monitor;
- a problem while an incident is open is appended to its timeline (counted,
  not re-notified);
- ``recovered`` resolves the open incident (event ``resolved``), which notifies.

Callers hold the monitor's row lock inside a transaction; deliveries are
dispatched to Celery only after that transaction commits.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from alerts.models import Delivery, Incident, IncidentEvent
from alerts.tasks import dispatch

PROBLEMS = {c.value for c in Incident.Cause}
RECOVERED = "recovered"


@dataclass(frozen=True)
class Detection:
    """One finding about a monitor.

    kind: one of ``Incident.Cause`` values or ``"recovered"``.
    at: when it was detected (aware UTC).
    message: one human sentence for summaries and timelines.
    count: how many slots a ``missed`` detection covers (1 otherwise).
    detail: JSON-able extras stored on the timeline event.
    """

    kind: str
    at: datetime
    message: str
    count: int = 1
    detail: dict = field(default_factory=dict)


def apply(monitor, detections: list[Detection]) -> list[IncidentEvent]:
    """Fold ``detections`` into ``monitor``'s incident; returns the events written.

    Paused monitors produce no incidents or notifications (their pings and runs
    are still stored by the caller).
    """
    if monitor.paused or not detections:
        return []
    incident = Incident.objects.filter(monitor=monitor, resolved_at__isnull=True).first()
    events: list[IncidentEvent] = []
    notify: list[IncidentEvent] = []
    for d in detections:
        if d.kind == RECOVERED:
            if incident is None:
                continue
            incident.resolved_at = d.at
            incident.resolution = d.message
            incident.save(update_fields=["resolved_at", "resolution"])
            ev = _event(incident, IncidentEvent.Kind.RESOLVED, d)
            events.append(ev)
            notify.append(ev)
            incident = None
            continue
        if d.kind not in PROBLEMS:
            raise ValueError(f"unknown detection kind {d.kind!r}")
        if incident is None:
            incident = Incident.objects.create(
                monitor=monitor,
                cause=d.kind,
                summary=f"{monitor.name}: {d.message}"[:500],
                opened_at=d.at,
                missed_count=d.count if d.kind == Incident.Cause.MISSED else 0,
                failure_count=1 if d.kind == Incident.Cause.FAILED else 0,
            )
            ev = _event(incident, IncidentEvent.Kind.OPENED, d, cause=d.kind)
            notify.append(ev)
        else:
            if d.kind == Incident.Cause.MISSED:
                incident.missed_count += d.count
                incident.save(update_fields=["missed_count"])
            elif d.kind == Incident.Cause.FAILED:
                incident.failure_count += 1
                incident.save(update_fields=["failure_count"])
            ev = _event(incident, d.kind, d)
        events.append(ev)
    if notify:
        _notify(monitor, notify)
    return events


def _event(incident: Incident, kind: str, d: Detection, **extra) -> IncidentEvent:
    detail = {**d.detail, **extra}
    if d.kind == Incident.Cause.MISSED:
        detail.setdefault("missed_count", d.count)
    return IncidentEvent.objects.create(
        incident=incident, kind=kind, at=d.at, message=d.message[:500], detail=detail
    )


def _notify(monitor, events: list[IncidentEvent]) -> None:
    channel_ids = list(monitor.channels.values_list("pk", flat=True))
    deliveries = [Delivery(event=ev, channel_id=ch) for ev in events for ch in channel_ids]
    if deliveries:
        created = Delivery.objects.bulk_create(deliveries)
        ids = [d.pk for d in created]
        if any(i is None for i in ids):  # backends without RETURNING
            ids = list(Delivery.objects.filter(event__in=events).values_list("pk", flat=True))
        dispatch(ids)
