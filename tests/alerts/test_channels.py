"""alerts.channels: the "send test notification" action."""
import base64

import pytest
from django.utils import timezone

from alerts.channels import send_test_config
from alerts.models import Channel, Delivery, Incident, IncidentEvent
from tests.helpers import as_person, person, spec_verify
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


def test_a_channel_not_saved_is_tested_from_its_config(project):
    receiver = Receiver()
    try:
        at = timezone.now()
        assert send_test_config(project, "webhook", {"url": receiver.url + "/hook",
                                                     "secret": "k"}, at) == (200, "")
        [got] = receiver.requests
        body = got.json()
        notice = IncidentEvent.objects.get(kind="test")
        assert (notice.detail, body["channel"], body["links"]) == (
            {"channel": None}, {"id": None, "name": "new webhook channel", "kind": "webhook"},
            {"channel_page": "http://127.0.0.1:8000/channels/"})
        assert spec_verify("whsec_" + base64.b64encode(b"k").decode(), got.headers, got.body,
                           timezone.now())["event_id"] == notice.pk
        assert not Channel.objects.exists()
        # an edited channel's stored secret is kept when the config leaves it out
        receiver.status = 500
        assert send_test_config(project, "ntfy", {"url": receiver.url + "/topic"}, at,
                                name="phone", previous={"url": "x", "token": "tk"}) == (
            500, "HTTP 500: ok")
        assert receiver.requests[1].headers["Authorization"] == "Bearer tk"
        with pytest.raises(ValueError, match="^url: "):
            send_test_config(project, "slack", {"url": "ftp://no"}, at)
        assert len(receiver.requests) == 2
    finally:
        receiver.close()


def test_the_api_tests_a_channel_before_it_is_saved(api, project):
    receiver = Receiver(status=202)
    try:
        body = {"kind": "pagerduty", "config": {"routing_key": "R" * 32,
                                                "events_url": receiver.url + "/v2/enqueue"}}
        assert api.post("/api/v1/channels/test/", body, format="json").json() == {
            "ok": True, "status_code": 202, "error": ""}
        assert [r.json()["event_action"] for r in receiver.requests] == ["trigger", "resolve"]
        assert not Channel.objects.exists()
        bad = api.post("/api/v1/channels/test/", {"kind": "slack", "config": {
            "url": "ftp://no"}}, format="json")
        assert (bad.status_code, list(bad.json())) == (400, ["config"])
        assert bad.json()["config"][0].startswith("url: ")
        masked = api.post("/api/v1/channels/test/", {"kind": "ntfy", "config": {
            "url": receiver.url + "/t", "token": "***"}}, format="json")
        assert masked.status_code == 400 and "this channel is new" in masked.json()["config"][0]
        assert api.post("/api/v1/channels/test/", {"kind": "fax", "config": {}},
                        format="json").json() == {"kind": ['"fax" is not a valid choice.']}
        member = as_person(person("mia", project.organisation, "member"))
        refused = member.post("/api/v1/channels/test/", body, format="json")
        assert refused.status_code == 403
        assert len(receiver.requests) == 2
    finally:
        receiver.close()


def test_the_ssrf_guard_holds_for_a_test_before_saving(api, project, settings):
    settings.CRONRADAR_BLOCK_PRIVATE_ADDRESSES = True
    resp = api.post("/api/v1/channels/test/", {"kind": "webhook", "config": {
        "url": "http://10.0.0.1/hook"}}, format="json")
    assert (resp.status_code, resp.json()) == (400, {"config": [
        "url: 10.0.0.1 is a non-public address 10.0.0.1; notifications only go to public "
        "addresses"]})
