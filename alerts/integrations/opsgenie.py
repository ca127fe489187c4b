"""Opsgenie Alert API v2 (docs.opsgenie.com, "Alert API").

Channel config: ``{"api_key": "<integration key>", "region": "us" | "eu",
"api_url"?: "https://..."}`` (EU accounts use ``api.eu.opsgenie.com``;
``api_url``, when set, replaces the region's host: a proxy, a test receiver).
Paging events create an alert: ``POST /v2/alerts`` with ``alias`` the
incident's ``dedup_key`` (Opsgenie keeps one open alert per alias, so
escalations and re-notifications fold into it), ``message`` (at most 130
characters), ``description`` (15,000), ``priority`` (P1 highest to P5, from the
severity: critical P1, error P2, warning P3, info
P4), ``tags`` (at most 20 of 50 characters) and ``details`` (the facts, times in
the monitor's time zone, and links: Acknowledge, Resolve, the incident's and
the monitor's dashboard pages, never an API URL); the description ends with the
tail of the last ping's body. Acknowledgements
``POST /v2/alerts/<alias>/acknowledge?identifierType=alias``, resolves
``…/close?identifierType=alias``. Authorization ``GenieKey <api_key>``; Opsgenie
answers 202. (Opsgenie is being folded into Jira Service Management; its end of
support is announced for 2027-04-05.)
"""
from __future__ import annotations

from urllib.parse import quote

from alerts.integrations import common
from alerts.models import Channel, IncidentEvent

HOSTS = {"us": "https://api.opsgenie.com", "eu": "https://api.eu.opsgenie.com"}
DESCRIPTION_MAX = 15000
PRIORITY = {"critical": "P1", "error": "P2", "warning": "P3", "info": "P4"}
MESSAGE_MAX, DESCRIPTION_MAX = 130, 15000  # the Alert API's limits


def build_request(channel: Channel, event: IncidentEvent) -> common.OutgoingRequest:
    """Create, acknowledge or close the incident's alert. Raises ``ValueError`` for
    an event kind that does not notify, ``KeyError`` without an ``api_key``."""
    common.check_notifiable(event)
    incident = event.incident
    base, alias = _base(channel), str(incident.dedup_key)
    if event.kind in IncidentEvent.PAGING:
        monitor = incident.monitor
        title, text = common.describe(event)
        c = common.context(incident)
        details = dict(common.facts(event, c))
        details.update(common.page_links(c))
        body = c["last_ping_body"]
        tail = f"\n\nLast ping body:\n{body}" if body else ""
        document = {
            "message": common.cut(title, 130), "alias": alias, "source": "CronRadar",
            "description": common.cut(text, DESCRIPTION_MAX - len(tail)) + tail,
            "priority": PRIORITY.get(incident.severity, "P1"),
            "entity": common.cut(f"{monitor.project.name}/{monitor.slug}", 512),
            "tags": [common.cut(str(t), 50) for t in monitor.tags[:20]],
            "details": details,
        }
        return _post(channel, f"{base}/v2/alerts", document)
    action = "acknowledge" if event.kind == "acknowledged" else "close"
    return _post(channel, f"{base}/v2/alerts/{quote(alias)}/{action}?identifierType=alias",
                 {"source": "CronRadar", "user": "CronRadar",
                  "note": common.cut(event.message or action, 25000)})


