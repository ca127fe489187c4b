"""alerts.api: a monitor's channels and alerting settings, channels, incidents with
their timelines, acknowledge and resolve, deliveries, escalation policies and
maintenance windows."""
import base64
import json
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import ApiKey
from alerts.models import Channel, Delivery, Incident
from monitors.pings import PingInput, ingest
from tests.alerts.conftest import ONE, seen
from tests.conftest import T0, S, new_project, s

pytestmark = pytest.mark.django_db


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


def test_channel_config_not_shared_across_projects(api):
    other = new_project("other")
    ch = Channel.objects.create(project=other, kind="webhook", config={"url": "http://x"})
    resp = api.post("/api/v1/monitors/", {"name": "a", "period": 60, "grace": 1,
                                          "channels": [ch.pk]}, format="json")
    assert resp.status_code == 400 and "channels" in resp.json()


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


def test_channel_credentials_are_hidden_from_readers(api, project):
    from tests.helpers import as_key

    made = api.post("/api/v1/channels/", {"kind": "opsgenie", "config": {
        "api_key": "genie-secret", "region": "eu"}}, format="json").json()
    assert made["config"] == {"api_key": "genie-secret", "region": "eu"}  # its admin sees it
    reader = as_key(ApiKey.issue(project, read_only=True)[1])
    assert reader.get(f"/api/v1/channels/{made['id']}/").json()["config"] == {
        "api_key": "***", "region": "eu"}


def test_a_webhook_shows_its_standard_webhooks_signing_secret(api, project):
    from tests.helpers import as_key

    made = api.post("/api/v1/channels/", {"kind": "webhook", "config": {
        "url": "https://a.test/h"}}, format="json").json()
    secret = made["config"]["secret"]
    assert len(bytes.fromhex(secret)) == 32  # a new channel's: 32 random bytes, as hex
    assert made["config"]["signing_secret"] == (
        "whsec_" + base64.b64encode(secret.encode()).decode())
    assert Channel.objects.get().config == {"url": "https://a.test/h", "secret": secret}
    # read-only: sent back as it was shown, it is ignored, the secret unchanged
    again = api.patch(f"/api/v1/channels/{made['id']}/", {"config": {
        **made["config"], "signing_secret": "whsec_bm9wZQ=="}}, format="json")
    assert again.status_code == 200, again.json()
    assert again.json()["config"] == made["config"]
    reader = as_key(ApiKey.issue(project, read_only=True)[1])
    assert reader.get(f"/api/v1/channels/{made['id']}/").json()["config"] == {
        "url": "***", "secret": "***", "signing_secret": "***"}


@pytest.mark.parametrize("kind,config,secrets", [
    ("matrix", {"homeserver": "https://matrix.example.org", "room_id": "!r:example.org",
                "access_token": "syt_secret"}, ["access_token"]),
    ("pushover", {"token": "a" * 30, "user": "u" * 30}, ["token", "user"]),
])
def test_paging_tokens_are_never_shown_even_to_admins(api, project, kind, config, secrets):
    made = api.post("/api/v1/channels/", {"kind": kind, "config": config}, format="json")
    assert made.status_code == 201, made.json()
    shown = made.json()["config"]
    assert shown == {**config, **{k: "***" for k in secrets}}
    again = api.patch(f"/api/v1/channels/{made.json()['id']}/", {"config": shown},
                      format="json")  # sent back as shown: the stored ones are kept
    assert (again.status_code, again.json()["config"]) == (200, shown)
    assert Channel.objects.get(pk=made.json()["id"]).config == config


def test_one_incident_with_its_timeline(api, make_monitor, hook):
    m = make_monitor(period=3600 * S, grace=60 * S, channels=[hook])
    ingest(m.pk, PingInput("fail"), T0)
    ingest(m.pk, PingInput("success"), T0 + 5 * S)
    [listed] = api.get("/api/v1/incidents/").json()
    one = api.get(f"/api/v1/incidents/{listed['id']}/").json()
    assert one == listed
    assert [e["kind"] for e in one["events"]] == ["opened", "resolved"]
    assert one["resolved_at"] == "2026-01-05T12:00:05Z"
    assert api.get("/api/v1/incidents/999/").status_code == 404


