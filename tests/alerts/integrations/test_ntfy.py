"""alerts.integrations.ntfy: the exact publish request."""
import json

import pytest

from alerts.integrations import ntfy
from alerts.models import IncidentEvent
from tests.alerts.integrations.conftest import (
    BROKEN_PAGE,
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


def test_ntfy_publish_exactly(project, event):
    req = ntfy.build_request(channel(project, "ntfy", url="https://ntfy.sh/ops-alerts"), event)
    ack, resolve, incident, monitor = (url for _, url in page_links(event.incident))
    assert (req.url, req.headers) == ("https://ntfy.sh/", {
        "Content-Type": "application/json", "User-Agent": "CronRadar/0.1"})
    assert json.loads(req.body) == {
        "topic": "ops-alerts", "title": "Incident opened: Nightly backup",
        "message": "Nightly backup: run failed (exit status 2)\n\nLast ping body:\ndisk full",
        "priority": 4, "tags": ["rotating_light"], "click": incident,
        "actions": [
            {"action": "view", "label": "Acknowledge", "url": ack, "clear": True},
            {"action": "view", "label": "Resolve", "url": resolve, "clear": True},
            {"action": "view", "label": "Monitor", "url": monitor, "clear": False}]}
    resolved = IncidentEvent.objects.create(incident=event.incident, kind="resolved",
                                            at=OPENED, message="a run succeeded")
    after = json.loads(ntfy.build_request(channel(project, "ntfy", url="https://ntfy.sh/t"),
                                          resolved).body)
    assert (after["click"], after["actions"]) == (incident, [
        {"action": "view", "label": "Monitor", "url": monitor, "clear": False}])


def test_ntfy_server_under_a_path_prefix(project, event):
    ch = channel(project, "ntfy", url="https://example.com/ntfy/mytopic")
    assert ntfy.validate_config({"url": "https://example.com/ntfy/mytopic"}) == {
        "url": "https://example.com/ntfy/mytopic"}
    req = ntfy.build_request(ch, event)
    assert (req.url, json.loads(req.body)["topic"]) == ("https://example.com/ntfy/", "mytopic")
    for url in ("https://ntfy.sh/", "https://ntfy.sh", "https://ntfy.sh/t?x=1"):
        with pytest.raises(ValueError, match="url: must name one topic"):
            ntfy.validate_config({"url": url})


def test_ntfy_cuts_the_text_and_keeps_the_body_tail(project, event):
    event.incident.summary = "s" * 5000
    message = json.loads(ntfy.build_request(channel(project, "ntfy", url="https://ntfy.sh/t"),
                                            event).body)["message"]
    assert len(message) == 4096
    assert message.endswith("s…\n\nLast ping body:\ndisk full")


def test_ntfy_publish(project, event):
    req = ntfy.build_request(channel(project, "ntfy", url="https://ntfy.sh/ops-alerts",
                                     token="tk"), event)
    assert (req.url, req.headers["Authorization"]) == ("https://ntfy.sh/", "Bearer tk")
    body = json.loads(req.body)
    assert {k: body[k] for k in ("topic", "title", "priority", "tags")} == {
        "topic": "ops-alerts", "title": "Incident opened: Nightly backup", "priority": 4,
        "tags": ["rotating_light"]}
    assert body["actions"][0] == {"action": "view", "label": "Acknowledge",
                                  "url": ack_link(event), "clear": True}


def test_ntfy_test_notification(test_notice):
    ch, notice = test_notice("ntfy", url="https://example.com/ntfy/ops")
    req = ntfy.build_notice(ch, notice)
    assert (req.url, json.loads(req.body)) == ("https://example.com/ntfy/", {
        "topic": "ops", "title": "CronRadar test notification", "message": TEST_TEXT,
        "priority": 2, "tags": ["white_check_mark"], "click": channel_page(ch)})


def test_ntfy_outage_summary(project, outage_notice):
    req = ntfy.build_notice(channel(project, "ntfy", url="https://ntfy.sh/t"), outage_notice)
    assert json.loads(req.body) == {"topic": "t", "title": "CronRadar was unreachable",
                                    "message": OUTAGE_TEXT, "priority": 2, "tags": ["warning"]}


def test_ntfy_channel_notice_never_wakes_anyone(project, failing):
    req = ntfy.build_notice(channel(project, "ntfy", url="https://ntfy.test/ops"), failing)
    assert (req.url, json.loads(req.body)) == ("https://ntfy.test/", {
        "topic": "ops", "title": FAILING_TITLE, "message": FAILING_TEXT, "priority": 3,
        "tags": ["warning"], "click": BROKEN_PAGE})
