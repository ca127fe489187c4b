"""The incident state machine: the one place incidents are opened, counted,
raised, escalated, acknowledged and resolved.

A *detection* (:mod:`monitors.detections`) is what ping ingest or the evaluator
found about one monitor; this module subscribes to them (``AlertsConfig.ready``).
:func:`apply` folds detections into the monitor's single open incident:

- a problem with no open incident opens one (event ``opened``); who is told is
  the whole opening decision (:func:`_opening`): nobody inside a maintenance
  window or while the monitor flaps, else the first tier, or the monitor's
  channels (:func:`alerts.timeline.targets`) without a policy;
- a problem while an incident is open is counted on the incident's timeline
  event of that kind (not re-notified): a timeline has one event per kind, so it
  stays bounded however long the incident lasts; any other problem while a
  ``slow``, ``skipped`` or ``double_launch`` incident is open (the lowest
  precedence) also raises its cause and severity (:func:`_raise`, event
  ``escalated``, notified);
- ``recovered`` (a good run), ``paused`` and ``deleted`` resolve the open
  incident (event ``resolved``, resolution "a run succeeded", "monitor paused",
  "monitor deleted"), which notifies every channel that was notified of it
  (:func:`alerts.timeline.notified_channels`), whether or not it still belongs to
  the monitor. Once slots were skipped, only a good run that started after them
  resolves it; once a slot was launched twice, only a good run of a later slot
  (:func:`_held`).

The evaluator's tick takes the escalation steps due (:func:`escalate_due`) and
ends quiet flapping (:func:`end_flapping`); a tier whose every notification failed
escalates at once (:func:`on_delivery_failed`). :mod:`alerts.escalation` and
:mod:`alerts.flapping` decide those steps; this module writes them, so only it
creates or changes incidents. People acknowledge and resolve by hand
(:func:`acknowledge`, :func:`resolve_by_hand`); a channel that stops following a
monitor is sent a resolve (:func:`channel_removed`, from :mod:`alerts.channels`).

Event times never go backwards within an incident (:func:`alerts.timeline.stamp`):
pings processed out of arrival order under the monitor's lock keep their own
arrival times, but the timeline stays ordered. Callers hold the monitor's row
lock inside a transaction; deliveries are dispatched only after that transaction
commits.
"""
from __future__ import annotations

import logging
from collections import Counter
from datetime import datetime
from functools import partial

from django.db import IntegrityError, connection, transaction

from accounts import audit
from accounts.models import AuditEntry
from alerts import batch, escalation, flapping, maintenance, reasons
from alerts.models import Alerting, Channel, Delivery, Incident, IncidentEvent
from alerts.reasons import Reason
from alerts.timeline import alerting_of, deliver, notified_channels, notify, stamp, targets
from core import logs, metrics, sql, tablestats
from monitors import history
from monitors.detections import CLOSING, LOWEST, PROBLEMS, Detection, Kind
from monitors.models import Monitor, Run

log = logging.getLogger(__name__)


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
        if d.kind == Kind.RECOVERED and incident is not None and (
                not _streak(monitor, good=True) or _held(incident, d)):
            continue  # not enough good runs in a row yet, or not a run that makes good
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
            transaction.on_commit(partial(metrics.incident_opened, d.kind))
            batch.opened(incident)
            monitor.has_open_incident = True  # what the ping path read is out of date
            ev = IncidentEvent(incident=incident, **_opened_event(d, opening))
            ev.save(force_insert=True)
            notify(ev, opening.channels)
        else:
            ev = _repeat(incident, d)
            if incident.cause in LOWEST and d.kind not in LOWEST and _streak(
                    monitor, good=False):  # as it would open an incident
                events.append(ev)
                ev = _raise(monitor, incident, d)
        events.append(ev)
    return events


def _opening(monitor, d: Detection) -> tuple[dict, escalation.Opening]:
    """The fields (attnames, all but ``monitor``) of the incident problem ``d``
    opens for ``monitor`` (none open), and its :class:`escalation.Opening` (who is
    notified now, the next step): the whole opening decision. Inside a maintenance
    window nothing is notified and the first step is due when it ends; while the
    monitor flaps nothing is notified (:mod:`alerts.flapping` decides when); else
    the first tier (:func:`escalation.first_step`). Writes the monitor's flapping
    state."""
    opening = _open_how(monitor, d.at)
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


