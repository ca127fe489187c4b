"""Turn detections into incidents, timeline events and notifications.

A *detection* (:mod:`monitors.detections`) is what ping ingest or the evaluator
found about one monitor; this module subscribes to them (``AlertsConfig.ready``).
:func:`apply` folds detections into the monitor's single open incident:

- a problem with no open incident opens one (event ``opened``), which notifies
  the monitor's channels (:func:`targets`);
- a problem while an incident is open is counted on the incident's timeline
  event of that kind (not re-notified): a timeline has one event per kind, so it
  stays bounded however long the incident lasts; any other problem while a
  ``slow`` incident is open also raises its cause and severity (:func:`_raise`,
  event ``escalated``, notified);
- ``recovered`` (a good run), ``paused`` and ``deleted`` resolve the open
  incident (event ``resolved``, resolution "a run succeeded", "monitor paused",
  "monitor deleted"), which notifies every channel that was notified of it
  (:func:`notified_channels`), whether or not it still belongs to the monitor.

:func:`set_channels` changes which channels follow a monitor and
:func:`channels_removed` sends a resolve to a notified channel that stops
following it, so no page is ever left open.

Event times never go backwards within an incident: an event's time is the later
of its detection's time and the incident's previous event (pings processed out
of arrival order under the monitor's lock keep their own arrival times, but the
timeline stays ordered). Callers hold the monitor's row lock inside a
transaction; deliveries are dispatched only after that transaction commits.
"""
from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db import transaction

from alerts import batch, escalation, flapping, maintenance
from alerts.models import Alerting, Channel, Delivery, Incident, IncidentEvent
from alerts.tasks import dispatch
from core import sql
from monitors.detections import CLOSING, PROBLEMS, Detection, Kind


def apply(monitor, detections: list[Detection]) -> list[IncidentEvent]:
    """Fold ``detections`` into ``monitor``'s incident; returns the events written
    or updated.

    The caller decides whether detections count (a paused monitor produces none).
    Raises ValueError for an unknown detection kind.
    """
    if not detections:
        return []
    incident = open_incident(monitor)
    events: list[IncidentEvent] = []
    for d in detections:
        if d.kind == Kind.RECOVERED and incident is not None and not _streak(
                monitor, good=True):
            continue  # not enough good runs in a row yet
        if d.kind in CLOSING:
            if incident is not None:
                detail = d.detail if d.kind == Kind.RECOVERED else {"reason": d.message}
                events.append(_resolve(incident, d.at, d.message, detail))
                incident = None
            continue
        if d.kind not in PROBLEMS:
            raise ValueError(f"unknown detection kind {d.kind!r}")
        if incident is None and not _streak(monitor, good=False):
            continue  # under the threshold: the run history shows it, nothing opens
        if incident is None:
            fields, opening = _opening(monitor, d)
            incident = Incident(monitor=monitor, **fields)
            incident.save(force_insert=True)
            batch.opened(incident)
            monitor.has_open_incident = True  # what the ping path read is out of date
            ev = IncidentEvent(incident=incident, **_opened_event(d, opening))
            ev.save(force_insert=True)
            _notify(ev, opening.channels)
        else:
            ev = _repeat(incident, d)
            if incident.cause == Kind.SLOW and d.kind != Kind.SLOW and _streak(
                    monitor, good=False):  # as it would open an incident
                events.append(ev)
                ev = _raise(monitor, incident, d)
        events.append(ev)
    return events


def _opening(monitor, d: Detection) -> tuple[dict, escalation.Opening]:
    """The fields (attnames, all but ``monitor``) of the incident problem ``d``
    opens for ``monitor`` (none open), and its :class:`escalation.Opening` (who is
    notified now, the next step)."""
    opening = escalation.plan_opening(monitor, d.at, lambda: targets(monitor))
    note = f" ({opening.detail['flapping']})" if "flapping" in opening.detail else ""
    return {
        "cause": d.kind,
        "summary": f"{monitor.name}: {d.message}{note}"[:500],
        "severity": severity(monitor, d.kind),
        "opened_at": d.at,
        "last_event_at": d.at,
        "missed_count": d.count if d.kind == Kind.MISSED else 0,
        "failure_count": 1 if d.kind == Kind.FAILED else 0,
        "tier": opening.tier,
        "next_escalation_at": opening.next_escalation_at,
    }, opening


def _opened_event(d: Detection, opening) -> dict:
    """The fields (all but ``incident``) of the ``opened`` event of a new incident."""
    return _event_fields(IncidentEvent.Kind.OPENED, d.at, d, step="opened", cause=d.kind,
                         **opening.detail)


