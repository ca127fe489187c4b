"""The complete API: unknown fields refused, cursor paging with a Link header and
?since=/?until=, monitor filters, pause/resume, upsert by slug."""
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import ApiKey
from monitors.models import Monitor, Ping
from monitors.pings import PingInput, ingest
from tests.conftest import T0, new_project

pytestmark = pytest.mark.django_db
S = timedelta(seconds=1)


def test_unknown_fields_are_refused_read_only_ones_ignored(api, make_monitor):
    resp = api.post("/api/v1/monitors/", {"name": "a", "period": 60, "grace": 5,
                                          "colour": "red", "graec": 3}, format="json")
    assert (resp.status_code, resp.json()) == (400, {"colour": ["unknown field"],
                                                     "graec": ["unknown field"]})
    m = make_monitor()
    got = api.get(f"/api/v1/monitors/{m.pk}/").json()
    again = api.patch(f"/api/v1/monitors/{m.pk}/", {**got, "name": "renamed"}, format="json")
    assert again.status_code == 200 and again.json()["name"] == "renamed"  # a GET sent back
    for url, body in [("/api/v1/channels/", {"kind": "webhook", "config": {}, "url": "x"}),
                      ("/api/v1/escalation-policies/", {"name": "p", "tiers": [
                          {"delay": 0, "channels": [1], "wait": 5}]}),
                      ("/api/v1/maintenance-windows/", {"name": "w", "monitor_id": m.pk}),
                      ("/api/v1/api-keys/", {"name": "k", "scope": "all"})]:
        resp = api.post(url, body, format="json")
        assert resp.status_code == 400 and "unknown field" in str(resp.json()), (url, resp.json())


def test_pings_page_by_cursor_with_a_link_header(api, make_monitor):
    m = make_monitor(period=3600 * S, grace=60 * S)
    for i in range(5):
        ingest(m.pk, PingInput("log", body=f"line {i}".encode()), T0 + i * S)
    url = f"/api/v1/monitors/{m.pk}/pings/"
    first = api.get(url + "?limit=2")
    assert [p["body"] for p in first.json()] == ["line 4", "line 3"]
    link = first["Link"]
    assert link.startswith("<http://testserver/api/v1/monitors/") and link.endswith(
        '>; rel="next"')
    ingest(m.pk, PingInput("log", body=b"line 5"), T0 + 9 * S)  # arrives meanwhile
    second = api.get(link[1:link.index(">")])
    assert [p["body"] for p in second.json()] == ["line 2", "line 1"]
    third = api.get(second["Link"][1:second["Link"].index(">")])
    assert [p["body"] for p in third.json()] == ["line 0"]
    assert "Link" not in third
    window = api.get(url, {"since": "2026-01-05T12:00:01Z", "until": "2026-01-05T12:00:03Z"})
    assert [p["body"] for p in window.json()] == ["line 2", "line 1"]
    for bad, field in [({"since": "yesterday"}, "since"), ({"until": "2026-01-05T12:00:00"},
                                                           "until"),
                       ({"cursor": "abc"}, "cursor"), ({"limit": "0"}, "limit"),
                       ({"since": "2026-11-30T05:11:35+99:00"}, "since"),
                       ({"since": "0001-01-01T00:00:00+01:00"}, "since"),
                       ({"until": "9999-12-31T23:59:59-01:00"}, "until")]:
        resp = api.get(url, bad)
        assert resp.status_code == 400 and field in resp.json(), (bad, resp.json())


def test_runs_incidents_and_deliveries_page_too(api, make_monitor, hook):
    m = make_monitor(period=3600 * S, grace=60 * S, channels=[hook])
    for i in range(3):
        ingest(m.pk, PingInput("fail"), T0 + 10 * i * S)
        ingest(m.pk, PingInput("success"), T0 + (10 * i + 1) * S)
    runs = api.get(f"/api/v1/monitors/{m.pk}/runs/?limit=4")
    assert [r["outcome"] for r in runs.json()] == ["succeeded", "failed", "succeeded", "failed"]
    assert 'rel="next"' in runs["Link"]
    incidents = api.get("/api/v1/incidents/?limit=2")
    assert [i["opened_at"] for i in incidents.json()] == ["2026-01-05T12:00:20Z",
                                                         "2026-01-05T12:00:10Z"]
    rest = api.get(incidents["Link"][1:incidents["Link"].index(">")]).json()
    assert [i["opened_at"] for i in rest] == ["2026-01-05T12:00:00Z"]
    early = api.get("/api/v1/incidents/", {"until": "2026-01-05T12:00:10Z"}).json()
    assert [i["opened_at"] for i in early] == ["2026-01-05T12:00:00Z"]
    deliveries = api.get("/api/v1/deliveries/?limit=5")
    assert len(deliveries.json()) == 5 and 'rel="next"' in deliveries["Link"]


