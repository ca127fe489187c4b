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
Reasons are coded (:class:`alerts.reasons.Reason`).

This module decides and writes nothing: :func:`first_step` is the first tier of
an opening incident, :func:`next_step` the step due for an open one,
:func:`tier_failed` whether a failed delivery ends its tier early. The incident
state machine (:mod:`alerts.incidents`) takes the steps: state is on the incident
(``tier``, ``round``, ``renotified``, and the indexed ``next_escalation_at``), each
step an :class:`~alerts.models.IncidentEvent` with a unique ``step`` name per
incident, taken under the monitor's row lock, so two evaluators, a restarted
worker or a retried tick never take a step twice and a step is never lost.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from alerts import batch, maintenance
from alerts.models import Alerting, Delivery, EscalationTier, Incident, IncidentEvent
from alerts.reasons import Reason, sentence
from alerts.timeline import alerting_of, notified_channels, targets

BATCH = 500  # incidents whose step is due, read per tick at most


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
    """Ids of the undeleted ones of ``channels``, ascending."""
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


def first_step(monitor, at: datetime, default_channels) -> Opening:
    """The first tier's part of an incident of ``monitor`` opening at ``at`` (nothing
    holds it back): the first tier's channels now, or none until its ``delay``.
    ``default_channels()`` gives the monitor's channels (for a monitor without a
    policy; called only then)."""
    alerting = alerting_of(monitor)
    tiers = tiers_of(alerting)
    if tiers and tiers[0].delay > timedelta(0):
        return Opening([], {}, -1, at + tiers[0].delay)
    channels = live_channels(tiers[0].channels.all()) if tiers else default_channels()
    return Opening(channels, {"tier": 1, "round": 1} if tiers else {}, 0,
                   _next_step_at(0, 0, alerting, tiers, at))


def first_channels(monitor, default_channels) -> list[int]:
    """The channels the first step notifies: the first tier's, else the monitor's."""
    tiers = tiers_of(alerting_of(monitor))
    return live_channels(tiers[0].channels.all()) if tiers else default_channels()


def due(now: datetime) -> list[tuple[int, int]]:
    """(incident id, monitor id) of the incidents whose next step is due at ``now``,
    earliest first, at most ``BATCH`` (the partial index incident_escalation_due)."""
    return list(Incident.objects.filter(next_escalation_at__lte=now)
                .order_by("next_escalation_at").values_list("pk", "monitor_id")[:BATCH])


@dataclass(frozen=True)
class Step:
    """The escalation step an open incident takes: nothing is notified while
    ``wait_until`` is set (a maintenance window covers the monitor: the step is
    due again when it ends); otherwise an event of ``kind`` (``escalated`` or
    ``renotified``) named ``step``, with ``message`` and ``detail``, notifies
    ``channels``, and the incident's ``tier``, ``round``, ``renotified`` and
    ``next_escalation_at`` become these."""

    wait_until: datetime | None = None
    kind: str = ""
    step: str = ""
    message: str = ""
    detail: dict = field(default_factory=dict)
    channels: list[int] = field(default_factory=list)
    tier: int = -1
    round: int = 0
    renotified: int = 0
    next_escalation_at: datetime | None = None


def next_step(incident: Incident, now: datetime, at: datetime) -> Step:
    """The step ``incident`` (open, not acknowledged, its step due) takes at
    ``now``, its event recorded at ``at`` (``now``, or the incident's latest event
    if later: :func:`alerts.timeline.stamp`), from which the next step is timed."""
    held = maintenance.covering(incident.monitor, now)
    if held is not None:  # wait for the end of the maintenance
        return Step(wait_until=held[1])
    alerting = alerting_of(incident.monitor)
    tiers = tiers_of(alerting)
    tier, rnd, renotified = incident.tier, incident.round, incident.renotified
    nxt = _next_tier(tier, rnd, alerting, tiers)
    if nxt is None and tier < 0:  # held back until now, without a policy
        code, facts = _why(incident, tiers)
        why = sentence(code, **facts)
        kind, step, tier = IncidentEvent.Kind.ESCALATED, "tier:0:0", 0
        message = f"notified: {why}"
        detail = {"tier": 1, "round": 1, "code": code.value, "reason": why}
        channels = targets(incident.monitor)
    elif nxt is not None:
        code, facts = _why(incident, tiers)
        why = sentence(code, **facts)
        tier, rnd = nxt
        kind, step = IncidentEvent.Kind.ESCALATED, f"tier:{tier}:{rnd}"
        message = f"tier {tier + 1} notified: {why}"
        detail = {"tier": tier + 1, "round": rnd + 1, "code": code.value, "reason": why}
        channels = live_channels(tiers[tier].channels.all())
    else:  # nothing left to escalate to: send again to the last tier reached
        renotified += 1
        kind, step = IncidentEvent.Kind.RENOTIFIED, f"renotify:{renotified}"
        message = f"still open and not acknowledged: sent again ({renotified})"
        detail = {"tier": tier + 1 if tiers else None, "count": renotified}
        channels = (live_channels(tiers[tier].channels.all()) if tiers
                    else notified_channels(incident))
    return Step(kind=kind, step=step, message=message[:500], detail=detail,
                channels=channels, tier=tier, round=rnd, renotified=renotified,
                next_escalation_at=_next_step_at(tier, rnd, alerting, tiers, at))


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


def _why(incident: Incident, tiers) -> tuple[Reason, dict]:
    """Why the step after ``incident.tier`` is taken now: (code, its facts)."""
    if incident.tier < 0:
        opened = incident.events.filter(kind="opened").first()
        held = opened.detail.get("code") if opened else None
        if held == Reason.FLAPPING:
            return Reason.FLAPPING_ENDED, {}
        if held == Reason.MAINTENANCE:
            return Reason.MAINTENANCE_ENDED, {}
        return Reason.TIER_DELAY, {"delay": int(tiers[0].delay.total_seconds())}
    tier = {"tier": incident.tier + 1}
    sent = Delivery.objects.filter(incident=incident, event__step__isnull=False,
                                   event__detail__tier=incident.tier + 1,
                                   event__kind__in=IncidentEvent.PAGING)
    if not sent.exists():
        return Reason.NO_CHANNEL, tier
    delivered = sent.filter(status=Delivery.Status.DELIVERED).exists()
    if not delivered and not sent.filter(status__in=Delivery.ACTIVE).exists():
        return Reason.ALL_FAILED, tier
    if not delivered:
        return Reason.NOT_TAKEN, tier
    return Reason.NOT_ACKNOWLEDGED, tier


def tiers_only_on(channel) -> list[str]:
    """The tiers ``channel`` is the only live channel of, as "tier 2 of escalation
    policy 'on-call'": deleting it would leave them notifying nobody."""
    found = []
    for tier in EscalationTier.objects.filter(channels=channel).select_related("policy"):
        if live_channels(tier.channels.all()) == [channel.pk]:
            found.append(f"tier {tier.position + 1} of escalation policy '{tier.policy.name}'")
    return found


def tier_failed(delivery: Delivery) -> int | None:
    """``delivery`` failed for good: the tier (0-based) of its incident whose every
    notification has now failed, so the next step is due at once; None when it
    was not a tier's notification or another one of that step may still arrive."""
    if delivery.incident_id is None or delivery.event_id is None:
        return None
    event = delivery.event
    if event.kind not in ("opened", "escalated") or "tier" not in event.detail:
        return None
    if event.deliveries.exclude(status=Delivery.Status.FAILED).exists():
        return None
    return event.detail["tier"] - 1
