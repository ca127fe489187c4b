"""Pushover Message API (https://pushover.net/api, receipts: https://pushover.net/api/receipts).

Channel config: ``{"token": "<application API token>", "user": "<user or group
key>", "api_url"?: "https://api.pushover.net"}``. Request: ``POST
{api_url}/1/messages.json``, form-encoded, with ``token``, ``user``, ``title``
(at most 250 characters), ``message`` (1,024, HTML: ``html=1``), ``url`` (512)
with ``url_title`` (100), ``priority`` and ``timestamp`` (Unix seconds of the
event). An incident's message is its text, its facts and the tail of the last
ping's body (cut to what the links leave, marked ``…``), then the links
Acknowledge, Resolve and Monitor; ``url`` is the incident's dashboard page.

Priority from the incident's severity (docs/channels.md, "Severity"): ``critical`` 2
(emergency: Pushover repeats it every ``retry`` 60 s for ``expire`` 3,600 s
until someone acknowledges it in the app), ``error`` 1, ``warning`` 0, ``info``
-1; an acknowledgement, a resolve, a channel removed and a stable flap 0;
notices of no incident -1. An emergency message's answer carries a
``receipt``: the delivery engine stores it in ``Delivery.receipt``
(:func:`receipt`). The acknowledge, resolve, channel-removed and stable
deliveries of that incident to that channel send, first, ``POST
{api_url}/1/receipts/{receipt}/cancel.json`` with ``token`` for each receipt of
the incident's earlier deliveries (``OutgoingRequest.before``), so the phone
stops repeating: a cancel that must be retried (5xx, 429, no answer) fails the
attempt before the message goes out, so the whole attempt is retried and the
message is sent once; a cancel Pushover refuses (4xx: a receipt already
cancelled or expired) is done. Cancelling twice is harmless. Pushover answers
200 with ``{"status": 1, ...}``, 4xx for a refused request, 429 over the
monthly quota.
"""
from __future__ import annotations

import json
import re
from datetime import UTC
from urllib.parse import urlencode

from django.utils.html import escape

from alerts.integrations import common
from alerts.models import Channel, Delivery, IncidentEvent

API_URL = "https://api.pushover.net"
TITLE_MAX, MESSAGE_MAX, URL_MAX, URL_TITLE_MAX = 250, 1024, 512, 100
TEXT_MIN = 200  # characters of a message its links always leave to the text
PRIORITY = {"critical": 2, "error": 1, "warning": 0, "info": -1}
CALM, QUIET = 0, -1  # an acknowledgement or resolve; a notice of no incident
EMERGENCY = {"retry": 60, "expire": 3600}  # seconds (Pushover: retry >= 30, expire <= 10800)
RECEIPT = re.compile(r"[A-Za-z0-9]{1,64}")
# before the title of an acknowledgement, resolve or stable flap; of a channel removed
DONE, NOTE = "✅ ", "ℹ️ "  # noqa: RUF001 (the emoji are the point)
# The delivery engine passes build_request / build_notice ``delivery=`` (the receipts).
TAKES_DELIVERY = True
FORM = {"Content-Type": "application/x-www-form-urlencoded", "User-Agent": common.USER_AGENT}


def build_request(channel: Channel, event: IncidentEvent, delivery: Delivery | None = None
                  ) -> common.OutgoingRequest:
    """The message POST for ``event`` (any notifying kind); for an acknowledgement,
    resolve, channel removed or stable event with ``delivery`` (the one being sent),
    the cancels of the receipts of the incident's earlier deliveries to
    ``channel`` go first (one query). Raises ``ValueError`` for an event kind that
    does not notify, ``KeyError`` without ``token`` or ``user``."""
    common.check_notifiable(event)
    incident = event.incident
    paging = event.kind in IncidentEvent.PAGING
    title, text = common.describe(event)
    c = common.context(incident)
    facts = "\n".join(f"{k}: {v}" for k, v in common.facts(event, c))
    body = c["last_ping_body"]
    text = f"{text}\n\n{facts}" + (f"\n\nLast ping body:\n{body}" if body else "")
    links = [(label, url) for label, url in common.page_links(c) if label != "Incident"]
    priority = PRIORITY.get(incident.severity, 2) if paging else CALM
    mark = common.marked(event, dict.fromkeys(PRIORITY, ""), NOTE, DONE)
    document = _message(channel, mark + title, text, priority,
                        event, links, ("Incident", c["links"]["incident_page"]))
    cancels = () if paging or delivery is None else tuple(
        _cancel(channel, r) for r in _receipts(delivery))
    return _post(channel, "/1/messages.json", document, before=cancels)


def build_notice(channel: Channel, event: IncidentEvent, delivery: Delivery | None = None
                 ) -> common.OutgoingRequest:
    """The message POST (priority -1, never pages) of a notice of no incident:
    ``outage.summary``, ``test`` (its ``url`` the channel's page) or
    ``channel.failing`` / ``channel.recovered`` (the broken channel's page).
    ``delivery`` is not needed. Raises ``ValueError`` for another kind."""
    if event.kind in common.CHANNEL_TITLES:
        title, text = common.channel_text(event)
        page = ("Channel", common.broken_channel_page(event))
    elif event.kind == "outage.summary":
        title, text, page = common.OUTAGE_TITLE, common.outage_text(event), None
    elif event.kind == "test":
        title, text = common.TEST_TITLE, common.testing_text(channel)
        page = ("Channel", common.channel_page(channel))
    else:
        raise common.unknown_notice(event)
    return _post(channel, "/1/messages.json",
                 _message(channel, title, text, QUIET, event, [], page))


