"""alerts.channels: the "send test notification" action."""
import pytest
from django.utils import timezone

from alerts.models import Delivery, Incident, IncidentEvent
from tests.helpers import spec_verify
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
        notice = IncidentEvent.objects.get(kind="test")
        assert (notice.incident_id, notice.project_id, notice.detail) == (
            None, project.pk, {"channel": ch["id"]})
        assert got.headers["X-CronRadar-Event"] == "test"
        assert (body["schema"], body["event"], body["event_id"], body["incident"]) == (
            "cronradar.test.v1", "test", notice.pk, None)
        assert b"cause" not in got.body
        assert body["links"] == {"channel_page": f"http://127.0.0.1:8000/channels/{ch['id']}/"}
        # signed as every webhook, for the time it was sent
        assert got.headers["webhook-id"] == str(notice.pk)
        assert abs(int(got.headers["webhook-timestamp"]) - got.at) <= 1
        assert spec_verify(ch["config"]["signing_secret"], got.headers, got.body,
                           timezone.now())["event_id"] == notice.pk
        assert not Incident.objects.exists()  # no incident made up
        assert not Delivery.objects.exists()  # sent here, not by the delivery engine
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