def open_many(found: list) -> list:
    """Open the incidents of the (monitor, detections) pairs that simply open one
    (a single problem, no incident open, no failure threshold to reach) with one
    insert of the incidents, one of their ``opened`` events and one of their
    deliveries; returns the pairs left for :func:`apply`. Inside
    :func:`alerts.batch.batch` (the open incidents are known)."""
    simple, rest = [], []
    for monitor, ds in found:
        if (len(ds) == 1 and ds[0].kind in PROBLEMS and open_incident(monitor) is None
                and escalation.alerting_of(monitor).failure_threshold <= 1):
            simple.append((monitor, ds[0]))
        else:
            rest.append((monitor, ds))
    if not simple:
        return rest
    planned = [(monitor, d, *_opening(monitor, d)) for monitor, d in simple]
    names = ["monitor_id", *planned[0][2]]
    incident_ids = sql.insert_many(Incident, names, [
        [monitor.pk, *fields.values()] for monitor, _, fields, _ in planned])
    batch.forget([monitor.pk for monitor, *_ in planned])
    events = [_opened_event(d, opening) for _, d, _, opening in planned]
    names = ["incident_id", *events[0]]
    event_ids = sql.insert_many(IncidentEvent, names, [
        [incident_id, *fields.values()] for incident_id, fields in zip(incident_ids, events,
                                                                       strict=True)])
    _deliver([(event_id, incident_id, None, ch, d.at, d.at)
              for event_id, incident_id, (monitor, d, _, opening)
              in zip(event_ids, incident_ids, planned, strict=True)
              for ch in opening.channels])
    for monitor, *_ in planned:
        monitor.has_open_incident = True  # what the ping path read is out of date
    return rest


GOOD, BAD = ("succeeded",), ("failed", "missed", "stuck")


def _streak(monitor, good: bool) -> bool:
    """Whether ``monitor``'s latest runs reach its recovery (``good``) or failure
    threshold: that many finished runs in a row, newest first, all succeeded (all
    failed, missed or stuck). A threshold of 1 needs no look at the history."""
    from monitors.models import Run

    alerting = escalation.alerting_of(monitor)
    n = alerting.recovery_threshold if good else alerting.failure_threshold
    if n <= 1:
        return True
    latest = list(Run.objects.filter(monitor=monitor).exclude(outcome__in=Run.OPEN_OUTCOMES)
                  .order_by("-pk").values_list("outcome", flat=True)[:n])
    return len(latest) == n and all(o in (GOOD if good else BAD) for o in latest)


# Read by ping ingest with the monitor (monitors.detections.subscribe): whether an
# incident is open, so a good run's ping needs no query of its own to find none.
MONITOR_STATE = {"has_open_incident": (
    f"EXISTS (SELECT 1 FROM {Incident._meta.db_table} WHERE monitor_id = {{monitor_id}} "
    "AND resolved_at IS NULL)")}


def open_incident(monitor) -> Incident | None:
    """The monitor's open incident, if any. (Asked on every good run's ping: as
    SQL, it costs less CPU than building the ORM statement; and not at all when
    the ping path read with the monitor that none is open.)"""
    if getattr(monitor, "has_open_incident", None) in (False, 0):
        return None
    known = batch.open_incident(monitor)
    if known is not False:
        return known
    found = sql.select(Incident, "monitor_id = %s AND resolved_at IS NULL", [monitor.pk],
                       "LIMIT 1")
    return found[0] if found else None


WARNING_CAUSES = frozenset({Kind.OVERLAP, Kind.TOO_FAST, Kind.SLOW})


def severity(monitor, cause: str) -> str:
    """The severity an incident of ``monitor`` opens with: the monitor's, or from
    its cause (``warning`` for overlap, too_fast and slow, else ``critical``)."""
    chosen = escalation.alerting_of(monitor).severity
    return chosen or (Alerting.Severity.WARNING if cause in WARNING_CAUSES
                      else Alerting.Severity.CRITICAL)


class IncidentClosed(Exception):
    """The incident is resolved already: nothing to acknowledge."""


