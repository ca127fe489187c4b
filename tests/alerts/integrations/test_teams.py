"""alerts.integrations.teams: the Adaptive Card and its size limit."""
import json
from datetime import timedelta

import pytest

from alerts.integrations import teams
from alerts.models import Incident, IncidentEvent
from tests.alerts.integrations.conftest import (
    BROKEN_FACTS,
    FACTS,
    FAILING_TEXT,
    FAILING_TITLE,
    OPENED,
    ack_link,
    channel,
)

pytestmark = pytest.mark.django_db


def test_teams_adaptive_card(project, event):
    req = teams.build_request(channel(project, "teams", url="https://x.logic.azure.com/w"),
                              event)
    card = json.loads(req.body)["attachments"][0]
    assert card["contentType"] == "application/vnd.microsoft.card.adaptive"
    content = card["content"]
    assert (content["type"], content["version"]) == ("AdaptiveCard", "1.4")
    assert [b["type"] for b in content["body"]] == ["TextBlock", "TextBlock", "FactSet"]
    assert content["body"][0]["text"] == "Incident opened: Nightly backup"
    assert content["body"][1]["text"] == "Nightly backup: run failed (exit status 2)"
    assert content["body"][2]["facts"] == [{"title": k, "value": v} for k, v in FACTS]
    assert content["actions"][0] == {"type": "Action.OpenUrl", "title": "Acknowledge",
                                     "url": ack_link(event)}
    resolved = IncidentEvent.objects.create(incident=event.incident, kind="resolved",
                                            at=OPENED + timedelta(seconds=60))
    after = json.loads(teams.build_request(channel(project, "teams", url="https://x.test/w"),
                                           resolved).body)["attachments"][0]["content"]
    assert [a["title"] for a in after["actions"]] == ["Monitor"]  # nothing left to act on


def test_teams_stays_under_28_kb(project, event):
    Incident.objects.filter(pk=event.incident_id).update(summary="s" * 500)
    event.incident.summary = "s" * 500
    event.message = "m" * 100_000
    event.kind = "escalated"
    req = teams.build_request(channel(project, "teams", url="https://x.test/w"), event)
    assert len(req.body) <= 28 * 1024


def test_teams_channel_notice(project, failing):
    req = teams.build_notice(channel(project, "teams", url="https://x.test/w"), failing)
    card = json.loads(req.body)["attachments"][0]["content"]
    assert card["body"] == [
        {"type": "TextBlock", "text": FAILING_TITLE, "weight": "Bolder", "size": "Medium",
         "wrap": True},
        {"type": "TextBlock", "text": FAILING_TEXT, "wrap": True},
        {"type": "FactSet", "facts": [{"title": k, "value": v} for k, v in BROKEN_FACTS]}]
    assert card["actions"] == []
