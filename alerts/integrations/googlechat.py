"""Google Chat incoming webhook (developers.google.com/workspace/chat/quickstart/webhooks).

Channel config: ``{"url": "https://chat.googleapis.com/v1/spaces/<space>/messages?key=…&token=…"}``.
Request: ``POST <url>`` with ``{"text", "cardsV2": [{"cardId", "card"}], "thread"}``:
``text`` is the title (what notifications show; ``<`` and ``>`` of user text
as ``‹`` ``›`` so a name can never be a ``<users/all>`` mention), the card has a
header (the title, and the severity of docs/channels.md as its subtitle:
``🟠 ERROR``, ``✅ RESOLVED`` …), a section with the incident's text, one of
``decoratedText`` facts, one with the tail of the last ping's body, and a
``buttonList`` whose buttons open Acknowledge, Resolve, Incident and Monitor.
Card texts are Google Chat's HTML subset: user text is escaped (``&``, ``<``,
``>``), newlines are ``<br>``. One thread per incident: ``thread.threadKey``
``cronradar-<dedup_key>`` with ``messageReplyOption=REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD``
added to the URL (notices start threads of their own). A message keeps within
Google Chat's 32,000 bytes (text and cards; developers.google.com/workspace/chat/
create-messages): the incident's text is cut, marked ``…``, until it does.
Google Chat answers 200 with the message; 429 when a space gets more than one
message a second. The URL's ``key`` and ``token`` are credentials: every request
names them in ``redact`` (as written in the URL and decoded) so they never reach
an error.
"""
from __future__ import annotations

import html
import re
from dataclasses import replace
from urllib.parse import parse_qsl, unquote_plus, urlsplit, urlunsplit

from alerts.integrations import common
from alerts.models import Channel, IncidentEvent

MESSAGE_MAX = 32000  # bytes of a message, text and cards together
MARKS = {"critical": "🔴 CRITICAL", "error": "🟠 ERROR", "warning": "🟡 WARNING",
         "info": "🔵 INFO"}  # docs/channels.md, "Severity"
REPLY = ("messageReplyOption", "REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD")
SPACE_PATH = re.compile(r"/v1/spaces/[^/]+/messages")


def build_request(channel: Channel, event: IncidentEvent) -> common.OutgoingRequest:
    """The webhook POST for ``event`` (any notifying kind), in the incident's
    thread. Raises ``ValueError`` for an event kind that does not notify,
    ``KeyError`` without a ``url``."""
    common.check_notifiable(event)
    title, text = common.describe(event)
    incident = event.incident
    c = common.context(incident)
    subtitle = common.marked(event, MARKS, f"ℹ️ {common.TITLES[event.kind].upper()}",  # noqa: RUF001
                             f"✅ {common.TITLES[event.kind].upper()}")
    return _message(channel, title, subtitle, text, common.facts(event, c),
                    common.page_links(c), c["last_ping_body"],
                    thread=f"cronradar-{incident.dedup_key}")


def build_notice(channel: Channel, event: IncidentEvent) -> common.OutgoingRequest:
    """The webhook POST of a notice of no incident: ``outage.summary``, ``test``
    (a button to the channel's page), ``channel.failing`` / ``channel.recovered``
    (the broken channel's facts and page). Raises ``ValueError`` for another kind."""
    if event.kind in common.CHANNEL_TITLES:
        title, text = common.channel_text(event)
        subtitle = "⚠️ FAILING" if event.kind == "channel.failing" else "✅ RECOVERED"
        return _message(channel, title, subtitle, text, common.channel_fact_rows(event),
                        [("Channel", common.broken_channel_page(event))])
    if event.kind == "outage.summary":
        return _message(channel, common.OUTAGE_TITLE, "⚠️ OUTAGE", common.outage_text(event))
    if event.kind == "test":
        return _message(channel, common.TEST_TITLE, "✅ TEST", common.testing_text(channel),
                        links=[("Channel", common.channel_page(channel))])
    raise common.unknown_notice(event)


