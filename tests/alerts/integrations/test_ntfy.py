"""alerts.integrations.ntfy: the exact publish request."""
import json

import pytest

from alerts.integrations import ntfy
from tests.alerts.integrations.conftest import ack_link, channel

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
