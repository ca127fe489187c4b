"""alerts.integrations.common: event kinds that do not notify are refused by every
kind, every kind tells the newer causes, and what each kind makes of a severity
is what docs/channels.md's table says."""
import html
import json
from urllib.parse import parse_qs

import pytest
from django.urls import reverse, set_script_prefix

from alerts.integrations import KINDS, common
from alerts.models import IncidentEvent
from tests.alerts.integrations.conftest import OPENED, SECRET, channel
from tests.live import ROOT

NOTIFYING = {  # kind -> a valid config
    "webhook": {"url": "https://x.test/hook", "secret": SECRET},
    "slack": {"url": "https://hooks.slack.com/services/T/B/X"},
    "pagerduty": {"routing_key": "R" * 32},
    "email": {"to": ["ops@example.com"]},
    "teams": {"url": "https://x.test/teams"},
    "discord": {"url": "https://discord.com/api/webhooks/1/x"},
    "opsgenie": {"api_key": "k", "region": "eu"},
    "ntfy": {"url": "https://ntfy.sh/backups"},
    "telegram": {"bot_token": "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw",
                 "chat_id": "-1001234567890"},
    "googlechat": {"url": "https://chat.googleapis.com/v1/spaces/A/messages?key=k&token=t"},
    "mattermost": {"url": "https://mattermost.example.com/hooks/xq9b3k7rjpgmtfz1"},
    "pushover": {"token": "a" * 30, "user": "u" * 30},
    "matrix": {"homeserver": "https://matrix.example.org", "room_id": "!room:example.org",
               "access_token": "syt_token"},
}


def test_notifying_has_every_kind():
    assert set(NOTIFYING) == set(KINDS)


@pytest.mark.django_db
@pytest.mark.parametrize("kind", sorted(NOTIFYING))
def test_non_notifying_event_kinds_are_refused(project, incident, kind):
    event = IncidentEvent.objects.create(incident=incident, kind="missed", at=OPENED)
    ch = channel(project, kind, **NOTIFYING[kind])
    with pytest.raises(ValueError, match="event kind 'missed' does not notify"):
        KINDS[kind].build_request(ch, event)


@pytest.mark.django_db
@pytest.mark.parametrize("kind", sorted(NOTIFYING))
@pytest.mark.parametrize("cause,summary", [
    ("skipped", "Nightly backup: the 13:00 run was skipped: the run that started at 12:00:01 "
                "was still running (Europe/Berlin time)"),
    ("double_launch", "Nightly backup: run 2 of the 13:00 slot started although the slot's "
                      "run succeeded at 13:00:04 (Europe/Berlin time)")])
def test_every_kind_tells_the_new_causes_with_their_summary(project, monitor, kind, cause,
                                                           summary):
    from alerts.integrations import common
    from alerts.models import Incident

    incident = Incident.objects.create(monitor=monitor, cause=cause, summary=summary,
                                       severity="warning", opened_at=OPENED)
    event = IncidentEvent.objects.create(incident=incident, kind="opened", at=OPENED,
                                         message=summary.split(": ", 1)[1])
    assert common.describe(event) == ("Incident opened: Nightly backup", summary)
    assert common.facts(event)[1:3] == [("Cause", cause), ("Severity", "warning")]
    built = KINDS[kind].build_request(channel(project, kind, **NOTIFYING[kind]), event)
    assert summary in shown(kind, built)


def shown(kind, built) -> str:
    """The text a kind's built notification carries: an email's plain part,
    Pushover's ``message`` field as its HTML reads, else the body."""
    if kind == "email":
        return built.text
    if kind == "pushover":
        return html.unescape(parse_qs(built.body.decode())["message"][0])
    return built.body.decode()