def acknowledge(incident_id: int, by: str, note: str, at: datetime) -> Incident:
    """Acknowledge incident ``incident_id`` at ``at``: escalation stops and every
    channel that was notified is told (PagerDuty ``acknowledge``). Acknowledging
    again changes nothing. Raises ``Incident.DoesNotExist`` or :class:`IncidentClosed`.
    """
    with transaction.atomic():
        incident = _locked(incident_id)
        if incident.resolved_at is not None:
            raise IncidentClosed(f"incident {incident_id} is resolved")
        if incident.acknowledged_at is not None:
            return incident
        at = stamp(incident, at)
        incident.acknowledged_at, incident.acknowledged_by = at, by[:200]
        incident.next_escalation_at = None
        incident.save(update_fields=["acknowledged_at", "acknowledged_by",
                                     "next_escalation_at", "last_event_at"])
        message = f"acknowledged by {by}" + (f": {note}" if note else "")
        ev = IncidentEvent.objects.create(incident=incident, at=at, step="acknowledged",
                                          kind=IncidentEvent.Kind.ACKNOWLEDGED,
                                          message=message[:500], detail={"by": by, "note": note})
        _notify(ev, notified_channels(incident))
        return incident


def resolve_by_hand(incident_id: int, by: str, note: str, at: datetime) -> Incident:
    """Resolve incident ``incident_id`` by hand: as a good run does, every channel
    that was notified gets the resolve. Resolving again changes nothing. Raises
    ``Incident.DoesNotExist``."""
    with transaction.atomic():
        incident = _locked(incident_id)
        if incident.resolved_at is None:
            message = f"resolved by {by}" + (f": {note}" if note else "")
            _resolve(incident, at, message, {"by": by, "note": note})
        return incident


def _locked(incident_id: int) -> Incident:
    """Incident ``incident_id`` with its monitor's row lock held (the caller's
    transaction), as every writer of an incident takes it."""
    from monitors.models import Monitor

    monitor_id = Incident.objects.values_list("monitor_id", flat=True).get(pk=incident_id)
    Monitor.objects.select_for_update().filter(pk=monitor_id).first()
    return Incident.objects.select_related("monitor").get(pk=incident_id)


def channels_removed(monitor, channel_ids: Iterable[int], at: datetime) -> list[IncidentEvent]:
    """Channels ``channel_ids`` stopped following ``monitor`` at ``at``: each one that
    was notified of its open incident gets a resolve now (event ``channel_removed``),
    as the incident's own resolve will no longer reach it."""
    incident = open_incident(monitor)
    if incident is None:
        return []
    gone = set(channel_ids) & set(notified_channels(incident))
    events = []
    for channel in Channel.objects.filter(pk__in=gone).order_by("pk"):
        at = stamp(incident, at)
        ev = IncidentEvent.objects.create(
            incident=incident, kind=IncidentEvent.Kind.CHANNEL_REMOVED, at=at,
            message=f"channel {channel} no longer follows this monitor and was sent a resolve",
            detail={"channel": channel.pk})
        incident.save(update_fields=["last_event_at"])
        _notify(ev, [channel.pk])
        events.append(ev)
    return events


def delete_channel(channel: Channel, at: datetime) -> None:
    """Delete ``channel`` at ``at``: each open incident that notified it sends it a
    resolve first (:func:`channels_removed`). The row stays, invisible to the API,
    until those deliveries are delivered or abandoned; the evaluator then removes it
    (:func:`monitors.evaluator.purge_channels`)."""
    from monitors.models import Monitor

    with transaction.atomic():
        Channel.objects.filter(pk=channel.pk).update(deleted_at=at)
        affected = (Incident.objects.filter(resolved_at__isnull=True,
                                            events__deliveries__channel=channel)
                    .values_list("monitor_id", flat=True))
        # monitor row locks in id order, as everywhere a transaction takes several
        for monitor in Monitor.objects.select_for_update().filter(pk__in=affected).order_by("pk"):
            channels_removed(monitor, [channel.pk], at)


def targets(monitor) -> list[int]:
    """Ids of the channels an incident of ``monitor`` opens on: every live channel of
    its project (the default, ``Alerting.all_channels``), else the live channels
    its :class:`Alerting` lists."""
    alerting = escalation.alerting_of(monitor)
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


def set_channels(monitor, channels, at: datetime) -> None:
    """Make ``channels`` (``"all"`` or a list of channel ids of the monitor's project)
    the ones ``monitor`` notifies; a channel that was notified of its open incident
    and no longer follows it gets a resolve (:func:`channels_removed`). The caller
    holds the monitor's row lock."""
    following = set(targets(monitor))
    alerting = escalation.alerting_of(monitor)
    alerting.all_channels = channels == "all"
    alerting.save()
    alerting.channels.set([] if alerting.all_channels else channels)
    channels_removed(monitor, following - set(targets(monitor)), at)


