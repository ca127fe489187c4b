"""Microsoft Teams through a Workflows (Power Automate) webhook.

Channel config: ``{"url": "https://….logic.azure.com/workflows/…"}`` (the old
Office 365 connectors are retired). Request: ``POST <url>`` with
``{"type": "message", "attachments": [{"contentType":
"application/vnd.microsoft.card.adaptive", "content": <Adaptive Card 1.4>}]}``:
a title, the text, a fact set (monitor, cause, severity, times) and buttons to
acknowledge, resolve and open the monitor. Teams caps a message at 28 KB: texts
are cut to fit. Teams answers 202 when it accepts one (Microsoft Learn, incoming
webhooks with Workflows).
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
    links = common.context(event.incident)["links"]
    offered = ((("acknowledge", "Acknowledge"), ("resolve", "Resolve"))
               if event.kind in IncidentEvent.PAGING else ()) + (("monitor", "Monitor"),)
    actions = [{"type": "Action.OpenUrl", "title": label, "url": links[key]}
               for key, label in offered if links[key]]
    return _card(channel, title, text, common.facts(event), actions)


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
    return _card(channel, title, text, common.channel_fact_rows(event), [])


def _card(channel, title, text, facts, actions) -> common.OutgoingRequest:
    text = common.cut(text, TEXT_MAX)
    while True:
        card = {"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                "type": "AdaptiveCard", "version": "1.4", "body": [
                    {"type": "TextBlock", "text": common.cut(title, 200), "weight": "Bolder",
                     "size": "Medium", "wrap": True},
                    {"type": "TextBlock", "text": text, "wrap": True},
                    {"type": "FactSet", "facts": [{"title": k, "value": v} for k, v in facts]},
                ], "actions": actions}
        request = common.json_post(channel.config["url"], {"type": "message", "attachments": [
            {"contentType": "application/vnd.microsoft.card.adaptive", "content": card}]})
        if len(request.body) <= MAX_BYTES or not text:
            return request
        text = common.cut(text, len(text) // 2)


CONFIG_SCHEMA = {"type": "object", "title": "teams", "required": ["url"],
                 "additionalProperties": False, "properties": {
                     "url": {"type": "string", "format": "uri",
                             "description": "Teams Workflows webhook URL (https)"}}}


def validate_config(config: dict, previous: dict | None = None) -> dict:
    """``{"url"}`` -> ``{"url"}`` (https; http only for loopback)."""
    common.check_fields(config, {"url"})
    return {"url": common.validate_url(config, "url", https_only=True)}