def test_changing_a_webhook_url_keeps_its_secret(api, project):
    hook = api.post("/api/v1/channels/", {"kind": "webhook", "config": {
        "url": "https://a.test/h"}}, format="json").json()
    changed = api.patch(f"/api/v1/channels/{hook['id']}/", {"config": {"url": "https://b.test/h"}},
                        format="json").json()
    assert changed["config"] == {"url": "https://b.test/h", "secret": hook["config"]["secret"],
                                 "signing_secret": hook["config"]["signing_secret"]}
    assert Channel.objects.get().config["secret"] == hook["config"]["secret"]
    rotated = api.patch(f"/api/v1/channels/{hook['id']}/", {"config": {
        "url": "https://b.test/h", "secret": "new"}}, format="json").json()
    assert rotated["config"]["secret"] == "new"


def test_policies_through_the_api(api, channels, project):
    one, two, pd = channels
    created = api.post("/api/v1/escalation-policies/", {
        "name": "on-call", "repeat": 2,
        "tiers": [{"delay": 0, "channels": [one.pk]},
                  {"delay": 600, "channels": [two.pk, pd.pk]}]}, format="json")
    assert created.status_code == 201, created.json()
    body = created.json()
    assert (body["name"], body["repeat"], body["monitors"]) == ("on-call", 2, [])
    assert body["tiers"] == [{"delay": 0, "channels": [one.pk]},
                             {"delay": 600, "channels": sorted([two.pk, pd.pk])}]
    url = f"/api/v1/escalation-policies/{body['id']}/"
    changed = api.patch(url, {"tiers": [{"delay": 30, "channels": [two.pk]}]}, format="json")
    assert changed.json()["tiers"] == [{"delay": 30, "channels": [two.pk]}]
    assert api.delete(f"/api/v1/channels/{two.pk}/").json() == {
        "detail": "the only channel of tier 1 of escalation policy 'on-call': change the "
                  "policy first"}
    api.patch(url, {"tiers": [{"delay": 30, "channels": [two.pk, pd.pk]}]}, format="json")
    assert api.delete(f"/api/v1/channels/{two.pk}/").status_code == 204  # pd is left
    assert api.get(url).json()["tiers"] == [{"delay": 30, "channels": [pd.pk]}]
    for bad, field, message in [
        ({"name": "x", "tiers": []}, "tiers", "Ensure this field has at least 1 elements."),
        ({"name": "x", "tiers": [{"delay": 0, "channels": [999]}]}, "tiers", "no channel"),
        ({"name": "x", "repeat": 10, "tiers": [{"delay": 0, "channels": [one.pk]}]}, "repeat",
         "less than or equal to 9"),
        ({"name": "on-call", "tiers": [{"delay": 0, "channels": [one.pk]}]}, "name", "exists"),
        ({"name": "x", "tiers": [{"delay": -1, "channels": [one.pk]}]}, "tiers", "at least 0"),
    ]:
        resp = api.post("/api/v1/escalation-policies/", bad, format="json")
        assert resp.status_code == 400 and message in json.dumps(resp.json()[field]), resp.json()


def test_a_monitors_alerting_settings(api, channels, project):
    one = channels[0]
    p = api.post("/api/v1/escalation-policies/", {
        "name": "p", "tiers": [{"delay": 0, "channels": [one.pk]}]}, format="json").json()
    m = api.post("/api/v1/monitors/", {"name": "m", "period": 60, "grace": 5}, format="json")
    assert {k: m.json()[k] for k in ("escalation_policy", "urgency", "severity", "renotify")} == {
        "escalation_policy": None, "urgency": "high", "severity": None, "renotify": None}
    url = f"/api/v1/monitors/{m.json()['id']}/"
    resp = api.patch(url, {"escalation_policy": p["id"], "urgency": "low", "severity": "error",
                           "renotify": 3600}, format="json").json()
    assert (resp["escalation_policy"], resp["urgency"], resp["severity"], resp["renotify"]) == (
        p["id"], "low", "error", 3600)
    assert api.get(f"/api/v1/escalation-policies/{p['id']}/").json()["monitors"] == [
        m.json()["id"]]
    delete = api.delete(f"/api/v1/escalation-policies/{p['id']}/")
    assert delete.status_code == 400 and "in use by monitors" in delete.json()["detail"]
    for field, value, message in [("escalation_policy", 999, "no escalation policy"),
                                  ("urgency", "medium", "not a valid choice"),
                                  ("renotify", 10, "at least 60")]:
        resp = api.patch(url, {field: value}, format="json")
        assert resp.status_code == 400 and message in resp.json()[field][0]
    assert api.patch(url, {"escalation_policy": None, "severity": None},
                     format="json").json()["severity"] is None
    assert api.delete(f"/api/v1/escalation-policies/{p['id']}/").status_code == 204


