"""ntfy (docs.ntfy.sh, "Publish as JSON").

Channel config: ``{"url": "https://ntfy.sh/<topic>", "token"?: "<access token>"}``;
a server under a path prefix works too (``https://example.com/ntfy/<topic>``: the
last path segment is the topic, the rest the server's root). Request: ``POST``
to the server's root with ``{"topic", "title", "message", "priority", "tags",
"click", "actions"}``: priority 1 (min) to 5 (max) from the severity (critical
5, error 4, warning 3, info 2; an acknowledgement or resolve 3); the message
ends with the tail of the last ping's body; ``click`` opens the incident's
dashboard page; view actions Acknowledge and Resolve (while it pages) and
Monitor (the monitor's dashboard page). With a token, ``Authorization: Bearer
<token>``. ntfy answers 200.
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
    c = common.context(event.incident)
    body = c["last_ping_body"]
    tail = f"\n\nLast ping body:\n{body}" if body else ""
    offered = ("Acknowledge", "Resolve", "Monitor") if paging else ("Monitor",)
    document = {
        "title": title, "message": common.cut(text, MESSAGE_MAX - len(tail)) + tail,
        "priority": PRIORITY.get(event.incident.severity, 5) if paging else 3,
        "tags": ["rotating_light" if paging else "white_check_mark"],
        "click": c["links"]["incident_page"],
        "actions": [{"action": "view", "label": label, "url": url, "clear": label != "Monitor"}
                    for label, url in common.page_links(c) if label in offered],
    }
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
                              "priority": 3, "tags": [tag],
                              "click": common.broken_channel_page(event)})


def _publish(channel, document) -> common.OutgoingRequest:
    """The JSON publish: POST to the server's root (the topic URL without its last
    path segment, so a server under a path prefix works) with the ``topic``."""
    root, topic = _split(channel.config["url"])
    token = channel.config.get("token")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return common.json_post(root, {"topic": topic, **document}, **headers)


def _split(url: str) -> tuple[str, str]:
    """(server root URL ending in ``/``, topic) of a topic URL:
    ``https://example.com/ntfy/alerts`` -> (``https://example.com/ntfy/``, ``alerts``)."""
    parts = urlsplit(url)
    prefix, _, topic = parts.path.strip("/").rpartition("/")
    path = f"/{prefix}/" if prefix else "/"
    return urlunsplit((parts.scheme, parts.netloc, path, "", "")), topic


HELP = ("Pick a topic name hard to guess on ntfy.sh or your own ntfy server and "
        "subscribe to it in the app; a protected topic needs an access token: "
        "https://docs.ntfy.sh/publish/")
CONFIG_SCHEMA = {"type": "object", "title": "ntfy", "required": ["url"],
                 "additionalProperties": False, "properties": {
                     "url": {"type": "string", "format": "uri",
                             "description": "topic URL, e.g. https://ntfy.sh/my-topic"},
                     "token": {"type": "string", "format": "password",
                               "description": "access token (a protected topic)"}}}


def validate_config(config: dict, previous: dict | None = None) -> dict:
    """``{"url", "token"?}``: the URL names a topic (``https://ntfy.sh/alerts``); a
    missing token is kept from ``previous``."""
    common.check_fields(config, {"url", "token"})
    url = common.validate_url(config, "url")
    if not _split(url)[1] or urlsplit(url).query or urlsplit(url).fragment:
        raise ValueError("url: must name one topic, as https://ntfy.sh/<topic> (or "
                         "https://example.com/<path>/<topic> for a server under a path)")
    cleaned = {"url": url}
    token = config.get("token", (previous or {}).get("token"))
    if token is not None:
        if not isinstance(token, str) or not token or len(token) > 200:
            raise ValueError("token: must be a string of 1 to 200 characters")
        cleaned["token"] = token
    return cleaned