def _open_how(monitor, at: datetime) -> escalation.Opening:
    """Who an incident of ``monitor`` opening at ``at`` notifies (see :func:`_opening`)."""
    held = maintenance.covering(monitor, at)
    if held is not None:
        window, end = held
        return escalation.Opening([], reasons.held(Reason.MAINTENANCE, window=window.name,
                                                   until=end.isoformat()), -1, end)
    flap = flapping.on_opening(monitor, at)
    if flap.changes:
        alerting = alerting_of(monitor)
        for name, value in flap.changes.items():
            setattr(alerting, name, value)
        alerting.save()
    if flap.state == "flapping":
        return escalation.Opening([], reasons.held(Reason.FLAPPING), -1, None)
    opening = escalation.first_step(monitor, at, lambda: targets(monitor))
    if flap.state == "starts":
        note = (f"flapping: {flap.recent} incidents in the last hour; until it is quiet for "
                f"{int(flapping.quiet().total_seconds())}s, more are recorded but not notified")
        return escalation.Opening(opening.channels, {**opening.detail, "flapping": note},
                                  opening.tier, opening.next_escalation_at)
    return opening


def _opened_event(d: Detection, opening) -> dict:
    """The fields (all but ``incident``) of the ``opened`` event of a new incident."""
    return _event_fields(IncidentEvent.Kind.OPENED, d.at, d, step="opened", cause=d.kind,
                         **opening.detail)


def open_many(found: list) -> list:
    """Open the incidents of the (monitor, detections) pairs that simply open one
    (a single problem, no incident open, no failure threshold to reach) with one
    insert of the incidents, one of their ``opened`` events and one of their
    deliveries (their tables' statistics kept current after a burst:
    :mod:`core.tablestats`); returns the pairs left for :func:`apply`. Inside
    :func:`alerts.batch.batch` (the open incidents are known)."""
    simple, rest = [], []
    for monitor, ds in found:
        if (len(ds) == 1 and ds[0].kind in PROBLEMS and open_incident(monitor) is None
                and alerting_of(monitor).failure_threshold <= 1):
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
    tablestats.inserted(Incident, len(incident_ids))
    tablestats.inserted(IncidentEvent, len(event_ids))
    deliver([(event_id, incident_id, ch, d.at, d.at)
              for event_id, incident_id, (monitor, d, _, opening)
              in zip(event_ids, incident_ids, planned, strict=True)
              for ch in opening.channels])
    for monitor, *_ in planned:
        monitor.has_open_incident = True  # what the ping path read is out of date
    for cause, n in Counter(d.kind for _, d, *_ in planned).items():
        transaction.on_commit(partial(metrics.incident_opened, cause, n))
    return rest


GOOD, BAD = ("succeeded",), ("failed", "missed", "skipped", "stuck")


def _streak(monitor, good: bool) -> bool:
    """Whether ``monitor``'s latest runs reach its recovery (``good``) or failure
    threshold: that many finished runs in a row, newest first, all succeeded (all
    failed, missed, skipped or stuck). A threshold of 1 needs no look at the history."""
    alerting = alerting_of(monitor)
    n = alerting.recovery_threshold if good else alerting.failure_threshold
    if n <= 1:
        return True
    latest = list(history.runs_newest_first(monitor).exclude(outcome__in=Run.OPEN_OUTCOMES)
                  .values_list("outcome", flat=True)[:n])
    return len(latest) == n and all(o in (GOOD if good else BAD) for o in latest)


HOLDING = (Kind.SKIPPED, Kind.DOUBLE_LAUNCH)  # their incidents resolve as _held says


def _held(incident: Incident, d: Detection) -> bool:
    """Whether the good run of ``d`` (a ``recovered`` detection: its ``slot`` and
    ``first_ping``) leaves ``incident`` open. Once slots were ``skipped``, only a
    run whose first ping came after the last of them makes good (the long run that
    held them up does not); once a slot was launched twice (``double_launch``),
    only a run of a later slot. Read from the incident's ``opened`` event (its
    cause) and its events of those kinds (each holds its latest detection's
    detail): one query."""
    first_ping, slot = (datetime.fromisoformat(d.detail[k]) if d.detail.get(k) else None
                        for k in ("first_ping", "slot"))
    for kind, detail in incident.events.filter(
            kind__in=(IncidentEvent.Kind.OPENED, *HOLDING)).values_list("kind", "detail"):
        kind = detail.get("cause") if kind == IncidentEvent.Kind.OPENED else kind
        if kind == Kind.SKIPPED and (
                first_ping is None or first_ping <= datetime.fromisoformat(detail["last_slot"])):
            return True
        if kind == Kind.DOUBLE_LAUNCH and (
                slot is None or slot <= datetime.fromisoformat(detail["slot"])):
            return True
    return False


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


