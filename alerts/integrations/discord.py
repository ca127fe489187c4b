"""Discord webhook (discord.com developers, Execute Webhook).

Channel config: ``{"url": "https://discord.com/api/webhooks/…"}``. Request:
``POST <url>?wait=true`` (so a failure is an error status, not a silent 204)
with ``content`` (at most 2,000 characters), one embed (title 256, description
4,096, at most 25 fields of 256/1,024, footer; 6,000 characters in all) and
``allowed_mentions`` empty, so a monitor name can never ping ``@everyone``. An
incident's description is its text, the tail of the last ping's body in a code
block, and links: Acknowledge, Resolve, the incident's and the monitor's
dashboard pages; times in the fields are in the monitor's time zone. Texts are
cut to those limits, each cut ending with ``…``. 429 comes with ``Retry-After``.
"""
from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from alerts.integrations import common
from alerts.models import Channel, IncidentEvent

COLOURS = {"critical": 0xD0021B, "error": 0xE8590C, "warning": 0xF5A623, "info": 0x4A90D9}
RESOLVED_COLOUR = 0x2E7D32


def build_request(channel: Channel, event: IncidentEvent) -> common.OutgoingRequest:
    """The message POST for ``event`` (any notifying kind). Raises ``ValueError``
    for an event kind that does not notify, ``KeyError`` without a ``url``."""
    common.check_notifiable(event)
    title, text = common.describe(event)
    c = common.context(event.incident)
    links = " · ".join(f"[{label}]({url})" for label, url in common.page_links(c))
    colour = (RESOLVED_COLOUR if event.kind in ("resolved", "acknowledged")
              else COLOURS.get(event.incident.severity, COLOURS["critical"]))
    return _message(channel, title, text, common.facts(event, c), colour, links,
                    c["last_ping_body"])


def build_notice(channel: Channel, event: IncidentEvent) -> common.OutgoingRequest:
    """The message POST of a notice of no incident: ``outage.summary`` or ``test``
    (a link to the channel's page). Raises ``ValueError`` for another kind.
    ``channel.failing`` / ``channel.recovered``: :func:`_channel_notice`."""
    if event.kind in common.CHANNEL_TITLES:
        return _channel_notice(channel, event)
    if event.kind == "outage.summary":
        return _message(channel, common.OUTAGE_TITLE, common.outage_text(event), [],
                        COLOURS["info"])
    if event.kind == "test":
        text = f"{common.testing_text(channel)}\n\n[Channel]({common.channel_page(channel)})"
        return _message(channel, common.TEST_TITLE, text, [], RESOLVED_COLOUR)
    raise common.unknown_notice(event)


def _channel_notice(channel: Channel, event: IncidentEvent) -> common.OutgoingRequest:
    """The message POST of a ``channel.failing`` (amber) / ``channel.recovered``
    (green) notice."""
    title, text = common.channel_text(event)
    colour = COLOURS["warning"] if event.kind == "channel.failing" else RESOLVED_COLOUR
    return _message(channel, title, text, common.channel_fact_rows(event), colour,
                    links=f"[Channel]({common.broken_channel_page(event)})")


def _message(channel, title, text, facts, colour, links: str = "", body: str = ""
             ) -> common.OutgoingRequest:
    """The message: ``text``, then the tail of the last ping's ``body`` in a code
    block and the ``links`` line, in the embed's description; each cut to what the
    embed limits leave (the text first, then the body's start), marked ``…``."""
    fields = [{"name": common.cut(k, 256), "value": common.cut(v, 1024), "inline": True}
              for k, v in facts[:25]]
    content = common.cut(title, 2000)
    title = common.cut(title, 256)
    room = min(4096, 6000 - len(title) - len("CronRadar") - sum(
        len(f["name"]) + len(f["value"]) for f in fields))
    after = f"\n\n{links}" if links else ""
    if body:
        body = body.replace("`" * 3, "'" * 3)
        frame = "\n\n**Last ping body**\n```\n\n```"
        body = common.tail(body, max(0, min(len(body), room - len(after) - len(frame) - 200)))
        after = f"\n\n**Last ping body**\n```\n{body}\n```{after}"
    description = common.cut(text, max(room - len(after), 1)) + after
    embed = {"title": title, "description": description,
             "color": colour, "fields": fields, "footer": {"text": "CronRadar"}}
    return common.json_post(_wait(channel.config["url"]), {
        "content": content, "embeds": [embed],
        "allowed_mentions": {"parse": []}})


def _wait(url: str) -> str:
    """``url`` with ``wait=true`` (Discord then answers the message or an error,
    instead of 204 at once), replacing any ``wait`` it had; other parameters kept."""
    parts = urlsplit(url)
    kept = [q for q in parts.query.split("&") if q and q.split("=")[0] != "wait"]
    return urlunsplit(parts._replace(query="&".join([*kept, "wait=true"])))


HELP = ("In Discord, open the channel's settings, Integrations, Webhooks, create a "
        "webhook and copy its URL: "
        "https://support.discord.com/hc/en-us/articles/228383668")
CONFIG_SCHEMA = {"type": "object", "title": "discord", "required": ["url"],
                 "additionalProperties": False, "properties": {
                     "url": {"type": "string", "format": "uri",
                             "description": "Discord webhook URL (https://discord.com/api/webhooks/...)"}}}


def validate_config(config: dict, previous: dict | None = None) -> dict:
    """``{"url"}`` -> ``{"url"}`` (https; http only for loopback)."""
    common.check_fields(config, {"url"})
    return {"url": common.validate_url(config, "url", https_only=True)}
