"""Matrix client-server API (https://spec.matrix.org/v1.16/client-server-api/,
"PUT /_matrix/client/v3/rooms/{roomId}/send/{eventType}/{txnId}").

Channel config: ``{"homeserver": "https://matrix.example.org", "room_id":
"!abc:example.org", "access_token": "<a bot user's access token>"}``. Request:
``PUT {homeserver}/_matrix/client/v3/rooms/{room_id}/send/m.room.message/{txnId}``
(the room id percent-encoded) with ``Authorization: Bearer <access_token>`` and
``{"msgtype", "body", "format": "org.matrix.custom.html", "formatted_body"}``:
``m.text`` for an incident, ``m.notice`` (clients do not alert for it) for an
``info`` one and for every notice of no incident. The title starts with
``[CRITICAL]`` / ``[ERROR]`` / ``[WARNING]`` / ``[INFO]`` while the incident
pages, ``✅`` once acknowledged or resolved, ``ℹ️`` (an ``m.notice``) for a
channel removed from the monitor; then the text, the facts, the tail
of the last ping's body and the links Acknowledge, Resolve, Incident and
Monitor.

``txnId`` is ``cronradar-<delivery id>``: the homeserver treats a second PUT
with the same transaction id (of the same access token) as the same event, so
a retry of one delivery never posts twice; a test notification (no delivery)
gets ``cronradar-test-<random hex>``. The access token is only in a header and
is redacted from errors. An event is at most 65,536 bytes: the text is cut to
4,000 characters, in the HTML once escaped (marked ``…``); the rest (title,
facts, 500 characters of ping body, links) is bounded. The homeserver
answers 200 with ``{"event_id"}``, 4xx (``M_FORBIDDEN``, ``M_UNKNOWN_TOKEN``)
for a refused request and 429 ``M_LIMIT_EXCEEDED`` with ``retry_after_ms``.
"""
from __future__ import annotations

import re
import uuid
from urllib.parse import quote, urlsplit

from django.utils.html import escape

from alerts.integrations import common
from alerts.models import Channel, Delivery, IncidentEvent

TEXT_MAX = 4000  # characters of an incident's or a notice's text (also once escaped)
MARKS = {"critical": "[CRITICAL]", "error": "[ERROR]", "warning": "[WARNING]",
         "info": "[INFO]"}  # docs/channels.md, "Severity"
DONE, NOTE = "✅", "ℹ️"  # noqa: RUF001 (acknowledged / resolved / stable; channel removed)
# The delivery engine passes build_request / build_notice ``delivery=`` (its id is the txnId).
TAKES_DELIVERY = True


def build_request(channel: Channel, event: IncidentEvent, delivery: Delivery | None = None
                  ) -> common.OutgoingRequest:
    """The message PUT for ``event`` (any notifying kind); its transaction id from
    ``delivery`` (a fresh one without). Raises ``ValueError`` for an event kind
    that does not notify, ``KeyError`` without a config field."""
    common.check_notifiable(event)
    severity = event.incident.severity
    title, text = common.describe(event)
    prefix = common.marked(event, MARKS, NOTE, DONE)
    quiet = severity == "info" or event.kind == IncidentEvent.Kind.CHANNEL_REMOVED
    c = common.context(event.incident)
    return _send(channel, delivery, "m.notice" if quiet else "m.text",
                 f"{prefix} {title}", text, common.facts(event, c), common.page_links(c),
                 c["last_ping_body"])


def build_notice(channel: Channel, event: IncidentEvent, delivery: Delivery | None = None
                 ) -> common.OutgoingRequest:
    """The ``m.notice`` PUT of a notice of no incident: ``outage.summary``,
    ``test`` (a link to the channel's page) or ``channel.failing`` /
    ``channel.recovered`` (its facts, the broken channel's page). Raises
    ``ValueError`` for another kind."""
    if event.kind in common.CHANNEL_TITLES:
        title, text = common.channel_text(event)
        facts = common.channel_fact_rows(event)
        links = [("Channel", common.broken_channel_page(event))]
    elif event.kind == "outage.summary":
        title, text, facts, links = common.OUTAGE_TITLE, common.outage_text(event), [], []
    elif event.kind == "test":
        title, text, facts = common.TEST_TITLE, common.testing_text(channel), []
        links = [("Channel", common.channel_page(channel))]
    else:
        raise common.unknown_notice(event)
    return _send(channel, delivery, "m.notice", title, text, facts, links)


def txn_id(delivery: Delivery | None) -> str:
    """The transaction id of ``delivery``'s PUT (the same on every retry), or a
    fresh unique one without a delivery (a test notification)."""
    return f"cronradar-{delivery.pk}" if delivery is not None else (
        f"cronradar-test-{uuid.uuid4().hex}")


