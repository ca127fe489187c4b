"""PagerDuty Events API v2 (https://developer.pagerduty.com/docs/events-api-v2/overview).

Channel config: ``{"routing_key": "<integration key>", "events_url"?: "https://..."}``;
without ``events_url`` the request goes to ``settings.CRONRADAR_PAGERDUTY_EVENTS_URL``
(read at send time, so changing the setting moves every such channel).

An opened incident sends ``event_action: "trigger"`` with a full ``payload``; a
resolved one, and a channel removed from the monitor while the incident is open,
send ``event_action: "resolve"`` with only ``routing_key``, ``event_action`` and
``dedup_key``. ``dedup_key`` is the incident's ``dedup_key``, so PagerDuty folds
every event of one incident into one alert. An outage summary is a Change Event
(informational, never pages), sent to the events URL with its final ``/enqueue``
replaced by ``/change/enqueue`` (developer docs, events-API-v2 "Send a Change Event");
so is a ``channel.failing`` / ``channel.recovered`` notice.
Severity is the incident's (the monitor's ``severity``, else ``critical`` for
missed/stuck/deadline/failed and ``warning`` for overlap/too_fast/slow/skipped/
double_launch); a slow, skipped or double_launch incident raised to another cause
sends an ``escalated`` event: a new ``trigger`` with the same ``dedup_key`` and
the new severity and class. A trigger's ``links`` are Acknowledge (signed, no
login), the incident's and the monitor's dashboard pages; its ``custom_details``
carry the tail of the last ping's body (500 characters). PagerDuty
answers 202 when it accepts an event, 400 for an invalid one and 429 when rate
limiting.
"""
from __future__ import annotations

from django.conf import settings

from alerts.integrations import common
from alerts.models import Channel, IncidentEvent

SUMMARY_MAX = 1024  # PagerDuty truncates payload.summary at 1024 characters
# The incident's severity is one of PagerDuty's own: critical, error, warning, info.
ACTIONS = {"acknowledged": "acknowledge", "resolved": "resolve", "channel_removed": "resolve",
           "stable": "resolve"}


def build_request(channel: Channel, event: IncidentEvent) -> common.OutgoingRequest:
    """The Events API v2 POST: ``trigger`` for ``opened``, ``escalated`` and
    ``renotified`` (the same ``dedup_key``, so PagerDuty folds them into one alert),
    ``acknowledge`` for ``acknowledged``, ``resolve`` for ``resolved`` and
    ``channel_removed``.

    Raises ``ValueError`` for an event kind that does not notify, ``KeyError`` if
    the channel config lacks ``routing_key``.
    """
    common.check_notifiable(event)
    incident = event.incident
    trigger = event.kind in IncidentEvent.PAGING
    document = {
        "routing_key": channel.config["routing_key"],
        "event_action": "trigger" if trigger else ACTIONS[event.kind],
        "dedup_key": str(incident.dedup_key),
    }
    if trigger:
        monitor = incident.monitor
        project = monitor.project.name
        facts = common.context(incident)
        document["links"] = [{"href": url, "text": label}
                             for label, url in common.page_links(facts)
                             if label != "Resolve"]
        document["payload"] = {
            "summary": common.cut(incident.summary, SUMMARY_MAX),
            "source": f"{project}/{monitor.slug}",
            "severity": incident.severity,
            "timestamp": common.isoformat(incident.opened_at),
            "component": monitor.slug,
            "group": project,
            "class": incident.cause,
            "custom_details": {
                "monitor": monitor.name,
                "monitor_uuid": str(monitor.uuid),
                "tags": monitor.tags,
                "incident_id": incident.pk,
                "missed_count": incident.missed_count,
                "failure_count": incident.failure_count,
                "scheduled_at": facts["scheduled_at"],
                "last_ping_at": facts["last_ping_at"],
                "run_duration": facts["run_duration"],
                "last_ping_body": facts["last_ping_body"],
            },
        }
    return common.json_post(_events_url(channel), document)


