"""Management API: auth, monitor validation and fields, runs/pings/incidents, channels."""
import io
from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from accounts.models import ApiKey, Project
from alerts.models import Channel, Delivery
from monitors import evaluator
from monitors.models import Monitor
from monitors.pings import PingInput, ingest
from tests.conftest import T0, new_project

pytestmark = pytest.mark.django_db


def test_auth_bearer_and_x_api_key(client, api_key):
    assert client.get("/api/v1/monitors/").status_code == 401
    assert client.get("/api/v1/monitors/", HTTP_AUTHORIZATION="Bearer nope").status_code == 401
    assert client.get("/api/v1/monitors/", HTTP_AUTHORIZATION=f"Bearer {api_key}").json() == []
    assert client.get("/api/v1/monitors/", HTTP_X_API_KEY=api_key).status_code == 200


def test_createapikey_prints_key_last(db):
    out = io.StringIO()
    call_command("createapikey", "--project", "ops", stdout=out)
    key = out.getvalue().strip().splitlines()[-1]
    assert ApiKey.find(key).project.name == "ops"
    call_command("createapikey", "--project", "ops", stdout=io.StringIO())
    assert Project.objects.filter(name="ops").count() == 1
    assert ApiKey.objects.filter(project__name="ops").count() == 2


def test_create_cron_monitor_returns_contract_fields(api, project, settings, monkeypatch):
    monkeypatch.setattr(timezone, "now", lambda: datetime(2026, 7, 1, 9, 30, tzinfo=UTC))
    resp = api.post("/api/v1/monitors/", {
        "name": "Nightly backup", "kind": "cron", "schedule": "@daily",
        "timezone": "Europe/Berlin", "grace": 300, "max_runtime": 3600, "deadline": 7200,
        "concurrency": "forbid", "tags": ["db", "prod"]}, format="json")
    assert resp.status_code == 201, resp.json()
    body = resp.json()
    m = Monitor.objects.get()
    assert body["id"] == m.pk and body["uuid"] == str(m.uuid)
    assert body["slug"] == "nightly-backup"
    assert body["schedule"] == "0 0 * * *"
    assert (body["grace"], body["max_runtime"], body["deadline"], body["min_runtime"]) == (
        300, 3600, 7200, None)
    assert body["ping_url"] == f"{settings.CRONRADAR_BASE_URL}/ping/{m.uuid}"
    assert body["status"] == "new" and body["last_ping_at"] is None
    assert body["next_expected_at"] == "2026-07-01T22:00:00Z"  # midnight in Berlin (CEST)
    assert m.grace == timedelta(seconds=300)


@pytest.mark.parametrize("payload,field,message", [
    ({"kind": "cron", "schedule": "0 0 31 2 *"}, "schedule", "never fires: no date matches"),
    ({"kind": "cron", "schedule": "61 * * * *"}, "schedule",
     "bad minute field '61': 61 is out of range 0-59"),
    ({"kind": "cron", "schedule": "* * * *"}, "schedule", "expected 5 fields"),
    ({"kind": "cron", "schedule": "0 7 * * *", "timezone": "Mars/Olympus"}, "timezone",
     "Mars/Olympus"),
    ({"kind": "interval", "period": 60, "grace": -5}, "grace", "at least 1 second"),
    ({"kind": "interval", "period": 60, "grace": 0}, "grace", "at least 1 second"),
    ({"kind": "interval", "period": 0}, "period", "at least 1"),
    ({"kind": "interval", "period": 60, "max_runtime": -1}, "max_runtime", "at least 1"),
    ({"kind": "interval"}, "period", "required"),
    ({"kind": "interval", "period": "abc"}, "period", "whole number"),
    ({"kind": "weekly", "period": 60}, "kind", '"weekly" is not a valid choice.'),
    ({"kind": "interval", "period": 60, "concurrency": "sometimes"}, "concurrency",
     '"sometimes" is not a valid choice.'),
])
def test_invalid_monitor_rejected_with_field(api, payload, field, message):
    data = {"name": "x", "grace": 10, **payload}
    resp = api.post("/api/v1/monitors/", data, format="json")
    assert resp.status_code == 400
    assert field in resp.json(), resp.json()
    assert message in " ".join(resp.json()[field])


