"""How far behind the delivery engine is: readings for readiness, metrics and the
watchdog (:mod:`cronradar.health`, :mod:`cronradar.selfmetrics`,
:mod:`cronradar.watchdog`).

Only rows the engine could claim now count as a backlog: ``pending`` (or an
expired ``sending`` claim) whose ``next_attempt_at`` has passed, not waiting
behind an earlier delivery of the same incident to the same channel, not held
back by a receiver's ``Retry-After`` (``rate_limited``), and not to a channel that
is failing. One customer's dead receiver shows in :func:`channels_failing`,
never as a backlog of the service.
"""
from __future__ import annotations

from datetime import datetime

from django.db.models import Count, Exists, OuterRef

from alerts.models import Channel, Delivery


def oldest_claimable(now: datetime) -> datetime | None:
    """The earliest ``next_attempt_at`` of a delivery that could be claimed at
    ``now`` (see the module docstring), None when there is none: the backlog's
    age is ``now`` minus it. One statement on the ``delivery_due`` index."""
    earlier = Delivery.objects.filter(incident_id=OuterRef("incident_id"),
                                      channel_id=OuterRef("channel_id"), id__lt=OuterRef("id"),
                                      status__in=Delivery.ACTIVE)
    return (Delivery.objects.filter(status__in=Delivery.ACTIVE, next_attempt_at__lte=now,
                                    rate_limited=False, channel__failing_since__isnull=True)
            .exclude(Exists(earlier)).order_by("next_attempt_at")
            .values_list("next_attempt_at", flat=True).first())


def active_counts() -> dict[str, int]:
    """Deliveries by status, of the active ones only: ``{"pending": n, "sending":
    n}`` (read through the partial ``delivery_due`` index's condition)."""
    counts = dict.fromkeys(Delivery.ACTIVE, 0)
    counts.update(Delivery.objects.filter(status__in=Delivery.ACTIVE).values_list("status")
                  .annotate(n=Count("id")).values_list("status", "n"))
    return {str(k): v for k, v in counts.items()}


def channels_failing() -> int:
    """How many channels (not deleted) are failing now: from their first failed
    attempt until one succeeds (``Channel.failing_since``, :mod:`alerts.health`)."""
    return Channel.objects.filter(deleted_at=None, failing_since__isnull=False).count()
