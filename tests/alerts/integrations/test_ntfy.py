"""alerts.integrations.ntfy: the exact publish request."""
import json

import pytest

from alerts.integrations import ntfy
from tests.alerts.integrations.conftest import FAILING_TEXT, FAILING_TITLE, ack_link, channel

pytestmark = pytest.mark.django_db


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


def test_ntfy_channel_notice_never_wakes_anyone(project, failing):
    req = ntfy.build_notice(channel(project, "ntfy", url="https://ntfy.test/ops"), failing)
    assert (req.url, json.loads(req.body)) == ("https://ntfy.test/", {
        "topic": "ops", "title": FAILING_TITLE, "message": FAILING_TEXT, "priority": 3,
        "tags": ["warning"]})