def _send(channel, delivery, msgtype: str, title: str, text: str, facts, links,
          body: str = "") -> common.OutgoingRequest:
    """The PUT of one message: plain ``body`` and HTML ``formatted_body`` of the
    same title, text (cut to :data:`TEXT_MAX`, in the HTML once escaped), facts,
    ping body and links."""
    plain = [title, common.cut(text, TEXT_MAX), "\n".join(f"{k}: {v}" for k, v in facts)]
    html = [f"<p><strong>{escape(title)}</strong></p>",
            f"<p>{common.escaped_cut(text, TEXT_MAX, br=True)}</p>"]
    if facts:
        html.append("<ul>" + "".join(f"<li><strong>{escape(k)}</strong>: {escape(v)}</li>"
                                     for k, v in facts) + "</ul>")
    if body:
        plain.append(f"Last ping body:\n{body}")
        html.append(f"<p>Last ping body:</p><pre><code>{escape(body)}</code></pre>")
    if links:
        plain.append("\n".join(f"{label}: {url}" for label, url in links))
        html.append("<p>" + " · ".join(f'<a href="{escape(url)}">{escape(label)}</a>'
                                       for label, url in links) + "</p>")
    config = channel.config
    token = config["access_token"]
    url = (f"{config['homeserver'].rstrip('/')}/_matrix/client/v3/rooms/"
           f"{quote(config['room_id'], safe='')}/send/m.room.message/{txn_id(delivery)}")
    document = {"msgtype": msgtype, "body": "\n\n".join(p for p in plain if p),
                "format": "org.matrix.custom.html", "formatted_body": "".join(html)}
    return common.OutgoingRequest(url=url, method="PUT", body=common.encode_json(document),
                                  headers={"Content-Type": "application/json",
                                           "User-Agent": common.USER_AGENT,
                                           "Authorization": f"Bearer {token}"},
                                  redact=(token,))


def shown_config(config: dict) -> dict:
    """``config`` as the API shows it, to admins too: the access token as ``***``
    (sent back so, it keeps the stored one)."""
    return {**config, "access_token": "***"} if "access_token" in config else config


HELP = ("Use a bot account's access token (Element: Settings, Help & About, Access token; "
        "or log in through the client-server API) and the room's internal id (Room "
        "settings, Advanced: !…:server), after inviting the bot to the room. The API is "
        "described at https://spec.matrix.org/latest/client-server-api/.")
CONFIG_SCHEMA = {"type": "object", "title": "matrix",
                 "required": ["homeserver", "room_id", "access_token"],
                 "additionalProperties": False, "properties": {
                     "homeserver": {"type": "string", "format": "uri", "description":
                                    "Homeserver URL (https), e.g. https://matrix.org"},
                     "room_id": {"type": "string", "description":
                                 "Internal room id, e.g. !abcdef:matrix.org (not an #alias)"},
                     "access_token": {"type": "string", "format": "password",
                                      "description": "Access token of the account that posts"}}}
ROOM_ID = re.compile(r"![^\s:/]+(:[^\s/]+)?")


def validate_config(config: dict, previous: dict | None = None) -> dict:
    """``{"homeserver", "room_id", "access_token"}``: the homeserver an https URL
    (http only for loopback; no path, query or fragment), the room an internal id
    ``!opaque:server`` (or ``!opaque`` for room version 12), never an alias
    ``#name:server`` (the send endpoint takes ids only), the token 1 to 500
    characters without spaces, kept from ``previous`` when left out. Raises
    ``ValueError("<field>: <message>")``."""
    common.check_fields(config, {"homeserver", "room_id", "access_token"})
    homeserver = common.validate_url(config, "homeserver", https_only=True).rstrip("/")
    parts = urlsplit(homeserver)
    if parts.path or parts.query or parts.fragment:
        raise ValueError("homeserver: must be the server's root URL, as https://matrix.org")
    room = config.get("room_id")
    if room is None or (isinstance(room, str) and not room.strip()):
        raise ValueError("room_id: this field is required")
    if not isinstance(room, str) or len(room.strip()) > 255:
        raise ValueError("room_id: must be a string of at most 255 characters")
    room = room.strip()
    if room.startswith("#"):
        raise ValueError("room_id: an alias (#…) cannot be sent to: use the room's internal "
                         "id (!…:server, in the room's settings, Advanced)")
    if not ROOM_ID.fullmatch(room):
        raise ValueError("room_id: must be a room id, as !abcdef:matrix.org")
    token = config.get("access_token", (previous or {}).get("access_token"))
    if token is None or (isinstance(token, str) and not token.strip()):
        raise ValueError("access_token: this field is required")
    if not isinstance(token, str) or len(token) > 500 or re.search(r"\s", token):
        raise ValueError("access_token: must be 1 to 500 characters without spaces")
    return {"homeserver": homeserver, "room_id": room, "access_token": token}
