"""Telegram Bot API (core.telegram.org/bots/api#sendmessage).

Channel config: ``{"bot_token": "123456789:AA…", "chat_id": "-1001234567890" |
"@channelname", "api_url"?: "https://api.telegram.org"}`` (``api_url``: a local
Bot API server or a test receiver). Request: ``POST
<api_url>/bot<bot_token>/sendMessage`` with JSON ``{"chat_id", "text",
"parse_mode": "HTML", "link_preview_options": {"is_disabled": true},
"disable_notification"}``. The text is HTML with Telegram's own tags only
(``<b>``, ``<pre>``, ``<a href>``): the title with the severity mark of
docs/channels.md (``🟠 [ERROR]``, ``✅`` when acknowledged or resolved),
the incident's text, the facts, the tail of the last ping's body, and links
Acknowledge, Resolve, Incident, Monitor (HTML links, not URL buttons: Telegram
refuses buttons to hosts like ``localhost``, which a self-hosted
``CRONRADAR_BASE_URL`` may be). User text is escaped (``&``, ``<``, ``>``, and
``"`` in a link). Telegram counts at most 4,096 characters after entity
parsing, i.e. the visible text: the incident's text is cut to fit (counted in
UTF-16 units, as Telegram counts, so an emoji counts 2), never a tag. An
``info`` incident and every notice are sent silently (``disable_notification``).
The token is in the URL path: every request names it in ``redact`` so it never
reaches an error. A 429 carries ``parameters.retry_after`` in its JSON body (no
``Retry-After`` header); the sender honours it (:func:`alerts.delivery.body_retry_after`).
"""
from __future__ import annotations

import html
import re
from dataclasses import replace

from alerts.integrations import common
from alerts.models import Channel, IncidentEvent

API_URL = "https://api.telegram.org"
TEXT_MAX = 4096  # characters after entity parsing (core.telegram.org/bots/api#sendmessage)
MARKS = {"critical": "🔴 [CRITICAL]", "error": "🟠 [ERROR]", "warning": "🟡 [WARNING]",
         "info": "🔵 [INFO]"}  # docs/channels.md, "Severity"
DONE, NOTE, WARN = "✅", "ℹ️", "⚠️"  # noqa: RUF001 (the emoji are the point)
TOKEN = re.compile(r"\d{5,20}:[A-Za-z0-9_-]{30,60}")
CHAT = re.compile(r"-?\d{1,20}|@[A-Za-z][A-Za-z0-9_]{4,31}")  # usernames: 5-32


def build_request(channel: Channel, event: IncidentEvent) -> common.OutgoingRequest:
    """The ``sendMessage`` POST for ``event`` (any notifying kind). Raises
    ``ValueError`` for an event kind that does not notify, ``KeyError`` without a
    ``bot_token`` or ``chat_id``."""
    common.check_notifiable(event)
    title, text = common.describe(event)
    incident = event.incident
    c = common.context(incident)
    mark = common.marked(event, MARKS, NOTE, DONE)
    return _message(channel, f"{mark} {title}", text, common.facts(event, c),
                    common.page_links(c), c["last_ping_body"],
                    silent=incident.severity == "info")


def build_notice(channel: Channel, event: IncidentEvent) -> common.OutgoingRequest:
    """The silent ``sendMessage`` POST of a notice of no incident:
    ``outage.summary``, ``test`` (linking the channel's page), ``channel.failing`` /
    ``channel.recovered`` (the broken channel's facts and page). Raises
    ``ValueError`` for another kind."""
    if event.kind in common.CHANNEL_TITLES:
        title, text = common.channel_text(event)
        mark = WARN if event.kind == "channel.failing" else DONE
        return _message(channel, f"{mark} {title}", text, common.channel_fact_rows(event),
                        [("Channel", common.broken_channel_page(event))])
    if event.kind == "outage.summary":
        return _message(channel, f"{WARN} {common.OUTAGE_TITLE}", common.outage_text(event))
    if event.kind == "test":
        return _message(channel, f"{DONE} {common.TEST_TITLE}", common.testing_text(channel),
                        links=[("Channel", common.channel_page(channel))])
    raise common.unknown_notice(event)