def _message(channel, title: str, subtitle: str, text: str, facts=(), links=(),
             body: str = "", thread: str | None = None) -> common.OutgoingRequest:
    """The message, ``text`` cut until the whole keeps within :data:`MESSAGE_MAX`
    bytes (as sent: canonical JSON, UTF-8)."""
    url = channel.config["url"]
    if thread:
        url = _with_reply(url)

    def built(room: int) -> dict:
        return _document(title, subtitle, common.cut(text, room), facts, links, body, thread)

    def fits(room: int) -> bool:
        return len(common.encode_json(built(room))) <= MESSAGE_MAX

    if not fits(low := len(text)):  # the longest text that fits: a binary search
        low, high = 1, low
        while low < high:
            middle = (low + high + 1) // 2
            low, high = (middle, high) if fits(middle) else (low, middle - 1)
    return replace(common.json_post(url, built(low)), redact=secrets(url))


def secrets(url: str) -> tuple[str, ...]:
    """The credentials of webhook ``url`` an error might quote: its ``key`` and
    ``token`` query values, each as written and decoded (``tOk3n%3D``, ``tOk3n=``)."""
    found = []
    for part in urlsplit(url).query.split("&"):
        name, _, value = part.partition("=")
        if name in ("key", "token") and value:
            found += [value, unquote_plus(value)]
    return tuple(dict.fromkeys(found))


def _document(title, subtitle, text, facts, links, body, thread) -> dict:
    """The message's JSON: the ``text`` fallback and the card."""
    sections = [{"widgets": [{"textParagraph": {"text": _markup(text)}}]}]
    if facts:
        sections.append({"widgets": [{"decoratedText": {"topLabel": k, "text": _markup(v)}}
                                     for k, v in facts]})
    if body:
        sections.append({"header": "Last ping body", "widgets": [
            {"textParagraph": {"text": _markup(body)}}]})
    if links:
        sections.append({"widgets": [{"buttonList": {"buttons": [
            {"text": label, "onClick": {"openLink": {"url": url}}} for label, url in links]}}]})
    document = {"text": title.replace("<", "‹").replace(">", "›"),  # noqa: RUF001
                "cardsV2": [{"cardId": "cronradar", "card": {
                    "header": {"title": common.cut(title, 200), "subtitle": subtitle},
                    "sections": sections}}]}
    if thread:
        document["thread"] = {"threadKey": thread}
    return document


def _markup(text: str) -> str:
    """``text`` in a card's HTML subset: escaped, newlines as ``<br>``."""
    return html.escape(text, quote=False).replace("\n", "<br>")


def _with_reply(url: str) -> str:
    """``url`` with ``messageReplyOption=REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD`` (a
    message with a ``threadKey`` then replies in that thread, or starts it),
    replacing any it had; ``key``, ``token`` and the rest kept as they were."""
    parts = urlsplit(url)
    kept = [q for q in parts.query.split("&") if q and q.split("=")[0] != REPLY[0]]
    return urlunsplit(parts._replace(query="&".join([*kept, "=".join(REPLY)])))


CONFIG_SCHEMA = {"type": "object", "title": "googlechat", "required": ["url"],
                 "additionalProperties": False, "properties": {
                     "url": {"type": "string", "format": "uri",
                             "description": "Google Chat webhook URL (https://chat.googleapis"
                                            ".com/v1/spaces/…/messages?key=…&token=…)"}}}
HELP = ("In Google Chat, open the space, then Apps & integrations > Webhooks > Add webhook, "
        "and copy its URL: https://developers.google.com/workspace/chat/quickstart/webhooks")


def validate_config(config: dict, previous: dict | None = None) -> dict:
    """``{"url"}`` -> ``{"url"}``: https (http only for loopback), host
    ``chat.googleapis.com`` (any for loopback), path ``/v1/spaces/<space>/messages``
    with ``key`` and ``token``. Raises ``ValueError("<field>: <message>")``."""
    common.check_fields(config, {"url"})
    url = common.validate_url(config, "url", https_only=True)
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    # http passed validate_url only for a loopback host (a local receiver): any host
    if ((parts.hostname != "chat.googleapis.com" and parts.scheme != "http")
            or not SPACE_PATH.fullmatch(parts.path) or not query.get("key")
            or not query.get("token")):
        raise ValueError("url: must be a Google Chat webhook URL, as "
                         "https://chat.googleapis.com/v1/spaces/<space>/messages?key=…&token=…")
    return {"url": url}
