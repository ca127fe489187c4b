"""Microsoft Teams through a Workflows (Power Automate) webhook.

Channel config: ``{"url": "https://….logic.azure.com/workflows/…"}`` (the old
Office 365 connectors are retired). Request: ``POST <url>`` with
``{"type": "message", "attachments": [{"contentType":
"application/vnd.microsoft.card.adaptive", "content": <Adaptive Card 1.4>}]}``:
a title, the text, a fact set (monitor, cause, severity, times in the
monitor's time zone), the tail of the last ping's body (monospace) and buttons:
Acknowledge and Resolve (for an opened, escalated or re-notified incident), and
the incident's and the monitor's dashboard pages. Teams caps a message at 28 KB:
texts are cut to fit, each cut ending with ``…``. Teams answers 202 when it
accepts one (Microsoft Learn, incoming webhooks with Workflows).
"""
from __future__ import annotations

from alerts.integrations import common
from alerts.models import Channel, IncidentEvent

MAX_BYTES = 28 * 1024
TEXT_MAX = 4000


def build_request(channel: Channel, event: IncidentEvent) -> common.OutgoingRequest:
    """The card POST for ``event`` (any notifying kind). Raises ``ValueError`` for
    an event kind that does not notify, ``KeyError`` without a ``url``."""
    common.check_notifiable(event)
    title, text = common.describe(event)
    c = common.context(event.incident)
    paging = event.kind in IncidentEvent.PAGING
    actions = [{"type": "Action.OpenUrl", "title": label, "url": url}
               for label, url in common.page_links(c)
               if paging or label not in ("Acknowledge", "Resolve")]
    return _card(channel, title, text, common.facts(event, c), actions, c["last_ping_body"])


def build_notice(channel: Channel, event: IncidentEvent) -> common.OutgoingRequest:
    """The card POST of a notice of no incident: ``outage.summary`` or ``test`` (a
    button to the channel's page). Raises ``ValueError`` for another kind.
    ``channel.failing`` / ``channel.recovered``: :func:`_channel_notice`."""
    if event.kind in common.CHANNEL_TITLES:
        return _channel_notice(channel, event)
    if event.kind == "outage.summary":
        return _card(channel, common.OUTAGE_TITLE, common.outage_text(event), [], [])
    if event.kind == "test":
        return _card(channel, common.TEST_TITLE, common.testing_text(channel), [], [
            {"type": "Action.OpenUrl", "title": "Channel", "url": common.channel_page(channel)}])
    raise common.unknown_notice(event)


def _channel_notice(channel: Channel, event: IncidentEvent) -> common.OutgoingRequest:
    """The card POST of a ``channel.failing`` / ``channel.recovered`` notice."""
    title, text = common.channel_text(event)
    return _card(channel, title, text, common.channel_fact_rows(event), [
        {"type": "Action.OpenUrl", "title": "Channel", "url": common.broken_channel_page(event)}])


def _card(channel, title, text, facts, actions, body: str = "") -> common.OutgoingRequest:
    """The card; ``body``: the tail of the last ping's body, shown in a monospace
    block. While the message is over 28 KB, the text and then the body's tail
    are halved (each cut marked with ``…``)."""
    text = common.cut(text, TEXT_MAX)
    while True:
        blocks = [
            {"type": "TextBlock", "text": common.cut(title, 200), "weight": "Bolder",
             "size": "Medium", "wrap": True},
            {"type": "TextBlock", "text": text, "wrap": True},
            {"type": "FactSet", "facts": [{"title": k, "value": v} for k, v in facts]},
        ]
        if body:
            blocks += [{"type": "TextBlock", "text": "Last ping body", "weight": "Bolder",
                        "wrap": True},
                       {"type": "TextBlock", "text": body, "fontType": "Monospace",
                        "wrap": True}]
        card = {"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                "type": "AdaptiveCard", "version": "1.4", "body": blocks, "actions": actions}
        request = common.json_post(channel.config["url"], {"type": "message", "attachments": [
            {"contentType": "application/vnd.microsoft.card.adaptive", "content": card}]})
        if len(request.body) <= MAX_BYTES or (len(text) <= 1 and len(body) <= 1):
            return request
        if len(text) > 1:
            text = common.cut(text, len(text) // 2)
        else:
            body = common.tail(body, len(body) // 2)


HELP = ("In Teams, add the Workflows template \"Post to a channel when a webhook request "
        "is received\" to the channel and copy the URL it shows: "
        "https://support.microsoft.com/office/create-incoming-webhooks-with-workflows-"
        "for-microsoft-teams-8ae491c7-0394-4861-ba59-055e33f75498")
CONFIG_SCHEMA = {"type": "object", "title": "teams", "required": ["url"],
                 "additionalProperties": False, "properties": {
                     "url": {"type": "string", "format": "uri",
                             "description": "Teams Workflows webhook URL (https)"}}}


def validate_config(config: dict, previous: dict | None = None) -> dict:
    """``{"url"}`` -> ``{"url"}`` (https; http only for loopback)."""
    common.check_fields(config, {"url"})
    return {"url": common.validate_url(config, "url", https_only=True)}