def test_duplicate_slug_rejected(api):
    assert api.post("/api/v1/monitors/", {"name": "a", "period": 60, "grace": 1},
                    format="json").status_code == 201
    resp = api.post("/api/v1/monitors/", {"name": "a", "period": 60, "grace": 1}, format="json")
    assert resp.status_code == 400 and "slug" in resp.json()


def test_patch_pause_delete_and_isolation(api, project):
    mid = api.post("/api/v1/monitors/", {"name": "a", "period": 60, "grace": 1},
                   format="json").json()["id"]
    resp = api.patch(f"/api/v1/monitors/{mid}/", {"paused": True, "grace": 20}, format="json")
    assert resp.json()["status"] == "paused" and resp.json()["grace"] == 20
    assert Monitor.objects.get(pk=mid).next_evaluation_at is None
    other = new_project("other")
    foreign = Monitor.objects.create(project=other, name="f", slug="f",
                                     period=timedelta(seconds=5), grace=timedelta(seconds=1))
    assert api.get(f"/api/v1/monitors/{foreign.pk}/").status_code == 404
    assert api.get(f"/api/v1/monitors/{foreign.pk}/runs/").status_code == 404
    assert api.delete(f"/api/v1/monitors/{mid}/").status_code == 204
    assert api.get(f"/api/v1/monitors/{mid}/").status_code == 404
    assert api.delete(f"/api/v1/monitors/{mid}/").status_code == 404
    evaluator.tick(timezone.now())  # nothing left to notify: the rows go
    assert not Monitor.objects.filter(pk=mid).exists()


def test_channels_default_and_explicit(api):
    # The README's order: the monitor first, its channels later.
    m1 = api.post("/api/v1/monitors/", {"name": "a", "period": 60, "grace": 1}, format="json")
    assert m1.json()["channels"] == "all"  # omitted: follows the project's channels
    hook = api.post("/api/v1/channels/", {"kind": "webhook", "name": "hook",
                                          "config": {"url": "http://127.0.0.1:9/hook"}},
                    format="json")
    assert hook.status_code == 201, hook.json()
    assert len(hook.json()["config"]["secret"]) >= 32
    bad = api.post("/api/v1/channels/", {"kind": "webhook", "config": {}}, format="json")
    assert bad.status_code == 400 and "config" in bad.json()
    # a channel added after the monitor is one of its channels: it gets the alert
    ingest(m1.json()["id"], PingInput("fail"), T0)
    assert list(Delivery.objects.values_list("channel_id", flat=True)) == [hook.json()["id"]]
    m2 = api.post("/api/v1/monitors/", {"name": "b", "period": 60, "grace": 1, "channels": []},
                  format="json")
    assert m2.json()["channels"] == []
    url = f"/api/v1/monitors/{m2.json()['id']}/"
    assert api.patch(url, {"channels": [hook.json()["id"]]},
                     format="json").json()["channels"] == [hook.json()["id"]]
    assert api.patch(url, {"channels": "all"}, format="json").json()["channels"] == "all"
    for wrong, message in (("some", 'must be "all" or a list of channel ids'),
                           ([True], 'must be "all" or a list of channel ids'),
                           ([999], "no channel with id 999 in this project")):
        resp = api.patch(url, {"channels": wrong}, format="json")
        assert resp.json() == {"channels": [message]}
    assert [c["name"] for c in api.get("/api/v1/channels/").json()] == ["hook"]


def test_runs_pings_incidents_endpoints(api, make_monitor):
    m = make_monitor(name="etl")
    ingest(m.pk, PingInput("start", user_agent="curl"), T0 + timedelta(seconds=1))
    ingest(m.pk, PingInput("fail", exit_status=2, body=b"boom", body_size=4),
           T0 + timedelta(seconds=4))
    runs = api.get(f"/api/v1/monitors/{m.pk}/runs/").json()
    assert [(r["outcome"], r["duration"], r["exit_status"]) for r in runs] == [("failed", 3, 2)]
    pings = api.get(f"/api/v1/monitors/{m.pk}/pings/?limit=1").json()
    assert [(p["kind"], p["body"], p["exit_status"]) for p in pings] == [("fail", "boom", 2)]
    incidents = api.get("/api/v1/incidents/?open=true").json()
    assert [(i["monitor"], i["cause"]) for i in incidents] == [(m.pk, "failed")]
    assert [e["kind"] for e in incidents[0]["events"]] == ["opened"]
    assert api.get("/api/v1/incidents/?monitor=abc").status_code == 400
    assert api.get(f"/api/v1/monitors/{m.pk}/").json()["status"] == "down"