def build_notice(channel: Channel, event: IncidentEvent) -> common.OutgoingRequest:
    """A notice of no incident. ``outage.summary``: a P5 (informational) alert.
    ``test``: a P5 alert with the alias ``cronradar-test-<channel id>``, which
    :func:`build_test_close` closes. Raises ``ValueError`` for another kind.
    ``channel.failing`` / ``channel.recovered``: :func:`_channel_notice`."""
    if event.kind in common.CHANNEL_TITLES:
        return _channel_notice(channel, event)
    if event.kind == "outage.summary":
        return _post(channel, f"{_base(channel)}/v2/alerts", {
            "message": common.OUTAGE_TITLE,
            "alias": f"cronradar-outage-{event.detail['impact']}",
            "description": common.outage_text(event), "priority": "P5", "source": "CronRadar"})
    if event.kind == "test":
        return _post(channel, f"{_base(channel)}/v2/alerts", {
            "message": common.TEST_TITLE, "alias": _test_alias(channel),
            "description": common.testing_text(channel), "priority": "P5",
            "source": "CronRadar", "details": {"channel_page": common.channel_page(channel),
                                               "event_id": str(event.pk)}})
    raise common.unknown_notice(event)


def build_test_close(channel: Channel, event: IncidentEvent) -> common.OutgoingRequest:
    """The close of a ``test`` notice's alert, so no test alert stays open."""
    return _post(channel, f"{_base(channel)}/v2/alerts/{quote(_test_alias(channel))}/close"
                 "?identifierType=alias", {"source": "CronRadar", "user": "CronRadar",
                                           "note": "test notification"})


def _test_alias(channel) -> str:
    return f"cronradar-test-{channel.pk}"


def _channel_notice(channel: Channel, event: IncidentEvent) -> common.OutgoingRequest:
    """A P5 (informational) alert of a ``channel.failing`` / ``channel.recovered``
    notice, its alias the notice's event id, the channel's dashboard page in its
    details."""
    title, text = common.channel_text(event)
    return _post(channel, f"{_base(channel)}/v2/alerts", {
        "message": common.cut(title, MESSAGE_MAX), "alias": f"cronradar-notice-{event.pk}",
        "description": common.cut(text, DESCRIPTION_MAX), "priority": "P5",
        "source": "CronRadar", "details": {"channel_page": common.broken_channel_page(event),
                                           "event_id": str(event.pk)}})


def _base(channel) -> str:
    """The API's base URL: ``api_url`` when set, else the ``region``'s host."""
    return (channel.config.get("api_url") or HOSTS[channel.config.get("region", "us")]
            ).rstrip("/")


def _post(channel, url, document) -> common.OutgoingRequest:
    return common.json_post(url, document, Authorization=f"GenieKey {channel.config['api_key']}")


HELP = ("In Opsgenie, add an API integration to a team (Teams, Integrations, Add "
        "integration, API) and copy its API key: "
        "https://support.atlassian.com/opsgenie/docs/create-a-default-api-integration/")
CONFIG_SCHEMA = {"type": "object", "title": "opsgenie", "required": ["api_key"],
                 "additionalProperties": False, "properties": {
                     "api_key": {"type": "string", "format": "password",
                                 "description": "API integration key"},
                     "region": {"type": "string", "enum": ["us", "eu"], "default": "us",
                                "description": "region of your Opsgenie account"},
                     "api_url": {"type": "string", "format": "uri", "description":
                                 "another API base URL (a proxy, a test receiver); "
                                 "overrides region"}}}


def validate_config(config: dict, previous: dict | None = None) -> dict:
    """``{"api_key", "region"?, "api_url"?}`` -> ``{"api_key", "region"}`` (``us``
    by default) and ``api_url`` when given (an http(s) base URL the requests go to
    instead of the region's host, e.g. ``https://proxy.example.com/opsgenie``). A
    missing ``api_key`` is kept from ``previous``."""
    common.check_fields(config, {"api_key", "region", "api_url"})
    key = config.get("api_key") or (previous or {}).get("api_key")
    if not isinstance(key, str) or not key.strip() or len(key) > 200:
        raise ValueError("api_key: a string of at most 200 characters is required")
    region = config.get("region", "us")
    if region not in HOSTS:
        raise ValueError("region: must be us or eu")
    cleaned = {"api_key": key.strip(), "region": region}
    if config.get("api_url") is not None:
        cleaned["api_url"] = common.validate_url(config, "api_url").rstrip("/")
    return cleaned