def test_ack_and_resolve_through_the_api(api, channels, make_monitor, http, project):
    from accounts.models import ApiKey

    ApiKey.objects.update(name="deploy bot")
    one = channels[0]
    m = make_monitor(period=s(3600), grace=s(60), channels=[one])
    ingest(m.pk, PingInput("fail"), T0)
    incident = Incident.objects.get()
    acked = api.post(f"/api/v1/incidents/{incident.pk}/ack/", {"note": "looking"},
                     format="json").json()
    assert (acked["acknowledged_by"], acked["tier"]) == ("deploy bot", 1)
    assert [e["kind"] for e in acked["events"]] == ["opened", "acknowledged"]
    resolved = api.post(f"/api/v1/incidents/{incident.pk}/resolve/", {"by": "ana"},
                        format="json").json()
    assert resolved["resolution"] == "resolved by ana"
    assert api.post(f"/api/v1/incidents/{incident.pk}/ack/").status_code == 409
    assert api.post("/api/v1/incidents/999/ack/").status_code == 404
    assert api.post(f"/api/v1/incidents/{incident.pk}/ack/", {"by": "x" * 201},
                    format="json").status_code == 400
    assert seen(http, timezone.now() + s(1)) == [
        (ONE, "incident.opened"), (ONE, "incident.acknowledged"), (ONE, "incident.resolved")]


def test_windows_through_the_api(api, make_monitor):
    m = make_monitor()
    one_off = api.post("/api/v1/maintenance-windows/", {
        "name": "upgrade", "monitor": m.pk, "starts_at": "2026-01-05T12:00:00Z",
        "ends_at": "2026-01-05T13:00:00Z"}, format="json")
    assert one_off.status_code == 201, one_off.json()
    recurring = api.post("/api/v1/maintenance-windows/", {
        "name": "nightly", "tag": "db", "schedule": "0 2 * * *", "timezone": "Europe/Berlin",
        "duration": 3600}, format="json").json()
    assert (recurring["duration"], recurring["schedule"]) == (3600, "0 2 * * *")
    for bad, field in [
        ({"name": "x", "tag": "db", "monitor": m.pk, "starts_at": "2026-01-05T12:00:00Z",
          "ends_at": "2026-01-05T13:00:00Z"}, "monitor"),
        ({"name": "x", "tag": "db"}, "starts_at"),
        ({"name": "x", "tag": "db", "starts_at": "2026-01-05T13:00:00Z",
          "ends_at": "2026-01-05T12:00:00Z"}, "ends_at"),
        ({"name": "x", "tag": "db", "schedule": "61 * * * *", "duration": 60}, "schedule"),
        ({"name": "x", "tag": "db", "schedule": "0 2 * * *"}, "duration"),
        ({"name": "x", "tag": "db", "schedule": "0 2 * * *", "duration": 60,
          "timezone": "Mars/Olympus"}, "timezone"),
        ({"name": "x", "tag": "db", "schedule": "0 2 * * *", "duration": 60,
          "starts_at": "2030-01-01T00:00:00Z", "ends_at": "2030-01-01T01:00:00Z"}, "starts_at"),
        ({"name": "x", "monitor": 999, "starts_at": "2026-01-05T12:00:00Z",
          "ends_at": "2026-01-05T13:00:00Z"}, "monitor"),
    ]:
        resp = api.post("/api/v1/maintenance-windows/", bad, format="json")
        assert resp.status_code == 400 and field in resp.json(), (bad, resp.json())


def test_rules_through_the_api(api):
    m = api.post("/api/v1/monitors/", {"name": "r", "period": 60, "grace": 5, "max_attempts": 3,
                                       "failure_threshold": 2, "recovery_threshold": 4},
                 format="json").json()
    assert (m["max_attempts"], m["failure_threshold"], m["recovery_threshold"]) == (3, 2, 4)
    for field in ("max_attempts", "failure_threshold", "recovery_threshold"):
        resp = api.patch(f"/api/v1/monitors/{m['id']}/", {field: 0}, format="json")
        assert resp.status_code == 400 and field in resp.json()


# --- upserts by name --------------------------------------------------------------------

