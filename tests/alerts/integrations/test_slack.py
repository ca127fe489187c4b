"""alerts.integrations.slack: exact messages, escaping, limits and channel config
validation."""
import json

import pytest

from alerts.integrations import OutgoingRequest, slack
from alerts.models import Incident, IncidentEvent
from monitors.models import Ping
from tests.alerts.integrations.conftest import (
    BASE,
    BROKEN_PAGE,
    FAILING_TEXT,
    FAILING_TITLE,
    JSON_HEADERS,
    OUTAGE_TEXT,
    RESOLVED,
    TAIL,
    TEST_TEXT,
    canonical,
    channel,
    channel_page,
    context,
)


def slack_fields(*extra):
    return [
        {"type": "mrkdwn", "text": "*Monitor*\nNightly backup (acme/nightly-backup)"},
        {"type": "mrkdwn", "text": "*Cause*\nmissed"},
        {"type": "mrkdwn", "text": "*Opened*\n2025-01-01T13:00:05+01:00"},  # Berlin's time
        *extra,
        {"type": "mrkdwn", "text": "*Scheduled*\n2025-01-01T13:00:00+01:00"},
        {"type": "mrkdwn", "text": "*Run took*\n3s"},
    ]


def slack_context(incident):
    """The last ping's body and the links (the dashboard's pages, never the API),
    after a Slack message's fields."""
    c = context(incident)
    return [
        {"type": "section", "text": {"type": "mrkdwn", "text": (
            "*Last ping body*\n```" + TAIL + "```")}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": (
            f"<{c['links']['acknowledge']}|Acknowledge> · <{c['links']['resolve']}|Resolve> · "
            f"<{BASE}/incidents/{incident.pk}/|Incident> · "
            f"<{BASE}/monitors/{incident.monitor_id}/|Monitor>")}]},
    ]


def test_slack_opened(project, opened):
    ch = channel(project, "slack", url="https://hooks.slack.com/services/T0/B0/xyz")

    req = slack.build_request(ch, opened)

    assert req == OutgoingRequest(
        url="https://hooks.slack.com/services/T0/B0/xyz",
        body=canonical({
            "text": "CronRadar: incident opened (missed): "
                    "Nightly backup: no ping within 60s + 5s grace",
            "blocks": [
                {"type": "header", "text": {
                    "type": "plain_text", "emoji": True,
                    "text": ":rotating_light: Incident opened: Nightly backup"}},
                {"type": "section", "text": {
                    "type": "mrkdwn", "text": "Nightly backup: no ping within 60s + 5s grace"}},
                {"type": "section", "fields": slack_fields()},
                *slack_context(opened.incident),
            ],
        }),
        headers=JSON_HEADERS,
    )


def test_slack_resolved(project, resolved):
    ch = channel(project, "slack", url="https://hooks.slack.com/services/T0/B0/xyz")

    req = slack.build_request(ch, resolved)

    assert json.loads(req.body) == {
        "text": "CronRadar: incident resolved: Nightly backup: ping received",
        "blocks": [
            {"type": "header", "text": {
                "type": "plain_text", "emoji": True,
                "text": ":white_check_mark: Incident resolved: Nightly backup"}},
            {"type": "section", "text": {"type": "mrkdwn", "text": "ping received"}},
            {"type": "section", "fields": slack_fields(
                {"type": "mrkdwn", "text": "*Resolved*\n2025-01-01T13:03:00+01:00"},
            )},
            *slack_context(resolved.incident),
        ],
    }
    assert req.headers == JSON_HEADERS


def test_slack_escapes_mrkdwn_and_caps_header(project, monitor, incident, opened):
    monitor.name = "a<b>&c" + "x" * 190  # fits max_length=200, longer than the header cap
    monitor.save()
    incident.summary = "<!channel> & co"
    incident.save()
    ch = channel(project, "slack", url="https://hooks.slack.com/services/T0/B0/xyz")

    doc = json.loads(slack.build_request(ch, IncidentEvent.objects.get(pk=opened.pk)).body)

    assert doc["text"] == "CronRadar: incident opened (missed): &lt;!channel&gt; &amp; co"
    header = doc["blocks"][0]["text"]["text"]
    assert len(header) == 150
    assert header.startswith(":rotating_light: Incident opened: a<b>&cxxx")  # plain_text
    assert header.endswith("x…")
    assert doc["blocks"][1]["text"]["text"] == "&lt;!channel&gt; &amp; co"
    assert doc["blocks"][2]["fields"][0]["text"].startswith("*Monitor*\na&lt;b&gt;&amp;cxxx")


