"""Email through Django's mail backend (``EMAIL_URL``: SMTP in production; the
console in the embedded default, so notifications show in ``serve``'s output).

Channel config: ``{"to": ["ops@example.com", …]}`` (1-20 addresses). Each
notification is one message with a text and an HTML part, from
``CRONRADAR_EMAIL_FROM``; the subject is ``[SEVERITY] <title>`` on one line
(line breaks in names never reach a header); Django encodes non-ASCII headers
(RFC 2047) and long lines (RFC 5322's 998-octet limit). An incident's message
carries its facts (times in the monitor's time zone), the tail of the last
ping's body and links: Acknowledge, Resolve, the incident's and the monitor's
dashboard pages.
"""
from __future__ import annotations

from django.core.validators import validate_email
from django.forms import ValidationError
from django.utils.html import escape

from alerts.integrations import common
from alerts.models import Channel, IncidentEvent


def build_request(channel: Channel, event: IncidentEvent) -> common.OutgoingEmail:
    """The message for ``event``. Raises ``ValueError`` for an event kind that does
    not notify, ``KeyError`` without ``to``."""
    common.check_notifiable(event)
    title, text = common.describe(event)
    c = common.context(event.incident)
    facts = common.facts(event, c)
    links = common.page_links(c)
    body = c["last_ping_body"]
    plain = "\n".join([text, "", *(f"{k}: {v}" for k, v in facts),
                       *([f"\nLast ping body:\n{body}"] if body else []), "",
                       *(f"{label}: {url}" for label, url in links)])
    html = "".join([
        f"<p>{escape(text)}</p><table>",
        *(f"<tr><th align=left>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in facts),
        "</table>",
        f"<pre>{escape(body)}</pre>" if body else "",
        "<p>" + " · ".join(f'<a href="{escape(u)}">{escape(label)}</a>'
                           for label, u in links) + "</p>"])
    severity = event.incident.severity.upper()
    return _message(channel, f"[{severity}] {title}", plain, html)


def build_notice(channel: Channel, event: IncidentEvent) -> common.OutgoingEmail:
    """The message of a notice of no incident: ``outage.summary`` or ``test`` (with
    the channel's dashboard link). Raises ``ValueError`` for another kind.
    ``channel.failing`` / ``channel.recovered``: :func:`_channel_notice`."""
    if event.kind in common.CHANNEL_TITLES:
        return _channel_notice(channel, event)
    if event.kind == "outage.summary":
        text = common.outage_text(event)
        return _message(channel, f"[INFO] {common.OUTAGE_TITLE}", text,
                        f"<p>{escape(text)}</p>")
    if event.kind == "test":
        text, url = common.testing_text(channel), common.channel_page(channel)
        return _message(channel, f"[TEST] {common.TEST_TITLE}", f"{text}\n\nChannel: {url}",
                        f'<p>{escape(text)}</p><p><a href="{escape(url)}">Channel</a></p>')
    raise common.unknown_notice(event)


def _channel_notice(channel: Channel, event: IncidentEvent) -> common.OutgoingEmail:
    """The message of a ``channel.failing`` / ``channel.recovered`` notice (also
    the one the organisation's admins get: :mod:`alerts.health`)."""
    title, text = common.channel_text(event)
    rows, url = common.channel_fact_rows(event), common.broken_channel_page(event)
    plain = "\n".join([text, "", *(f"{k}: {v}" for k, v in rows), "", f"Channel: {url}"])
    html = "".join([f"<p>{escape(text)}</p><table>", *(
        f"<tr><th align=left>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in rows),
        f'</table><p><a href="{escape(url)}">Channel</a></p>'])
    return _message(channel, f"[INFO] {title}", plain, html)


def _message(channel, subject, text, html) -> common.OutgoingEmail:
    one_line = " ".join(subject.split())
    return common.OutgoingEmail(to=tuple(channel.config["to"]),
                                subject=common.cut(one_line, 200), text=text, html=html)


HELP = ("Mail is sent by this CronRadar's own mail server (EMAIL_URL); give the "
        "addresses that should receive it.")
CONFIG_SCHEMA = {"type": "object", "title": "email", "required": ["to"],
                 "additionalProperties": False, "properties": {
                     "to": {"description": "email addresses (1 to 20)",
                            "oneOf": [{"type": "string", "format": "email"},
                                      {"type": "array", "minItems": 1, "maxItems": 20,
                                       "items": {"type": "string", "format": "email"}}]}}}


def validate_config(config: dict, previous: dict | None = None) -> dict:
    """``{"to": [addresses]}`` (1-20 valid addresses; a single string is one)."""
    common.check_fields(config, {"to"})
    to = config.get("to")
    if isinstance(to, str):
        to = [to]
    if not isinstance(to, list) or not 1 <= len(to) <= 20:
        raise ValueError("to: a list of 1 to 20 email addresses is required")
    for address in to:
        try:
            validate_email(address)
        except (ValidationError, TypeError):
            raise ValueError(f"to: {address!r} is not an email address") from None
    return {"to": [a.strip() for a in to]}
