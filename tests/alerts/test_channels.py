"""alerts.channels: the "send test notification" action."""
import pytest

from alerts.models import Incident
from tests.live import Receiver

pytestmark = pytest.mark.django_db


def test_send_a_test_notification(api, project):
    receiver = Receiver()
    try:
        ch = api.post("/api/v1/channels/", {"kind": "webhook", "config": {
            "url": receiver.url + "/hook"}}, format="json").json()
        resp = api.post(f"/api/v1/channels/{ch['id']}/test/")
        assert resp.json() == {"ok": True, "status_code": 200, "error": ""}
        [got] = receiver.requests
        body = got.json()
        assert (body["event"], body["incident"]["severity"], body["monitor"]["name"]) == (
            "incident.opened", "info", "CronRadar test notification")
        assert not Incident.objects.exists()  # nothing stored
        receiver.status = 500
        assert api.post(f"/api/v1/channels/{ch['id']}/test/").json() == {
            "ok": False, "status_code": 500, "error": "HTTP 500: ok"}
        assert api.post("/api/v1/channels/999/test/").status_code == 404
    finally:
        receiver.close()


def test_a_pagerduty_test_notification_leaves_no_page_open(api, project):
    receiver = Receiver(status=202)
    try:
        ch = api.post("/api/v1/channels/", {"kind": "pagerduty", "config": {
            "routing_key": "R" * 32, "events_url": receiver.url + "/v2/enqueue"}},
            format="json").json()
        assert api.post(f"/api/v1/channels/{ch['id']}/test/").json() == {
            "ok": True, "status_code": 202, "error": ""}
        sent = [(r.json()["event_action"], r.json()["dedup_key"]) for r in receiver.requests]
        assert sent == [("trigger", f"cronradar-test-{ch['id']}"),
                        ("resolve", f"cronradar-test-{ch['id']}")]
    finally:
        receiver.close()