def test_monitor_filters(api, make_monitor):
    now = timezone.now()  # statuses are of the present
    hourly = {"period": 3600 * S, "grace": 60 * S, "created": now}
    a = make_monitor(name="db-backup", tags=["db", "nightly"], **hourly)
    b = make_monitor(name="db-vacuum", tags=["db"], **hourly)
    c = make_monitor(name="report", tags=["nightly"], paused=True, **hourly)
    ingest(a.pk, PingInput("success"), now)
    ingest(b.pk, PingInput("fail"), now)

    def names(**query):
        resp = api.get("/api/v1/monitors/", query)
        assert resp.status_code == 200, resp.json()
        return [m["name"] for m in resp.json()]

    assert names(tag="db") == ["db-backup", "db-vacuum"]
    assert names(tag=["db", "nightly"]) == ["db-backup"]
    assert names(q="VAC") == ["db-vacuum"]
    assert names(status="down") == ["db-vacuum"]
    assert names(status="paused,down") == ["db-vacuum", "report"]
    assert names(status="up", tag="db") == ["db-backup"]
    assert api.get("/api/v1/monitors/", {"status": "sleeping"}).json() == {
        "status": ["unknown status 'sleeping': use new, up, running, late, down, paused"]}
    assert c.paused


def test_pause_and_resume(api, make_monitor):
    m = make_monitor(period=3600 * S, grace=60 * S)
    paused = api.post(f"/api/v1/monitors/{m.pk}/pause/")
    assert (paused.status_code, paused.json()["status"], paused.json()["paused"]) == (
        200, "paused", True)
    assert Monitor.objects.get(pk=m.pk).next_evaluation_at is None
    resumed = api.post(f"/api/v1/monitors/{m.pk}/resume/").json()
    assert (resumed["paused"], resumed["status"]) == (False, "new")
    assert api.post("/api/v1/monitors/999/pause/").status_code == 404


def test_upsert_by_slug(api, project):
    url = "/api/v1/monitors/by-slug/nightly-backup/"
    assert api.get(url).status_code == 404
    body = {"name": "Nightly backup", "kind": "cron", "schedule": "0 3 * * *", "grace": 600}
    created = api.put(url, body, format="json")
    assert created.status_code == 201, created.json()
    assert (created.json()["slug"], created.json()["schedule"]) == ("nightly-backup",
                                                                   "0 3 * * *")
    again = api.put(url, body, format="json")  # the deploy script runs again
    assert (again.status_code, again.json()["id"]) == (200, created.json()["id"])
    changed = api.put(url, {**body, "grace": 900}, format="json").json()
    assert (changed["grace"], changed["schedule"]) == (900, "0 3 * * *")
    assert Monitor.objects.filter(slug="nightly-backup").count() == 1
    assert api.get(url).json()["grace"] == 900
    assert api.put(url, {**body, "slug": "other"}, format="json").json() == {
        "slug": ["must be the slug in the URL"]}
    assert api.put(url, {**body, "project": new_project("b").pk}, format="json").status_code \
        == 400
    assert api.put("/api/v1/monitors/by-slug/new-one/", {"name": "x"},
                   format="json").json()["grace"] == [
        "required: seconds a run may start after its scheduled time"]
    assert api.put(f"/api/v1/monitors/{created.json()['id']}/", body,
                   format="json").status_code == 405
    assert Ping.objects.count() == 0


def test_create_on_ping(client, project, api):
    base = f"/ping/{project.ping_key}"
    assert client.get(f"{base}/new-job").status_code == 404  # not without create=1
    made = client.get(f"{base}/new-job?create=1")
    assert (made.status_code, made.content) == (201, b"Created\n")
    m = Monitor.objects.get(slug="new-job")
    assert (m.kind, m.period, m.grace, m.name) == ("interval", 86400 * S, 3600 * S, "new-job")
    assert [p.kind for p in m.pings.all()] == ["success"]  # the ping itself is stored
    again = client.get(f"{base}/new-job/fail?create=1")
    assert (again.status_code, Monitor.objects.filter(slug="new-job").count()) == (200, 1)
    cron = client.post(f"{base}/backup/start?create=1&schedule=0+3+*+*+*"
                       "&timezone=Europe/Berlin&grace=600")
    assert cron.status_code == 201
    b = Monitor.objects.get(slug="backup")
    assert (b.kind, b.schedule, b.timezone, b.grace) == ("cron", "0 3 * * *", "Europe/Berlin",
                                                         600 * S)
    assert api.get(f"/api/v1/monitors/{b.pk}/").json()["status"] == "running"
    for query, message in [("schedule=61+*+*+*+*", "bad minute field '61'"),
                           ("timezone=Mars/Olympus", "Mars/Olympus"),
                           ("grace=0", "grace must be a whole number of seconds"),
                           ("period=abc", "period must be"),
                           ("period=60&schedule=0+3+*+*+*", "not both")]:
        resp = client.get(f"{base}/bad-one?create=1&{query}")
        assert resp.status_code == 400 and message in resp.content.decode(), query
    assert client.get(f"{base}/{'x' * 101}?create=1").status_code == 400
    assert client.get("/ping/not-a-key/job?create=1").status_code == 404
    assert not Monitor.objects.filter(slug="bad-one").exists()