def test_channel_by_name_creates_then_updates_keeping_stored_secrets(api, project):
    url = "/api/v1/channels/by-name/ops pager/"
    made = api.put(url, {"kind": "opsgenie", "config": {"api_key": "k-1", "region": "eu"}},
                   format="json")
    assert made.status_code == 201, made.json()
    assert (made.json()["name"], made.json()["config"]) == (
        "ops pager", {"api_key": "k-1", "region": "eu"})
    # "***" and a credential left out both keep the stored one; other fields change
    for config in ({"api_key": "***", "region": "us"}, {"region": "us"}):
        again = api.put(url, {"kind": "opsgenie", "config": config}, format="json")
        assert again.status_code == 200, again.json()
        assert again.json()["id"] == made.json()["id"]
        assert Channel.objects.get(pk=made.json()["id"]).config == {"api_key": "k-1",
                                                                    "region": "us"}
    changed = api.put(url, {"config": {"api_key": "k-2"}}, format="json")
    assert (changed.status_code, changed.json()["config"]["api_key"]) == (200, "k-2")
    assert api.get(url).json() == changed.json()
    assert Channel.objects.filter(project=project).count() == 1


def test_channel_by_name_refusals(api, project):
    hook = {"kind": "webhook", "config": {"url": "https://hooks.example.com/a"}}
    for name, status, body in (
            ("%20", 400, {"name": ["must not be blank"]}),
            ("new", 400, {"config": ["secret: '***' keeps a stored secret, and this channel "
                                     "is new: give the secret"]})):
        config = {"url": "https://hooks.example.com/a", "secret": "***"}
        resp = api.put(f"/api/v1/channels/by-name/{name}/", {**hook, "config": config},
                       format="json")
        assert (resp.status_code, resp.json()) == (status, body)
    assert api.put("/api/v1/channels/by-name/a/", {**hook, "name": "b"},
                   format="json").json() == {"name": ["must be the name in the URL"]}
    twins = [Channel.objects.create(project=project, kind="webhook", name="twin",
                                    config={"url": "https://x.test/", "secret": "s"})
             for _ in range(2)]
    for method in ("get", "put"):
        resp = getattr(api, method)("/api/v1/channels/by-name/twin/", hook, format="json")
        assert (resp.status_code, resp.json()) == (409, {
            "detail": f"2 channels of this project are named 'twin' (ids {twins[0].pk}, "
                      f"{twins[1].pk}): rename one, a name must say which"})
    assert api.get("/api/v1/channels/by-name/nobody/").status_code == 404
    # a project named but empty is not "no project" (the schema says an id)
    Channel.objects.create(project=project, kind="webhook", name="w",
                           config={"url": "https://x.test/", "secret": "s"})
    for path in ("/api/v1/channels/by-name/w/?project=", "/api/v1/monitors/by-slug/w/?project="):
        resp = api.get(path)
        assert (resp.status_code, resp.json()) == (
            400, {"project": ["must be a project's id, not empty"]}), path
    kind = api.put("/api/v1/channels/by-name/k/", hook, format="json")
    assert api.put("/api/v1/channels/by-name/k/", {"kind": "slack"}, format="json").json() \
        == {"kind": ["cannot be changed"]} and kind.status_code == 201


def test_by_name_sees_only_the_callers_project_and_live_channels(api, project):
    other = new_project("other")
    Channel.objects.create(project=other, kind="webhook", name="ops",
                           config={"url": "https://x.test/", "secret": "s"})
    Channel.objects.create(project=project, kind="webhook", name="ops", deleted_at=T0,
                           config={"url": "https://x.test/", "secret": "s"})
    assert api.get("/api/v1/channels/by-name/ops/").status_code == 404
    made = api.put("/api/v1/channels/by-name/ops/", {
        "kind": "webhook", "config": {"url": "https://hooks.example.com/a"}}, format="json")
    assert made.status_code == 201 and made.json()["project"] == project.pk
    assert Channel.objects.filter(name="ops").count() == 3


def test_a_read_only_key_cannot_upsert_by_name(project):
    from tests.helpers import as_key

    reader = as_key(ApiKey.issue(project, "ro", read_only=True)[1])
    resp = reader.put("/api/v1/channels/by-name/ops/", {
        "kind": "webhook", "config": {"url": "https://hooks.example.com/a"}}, format="json")
    assert resp.status_code == 403
    assert reader.put("/api/v1/escalation-policies/by-name/p/", {
        "tiers": [{"delay": 0, "channels": [1]}]}, format="json").status_code == 403


