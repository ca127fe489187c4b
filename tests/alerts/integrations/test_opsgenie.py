"""alerts.integrations.opsgenie: create, acknowledge and close requests."""
import json

import pytest

from alerts.integrations import opsgenie
from alerts.models import IncidentEvent
from tests.alerts.integrations.conftest import (
    DEDUP,
    OPENED,
    RECOVERED_TEXT,
    ack_link,
    channel,
)

pytestmark = pytest.mark.django_db


def test_opsgenie_create_acknowledge_close(project, event):
    ch = channel(project, "opsgenie", api_key="K", region="eu")
    req = opsgenie.build_request(ch, event)
    assert (req.url, req.headers["Authorization"]) == (
        "https://api.eu.opsgenie.com/v2/alerts", "GenieKey K")
    body = json.loads(req.body)
    assert {k: body[k] for k in ("message", "alias", "priority", "entity", "tags", "source")} == {
        "message": "Incident opened: Nightly backup", "alias": DEDUP, "priority": "P2",
        "entity": "acme/nightly-backup", "tags": ["db"], "source": "CronRadar"}
    assert body["description"] == "Nightly backup: run failed (exit status 2)\n\ndisk full"
    assert body["details"]["acknowledge"] == ack_link(event)
    event.incident.monitor.name = "n" * 300
    assert len(json.loads(opsgenie.build_request(ch, event).body)["message"]) == 130
    ack = IncidentEvent(incident=event.incident, kind="acknowledged", at=OPENED,
                        message="acknowledged by ana")
    req = opsgenie.build_request(ch, ack)
    assert req.url == f"https://api.eu.opsgenie.com/v2/alerts/{DEDUP}/acknowledge?identifierType=alias"
    assert json.loads(req.body) == {"source": "CronRadar", "user": "CronRadar",
                                    "note": "acknowledged by ana"}
    done = IncidentEvent(incident=event.incident, kind="resolved", at=OPENED, message="ok")
    assert opsgenie.build_request(ch, done).url.endswith("/close?identifierType=alias")


def test_opsgenie_channel_notice_is_a_p5_alert(project, recovered):
    req = opsgenie.build_notice(channel(project, "opsgenie", api_key="K"), recovered)
    assert (req.url, req.headers["Authorization"]) == ("https://api.opsgenie.com/v2/alerts",
                                                       "GenieKey K")
    assert json.loads(req.body) == {
        "message": "Channel recovered: Ops hook", "alias": f"cronradar-notice-{recovered.pk}",
        "description": RECOVERED_TEXT, "priority": "P5", "source": "CronRadar"}