def _message(channel, title: str, text: str, facts=(), links=(), body: str = "",
             silent: bool = True) -> common.OutgoingRequest:
    """The request: ``title`` in bold, ``text``, the ``facts`` (bold names), the
    ``body`` tail in ``<pre>``, the ``links`` line, blank lines between; ``text`` cut so that the
    visible text keeps within :data:`TEXT_MAX` (the body's start next, if it
    must)."""
    rest = []
    if facts:
        rest.append(("\n".join(f"<b>{_escape(k)}:</b> {_escape(v)}" for k, v in facts),
                     "\n".join(f"{k}: {v}" for k, v in facts)))
    if links:
        rest.append((" · ".join(f'<a href="{html.escape(url)}">{_escape(label)}</a>'
                                for label, url in links),
                     " · ".join(label for label, _ in links)))
    fixed = units(title) + sum(
        units(shown) + 2 for _, shown in rest)  # each part after a blank line
    if body:
        frame = "\n\nLast ping body\n"
        body = _cut_tail(body, max(0, min(units(body), TEXT_MAX - fixed - units(frame) - 200)))
        rest.insert(len(rest) - bool(links), (f"<b>Last ping body</b>\n<pre>{_escape(body)}</pre>",
                        f"Last ping body\n{body}"))
        fixed += units(frame) + units(body)
    text = _cut(text, max(1, TEXT_MAX - fixed - 1))  # 1: the newline after the title
    parts = [f"<b>{_escape(title)}</b>\n{_escape(text)}", *(markup for markup, _ in rest)]
    token = channel.config["bot_token"]
    api = channel.config.get("api_url") or API_URL
    request = common.json_post(f"{api}/bot{token}/sendMessage", {
        "chat_id": channel.config["chat_id"], "text": "\n\n".join(parts), "parse_mode": "HTML",
        "link_preview_options": {"is_disabled": True}, "disable_notification": silent})
    return replace(request, redact=(token,))


def units(text: str) -> int:
    """The length of ``text`` as Telegram counts it: UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


def _cut(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` UTF-16 units, its end cut off and marked ``…``."""
    if units(text) <= limit:
        return text
    kept, n = [], 1  # the ellipsis
    for ch in text:
        n += units(ch)
        if n > limit:
            break
        kept.append(ch)
    return "".join(kept) + common.ELLIPSIS


def _cut_tail(text: str, limit: int) -> str:
    """The end of ``text`` in at most ``limit`` UTF-16 units, its start marked ``…``."""
    return _cut(text[::-1], limit)[::-1] if units(text) > limit else text


def _escape(text: str) -> str:
    """``text`` for Telegram's HTML parse mode: ``&``, ``<`` and ``>`` as entities."""
    return html.escape(text, quote=False)


CONFIG_SCHEMA = {"type": "object", "title": "telegram", "required": ["bot_token", "chat_id"],
                 "additionalProperties": False, "properties": {
                     "bot_token": {"type": "string", "format": "password",
                                   "description": "Bot token from @BotFather "
                                                  "(123456789:AA…)"},
                     "chat_id": {"type": "string",
                                 "description": "Chat ID (a number such as -1001234567890) or "
                                                "@channelname"},
                     "api_url": {"type": "string", "format": "uri",
                                 "description": "Bot API server (optional; default "
                                                "https://api.telegram.org)"}}}
HELP = ("Create a bot with @BotFather in Telegram and copy the token it gives you; add the "
        "bot to your group or channel, and use the chat's ID (or @channelname for a public "
        "channel): https://core.telegram.org/bots/features#botfather")


def validate_config(config: dict, previous: dict | None = None) -> dict:
    """``{"bot_token", "chat_id", "api_url"?}`` -> the same, normalized: the token
    ``<digits>:<30-60 letters, digits, _ or ->`` (kept from ``previous`` when left
    out), ``chat_id`` an integer (stored as its text) or ``@channelname``,
    ``api_url`` https (http only for loopback) without a trailing ``/``.
    Raises ``ValueError("<field>: <message>")``."""
    common.check_fields(config, {"bot_token", "chat_id", "api_url"})
    token = config.get("bot_token", (previous or {}).get("bot_token"))
    if not token:
        raise ValueError("bot_token: this field is required")
    if not isinstance(token, str) or not TOKEN.fullmatch(token.strip()):
        raise ValueError("bot_token: must be a bot token as @BotFather gives it, "
                         "<digits>:<about 35 characters>")
    chat = config.get("chat_id")
    if chat is None or chat == "":
        raise ValueError("chat_id: this field is required")
    if isinstance(chat, bool) or not isinstance(chat, int | str) or not CHAT.fullmatch(
            str(chat).strip()):
        raise ValueError("chat_id: must be an integer chat ID (e.g. -1001234567890) or "
                         "@channelname")
    cleaned = {"bot_token": token.strip(), "chat_id": str(chat).strip()}
    if config.get("api_url") not in (None, ""):
        url = common.validate_url(config, "api_url", https_only=True).rstrip("/")
        if "?" in url or "#" in url:
            raise ValueError("api_url: must be the server's base URL, without a query")
        cleaned["api_url"] = url
    return cleaned