def build_notice(channel: Channel, event: IncidentEvent) -> common.OutgoingRequest:
    """A notice of no incident. ``outage.summary``: a Change Event ``{"routing_key",
    "payload": {"summary", "source", "timestamp", "custom_details"}}``. ``test``: a
    ``trigger`` of severity ``info`` with the dedup key ``cronradar-test-<channel
    id>``, which :func:`build_test_close` resolves. Raises ``ValueError`` for
    another kind.
    ``channel.failing`` / ``channel.recovered``: :func:`_channel_notice`."""
    if event.kind in common.CHANNEL_TITLES:
        return _channel_notice(channel, event)
    events_url = _events_url(channel)
    if event.kind == "test":
        return common.json_post(events_url, {
            "routing_key": channel.config["routing_key"], "event_action": "trigger",
            "dedup_key": _test_key(channel),
            "links": [{"href": common.channel_page(channel), "text": "Channel"}],
            "payload": {"summary": common.cut(common.testing_text(channel), SUMMARY_MAX),
                        "source": "cronradar", "severity": "info",
                        "timestamp": common.isoformat(event.at), "class": "test",
                        "custom_details": {"event_id": event.pk}}})
    if event.kind != "outage.summary":
        raise common.unknown_notice(event)
    d = event.detail
    document = {
        "routing_key": channel.config["routing_key"],
        "payload": {
            "summary": common.cut(common.outage_text(event), SUMMARY_MAX),
            "source": "cronradar",
            "timestamp": common.isoformat(event.at),
            "custom_details": {
                "project": event.project.name,
                "outage_started_at": d["started_at"],
                "outage_ended_at": d["ended_at"],
                "unknown_slots": d["unknown_slots"],
            },
        },
    }
    return common.json_post(events_url.removesuffix("/enqueue") + "/change/enqueue", document)


def build_test_close(channel: Channel, event: IncidentEvent) -> common.OutgoingRequest:
    """The ``resolve`` of a ``test`` notice's trigger, so no test alert stays open."""
    return common.json_post(_events_url(channel), {
        "routing_key": channel.config["routing_key"], "event_action": "resolve",
        "dedup_key": _test_key(channel)})


def _test_key(channel: Channel) -> str:
    return f"cronradar-test-{channel.pk}"


def _events_url(channel: Channel) -> str:
    return channel.config.get("events_url") or settings.CRONRADAR_PAGERDUTY_EVENTS_URL


def _channel_notice(channel: Channel, event: IncidentEvent) -> common.OutgoingRequest:
    """The Change Event (never pages) of a ``channel.failing`` /
    ``channel.recovered`` notice: ``{"routing_key", "payload": {"summary",
    "source", "timestamp", "custom_details": {"event", "event_id", "channel",
    "project"}}, "links"}`` (the channel's dashboard page)."""
    events_url = _events_url(channel)
    title, text = common.channel_text(event)
    document = {
        "routing_key": channel.config["routing_key"],
        "links": [{"href": common.broken_channel_page(event), "text": "Channel"}],
        "payload": {
            "summary": common.cut(f"{title}. {text}", SUMMARY_MAX),
            "source": "cronradar",
            "timestamp": common.isoformat(event.at),
            "custom_details": {"event": event.kind, "event_id": event.pk,
                               "channel": common.channel_facts(event),
                               "project": event.project.name},
        },
    }
    return common.json_post(events_url.removesuffix("/enqueue") + "/change/enqueue", document)


HELP = ("In PagerDuty, add an Events API V2 integration to the service (Service, "
        "Integrations) and copy its Integration Key: "
        "https://support.pagerduty.com/main/docs/services-and-integrations")
CONFIG_SCHEMA = {"type": "object", "title": "pagerduty", "required": ["routing_key"],
                 "additionalProperties": False, "properties": {
                     "routing_key": {"type": "string", "format": "password",
                                     "description": "Events API v2 integration (routing) "
                                     "key"},
                     "events_url": {"type": "string", "format": "uri", "description":
                                    "another Events API endpoint (default: PagerDuty's)"}}}


def validate_config(config: dict, previous: dict | None = None) -> dict:
    """``{"routing_key", "events_url"?}`` -> the same keys, stripped.

    ``events_url`` is stored only when given. Raises ``ValueError("<field>: <message>")``.
    """
    common.check_fields(config, {"routing_key", "events_url"})
    key = config.get("routing_key")
    if key is None or (isinstance(key, str) and not key.strip()):
        raise ValueError("routing_key: this field is required")
    if not isinstance(key, str) or len(key.strip()) > 255:
        raise ValueError("routing_key: must be a string of at most 255 characters")
    cleaned = {"routing_key": key.strip()}
    if config.get("events_url") is not None:
        cleaned["events_url"] = common.validate_url(config, "events_url")
    return cleaned
