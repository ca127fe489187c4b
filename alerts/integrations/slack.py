"""Slack incoming webhook (https://api.slack.com/messaging/webhooks).

Channel config: ``{"url": "https://hooks.slack.com/services/..."}``.

Request: ``POST <url>`` with a JSON message (one per opened, resolved or
channel-removed incident event, and per outage summary) ``{"text": ..., "blocks": [...]}``:
``blocks`` is a Block Kit layout (a ``header`` block, a ``section`` with the
summary, a ``section`` with ``fields`` for monitor, cause and times, the tail
of the last ping's body, and a ``context`` with links: Acknowledge, Resolve, the
incident's and the monitor's dashboard pages); ``text`` is the plain fallback
Slack shows in notifications and screen readers. Times are in the monitor's
time zone with its offset. User-supplied text is escaped for mrkdwn (``&``,
``<``, ``>``); texts are cut to Slack's limits, ending with ``…``. Slack answers
200 ``ok``; 4xx means a bad payload or a revoked hook.
"""
from __future__ import annotations

from alerts.integrations import common
from alerts.models import Channel, IncidentEvent

HEADER_MAX = 150  # Slack's limit for a header block's text
SECTION_MAX = 3000  # a section's text (docs.slack.dev, section block)
FIELD_MAX = 2000  # each of a section's fields
FENCE = "`" * 3
# The incident's severity, as Slack readers see it (docs/channels.md, "Severity").
SEVERITY_EMOJI = {"critical": ":rotating_light:", "error": ":red_circle:",
                  "warning": ":warning:", "info": ":information_source:"}


def build_request(channel: Channel, event: IncidentEvent) -> common.OutgoingRequest:
    """The incoming-webhook POST announcing ``event`` (opened, escalated,
    renotified, acknowledged, resolved, channel_removed).

    Raises ``ValueError`` for an event kind that does not notify, ``KeyError`` if
    the channel config lacks ``url``.
    """
    common.check_notifiable(event)
    incident = event.incident
    monitor = incident.monitor
    where = f"{monitor.project.name}/{monitor.slug}"
    fields = [
        f"*Monitor*\n{_escape(monitor.name)} ({_escape(where)})",
        f"*Cause*\n{incident.cause}",
        f"*Opened*\n{common.local(incident.opened_at, monitor.timezone)}",
    ]
    kind = event.kind
    emoji = SEVERITY_EMOJI.get(incident.severity, ":rotating_light:")
    if kind == IncidentEvent.Kind.OPENED:
        header = f"{emoji} Incident opened: {monitor.name}"
        detail = incident.summary
        text = f"CronRadar: incident opened ({incident.cause}): {incident.summary}"
    elif kind in (IncidentEvent.Kind.ESCALATED, IncidentEvent.Kind.RENOTIFIED):
        what = "Escalated" if kind == IncidentEvent.Kind.ESCALATED else "Still open"
        header = f"{emoji} {what}: {monitor.name}"
        detail = f"{incident.summary}\n{event.message}"
        text = f"CronRadar: {what.lower()} ({incident.cause}): {incident.summary}"
    elif kind == IncidentEvent.Kind.ACKNOWLEDGED:
        header = f":eyes: Acknowledged: {monitor.name}"
        detail = event.message
        text = f"CronRadar: incident {event.message}: {monitor.name}"
    elif kind == IncidentEvent.Kind.STABLE:
        header = f":white_check_mark: Stable again: {monitor.name}"
        detail = event.message
        text = f"CronRadar: {monitor.name} is {event.message}"
    elif kind == IncidentEvent.Kind.CHANNEL_REMOVED:
        header = f":information_source: No longer following: {monitor.name}"
        detail = ("This channel was removed from the monitor while its incident is open; "
                  "you will not hear more about this incident here.")
        text = f"CronRadar: this channel no longer follows {monitor.name}"
    else:
        header = f":white_check_mark: Incident resolved: {monitor.name}"
        detail = event.message or "Resolved."
        text = f"CronRadar: incident resolved: {monitor.name}: {detail}"
        fields.append(f"*Resolved*\n{common.local(event.at, monitor.timezone)}")
    facts = common.context(incident)
    if facts["scheduled_at"]:
        fields.append(f"*Scheduled*\n{facts['scheduled_at']}")
    if facts["run_duration"] is not None:
        fields.append(f"*Run took*\n{facts['run_duration']}s")
    blocks = [
        {"type": "header",
         "text": {"type": "plain_text", "text": common.cut(header, HEADER_MAX), "emoji": True}},
        {"type": "section", "text": {"type": "mrkdwn",
                                     "text": common.cut(_escape(detail), SECTION_MAX)}},
        {"type": "section", "fields": [{"type": "mrkdwn", "text": common.cut(f, FIELD_MAX)}
                                       for f in fields]},
    ]
    if facts["last_ping_body"]:
        tail = common.tail(_escape(facts["last_ping_body"].replace(FENCE, "'" * 3)),
                           SECTION_MAX - 40)
        blocks.append({"type": "section", "text": {
            "type": "mrkdwn", "text": f"*Last ping body*\n{FENCE}{tail}{FENCE}"}})
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": " · ".join(
        f"<{url}|{label}>" for label, url in common.page_links(facts))}]})
    message = {"text": common.cut(_escape(text), SECTION_MAX), "blocks": blocks}
    return common.json_post(channel.config["url"], message)


def build_notice(channel: Channel, event: IncidentEvent) -> common.OutgoingRequest:
    """The incoming-webhook POST of a notice of no incident: ``outage.summary`` or
    ``test`` or ``channel.failing`` / ``channel.recovered`` (a link to that
    channel's page). Raises ``ValueError`` for another kind."""
    if event.kind in common.CHANNEL_TITLES:
        title, text = common.channel_text(event)
        icon = ":warning:" if event.kind == "channel.failing" else ":white_check_mark:"
        header, link = common.cut(f"{icon} {title}", HEADER_MAX), common.broken_channel_page(event)
    elif event.kind == "outage.summary":
        header, text, link = f":warning: {common.OUTAGE_TITLE}", common.outage_text(event), None
    elif event.kind == "test":
        header, text = f":white_check_mark: {common.TEST_TITLE}", common.testing_text(channel)
        link = common.channel_page(channel)
    else:
        raise common.unknown_notice(event)
    blocks = [
        {"type": "header", "text": {"type": "plain_text", "emoji": True, "text": header}},
        {"type": "section", "text": {"type": "mrkdwn", "text": _escape(text)}},
    ]
    if link:
        blocks.append({"type": "context", "elements": [
            {"type": "mrkdwn", "text": f"<{link}|Channel>"}]})
    return common.json_post(channel.config["url"],
                            {"text": _escape(f"CronRadar: {text}"), "blocks": blocks})


HELP = ("In Slack, create an app with Incoming Webhooks turned on, add a webhook to the "
        "channel and copy its URL: https://api.slack.com/messaging/webhooks")
CONFIG_SCHEMA = {"type": "object", "title": "slack", "required": ["url"],
                 "additionalProperties": False, "properties": {
                     "url": {"type": "string", "format": "uri",
                             "description": "Slack incoming-webhook URL (https://hooks.slack.com/...)"}}}


def validate_config(config: dict, previous: dict | None = None) -> dict:
    """``{"url"}`` -> ``{"url"}``; the URL must be https (http only for loopback).

    Raises ``ValueError("<field>: <message>")``.
    """
    common.check_fields(config, {"url"})
    return {"url": common.validate_url(config, "url", https_only=True)}


def _escape(text: str) -> str:
    """Escape the three characters Slack's mrkdwn treats as control characters."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

