"""Mattermost incoming webhook (developers.mattermost.com, incoming webhooks and
message attachments); Rocket.Chat's incoming webhooks take the same message.

Channel config: ``{"url": "https://mattermost.example.com/hooks/<id>"}`` (a
Rocket.Chat one: ``https://rocket.example.com/hooks/<id>/<token>``). Request:
``POST <url>`` with ``{"text", "attachments": [{"fallback", "color", "title",
"title_link", "text", "fields": [{"short", "title", "value"}]}]}``: ``text`` is
the title (what notifications show), the attachment has the severity colour of
docs/channels.md (green when acknowledged, resolved or stable), the
incident's page as ``title_link``, the incident's text, the tail of the last
ping's body in a code block and Markdown links Acknowledge · Resolve · Incident
· Monitor, and the facts as short fields. ``@`` in user text is followed by a
word joiner (U+2060), so a monitor named ``@channel`` never notifies a whole
channel. The whole post keeps within Mattermost's 16,383 characters (the
incident's text is cut first, marked ``…``). Rocket.Chat ignores ``fallback``
and shows the rest alike. Mattermost answers 200 ``ok``. The URL's path after
``/hooks/`` (the hook id; Rocket.Chat's token too) is the credential: every
request names it in ``redact`` so it never reaches an error.
"""
from __future__ import annotations

from dataclasses import replace
from urllib.parse import urlsplit

from alerts.integrations import common
from alerts.models import Channel, IncidentEvent

POST_MAX = 16383  # characters of a post (Mattermost 5.0+, PostMessageMaxRunesV2)
COLOURS = {"critical": "#D0021B", "error": "#E8590C", "warning": "#F5A623", "info": "#4A90D9"}
RESOLVED_COLOUR = "#2E7D32"
FENCE = "`" * 3


def build_request(channel: Channel, event: IncidentEvent) -> common.OutgoingRequest:
    """The webhook POST for ``event`` (any notifying kind). Raises ``ValueError``
    for an event kind that does not notify, ``KeyError`` without a ``url``."""
    common.check_notifiable(event)
    title, text = common.describe(event)
    c = common.context(event.incident)
    colour = common.marked(event, COLOURS, COLOURS["info"], RESOLVED_COLOUR)
    return _post(channel, title, text, colour, c["links"]["incident_page"],
                 common.facts(event, c), common.page_links(c), c["last_ping_body"])


def build_notice(channel: Channel, event: IncidentEvent) -> common.OutgoingRequest:
    """The webhook POST of a notice of no incident: ``outage.summary`` (blue),
    ``test`` (green, linking the channel's page), ``channel.failing`` (amber) /
    ``channel.recovered`` (green) with the broken channel's facts and page. Raises
    ``ValueError`` for another kind."""
    if event.kind in common.CHANNEL_TITLES:
        title, text = common.channel_text(event)
        colour = COLOURS["warning"] if event.kind == "channel.failing" else RESOLVED_COLOUR
        page = common.broken_channel_page(event)
        return _post(channel, title, text, colour, page, common.channel_fact_rows(event),
                     [("Channel", page)])
    if event.kind == "outage.summary":
        return _post(channel, common.OUTAGE_TITLE, common.outage_text(event), COLOURS["info"])
    if event.kind == "test":
        page = common.channel_page(channel)
        return _post(channel, common.TEST_TITLE, common.testing_text(channel),
                     RESOLVED_COLOUR, page, links=[("Channel", page)])
    raise common.unknown_notice(event)


def _post(channel, title: str, text: str, colour: str, link: str | None = None, facts=(),
          links=(), body: str = "") -> common.OutgoingRequest:
    """The message; ``text`` (then the body's start) cut so that the post's texts
    (``text``, the attachment's fallback, title, text and fields) keep within
    :data:`POST_MAX` characters."""
    title = _quiet(title)
    fields = [{"short": True, "title": k, "value": _quiet(v)} for k, v in facts]
    after = ("\n\n" + " · ".join(f"[{label}]({url})" for label, url in links)) if links else ""
    fixed = 3 * len(title) + 2 + sum(len(f["title"]) + len(f["value"]) for f in fields)
    if body:
        body = body.replace(FENCE, "'" * 3)
        frame = f"\n\n**Last ping body**\n{FENCE}\n\n{FENCE}"
        body = common.tail(body, max(0, min(len(body), POST_MAX - fixed - len(after)
                                            - len(frame) - 400)))
        after = f"\n\n**Last ping body**\n{FENCE}\n{body}\n{FENCE}{after}"
    # the incident's text appears twice: in the fallback and in the attachment
    room = max(1, (POST_MAX - fixed - len(after)) // 2)
    text = common.cut(_quiet(text), room)
    attachment = {"fallback": f"{title}: {text}", "color": colour, "title": title,
                  "text": text + after, "fields": fields}
    if link:
        attachment["title_link"] = link
    url = channel.config["url"]
    return replace(common.json_post(url, {"text": title, "attachments": [attachment]}),
                   redact=secrets(url))


def secrets(url: str) -> tuple[str, ...]:
    """The credentials of webhook ``url`` an error might quote: each segment of its
    path after ``/hooks/`` (Mattermost's hook id; Rocket.Chat's id and token)."""
    return tuple(s for s in urlsplit(url).path.partition("/hooks/")[2].split("/") if s)


def _quiet(text: str) -> str:
    """``text`` whose ``@`` cannot mention anyone (``@channel``, ``@all``, a user):
    each followed by a word joiner, invisible when shown."""
    return text.replace("@", "@\u2060")


CONFIG_SCHEMA = {"type": "object", "title": "mattermost", "required": ["url"],
                 "additionalProperties": False, "properties": {
                     "url": {"type": "string", "format": "uri",
                             "description": "Incoming webhook URL (Mattermost: …/hooks/<id>; "
                                            "Rocket.Chat: …/hooks/<id>/<token>)"}}}
HELP = ("In Mattermost, open Integrations > Incoming Webhooks > Add Incoming Webhook, pick "
        "the channel and copy the URL: https://developers.mattermost.com/integrate/webhooks/"
        "incoming/ (Rocket.Chat: Administration > Integrations > New > Incoming: "
        "https://docs.rocket.chat/docs/integrations).")


def validate_config(config: dict, previous: dict | None = None) -> dict:
    """``{"url"}`` -> ``{"url"}``: an http(s) URL whose path has ``/hooks/<id>``.
    Raises ``ValueError("<field>: <message>")``."""
    common.check_fields(config, {"url"})
    url = common.validate_url(config, "url")
    _, hooks, key = url.split("?")[0].partition("/hooks/")
    if not hooks or not key.strip("/"):
        raise ValueError("url: must be an incoming-webhook URL, as "
                         "https://mattermost.example.com/hooks/<id> (Rocket.Chat: "
                         "https://rocket.example.com/hooks/<id>/<token>)")
    return {"url": url}