def receipt(answer: bytes) -> str:
    """The ``receipt`` of a Pushover answer (``{"status": 1, "receipt": "…"}``,
    sent for an emergency message), or "" (none, or not one Pushover makes:
    letters and digits)."""
    try:
        value = json.loads(answer).get("receipt")
    except (ValueError, AttributeError):
        return ""
    return value if isinstance(value, str) and RECEIPT.fullmatch(value) else ""


def _receipts(delivery: Delivery) -> list[str]:
    """The receipts of the earlier deliveries of ``delivery``'s incident to its
    channel, oldest first."""
    return list(Delivery.objects.filter(
        incident_id=delivery.incident_id, channel_id=delivery.channel_id,
        pk__lt=delivery.pk).exclude(receipt="").order_by("pk").values_list("receipt", flat=True))


def _message(channel, title: str, text: str, priority: int, event, links, page) -> dict:
    """The form fields of a message: ``text`` escaped and cut so that the ``links``
    (label, URL) after it fit in 1,024 characters (those that leave less than
    :data:`TEXT_MIN` for the text are left out, the last first); ``page`` (label, URL), when it
    fits in 512 characters, is its supplementary URL."""
    anchors = [f'<a href="{escape(url)}">{escape(label)}</a>' for label, url in links]
    while anchors and len(" · ".join(anchors)) > MESSAGE_MAX - TEXT_MIN:
        anchors.pop()  # links longer than a message (a very long base URL): the last go
    after = f"\n\n{' · '.join(anchors)}" if anchors else ""
    document = {"title": common.cut(title, TITLE_MAX),
                "message": common.escaped_cut(text, MESSAGE_MAX - len(after)) + after,
                "html": 1, "priority": priority,
                "timestamp": int(event.at.astimezone(UTC).timestamp())}
    if priority == 2:
        document |= EMERGENCY
    if page is not None and len(page[1]) <= URL_MAX:
        document |= {"url": page[1], "url_title": common.cut(page[0], URL_TITLE_MAX)}
    return document


def _post(channel, path: str, document: dict, before=()) -> common.OutgoingRequest:
    """A form-encoded POST of ``document`` with the channel's token and user to
    ``path`` of its API (neither token nor user ever reaches an error)."""
    token, user = channel.config["token"], channel.config["user"]
    fields = {"token": token, "user": user, **document}
    return common.OutgoingRequest(url=_api(channel) + path, headers=FORM,
                                  body=urlencode(sorted(fields.items())).encode(),
                                  redact=(token, user), before=before)


def _cancel(channel, receipt: str) -> common.OutgoingRequest:
    """The cancel of the emergency message of ``receipt`` (retries stop)."""
    token = channel.config["token"]
    return common.OutgoingRequest(url=f"{_api(channel)}/1/receipts/{receipt}/cancel.json",
                                  headers=FORM, body=urlencode({"token": token}).encode(),
                                  redact=(token,))


def _api(channel) -> str:
    return (channel.config.get("api_url") or API_URL).rstrip("/")


def shown_config(config: dict) -> dict:
    """``config`` as the API shows it, to admins too: the token and the user key as
    ``***`` (sent back so, they keep the stored ones)."""
    return {**config, **{k: "***" for k in ("token", "user") if k in config}}


HELP = ("Create an application at https://pushover.net/apps/build for its API token; your "
        "user key (or a group's key) is on your dashboard at https://pushover.net/. The API "
        "is described at https://pushover.net/api.")
CONFIG_SCHEMA = {"type": "object", "title": "pushover", "required": ["token", "user"],
                 "additionalProperties": False, "properties": {
                     "token": {"type": "string", "format": "password",
                               "description": "Application API token (30 characters)"},
                     "user": {"type": "string", "format": "password",
                              "description": "User or group key (30 characters)"},
                     "api_url": {"type": "string", "format": "uri", "description":
                                 "Another API root (default: https://api.pushover.net)"}}}
KEY = re.compile(r"[A-Za-z0-9]{30}")


def validate_config(config: dict, previous: dict | None = None) -> dict:
    """``{"token", "user", "api_url"?}``: token and user are Pushover keys (30
    letters and digits); a missing one is kept from ``previous``; ``api_url`` an
    https URL (http only for loopback), stored only when given. Raises
    ``ValueError("<field>: <message>")``."""
    common.check_fields(config, {"token", "user", "api_url"})
    cleaned = {}
    for field in ("token", "user"):
        value = config.get(field, (previous or {}).get(field))
        if value is None or (isinstance(value, str) and not value.strip()):
            raise ValueError(f"{field}: this field is required")
        if not isinstance(value, str) or not KEY.fullmatch(value.strip()):
            raise ValueError(f"{field}: must be a Pushover key: 30 letters and digits")
        cleaned[field] = value.strip()
    if config.get("api_url") is not None:
        cleaned["api_url"] = common.validate_url(config, "api_url", https_only=True)
    return cleaned