def test_channel_config_not_shared_across_projects(api):
    other = new_project("other")
    ch = Channel.objects.create(project=other, kind="webhook", config={"url": "http://x"})
    resp = api.post("/api/v1/monitors/", {"name": "a", "period": 60, "grace": 1,
                                          "channels": [ch.pk]}, format="json")
    assert resp.status_code == 400 and "channels" in resp.json()


def test_api_edge_cases_are_4xx_not_500(api, make_monitor):
    m = make_monitor()
    assert api.get("/api/v1/nope/").json() == {"detail": "Not found."}
    assert api.get("/api/v1/monitors/1.5/").status_code == 404
    assert api.get(f"/api/v1/monitors/{2**63}/runs/").status_code == 404
    assert api.get(f"/api/v1/incidents/?monitor={2**63}").json() == {
        "monitor": ["must be a monitor id"]}
    assert api.get("/api/v1/incidents/?open=maybe").json() == {"open": ["must be true or false"]}
    for bad in ("0", "-1", "abc", "1001"):
        resp = api.get(f"/api/v1/monitors/{m.pk}/pings/?limit={bad}")
        assert resp.json() == {"limit": ["must be an integer from 1 to 1000"]}
    deep = api.post("/api/v1/monitors/", "[" * 100000, content_type="application/json")
    assert deep.status_code == 400 and "nested too deeply" in deep.json()["detail"]
    wrong_type = api.post("/api/v1/monitors/", "name=x", content_type="text/plain")
    assert wrong_type.status_code == 415


def test_monitor_field_rules(api):
    resp = api.post("/api/v1/monitors/", {"name": "Disk Check", "slug": "", "period": 60,
                                          "grace": 5, "schedule": "ignored"}, format="json")
    assert (resp.json()["slug"], resp.json()["schedule"]) == ("disk-check", "")
    mid = resp.json()["id"]
    cron = api.patch(f"/api/v1/monitors/{mid}/", {"kind": "cron", "schedule": "*/5 * * * *"},
                     format="json").json()
    assert (cron["kind"], cron["schedule"], cron["period"]) == ("cron", "*/5 * * * *", None)
    bad = api.patch(f"/api/v1/monitors/{mid}/", {"max_runtime": 10, "min_runtime": 100},
                    format="json")
    assert bad.json() == {"min_runtime": ["must be less than max_runtime"]}
    many = api.patch(f"/api/v1/monitors/{mid}/", {"tags": ["t"] * 51}, format="json")
    assert many.status_code == 400 and "tags" in many.json()


def test_channel_detail_get_patch_delete(api, project):
    ch = api.post("/api/v1/channels/", {"kind": "slack", "config": {"url": "https://x.test/h"}},
                  format="json").json()
    url = f"/api/v1/channels/{ch['id']}/"
    assert api.get(url).json()["config"] == {"url": "https://x.test/h"}
    renamed = api.patch(url, {"name": "ops", "config": {"url": "https://y.test/h"}},
                        format="json").json()
    assert (renamed["name"], renamed["config"]) == ("ops", {"url": "https://y.test/h"})
    assert api.patch(url, {"kind": "webhook"}, format="json").json() == {
        "kind": ["cannot be changed"]}
    assert api.patch(url, {"config": {}}, format="json").status_code == 400
    assert api.delete(url).status_code == 204
    assert api.get(url).status_code == 404
    other = Channel.objects.create(project=new_project("o"), kind="slack",
                                   config={"url": "https://z.test"})
    assert api.get(f"/api/v1/channels/{other.pk}/").status_code == 404