WARNING_CAUSES = frozenset({Kind.OVERLAP, Kind.TOO_FAST, Kind.SLOW, Kind.SKIPPED,
                            Kind.DOUBLE_LAUNCH})


def severity(monitor, cause: str) -> str:
    """The severity an incident of ``monitor`` opens with: the monitor's, or from
    its cause (``warning`` for overlap, too_fast, slow, skipped and double_launch,
    else ``critical``)."""
    chosen = alerting_of(monitor).severity
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
        notify(ev, notified_channels(incident))
        _audit(AuditEntry.Action.ACKNOWLEDGE, incident, by, note)
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
            _audit(AuditEntry.Action.RESOLVE, incident, by, note)
        return incident


def _audit(action: str, incident: Incident, by: str, note: str) -> None:
    """The audit entry of a person's (a key's, a signed link's) acknowledge or
    resolve; ``by`` and ``note`` as the timeline shows them."""
    changes = {"by": [None, by]} | ({"note": [None, note]} if note else {})
    audit.record(action, incident.monitor.project.organisation, target=incident,
                 target_type="incident", target_repr=f"incident {incident.pk} of "
                 f"{incident.monitor}", changes=changes)


def _locked(incident_id: int) -> Incident:
    """Incident ``incident_id`` with its monitor's row lock held (the caller's
    transaction), as every writer of an incident takes it."""
    monitor_id = Incident.objects.values_list("monitor_id", flat=True).get(pk=incident_id)
    Monitor.objects.select_for_update().filter(pk=monitor_id).first()
    return Incident.objects.select_related("monitor").get(pk=incident_id)


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
    notify(ev, notified_channels(incident))
    return ev