def set_alerting(monitor, changes: dict) -> None:
    """Change ``monitor``'s :class:`Alerting` settings (``escalation_policy``,
    ``urgency``, ``severity``, ``renotify``, ``failure_threshold``,
    ``recovery_threshold``): they apply from the next incident, escalation step
    or run on. Nothing to change: nothing written."""
    if not changes:
        return
    alerting = escalation.alerting_of(monitor)
    for name, value in changes.items():
        setattr(alerting, name, value)
    alerting.save()


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


CLOSES_ITS_TEST = ("pagerduty", "opsgenie")  # tools that keep an alert open until resolved


def send_test(channel: Channel, at: datetime) -> tuple[int | None, str]:
    """Send ``channel`` a test notification now, synchronously, through the same
    builder and transport as real ones (the SSRF guard included), storing
    nothing: an ``opened`` event of a made-up monitor and incident (PagerDuty and
    Opsgenie then get its resolve too, so no test alert stays open). Returns
    (status_code, error) of the first request; error is "" when it was delivered."""
    from alerts.delivery import transmit
    from alerts.integrations import KINDS
    from monitors.models import Monitor

    monitor = Monitor(project=channel.project, name="CronRadar test notification",
                      slug="test", tags=["test"], timezone="UTC", kind=Monitor.Kind.INTERVAL)
    incident = Incident(monitor=monitor, cause=Kind.FAILED, severity=Alerting.Severity.INFO,
                        summary="This is a test notification from CronRadar: all is well.",
                        dedup_key=f"cronradar-test-{channel.pk}", opened_at=at)
    event = IncidentEvent(incident=incident, kind=IncidentEvent.Kind.OPENED, at=at,
                          message="test notification")
    try:
        request = KINDS[channel.kind].build_request(channel, event)
    except Exception as exc:  # a channel whose config cannot make a request
        return None, f"build error: {type(exc).__name__}: {exc}"
    status_code, error, _, _ = transmit(request)
    if error == "" and channel.kind in CLOSES_ITS_TEST:  # leave no test alert open there
        resolved = IncidentEvent(incident=incident, kind=IncidentEvent.Kind.RESOLVED, at=at,
                                 message="test notification")
        transmit(KINDS[channel.kind].build_request(channel, resolved))
    return status_code, error


def notify_outage(impact) -> None:
    """Send ``impact`` (a :class:`monitors.models.OutageImpact`: slots of one project
    recorded ``unknown`` during an outage of CronRadar) to every live channel of its
    project, as one ``outage.summary`` notification each."""
    channels = Channel.objects.filter(project_id=impact.project_id, deleted_at__isnull=True)
    at = impact.outage.summarized_at
    _deliver([(None, None, impact.pk, ch, at, at)
              for ch in channels.order_by("pk").values_list("pk", flat=True)])


def _resolve(incident: Incident, at: datetime, message: str, detail: dict) -> IncidentEvent:
    at = stamp(incident, at)
    incident.resolved_at = at
    incident.resolution = message[:200]
    incident.next_escalation_at = None
    incident.save(update_fields=["resolved_at", "resolution", "last_event_at",
                                 "next_escalation_at"])
    ev = IncidentEvent.objects.create(incident=incident, kind=IncidentEvent.Kind.RESOLVED,
                                      at=at, message=message[:500], detail=detail,
                                      step="resolved")
    _notify(ev, notified_channels(incident))
    return ev


def _raise(monitor, incident: Incident, d: Detection) -> IncidentEvent:
    """Another problem ``d`` while ``incident`` is open for ``slow`` (the lowest
    precedence): its cause becomes ``d``'s kind and its severity that cause's
    (:func:`severity`), recorded as an ``escalated`` event (step ``raised``), which
    is sent to every channel holding the incident open (PagerDuty: a new trigger
    with the same dedup_key and the new severity), acknowledged or not, unless a
    maintenance window covers the moment. Channels not told of the incident yet
    (a tier's delay, a window, flapping) get its current cause when they are."""
    old = incident.cause
    incident.cause, incident.severity = d.kind, severity(monitor, d.kind)
    at = stamp(incident, d.at)
    incident.save(update_fields=["cause", "severity", "last_event_at"])
    detail = {"from": old, "cause": d.kind, "severity": incident.severity}
    held = maintenance.covering(monitor, at)
    if held is not None:
        detail["suppressed"] = f"maintenance window {held[0].name!r} until {held[1].isoformat()}"
    ev = IncidentEvent.objects.create(
        incident=incident, kind=IncidentEvent.Kind.ESCALATED, at=at, step="raised",
        message=f"cause raised from {old} to {d.kind}, severity {incident.severity}: "
                f"{d.message}"[:500], detail=detail)
    if held is None:
        _notify(ev, notified_channels(incident))
    return ev