def test_openapi_schema_is_public_and_lists_endpoints(client):
    resp = client.get("/api/v1/schema/?format=json")
    assert resp.status_code == 200
    doc = resp.json()
    assert sorted(doc["paths"]) == [
        "/api/v1/api-keys/", "/api/v1/api-keys/{id}/",
        "/api/v1/channels/", "/api/v1/channels/{id}/", "/api/v1/channels/{id}/test/",
        "/api/v1/deliveries/",
        "/api/v1/escalation-policies/", "/api/v1/escalation-policies/{id}/",
        "/api/v1/import/crontab/", "/api/v1/import/k8s/",
        "/api/v1/incidents/", "/api/v1/incidents/{id}/", "/api/v1/incidents/{id}/ack/",
        "/api/v1/incidents/{id}/resolve/",
        "/api/v1/maintenance-windows/", "/api/v1/maintenance-windows/{id}/",
        "/api/v1/members/", "/api/v1/members/{id}/", "/api/v1/metrics/",
        "/api/v1/monitors/", "/api/v1/monitors/by-slug/{slug}/", "/api/v1/monitors/{id}/",
        "/api/v1/monitors/{id}/advice/",
        "/api/v1/monitors/{id}/pause/", "/api/v1/monitors/{id}/pings/",
        "/api/v1/monitors/{id}/resume/", "/api/v1/monitors/{id}/runs/",
        "/api/v1/monitors/{id}/stats/",
        "/api/v1/organisations/", "/api/v1/organisations/{id}/",
        "/api/v1/projects/", "/api/v1/projects/{id}/"]
    monitor = doc["components"]["schemas"]["Monitor"]["properties"]
    assert monitor["grace"]["type"] == "integer"
    assert doc["components"]["securitySchemes"]["ApiKey"]["scheme"] == "bearer"


def test_deliveries_are_visible_per_incident_and_in_a_list(api, make_monitor, project):
    hook = Channel.objects.create(project=project, kind="webhook", name="h",
                                  config={"url": "https://h.test/x", "secret": "k"})
    m = make_monitor(channels=[hook])
    ingest(m.pk, PingInput("fail"), T0)
    d = Delivery.objects.get()
    Delivery.objects.filter(pk=d.pk).update(status="pending", attempts=2, last_error="HTTP 503",
                                            next_attempt_at=T0 + timedelta(seconds=8))
    expected = {"id": d.pk, "event": "incident.opened", "incident": d.incident_id,
                "channel": hook.pk, "status": "pending", "attempts": 2, "last_error": "HTTP 503",
                "created_at": "2026-01-05T12:00:00Z", "next_attempt_at": "2026-01-05T12:00:08Z",
                "delivered_at": None}
    [incident] = api.get("/api/v1/incidents/").json()
    assert incident["events"][0]["deliveries"] == [expected]
    assert api.get("/api/v1/deliveries/").json() == [expected]
    assert api.get(f"/api/v1/deliveries/?incident={d.incident_id}&status=pending").json() == [
        expected]
    assert api.get("/api/v1/deliveries/?status=delivered").json() == []
    assert api.get("/api/v1/deliveries/?status=lost").json() == {
        "status": ["must be one of pending, sending, delivered, failed"]}
    assert api.get("/api/v1/deliveries/?channel=x").json() == {"channel": ["must be a channel id"]}
    other = new_project("other")
    foreign = Channel.objects.create(project=other, kind="webhook", config={"url": "http://x"})
    assert api.get(f"/api/v1/deliveries/?channel={foreign.pk}").json() == []


@pytest.mark.parametrize("kind,config", [
    ("webhook", {"url": "https://hooks.example.com/x", "secret": "a\u0000b"}),
    ("pagerduty", {"routing_key": "R\u0000"}),
])
def test_a_nul_in_a_channel_config_is_refused(api, kind, config):
    """PostgreSQL cannot store NUL in text (it was a 500 there): 400 on both."""
    resp = api.post("/api/v1/channels/", {"kind": kind, "name": "x", "config": config},
                    format="json")
    assert resp.status_code == 400, resp.content
    assert "NUL characters are not allowed" in str(resp.json())


def test_a_nul_in_a_query_is_refused(api):
    resp = api.get("/api/v1/monitors/?q=%00")
    assert (resp.status_code, resp.json()) == (
        400, {"detail": "NUL characters are not allowed in the URL"})