SEVERITIES = ("critical", "error", "warning", "info")
# kind -> (its row in docs/channels.md's "Severity" table, what its notification of an
# opened incident carries for each of SEVERITIES: the values the row shows in backticks)
SEVERITY_TABLE = {
    "pagerduty": ("PagerDuty `payload.severity`",
                  [("critical",), ("error",), ("warning",), ("info",)]),
    "opsgenie": ("Opsgenie `priority` (P1 highest)", [("P1",), ("P2",), ("P3",), ("P4",)]),
    "ntfy": ("ntfy `priority` (5 highest)", [("5",), ("4",), ("3",), ("2",)]),
    "slack": ("Slack header", [(":rotating_light:",), (":red_circle:",), (":warning:",),
                               (":information_source:",)]),
    "discord": ("Discord embed colour", [("#D0021B",), ("#E8590C",), ("#F5A623",),
                                         ("#4A90D9",)]),
    "email": ("email subject", [("[CRITICAL]",), ("[ERROR]",), ("[WARNING]",), ("[INFO]",)]),
    "webhook": ("webhook `incident.severity`",
                [("critical",), ("error",), ("warning",), ("info",)]),
    "teams": ("Microsoft Teams: the card's `Severity` fact",
              [("critical",), ("error",), ("warning",), ("info",)]),
    "telegram": ("Telegram: before the title", [("🔴 [CRITICAL]",), ("🟠 [ERROR]",),
                                                ("🟡 [WARNING]",),
                                                ("🔵 [INFO]", "disable_notification")]),
    "googlechat": ("Google Chat: the card's subtitle", [("🔴 CRITICAL",), ("🟠 ERROR",),
                                                        ("🟡 WARNING",), ("🔵 INFO",)]),
    "mattermost": ("Mattermost / Rocket.Chat attachment colour",
                   [("#D0021B",), ("#E8590C",), ("#F5A623",), ("#4A90D9",)]),
    "pushover": ("Pushover `priority`", [("2", "retry", "expire"), ("1",), ("0",), ("-1",)]),
    "matrix": ("Matrix: before the title, `msgtype`", [("[CRITICAL]", "m.text"),
                                                       ("[ERROR]", "m.text"),
                                                       ("[WARNING]", "m.text"),
                                                       ("[INFO]", "m.notice")]),
}


def severity_shown(kind, built) -> tuple[str, ...]:
    """Where ``kind``'s notification ``built`` of an opened incident says its
    severity, as docs/channels.md's table names it (a Telegram message sent
    silently adds ``disable_notification``, a Pushover emergency its ``retry`` and
    ``expire``)."""
    if kind == "email":
        return (built.subject.split(" ", 1)[0],)
    if kind == "pushover":
        form = parse_qs(built.body.decode())
        return (form["priority"][0], *(k for k in ("retry", "expire") if k in form))
    doc = json.loads(built.body)
    if kind == "telegram":
        mark = doc["text"].removeprefix("<b>").split(" Incident opened", 1)[0]
        return (mark, *["disable_notification"] * doc["disable_notification"])
    if kind == "matrix":
        return (doc["body"].split(" Incident opened", 1)[0], doc["msgtype"])
    if kind == "teams":
        facts = doc["attachments"][0]["content"]["body"][2]["facts"]
        return tuple(f["value"] for f in facts if f["title"] == "Severity")
    return (str({
        "pagerduty": lambda: doc["payload"]["severity"],
        "opsgenie": lambda: doc["priority"],
        "ntfy": lambda: doc["priority"],
        "slack": lambda: doc["blocks"][0]["text"]["text"].split(" ", 1)[0],
        "discord": lambda: f"#{doc['embeds'][0]['color']:06X}",
        "webhook": lambda: doc["incident"]["severity"],
        "googlechat": lambda: doc["cardsV2"][0]["card"]["header"]["subtitle"],
        "mattermost": lambda: doc["attachments"][0]["color"],
    }[kind]()),)


def test_the_severity_table_names_every_kind():
    assert set(SEVERITY_TABLE) == set(KINDS)


@pytest.mark.django_db
@pytest.mark.parametrize("kind", sorted(SEVERITY_TABLE))
def test_each_kind_sends_the_severity_docs_channels_md_shows(project, incident, opened, kind):
    """What each kind's notification of an opened incident of each severity carries,
    and docs/channels.md's "Severity" table shows those values in that kind's row
    (each in backticks, in the severity's column)."""
    label, expected = SEVERITY_TABLE[kind]
    ch = channel(project, kind, **NOTIFYING[kind])
    sent = []
    for severity in SEVERITIES:
        incident.severity = severity
        sent.append(severity_shown(kind, KINDS[kind].build_request(ch, opened)))
    assert sent == expected
    section = (ROOT / "docs" / "channels.md").read_text().split("\n## Severity\n", 1)[1]
    rows = {cells[0]: cells[1:] for line in section.split("\n\n## ", 1)[0].splitlines()
            if line.startswith("| ") and (cells := line.strip("| ").split(" | "))}
    assert list(rows)[0] == "kind: where the severity shows"
    assert len(rows[label]) == len(SEVERITIES)
    for cell, values in zip(rows[label], expected, strict=True):
        assert all(f"`{v}`" in cell for v in values), (label, cell, values)


@pytest.mark.parametrize("name", ["dashboard:monitor", "dashboard:incident", "dashboard:channel"])
def test_page_is_reverse_of_the_route(name, settings):
    for pk in (1, 7, 123_456_789_012):
        assert common.page(name, pk) == reverse(name, args=[pk])
    set_script_prefix("/cron/")
    try:
        assert common.page(name, 5) == reverse(name, args=[5])
        assert common.page(name, 5).startswith("/cron/")
    finally:
        set_script_prefix("/")
    assert common.page(name, 5) == reverse(name, args=[5])