def _raise(monitor, incident: Incident, d: Detection) -> IncidentEvent:
    """Another problem ``d`` while ``incident`` is open for ``slow``, ``skipped`` or
    ``double_launch`` (the lowest precedence, :data:`monitors.detections.LOWEST`): its
    cause becomes ``d``'s kind and its severity that cause's
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
        detail.update(reasons.held(Reason.MAINTENANCE, window=held[0].name,
                                   until=held[1].isoformat()))
    ev = IncidentEvent.objects.create(
        incident=incident, kind=IncidentEvent.Kind.ESCALATED, at=at, step="raised",
        message=f"cause raised from {old} to {d.kind}, severity {incident.severity}: "
                f"{d.message}"[:500], detail=detail)
    if held is None:
        notify(ev, notified_channels(incident))
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


def channel_removed(incident: Incident, channel: Channel, at: datetime) -> IncidentEvent:
    """``channel``, notified of open ``incident``, stopped following its monitor at
    ``at``: it gets a resolve now (event ``channel_removed``), as the incident's own
    resolve will no longer reach it."""
    at = stamp(incident, at)
    ev = IncidentEvent.objects.create(
        incident=incident, kind=IncidentEvent.Kind.CHANNEL_REMOVED, at=at,
        message=f"channel {channel} no longer follows this monitor and was sent a resolve",
        detail={"channel": channel.pk})
    incident.save(update_fields=["last_event_at"])
    notify(ev, [channel.pk])
    return ev


def escalate_due(now: datetime) -> int:
    """Take every escalation step due at ``now`` (the evaluator's tick), each in a
    transaction of its own under the monitor's row lock; returns how many were
    taken."""
    taken = 0
    for incident_id, monitor_id in escalation.due(now):
        with logs.bound(incident=incident_id, monitor=monitor_id):
            try:
                with transaction.atomic():
                    if _escalate(incident_id, monitor_id, now):
                        taken += 1
            except IntegrityError:  # another evaluator took this step first
                log.info("escalation step of incident %s already taken", incident_id)
            except Exception:
                log.exception("escalating incident %s failed", incident_id)
    return taken


def _escalate(incident_id: int, monitor_id: int, now: datetime) -> bool:
    """Take incident ``incident_id``'s step due at ``now`` (:func:`escalation.next_step`);
    False when another evaluator holds the monitor, the step is no longer due, or
    it waits for a maintenance window's end. The step's unique name makes a second
    taker's insert fail (IntegrityError: its transaction rolls back)."""
    lock = Monitor.objects.filter(pk=monitor_id)
    if connection.features.has_select_for_update_skip_locked:
        lock = lock.select_for_update(skip_locked=True)
    else:
        lock = lock.select_for_update()
    if lock.first() is None:
        return False  # another evaluator holds it; it takes the step
    incident = Incident.objects.select_related("monitor").filter(
        pk=incident_id, resolved_at__isnull=True, acknowledged_at__isnull=True,
        next_escalation_at__lte=now).first()
    if incident is None:
        return False
    at = stamp(incident, now)  # saved only with the step's event
    step = escalation.next_step(incident, now, at)
    if step.wait_until is not None:
        incident.next_escalation_at = step.wait_until
        incident.save(update_fields=["next_escalation_at"])
        return False
    event = IncidentEvent.objects.create(incident=incident, kind=step.kind, at=at,
                                         step=step.step, message=step.message,
                                         detail=step.detail)
    notify(event, step.channels)
    incident.tier, incident.round, incident.renotified = step.tier, step.round, step.renotified
    incident.next_escalation_at = step.next_escalation_at
    incident.save(update_fields=["tier", "round", "renotified", "next_escalation_at",
                                 "last_event_at"])
    return True


def end_flapping(now: datetime) -> int:
    """End the flapping of monitors quiet long enough at ``now`` (the evaluator's
    tick), each in a transaction of its own; returns how many monitors it looked at."""
    due = flapping.due(now)
    for monitor_id in due:
        with transaction.atomic():
            _end_flapping(monitor_id, now)
    return len(due)


def _end_flapping(monitor_id: int, now: datetime) -> None:
    """Write :func:`flapping.ending` for monitor ``monitor_id`` (its row lock taken)."""
    monitor = Monitor.objects.select_for_update().filter(pk=monitor_id).first()
    alerting = Alerting.objects.filter(monitor_id=monitor_id, stable_check_at__lte=now).first()
    if monitor is None or alerting is None:
        return
    alerting.flapping_since = alerting.stable_check_at = None
    alerting.save()
    monitor.alerting = alerting
    end = flapping.ending(monitor)
    if end.notify_now is not None:  # held back and down now: notify it at once
        Incident.objects.filter(pk=end.notify_now).update(next_escalation_at=now)
    if end.stable is not None:
        at = stamp(end.stable, now)
        event = IncidentEvent.objects.create(
            incident=end.stable, kind=IncidentEvent.Kind.STABLE, at=at,
            step=f"stable:{int(at.timestamp())}",
            message=f"stable again: no new incident for {int(flapping.quiet().total_seconds())}s")
        end.stable.save(update_fields=["last_event_at"])
        notify(event, escalation.first_channels(monitor, lambda: targets(monitor)))


def _detail(d: Detection, **extra) -> dict:
    detail = {**d.detail, **extra}
    if d.kind == Kind.MISSED:
        detail.setdefault("missed_count", d.count)
    elif d.kind == Kind.SKIPPED:
        detail.setdefault("skipped_count", d.count)
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


def on_purge_requested(sender, monitor, **kwargs) -> bool:
    """monitors.signals.purge_requested receiver: a deleted monitor may go once no
    notification of its incidents is still to be sent."""
    return not Delivery.objects.filter(incident__monitor=monitor,
                                       status__in=Delivery.ACTIVE).exists()


def on_tick(sender, now, **kwargs) -> None:
    """monitors.signals.tick receiver: end quiet flapping, take the escalation steps due."""
    end_flapping(now)
    escalate_due(now)


def on_delivery_failed(sender, delivery, at, **kwargs) -> None:
    """alerts.delivery.delivery_failed receiver: if every notification of that tier
    step failed, escalate now instead of waiting for the tier's delay."""
    tier = escalation.tier_failed(delivery)
    if tier is not None:
        Incident.objects.filter(pk=delivery.incident_id, resolved_at__isnull=True,
                                acknowledged_at__isnull=True, tier=tier,
                                next_escalation_at__gt=at).update(next_escalation_at=at)
