"""Channels that say when they break: ``channel.failing`` and ``channel.recovered``.

A channel is failing from its first failed attempt until one succeeds
(``Channel.failing_since``, written by :mod:`alerts.delivery`). A failure is
announced once, by :func:`announce_failing`:

- at once when one of its deliveries fails for good (``delivery_failed``), or
- when it has lasted ``CRONRADAR_CHANNEL_FAILING_AFTER`` seconds: the delivery
  engine sets the indexed ``failing_check_at`` to ``failing_since`` plus that
  when the channel starts failing, and every evaluator tick (:func:`check_due`)
  reads the channels whose check is due.

The announcement is a ``channel.failing`` notice (:mod:`alerts.notices`) to the
project's other working channels (not deleted, not failing) and to the
organisation's admins and owners by email; when the channel delivers again
(``channel_recovered``) a ``channel.recovered`` notice goes the same way
(:func:`announce_recovered`), only if the failure had been announced. Each is
claimed with a conditional ``UPDATE`` of the channel's ``failing_notified_at``
in the transaction that issues the notice, so two evaluators, or an evaluator
and a sender, make one of each per failure period.

The admins' email is a delivery like any other, so it is retried and visible:
its target is a channel of kind ``email`` made for that one notice, to the
admins' addresses, created already deleted (:func:`admins_channel`) so that no
list, monitor or notice ever sees it and the tick removes it once its
notification is delivered or given up, as it removes any deleted channel.
"""
from __future__ import annotations

from datetime import datetime

from django.db import transaction

from accounts.models import Membership
from alerts import notices
from alerts.integrations.common import isoformat
from alerts.models import Channel, Delivery, IncidentEvent

BATCH = 100  # channels whose check is due, read per tick at most


def announce_failing(channel_id: int, at: datetime, *, due: bool = False
                     ) -> IncidentEvent | None:
    """Announce that channel ``channel_id`` is failing, at ``at``: the
    ``channel.failing`` notice, unless it is not failing, is deleted or this
    failure was announced already (then None). ``due``: only if its check is due
    at ``at`` (the tick's call). The caller's transaction holds the claim and the
    notice together."""
    claim = Channel.objects.filter(pk=channel_id, deleted_at=None, failing_notified_at=None,
                                   failing_since__isnull=False)
    if due:
        claim = claim.filter(failing_check_at__lte=at)
    if not claim.update(failing_notified_at=at, failing_check_at=None):
        return None
    channel = Channel.objects.select_related("project").get(pk=channel_id)
    return _issue(channel, IncidentEvent.Kind.CHANNEL_FAILING, at, channel.failing_since)


def announce_recovered(channel_id: int, since: datetime, at: datetime) -> IncidentEvent | None:
    """Channel ``channel_id``, failing since ``since``, delivered at ``at``: the
    ``channel.recovered`` notice if its failure had been announced (else None)."""
    claim = Channel.objects.filter(pk=channel_id, deleted_at=None,
                                   failing_notified_at__isnull=False)
    if not claim.update(failing_notified_at=None):
        return None
    channel = Channel.objects.select_related("project").get(pk=channel_id)
    return _issue(channel, IncidentEvent.Kind.CHANNEL_RECOVERED, at, since)


def check_due(now: datetime) -> int:
    """The tick's step: announce each channel failing since at least
    ``CRONRADAR_CHANNEL_FAILING_AFTER`` before ``now`` (one transaction each);
    returns how many were announced. Checks no longer needed (a deleted channel)
    are cleared."""
    # Hits channel_failing_check: only channels whose check is due are read.
    due = list(Channel.objects.filter(failing_check_at__lte=now)
               .order_by("failing_check_at", "pk").values_list("pk", flat=True)[:BATCH])
    if not due:
        return 0
    announced = 0
    for channel_id in due:
        with transaction.atomic():
            announced += announce_failing(channel_id, now, due=True) is not None
    Channel.objects.filter(pk__in=due, failing_check_at__lte=now).update(failing_check_at=None)
    return announced


def _issue(channel: Channel, kind: str, at: datetime, since: datetime) -> IncidentEvent:
    """The notice ``kind`` of ``channel`` (failing since ``since``) at ``at``, to
    the project's other working channels and the organisation's admins."""
    held = Delivery.objects.filter(channel=channel, status__in=Delivery.ACTIVE).count()
    detail = {"channel": {"id": channel.pk, "name": str(channel), "kind": channel.kind,
                          "failing_since": isoformat(since), "last_error": channel.last_error,
                          "held": held}}
    working = list(Channel.objects.filter(project_id=channel.project_id, deleted_at=None,
                                          failing_since=None)
                   .exclude(pk=channel.pk).order_by("pk").values_list("pk", flat=True))
    admins = admins_channel(channel.project, at)
    return notices.issue(kind, channel.project_id, at, detail,
                         working + ([admins.pk] if admins else []))


def admins_channel(project, at: datetime) -> Channel | None:
    """A new email channel to the admins and owners of ``project``'s organisation
    who have an address (None: nobody to tell), deleted at ``at``: the target of
    one notice's email (module docstring)."""
    to = sorted(set(Membership.objects.filter(
        organisation_id=project.organisation_id,
        role__in=(Membership.Role.ADMIN, Membership.Role.OWNER))
        .exclude(user__email="").values_list("user__email", flat=True)))
    if not to:
        return None
    return Channel.objects.create(project=project, kind=Channel.Kind.EMAIL, config={"to": to},
                                  name=f"Admins and owners of {project.organisation.name}",
                                  deleted_at=at)


# --- subscribers (connected in AlertsConfig.ready) ----------------------------------------

def on_tick(sender, now, **kwargs) -> None:
    """monitors.signals.tick receiver: :func:`check_due`."""
    check_due(now)


def on_delivery_failed(sender, delivery, at, **kwargs) -> None:
    """alerts.delivery.delivery_failed receiver: a delivery failed for good, so
    its channel's failure is announced now (:func:`announce_failing`)."""
    announce_failing(delivery.channel_id, at)


def on_channel_recovered(sender, channel_id, since, at, **kwargs) -> None:
    """alerts.delivery.channel_recovered receiver: :func:`announce_recovered`."""
    announce_recovered(channel_id, since, at)
