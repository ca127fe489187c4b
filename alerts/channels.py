"""Which channels follow a monitor, and the channels' own life: following changes
(:func:`set_channels`) and a monitor's alerting settings (:func:`set_alerting`),
a resolve for a notified channel that stops following (:func:`channels_removed`),
deleting a channel (:func:`delete_channel`) and removing it once its last
notifications are done (:func:`purge_deleted`), a test notification to a saved
channel (:func:`send_test`) or to a config not saved yet
(:func:`send_test_config`) and an outage summary to a project's channels
(:func:`notify_outage`), and the count a plan's ``max_channels`` bounds
(:func:`count`). Incidents themselves are written by :mod:`alerts.incidents`.
"""
from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db import transaction

from accounts import audit, plans
from accounts.models import AuditEntry
from alerts import incidents, notices
from alerts.delivery import transmit
from alerts.integrations import KINDS
from alerts.models import Channel, Delivery, Incident, IncidentEvent
from alerts.timeline import alerting_of, notified_channels, targets
from monitors.models import Monitor


def channels_removed(monitor, channel_ids: Iterable[int], at: datetime) -> list[IncidentEvent]:
    """Channels ``channel_ids`` stopped following ``monitor`` at ``at``: each one that
    was notified of its open incident gets a resolve now
    (:func:`alerts.incidents.channel_removed`), as the incident's own resolve will
    no longer reach it."""
    incident = incidents.open_incident(monitor)
    if incident is None:
        return []
    gone = set(channel_ids) & set(notified_channels(incident))
    return [incidents.channel_removed(incident, channel, at)
            for channel in Channel.objects.filter(pk__in=gone).order_by("pk")]


def delete_channel(channel: Channel, at: datetime) -> None:
    """Delete ``channel`` at ``at``: each open incident that notified it sends it a
    resolve first (:func:`channels_removed`). The row stays, invisible to the API,
    until those deliveries are delivered or abandoned; the evaluator's tick then
    removes it (:func:`purge_deleted`)."""
    with transaction.atomic():
        Channel.objects.filter(pk=channel.pk).update(deleted_at=at)
        audit.record(AuditEntry.Action.DELETE, channel.project.organisation, target=channel)
        affected = (Incident.objects.filter(resolved_at__isnull=True,
                                            events__deliveries__channel=channel)
                    .values_list("monitor_id", flat=True))
        # monitor row locks in id order, as everywhere a transaction takes several
        for monitor in Monitor.objects.select_for_update().filter(pk__in=affected).order_by("pk"):
            channels_removed(monitor, [channel.pk], at)


def purge_deleted() -> None:
    """Remove deleted channels whose last notifications are done."""
    for channel in Channel.objects.filter(deleted_at__isnull=False):
        if not channel.deliveries.filter(status__in=Delivery.ACTIVE).exists():
            channel.delete()


def set_channels(monitor, channels, at: datetime) -> None:
    """Make ``channels`` (``"all"`` or a list of channel ids of the monitor's project)
    the ones ``monitor`` notifies; a channel that was notified of its open incident
    and no longer follows it gets a resolve (:func:`channels_removed`). The caller
    holds the monitor's row lock."""
    following = set(targets(monitor))
    alerting = alerting_of(monitor)
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
    alerting = alerting_of(monitor)
    for name, value in changes.items():
        setattr(alerting, name, value)
    alerting.save()


def send_test(channel: Channel, at: datetime) -> tuple[int | None, str]:
    """Send ``channel`` a test notification now, synchronously, through the same
    builder and transport as real ones (the SSRF guard included): a ``test``
    notice (:func:`alerts.notices.issue`, stored so that its id is a real event
    id; no delivery row, it is sent here), built by the kind's ``build_notice``.
    Kinds that keep an alert open until it is closed (PagerDuty, Opsgenie:
    ``build_test_close``) then get its close, so no test alert stays open.
    Returns (status_code, error) of the first request; error is "" when it was
    delivered."""
    kind = KINDS[channel.kind]
    event = notices.issue("test", channel.project_id, at, {"channel": channel.pk}, [])
    event.project = channel.project
    try:
        request = kind.build_notice(channel, event)
    except Exception as exc:  # a channel whose config cannot make a request
        return None, f"build error: {type(exc).__name__}: {exc}"
    status_code, error, _, _ = transmit(request)
    if error == "" and hasattr(kind, "build_test_close"):  # leave no test alert open there
        transmit(kind.build_test_close(channel, event))
    return status_code, error


def send_test_config(project, kind: str, config: dict, at: datetime, *, name: str = "",
                     previous: dict | None = None) -> tuple[int | None, str]:
    """Send the test notification of a channel not saved (the setup page's "send
    test" before saving, ``POST /api/v1/channels/test/``): ``config`` is checked
    by the kind's ``validate_config`` (``previous``: the stored config of the
    channel being edited, whose secrets a config leaving them out keeps), then
    sent as :func:`send_test` sends a saved channel's (same builder, transport and
    SSRF guard); no channel is stored. ``name`` is the name it would have ("" :
    "new <kind> channel"). Returns (status_code, error) as :func:`send_test`.
    Raises ``KeyError`` for a kind not in ``KINDS`` and ``ValueError("<field>:
    <message>")`` for a config the kind refuses."""
    cleaned = KINDS[kind].validate_config(config, previous)
    return send_test(Channel(project=project, kind=kind, config=cleaned,
                             name=name or f"new {kind} channel"), at)


def notify_outage(impact) -> IncidentEvent:
    """Send ``impact`` (a :class:`monitors.models.OutageImpact`: slots of one project
    recorded ``unknown`` during an outage of CronRadar) to every live channel of its
    project: one ``outage.summary`` notice (:func:`alerts.notices.outage_summary`),
    one delivery per channel. Returns the notice."""
    channels = Channel.objects.filter(project_id=impact.project_id, deleted_at__isnull=True)
    return notices.outage_summary(impact, list(channels.order_by("pk").values_list("pk",
                                                                                  flat=True)))


# --- subscribers (connected in AlertsConfig.ready) ----------------------------------------

def on_outage_settled(sender, impact, **kwargs) -> None:
    """monitors.signals.outage_settled receiver: :func:`notify_outage`."""
    notify_outage(impact)


def on_tick_done(sender, now, **kwargs) -> None:
    """monitors.signals.tick_done receiver: :func:`purge_deleted`."""
    purge_deleted()


@plans.counts("channels")
def count(organisation) -> int:
    """What a plan's ``max_channels`` bounds: ``organisation``'s channels not deleted."""
    return Channel.objects.filter(project__organisation=organisation,
                                  deleted_at__isnull=True).count()
