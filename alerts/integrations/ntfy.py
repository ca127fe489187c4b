"""ntfy (docs.ntfy.sh, "Publish as JSON").

Channel config: ``{"url": "https://ntfy.sh/<topic>", "token"?: "<access token>"}``.
Request: ``POST`` to the server's root with ``{"topic", "title", "message",
"priority", "tags", "click", "actions"}``: priority 1 (min) to 5 (max) from the
severity (critical 5, error 4, warning 3, info 2; an acknowledgement or resolve
3), view actions to acknowledge and resolve. With a token, ``Authorization:
Bearer <token>``. ntfy answers 200.
"""
from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from alerts.integrations import common
from alerts.models import Channel, IncidentEvent

PRIORITY = {"critical": 5, "error": 4, "warning": 3, "info": 2}
MESSAGE_MAX = 4096


def build_request(channel: Channel, event: IncidentEvent) -> common.OutgoingRequest:
    """The publish POST for ``event``. Raises ``ValueError`` for an event kind that
    does not notify, ``KeyError`` without a ``url``."""
    common.check_notifiable(event)
    title, text = common.describe(event)
    paging = event.kind in IncidentEvent.PAGING
    links = common.context(event.incident)["links"]
    document = {
        "title": title, "message": common.cut(text, MESSAGE_MAX),
        "priority": PRIORITY.get(event.incident.severity, 5) if paging else 3,
        "tags": ["rotating_light" if paging else "white_check_mark"],
        "actions": [{"action": "view", "label": label, "url": links[key], "clear": True}
                    for key, label in (("acknowledge", "Acknowledge"), ("resolve", "Resolve"))
                    if links[key] and paging],
    }
    if links["monitor"]:
        document["click"] = links["monitor"]
    return _publish(channel, document)


def build_notice(channel: Channel, event: IncidentEvent) -> common.OutgoingRequest:
    """The publish POST of a notice of no incident: ``outage.summary`` (priority 2)
    or ``test`` (priority 2, opening the channel's page). Raises ``ValueError`` for
    another kind.
    ``channel.failing`` / ``channel.recovered``: :func:`_channel_notice`."""
    if event.kind in common.CHANNEL_TITLES:
        return _channel_notice(channel, event)
    if event.kind == "outage.summary":
        return _publish(channel, {"title": common.OUTAGE_TITLE,
                                  "message": common.outage_text(event), "priority": 2,
                                  "tags": ["warning"]})
    if event.kind == "test":
        return _publish(channel, {"title": common.TEST_TITLE,
                                  "message": common.testing_text(channel), "priority": 2,
                                  "tags": ["white_check_mark"],
                                  "click": common.channel_page(channel)})
    raise common.unknown_notice(event)


def _channel_notice(channel: Channel, event: IncidentEvent) -> common.OutgoingRequest:
    """The publish POST of a ``channel.failing`` / ``channel.recovered`` notice
    (priority 3, the default: it never wakes anyone)."""
    title, text = common.channel_text(event)
    tag = "warning" if event.kind == "channel.failing" else "white_check_mark"
    return _publish(channel, {"title": title, "message": common.cut(text, MESSAGE_MAX),
                              "priority": 3, "tags": [tag]})


def _publish(channel, document) -> common.OutgoingRequest:
    parts = urlsplit(channel.config["url"])
    root = urlunsplit((parts.scheme, parts.netloc, "/", "", ""))
    token = channel.config.get("token")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return common.json_post(root, {"topic": parts.path.strip("/"), **document}, **headers)


CONFIG_SCHEMA = {"type": "object", "title": "ntfy", "required": ["url"],
                 "additionalProperties": False, "properties": {
                     "url": {"type": "string", "format": "uri",
                             "description": "topic URL, e.g. https://ntfy.sh/my-topic"},
                     "token": {"type": "string", "description": "access token (optional)"}}}


def validate_config(config: dict, previous: dict | None = None) -> dict:
    """``{"url", "token"?}``: the URL names a topic (``https://ntfy.sh/alerts``); a
    missing token is kept from ``previous``."""
    common.check_fields(config, {"url", "token"})
    url = common.validate_url(config, "url")
    topic = urlsplit(url).path.strip("/")
    if not topic or "/" in topic:
        raise ValueError("url: must name one topic, as https://ntfy.sh/<topic>")
    cleaned = {"url": url}
    token = config.get("token", (previous or {}).get("token"))
    if token is not None:
        if not isinstance(token, str) or not token or len(token) > 200:
            raise ValueError("token: must be a string of 1 to 200 characters")
        cleaned["token"] = token
    return cleaned
