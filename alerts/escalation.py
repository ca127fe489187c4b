"""Escalation: who is told of an open incident, and when, until somebody acts.

Without a policy an incident notifies the monitor's channels when it opens (once),
and again every ``Alerting.renotify`` while nobody acknowledges, if that is set.

With an :class:`~alerts.models.EscalationPolicy` its tiers are notified in order:
the first ``delay`` after the opening (in the same transaction when that delay is
0), each next one its ``delay`` after the previous; after the last tier the policy
starts again from the first, ``repeat`` more times; then, with ``renotify`` set,
the last tier reached is notified again every ``renotify``. ``urgency`` ``low``
notifies the first tier only. Acknowledging or resolving stops it all.

A tier is escalated past early, and the reason recorded on the timeline, when
every one of its notifications failed for good (a non-retryable answer, or the
delivery engine gave up); at a tier's time the reason says whether anything was
delivered at all ("no channel of tier 1 took the notification within 300s").

State is on the incident (``tier``, ``round``, ``renotified``, and the indexed
``next_escalation_at``); :func:`advance`, run by every evaluator tick, takes the
due steps, O(due). Each step is an :class:`~alerts.models.IncidentEvent` with a
unique ``step`` name per incident, taken under the monitor's row lock: two
evaluators, a restarted worker or a retried tick never take a step twice (the
second insert fails and its transaction rolls back), and a step is never lost
(it is only marked taken in the transaction that makes its deliveries).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, connection, transaction

from alerts import batch, flapping, maintenance
from alerts.models import Alerting, Delivery, EscalationTier, Incident, IncidentEvent

log = logging.getLogger(__name__)
BATCH = 500


def alerting_of(monitor) -> Alerting:
    """The monitor's :class:`Alerting` (an unsaved default one when it has none),
    cached on the monitor object."""
    try:
        return monitor.alerting
    except Alerting.DoesNotExist:
        default = Alerting(monitor=monitor)
        monitor.alerting = default
        return default


def tiers_of(alerting: Alerting) -> list[EscalationTier]:
    """The tiers in force: the policy's, the first only at low urgency; [] without one.
    Each with its ``policy`` and ``channels`` read; once per policy in a batch
    (:func:`alerts.batch.policy_tiers`)."""
    policy_id = alerting.escalation_policy_id
    if policy_id is None:
        return []
    tiers = batch.policy_tiers(policy_id, lambda: list(
        EscalationTier.objects.filter(policy_id=policy_id).select_related("policy")
        .prefetch_related("channels").order_by("position")))
    return tiers[:1] if alerting.urgency == Alerting.Urgency.LOW else list(tiers)


def live_channels(channels) -> list[int]:
    return sorted(c.pk for c in channels if c.deleted_at is None)


@dataclass(frozen=True)
class Opening:
    """What happens when an incident opens: the channels its ``opened`` event
    notifies now (with ``detail`` to record), the tier that makes (-1: none yet),
    and when the next step is due (None: none)."""

    channels: list[int]
    detail: dict
    tier: int
    next_escalation_at: datetime | None


def plan_opening(monitor, at: datetime, default_channels) -> Opening:
    """The :class:`Opening` of an incident of ``monitor`` opening at ``at``.
    ``default_channels()`` gives the monitor's channels (for a monitor without a
    policy; called only then). Inside a maintenance window nothing is notified
    and the first step is due when it ends; while the monitor flaps nothing is
    notified (:mod:`alerts.flapping` decides when)."""
    held = maintenance.covering(monitor, at)
    if held is not None:
        window, end = held
        return Opening([], {"suppressed": f"maintenance window {window.name!r} until "
                                          f"{end.isoformat()}"}, -1, end)
    state, recent = flapping.on_opening(monitor, at)
    if state == "flapping":
        return Opening([], {"suppressed": "the monitor is flapping"}, -1, None)
    opening = _plan(monitor, at, default_channels)
    if state == "starts":
        note = (f"flapping: {recent} incidents in the last hour; until it is quiet for "
                f"{int(flapping.quiet().total_seconds())}s, more are recorded but not notified")
        return Opening(opening.channels, {**opening.detail, "flapping": note}, opening.tier,
                       opening.next_escalation_at)
    return opening


def first_channels(monitor, default_channels) -> list[int]:
    """The channels the first step notifies: the first tier's, else the monitor's."""
    tiers = tiers_of(alerting_of(monitor))
    return live_channels(tiers[0].channels.all()) if tiers else default_channels()


def _plan(monitor, at: datetime, default_channels) -> Opening:
    alerting = alerting_of(monitor)
    tiers = tiers_of(alerting)
    if tiers and tiers[0].delay > timedelta(0):
        return Opening([], {}, -1, at + tiers[0].delay)
    channels = live_channels(tiers[0].channels.all()) if tiers else default_channels()
    return Opening(channels, {"tier": 1, "round": 1} if tiers else {}, 0,
                   _next_step_at(0, 0, alerting, tiers, at))


def advance(now: datetime, notify) -> int:
    """Take every escalation step due at ``now`` (the evaluator's tick); returns how
    many were taken. ``notify(event, channel_ids)`` makes the deliveries."""
    due = list(Incident.objects.filter(next_escalation_at__lte=now)
               .order_by("next_escalation_at").values_list("pk", "monitor_id")[:BATCH])
    taken = 0
    for incident_id, monitor_id in due:
        try:
            with transaction.atomic():
                if _step(incident_id, monitor_id, now, notify):
                    taken += 1
        except IntegrityError:  # another evaluator took this step first
            log.info("escalation step of incident %s already taken", incident_id)
        except Exception:
            log.exception("escalating incident %s failed", incident_id)
    return taken


def _step(incident_id: int, monitor_id: int, now: datetime, notify) -> bool:
    from monitors.models import Monitor

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
    from alerts import incidents

    held = maintenance.covering(incident.monitor, now)
    if held is not None:  # wait for the end of the maintenance
        incident.next_escalation_at = held[1]
        incident.save(update_fields=["next_escalation_at"])
        return False
    alerting = alerting_of(incident.monitor)
    tiers = tiers_of(alerting)
    at = incidents.stamp(incident, now)
    nxt = _next_tier(incident.tier, incident.round, alerting, tiers)
    if nxt is None and incident.tier < 0:  # held back until now, without a policy
        event = IncidentEvent.objects.create(
            incident=incident, kind=IncidentEvent.Kind.ESCALATED, at=at, step="tier:0:0",
            message=f"notified: {_why(incident, tiers)}", detail={"tier": 1, "round": 1})
        incident.tier = 0
        notify(event, incidents.targets(incident.monitor))
    elif nxt is not None:
        tier, rnd = nxt
        why = _why(incident, tiers)
        event = IncidentEvent.objects.create(
            incident=incident, kind=IncidentEvent.Kind.ESCALATED, at=at,
            step=f"tier:{tier}:{rnd}", message=f"tier {tier + 1} notified: {why}"[:500],
            detail={"tier": tier + 1, "round": rnd + 1, "reason": why})
        incident.tier, incident.round = tier, rnd
        notify(event, live_channels(tiers[tier].channels.all()))
    else:  # nothing left to escalate to: send again to the last tier reached
        incident.renotified += 1
        channels = (live_channels(tiers[incident.tier].channels.all()) if tiers
                    else incidents.notified_channels(incident))
        event = IncidentEvent.objects.create(
            incident=incident, kind=IncidentEvent.Kind.RENOTIFIED, at=at,
            step=f"renotify:{incident.renotified}",
            message=f"still open and not acknowledged: sent again ({incident.renotified})",
            detail={"tier": incident.tier + 1 if tiers else None, "count": incident.renotified})
        notify(event, channels)
    incident.next_escalation_at = _next_step_at(incident.tier, incident.round, alerting,
                                                tiers, at)
    incident.save(update_fields=["tier", "round", "renotified", "next_escalation_at",
                                 "last_event_at"])
    return True


def _next_tier(tier: int, rnd: int, alerting: Alerting, tiers) -> tuple[int, int] | None:
    """(tier, round) to notify after tier ``tier`` of round ``rnd``, or None when no
    tier is left."""
    if not tiers:
        return None
    if tier + 1 < len(tiers):
        return tier + 1, rnd
    if alerting.urgency == Alerting.Urgency.HIGH and rnd < tiers[0].policy.repeat:
        return 0, rnd + 1
    return None


def _next_step_at(tier: int, rnd: int, alerting: Alerting, tiers, at: datetime
                  ) -> datetime | None:
    """When the step after tier ``tier`` of round ``rnd``, taken at ``at``, is due
    (``next_escalation_at``; None: no step left)."""
    nxt = _next_tier(tier, rnd, alerting, tiers)
    if nxt is not None:
        return at + tiers[nxt[0]].delay
    return at + alerting.renotify if alerting.renotify else None


def _why(incident: Incident, tiers) -> str:
    """Why the step after ``incident.tier`` is taken now."""
    if incident.tier < 0:
        opened = incident.events.filter(kind="opened").first()
        held = (opened.detail.get("suppressed", "") if opened else "")
        if held.startswith("the monitor is flapping"):
            return "still open after the monitor stopped flapping"
        if held:
            return "its maintenance window ended"
        return f"{int(tiers[0].delay.total_seconds())}s after the incident opened"
    sent = Delivery.objects.filter(incident=incident, event__step__isnull=False,
                                   event__detail__tier=incident.tier + 1,
                                   event__kind__in=IncidentEvent.PAGING)
    if not sent.exists():
        return f"tier {incident.tier + 1} had no channel left to notify"
    delivered = sent.filter(status=Delivery.Status.DELIVERED).exists()
    if not delivered and sent.exists() and not sent.filter(status__in=Delivery.ACTIVE).exists():
        return f"every notification of tier {incident.tier + 1} failed"
    if not delivered:
        return f"no channel of tier {incident.tier + 1} took the notification in time"
    return f"not acknowledged after tier {incident.tier + 1}"


def tiers_only_on(channel) -> list[str]:
    """The tiers ``channel`` is the only live channel of, as "tier 2 of escalation
    policy 'on-call'": deleting it would leave them notifying nobody."""
    found = []
    for tier in EscalationTier.objects.filter(channels=channel).select_related("policy"):
        if live_channels(tier.channels.all()) == [channel.pk]:
            found.append(f"tier {tier.position + 1} of escalation policy '{tier.policy.name}'")
    return found


def on_delivery_failed(delivery: Delivery, now: datetime) -> None:
    """A notification failed for good: if every notification of that tier step
    failed, escalate now instead of waiting for the tier's delay."""
    if delivery.incident_id is None or delivery.event_id is None:
        return
    event = delivery.event
    if event.kind not in ("opened", "escalated") or "tier" not in event.detail:
        return
    if event.deliveries.exclude(status=Delivery.Status.FAILED).exists():
        return
    Incident.objects.filter(pk=delivery.incident_id, resolved_at__isnull=True,
                            acknowledged_at__isnull=True, tier=event.detail["tier"] - 1,
                            next_escalation_at__gt=now).update(next_escalation_at=now)