def test_escalation_policy_by_name_creates_then_replaces_tiers(api, project):
    a, b = (Channel.objects.create(project=project, kind="webhook", name=n,
                                   config={"url": "https://x.test/", "secret": "s"})
            for n in ("a", "b"))
    url = "/api/v1/escalation-policies/by-name/night shift/"
    made = api.put(url, {"tiers": [{"delay": 0, "channels": [a.pk]}], "repeat": 1},
                   format="json")
    assert made.status_code == 201, made.json()
    body = made.json()
    assert (body["name"], body["tiers"], body["repeat"], body["monitors"]) == (
        "night shift", [{"delay": 0, "channels": [a.pk]}], 1, [])
    again = api.put(url, {"tiers": [{"delay": 0, "channels": [a.pk]},
                                    {"delay": 600, "channels": [a.pk, b.pk]}]}, format="json")
    assert again.status_code == 200
    assert (again.json()["id"], again.json()["repeat"], again.json()["tiers"]) == (
        body["id"], 1, [{"delay": 0, "channels": [a.pk]},
                        {"delay": 600, "channels": [a.pk, b.pk]}])
    assert api.get(url).json() == again.json()
    blank = api.put("/api/v1/escalation-policies/by-name/ /", {
        "tiers": [{"delay": 0, "channels": [a.pk]}]}, format="json")
    assert (blank.status_code, blank.json()) == (400, {"name": ["must not be blank"]})
    missing = api.put("/api/v1/escalation-policies/by-name/new/", {"repeat": 0}, format="json")
    assert (missing.status_code, missing.json()) == (400, {"tiers": ["This field is required."]})


def test_a_deleted_monitor_no_longer_holds_its_escalation_policy(api, project):
    ch = Channel.objects.create(project=project, kind="webhook", name="a",
                                config={"url": "https://x.test/", "secret": "s"})
    policy = api.post("/api/v1/escalation-policies/", {
        "name": "p", "tiers": [{"delay": 0, "channels": [ch.pk]}]}, format="json").json()
    m = api.post("/api/v1/monitors/", {"name": "a", "period": 60, "grace": 1,
                                       "escalation_policy": policy["id"]}, format="json").json()
    url = f"/api/v1/escalation-policies/{policy['id']}/"
    assert api.delete(url).json() == {"detail": f"in use by monitors [{m['id']}]: give them "
                                                "another policy first"}
    # deleted, the monitor keeps its row (and its settings) until the evaluator purges it
    assert api.delete(f"/api/v1/monitors/{m['id']}/").status_code == 204
    assert api.get(url).json()["monitors"] == []
    assert api.delete(url).status_code == 204


def test_patching_a_channel_with_masked_credentials_keeps_the_stored_ones(api, project):
    # as the by-name upsert: "***" (what a reader sees) keeps the stored credential
    made = api.post("/api/v1/channels/", {"kind": "opsgenie", "name": "og", "config": {
        "api_key": "k-1", "region": "eu"}}, format="json").json()
    url = f"/api/v1/channels/{made['id']}/"
    again = api.patch(url, {"config": {"api_key": "***", "region": "us"}}, format="json")
    assert again.status_code == 200, again.json()
    assert Channel.objects.get(pk=made["id"]).config == {"api_key": "k-1", "region": "us"}
    hook = api.post("/api/v1/channels/", {"kind": "webhook", "name": "h", "config": {
        "url": "https://a.test/h", "secret": "s-1"}}, format="json").json()
    masked = api.patch(f"/api/v1/channels/{hook['id']}/", {"config": {
        "url": "***", "secret": "***"}}, format="json")
    assert masked.status_code == 200, masked.json()
    assert Channel.objects.get(pk=hook["id"]).config == {"url": "https://a.test/h",
                                                         "secret": "s-1"}
    # a new channel has nothing stored: "***" is refused, never stored
    new = api.post("/api/v1/channels/", {"kind": "opsgenie", "name": "n", "config": {
        "api_key": "***"}}, format="json")
    assert (new.status_code, new.json()) == (400, {"config": [
        "api_key: '***' keeps a stored secret, and this channel is new: give the secret"]})


@pytest.mark.parametrize("body", [{"note": 0}, {"note": 1.5}, {"by": True}])
def test_an_incident_actions_strings_must_be_strings(api, make_monitor, body):
    m = make_monitor(period=s(3600), grace=s(60))
    ingest(m.pk, PingInput("fail"), T0)
    incident = Incident.objects.get()
    resp = api.post(f"/api/v1/incidents/{incident.pk}/ack/", body, format="json")
    assert (resp.status_code, resp.json()) == (400, {next(iter(body)): ["must be a string"]})
    assert Incident.objects.get().acknowledged_at is None