def test_slack_validate_config():
    url = "https://hooks.slack.com/services/T0/B0/xyz"
    assert slack.validate_config({"url": url}) == {"url": url}
    assert slack.validate_config({"url": "http://127.0.0.1:9000/hook"}) == {
        "url": "http://127.0.0.1:9000/hook"}
    assert slack.validate_config({"url": "http://localhost/hook"}) == {
        "url": "http://localhost/hook"}
    for config, message in [
        ({}, "url: this field is required"),
        ({"url": "http://hooks.slack.com/services/x"}, "url: must be an https URL"),
        ({"url": url, "channel": "#ops"}, "channel: unknown field"),
    ]:
        with pytest.raises(ValueError) as exc:
            slack.validate_config(config)
        assert str(exc.value) == message


def test_slack_channel_removed(project, removed):
    req = slack.build_request(channel(project, "slack", url="https://hooks.slack.test/x"), removed)
    body = json.loads(req.body)
    assert body["text"] == "CronRadar: this channel no longer follows Nightly backup"
    assert body["blocks"][0]["text"]["text"] == (
        ":information_source: No longer following: Nightly backup")


def test_slack_outage_summary(project, outage_notice):
    req = slack.build_notice(channel(project, "slack", url="https://hooks.slack.test/x"),
                             outage_notice)
    assert json.loads(req.body) == {
        "text": f"CronRadar: {OUTAGE_TEXT}",
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "emoji": True,
                                        "text": ":warning: CronRadar was unreachable"}},
            {"type": "section", "text": {"type": "mrkdwn", "text": OUTAGE_TEXT}}]}


def test_slack_keeps_within_its_limits(project, monitor, incident, opened):
    Ping.objects.create(monitor=monitor, received_at=RESOLVED, kind="log", method="POST",
                        body=b"y" * 5000)
    incident.summary = "z" * 5000  # longer than any stored one: Slack must still take it
    opened.incident = incident
    body = json.loads(slack.build_request(channel(project, "slack", url="https://h.test/x"),
                                          opened).body)
    sections = [b["text"]["text"] for b in body["blocks"] if b["type"] == "section" and
                "text" in b]
    assert all(len(text) <= 3000 for text in sections)
    assert sections[0] == "z" * 2999 + "…"  # cut, not refused, and the cut shows
    assert sections[-1] == "*Last ping body*\n```…" + "y" * 499 + "```"  # its tail
    assert len(body["text"]) == 3000 and body["text"].endswith("z…")


@pytest.mark.parametrize("severity,emoji", [
    ("critical", ":rotating_light:"), ("error", ":red_circle:"), ("warning", ":warning:"),
    ("info", ":information_source:")])
def test_slack_shows_the_severity(project, incident, opened, severity, emoji):
    Incident.objects.filter(pk=incident.pk).update(severity=severity)
    body = json.loads(slack.build_request(channel(project, "slack", url="https://h.test/x"),
                                          IncidentEvent.objects.get(pk=opened.pk)).body)
    assert body["blocks"][0]["text"]["text"] == f"{emoji} Incident opened: Nightly backup"


def test_slack_test_notification(test_notice):
    ch, notice = test_notice("slack", url="https://hooks.slack.test/x")
    assert json.loads(slack.build_notice(ch, notice).body) == {
        "text": f"CronRadar: {TEST_TEXT}",
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "emoji": True,
                                        "text": ":white_check_mark: CronRadar test notification"}},
            {"type": "section", "text": {"type": "mrkdwn", "text": TEST_TEXT}},
            {"type": "context", "elements": [{"type": "mrkdwn",
                                              "text": f"<{channel_page(ch)}|Channel>"}]}]}


def test_slack_channel_notice(project, failing):
    req = slack.build_notice(channel(project, "slack", url="https://hooks.slack.test/x"), failing)
    assert json.loads(req.body) == {
        "text": f"CronRadar: {FAILING_TEXT}",
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "emoji": True,
                                        "text": f":warning: {FAILING_TITLE}"}},
            {"type": "section", "text": {"type": "mrkdwn", "text": FAILING_TEXT}},
            {"type": "context", "elements": [{"type": "mrkdwn",
                                              "text": f"<{BROKEN_PAGE}|Channel>"}]}]}