def test_api_rate_limit_per_key(api, project, settings):
    settings.CRONRADAR_API_RATE = "3/min"
    assert [api.get("/api/v1/monitors/").status_code for _ in range(3)] == [200, 200, 200]
    over = api.get("/api/v1/monitors/")
    assert over.status_code == 429 and 1 <= int(over["Retry-After"]) <= 60
    assert "throttled" in over.json()["detail"]
    from tests.test_tenancy import as_key

    other = as_key(ApiKey.issue(project)[1])  # another key has its own budget
    assert other.get("/api/v1/monitors/").status_code == 200


def test_ping_rate_limit_drops_and_counts(client, api, make_monitor, settings):
    settings.CRONRADAR_PING_RATE = "2/min"
    m = make_monitor(period=3600 * S, grace=60 * S)
    answers = [client.get(f"/ping/{m.uuid}") for _ in range(4)]
    assert [a.status_code for a in answers] == [200, 200, 429, 429]
    assert answers[2].content.startswith(b"too many pings for this monitor: at most 2/min")
    assert 1 <= int(answers[2]["Retry-After"]) <= 60
    assert Ping.objects.filter(monitor=m).count() == 2  # what was refused is not stored
    assert api.get(f"/api/v1/monitors/{m.pk}/").json()["dropped_pings"] == 2
    other = make_monitor(period=3600 * S, grace=60 * S)
    assert client.get(f"/ping/{other.uuid}").status_code == 200  # per ping URL


def test_prometheus_metrics(api, project, make_monitor, settings, monkeypatch):
    now = T0 + 600 * S
    monkeypatch.setattr(timezone, "now", lambda: now)
    a = make_monitor(name="backup", period=3600 * S, grace=60 * S)
    make_monitor(name='we"ird', period=3600 * S, grace=60 * S)
    ingest(a.pk, PingInput("start"), T0)
    ingest(a.pk, PingInput("fail"), T0 + 42 * S)
    Monitor.objects.filter(pk=a.pk).update(dropped_pings=3)
    resp = api.get("/api/v1/metrics/")
    assert resp["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    text = resp.content.decode()
    labels = 'project="acme",monitor="backup",name="backup"'
    odd = 'project="acme",monitor="we\\"ird",name="we\\"ird"'
    for line in [f"cronradar_monitor_up{{{labels}}} 0",
                 f'cronradar_monitor_status{{{labels},status="down"}} 1',
                 f'cronradar_monitor_status{{{labels},status="up"}} 0',
                 f"cronradar_monitor_last_ping_age_seconds{{{labels}}} 558",
                 f"cronradar_monitor_last_run_duration_seconds{{{labels}}} 42",
                 f"cronradar_monitor_open_incidents{{{labels}}} 1",
                 f"cronradar_pings_dropped_total{{{labels}}} 3",
                 f"cronradar_monitor_up{{{odd}}} 1",
                 f'cronradar_monitor_status{{{odd},status="new"}} 1',
                 "# TYPE cronradar_pings_dropped_total counter"]:
        assert line in text.splitlines(), line
    assert "cronradar_monitor_last_ping_age_seconds{" + odd not in text  # never pinged
    ro = ApiKey.issue(project, read_only=True)[1]
    from tests.test_tenancy import as_key

    assert as_key(ro).get("/api/v1/metrics/").status_code == 200
    assert "backup" not in as_key(ApiKey.issue(new_project("b"))[1]).get(
        "/api/v1/metrics/").content.decode()
    assert api.credentials() is None and api.get("/api/v1/metrics/").status_code == 401


def test_channel_credentials_are_hidden_from_readers(api, project):
    from tests.test_tenancy import as_key

    made = api.post("/api/v1/channels/", {"kind": "opsgenie", "config": {
        "api_key": "genie-secret", "region": "eu"}}, format="json").json()
    assert made["config"] == {"api_key": "genie-secret", "region": "eu"}  # its admin sees it
    reader = as_key(ApiKey.issue(project, read_only=True)[1])
    assert reader.get(f"/api/v1/channels/{made['id']}/").json()["config"] == {
        "api_key": "***", "region": "eu"}


def test_the_schema_describes_each_channel_kinds_config_and_the_docs_page_is_local(client,
                                                                                  api):
    from alerts.integrations import KINDS

    doc = client.get("/api/v1/schema/?format=json").json()
    config = doc["components"]["schemas"]["ChannelRequest"]["properties"]["config"]
    assert [s["title"] for s in config["anyOf"]] == list(KINDS)
    assert config["anyOf"][list(KINDS).index("pagerduty")]["required"] == ["routing_key"]
    monitor = doc["components"]["schemas"]["Monitor"]["properties"]
    assert monitor["failure_threshold"] == {"type": "integer", "maximum": 100, "minimum": 1}
    assert monitor["flapping_since"]["readOnly"] is True
    assert set(doc["paths"]["/api/v1/monitors/"]["post"]["responses"]) == {
        "201", "400", "401", "403", "404", "429"}
    page = client.get("/api/v1/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/" in html and "cdn" not in html
    assert api.options("/api/v1/monitors/by-slug/x/").json()["name"] == "By slug"
    assert client.options("/api/v1/docs/").status_code == 405


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