def _repeat(incident: Incident, d: Detection) -> IncidentEvent:
    """A problem seen again while ``incident`` is open: counted on its event of that
    kind (created the first time), with the latest message and detail."""
    at = stamp(incident, d.at)
    if d.kind == Kind.MISSED:
        incident.missed_count += d.count
    elif d.kind == Kind.FAILED:
        incident.failure_count += 1
    incident.save(update_fields=["missed_count", "failure_count", "last_event_at"])
    ev = incident.events.filter(kind=d.kind).first()
    if ev is None:
        return _event(incident, d.kind, at, d)
    ev.count += d.count
    ev.last_at = at
    ev.message = d.message[:500]
    ev.detail = _detail(d)
    ev.save(update_fields=["count", "last_at", "message", "detail"])
    return ev


def stamp(incident: Incident, at: datetime) -> datetime:
    """The time for a new event of ``incident``: ``at``, or its latest event's time
    if that is later (times never go backwards in a timeline); records it."""
    if incident.last_event_at is not None and incident.last_event_at > at:
        at = incident.last_event_at
    incident.last_event_at = at
    return at


def _detail(d: Detection, **extra) -> dict:
    detail = {**d.detail, **extra}
    if d.kind == Kind.MISSED:
        detail.setdefault("missed_count", d.count)
    return detail


def _event(incident: Incident, kind: str, at: datetime, d: Detection, step: str | None = None,
           **extra) -> IncidentEvent:
    ev = IncidentEvent(incident=incident, **_event_fields(kind, at, d, step, **extra))
    ev.save(force_insert=True)
    return ev


def _event_fields(kind: str, at: datetime, d: Detection, step: str | None = None,
                  **extra) -> dict:
    """The fields (all but ``incident``) of a new event ``kind`` at ``at`` from
    detection ``d``; ``extra`` goes into its detail."""
    return {"kind": kind, "at": at, "step": step, "message": d.message[:500],
            "detail": _detail(d, **extra), "count": d.count if kind == d.kind else 1}


def _notify(event: IncidentEvent, channel_ids: Iterable[int]) -> None:
    """One delivery of ``event`` per channel, due at the event's time."""
    _deliver([(event.pk, event.incident_id, None, ch, event.at, event.at)
              for ch in channel_ids])


DELIVERY_FIELDS = ("event_id", "incident_id", "outage_id", "channel_id", "created_at",
                   "next_attempt_at")


def _deliver(rows: list[tuple]) -> None:
    """Insert deliveries, given as ``DELIVERY_FIELDS`` rows (the others take their
    defaults: pending, no attempt yet; rows are the schedule), and have them
    claimed as soon as the transaction commits."""
    if rows:
        sql.insert_many(Delivery, DELIVERY_FIELDS, rows)
        dispatch()


# --- subscribers (connected in AlertsConfig.ready) ----------------------------------------

def on_detections(monitor, detections: list[Detection]) -> None:
    """monitors.detections subscriber: :func:`apply`."""
    apply(monitor, detections)


def on_detections_many(found: list) -> None:
    """monitors.detections batch subscriber: :func:`apply` for each (monitor,
    detections) pair, with the reads of the whole batch made together
    (:mod:`alerts.batch`)."""
    if not found:
        return
    since = min(d.at for _, ds in found for d in ds) - flapping.WINDOW
    with batch.batch([m for m, _ in found], since):
        for monitor, detections in open_many(found):
            apply(monitor, detections)


def on_outage_settled(sender, impact, **kwargs) -> None:
    """monitors.signals.outage_settled receiver: :func:`notify_outage`."""
    notify_outage(impact)


def on_purge_requested(sender, monitor, **kwargs) -> bool:
    """monitors.signals.purge_requested receiver: a deleted monitor may go once no
    notification of its incidents is still to be sent."""
    return not Delivery.objects.filter(incident__monitor=monitor,
                                       status__in=Delivery.ACTIVE).exists()


def on_tick(sender, now, **kwargs) -> None:
    """monitors.signals.tick receiver: end quiet flapping, take the escalation steps due."""
    flapping.check(now, _notify)
    escalation.advance(now, _notify)


def on_tick_done(sender, now, **kwargs) -> None:
    """monitors.signals.tick_done receiver: remove deleted channels whose last
    notifications are done."""
    for channel in Channel.objects.filter(deleted_at__isnull=False):
        if not channel.deliveries.filter(status__in=Delivery.ACTIVE).exists():
            channel.delete()
