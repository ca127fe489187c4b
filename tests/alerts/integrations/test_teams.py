"""alerts.integrations.teams: the Adaptive Card and its size limit."""
import json
from datetime import timedelta

import pytest

from alerts.integrations import teams
from alerts.models import Incident, IncidentEvent
from monitors.models import Ping
from tests.alerts.integrations.conftest import (
    BROKEN_FACTS,
    BROKEN_PAGE,
    FACTS,
    FAILING_TEXT,
    FAILING_TITLE,
    OPENED,
    OUTAGE_TEXT,
    TEST_TEXT,
    ack_link,
    channel,
    channel_page,
    page_links,
)

pytestmark = pytest.mark.django_db


def test_teams_card_exactly(project, event):
    req = teams.build_request(channel(project, "teams", url="https://x.logic.azure.com/w"),
                              event)
    assert (req.url, req.headers) == ("https://x.logic.azure.com/w", {
        "Content-Type": "application/json", "User-Agent": "CronRadar/0.1"})
    assert json.loads(req.body) == {"type": "message", "attachments": [{
        "contentType": "application/vnd.microsoft.card.adaptive", "content": {
            "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
            "type": "AdaptiveCard", "version": "1.4", "body": [
                {"type": "TextBlock", "text": "Incident opened: Nightly backup",
                 "weight": "Bolder", "size": "Medium", "wrap": True},
                {"type": "TextBlock", "text": "Nightly backup: run failed (exit status 2)",
                 "wrap": True},
                {"type": "FactSet", "facts": [{"title": k, "value": v} for k, v in FACTS]},
                {"type": "TextBlock", "text": "Last ping body", "weight": "Bolder",
                 "wrap": True},
                {"type": "TextBlock", "text": "disk full", "fontType": "Monospace",
                 "wrap": True}],
            "actions": [{"type": "Action.OpenUrl", "title": label, "url": url}
                        for label, url in page_links(event.incident)]}}]}


def test_teams_carries_the_tail_of_a_long_body_marked(project, event):
    Ping.objects.create(monitor=event.incident.monitor, received_at=OPENED, kind="log",
                        method="POST", body=b"a" * 1000 + b"the end")
    content = json.loads(teams.build_request(channel(project, "teams", url="https://x.test/w"),
                                             event).body)["attachments"][0]["content"]
    assert content["body"][-1]["text"] == "…" + ("a" * 1000 + "the end")[-499:]


def test_teams_adaptive_card(project, event):
    req = teams.build_request(channel(project, "teams", url="https://x.logic.azure.com/w"),
                              event)
    card = json.loads(req.body)["attachments"][0]
    assert card["contentType"] == "application/vnd.microsoft.card.adaptive"
    content = card["content"]
    assert (content["type"], content["version"]) == ("AdaptiveCard", "1.4")
    assert [b["type"] for b in content["body"]] == ["TextBlock", "TextBlock", "FactSet",
                                                    "TextBlock", "TextBlock"]
    assert content["body"][0]["text"] == "Incident opened: Nightly backup"
    assert content["body"][1]["text"] == "Nightly backup: run failed (exit status 2)"
    assert content["body"][2]["facts"] == [{"title": k, "value": v} for k, v in FACTS]
    assert content["actions"][0] == {"type": "Action.OpenUrl", "title": "Acknowledge",
                                     "url": ack_link(event)}
    resolved = IncidentEvent.objects.create(incident=event.incident, kind="resolved",
                                            at=OPENED + timedelta(seconds=60))
    after = json.loads(teams.build_request(channel(project, "teams", url="https://x.test/w"),
                                           resolved).body)["attachments"][0]["content"]
    # nothing left to act on: the dashboard's pages only
    assert [a["title"] for a in after["actions"]] == ["Incident", "Monitor"]


def test_teams_stays_under_28_kb(project, event):
    Incident.objects.filter(pk=event.incident_id).update(summary="s" * 500)
    event.incident.summary = "s" * 500
    event.message = "m" * 100_000
    event.kind = "escalated"
    req = teams.build_request(channel(project, "teams", url="https://x.test/w"), event)
    assert len(req.body) <= 28 * 1024
    text = json.loads(req.body)["attachments"][0]["content"]["body"][1]["text"]
    assert text.endswith("m…")  # cut, and the cut shows


def test_teams_test_notification(test_notice):
    ch, notice = test_notice("teams", url="https://x.test/w")
    content = json.loads(teams.build_notice(ch, notice).body)["attachments"][0]["content"]
    assert (content["body"], content["actions"]) == ([
        {"type": "TextBlock", "text": "CronRadar test notification", "weight": "Bolder",
         "size": "Medium", "wrap": True},
        {"type": "TextBlock", "text": TEST_TEXT, "wrap": True},
        {"type": "FactSet", "facts": []}],
        [{"type": "Action.OpenUrl", "title": "Channel", "url": channel_page(ch)}])


def test_teams_outage_summary(project, outage_notice):
    content = json.loads(teams.build_notice(channel(project, "teams", url="https://x.test/w"),
                                            outage_notice).body)["attachments"][0]["content"]
    assert (content["body"][:2], content["actions"]) == ([
        {"type": "TextBlock", "text": "CronRadar was unreachable", "weight": "Bolder",
         "size": "Medium", "wrap": True},
        {"type": "TextBlock", "text": OUTAGE_TEXT, "wrap": True}], [])




def test_teams_channel_notice(project, failing):
    req = teams.build_notice(channel(project, "teams", url="https://x.test/w"), failing)
    card = json.loads(req.body)["attachments"][0]["content"]
    assert card["body"] == [
        {"type": "TextBlock", "text": FAILING_TITLE, "weight": "Bolder", "size": "Medium",
         "wrap": True},
        {"type": "TextBlock", "text": FAILING_TEXT, "wrap": True},
        {"type": "FactSet", "facts": [{"title": k, "value": v} for k, v in BROKEN_FACTS]}]
    assert card["actions"] == [{"type": "Action.OpenUrl", "title": "Channel",
                                "url": BROKEN_PAGE}]
