"""alerts.hc_api: the Healthchecks-compatible Management API subset (/api/v3/).

Each documented example request of Healthchecks' templates/docs/api.md (in
healthchecks/healthchecks) for the endpoints served is a test here, sent with
curl's exact headers; they compare status codes and field sets (the example
answers' keys, below), not generated values. The mapping functions are tested
with exact values and an explicit clock.
"""
import hashlib
import json
from datetime import timedelta
from types import SimpleNamespace
from uuid import UUID

import pytest
from django.test import Client

from accounts.models import ApiKey
from alerts import hc_api
from alerts.models import Alerting, Channel, Incident
from monitors.models import Monitor, Ping
from monitors.pings import PingInput, ingest
from tests.conftest import T0, new_project, s

pytestmark = pytest.mark.django_db

# The keys of the documentation's example answers. Its list and single-check
# examples predate "subject" and "subject_fail", which Healthchecks' own answers
# (Check.to_dict) always carry and its create/update/pause examples show.
SIMPLE = {"name", "slug", "tags", "desc", "grace", "n_pings", "status", "started",
          "last_ping", "next_ping", "manual_resume", "methods", "subject", "subject_fail",
          "start_kw", "success_kw", "failure_kw", "filter_subject", "filter_body",
          "filter_http_body", "filter_default_fail", "badge_url", "uuid", "ping_url",
          "update_url", "pause_url", "resume_url", "channels", "timeout", "tz"}
CRON = SIMPLE - {"timeout"} | {"schedule"}
SECRET = {"uuid", "ping_url", "update_url", "pause_url", "resume_url", "channels"}
PING_SUCCESS = {"type", "date", "n", "scheme", "remote_addr", "method", "ua", "rid",
                "duration", "body_url"}
PING_START = PING_SUCCESS - {"duration"}
FLIP = {"timestamp", "up"}
CHANNEL = {"id", "name", "kind"}
NOW = T0 + timedelta(minutes=30)


def curl(method: str, path: str, key: str | None = None, data: str | None = None):
    """What ``curl [--request METHOD] [--header "X-Api-Key: key"] [--data data]
    SITE_ROOT<path>`` sends: curl's User-Agent and Accept, and with ``--data`` the
    form Content-Type curl gives it."""
    extra = {"HTTP_USER_AGENT": "curl/8.5.0", "HTTP_ACCEPT": "*/*"}
    if key is not None:
        extra["HTTP_X_API_KEY"] = key
    if data is None:
        return Client().generic(method, path, **extra)
    body = data.encode()
    return Client().generic(method, path, body, "application/x-www-form-urlencoded",
                            CONTENT_LENGTH=str(len(body)), **extra)


@pytest.fixture(autouse=True)
def clock(monkeypatch):
    """The views' clock stands at ``NOW``."""
    monkeypatch.setattr(hc_api, "timezone", SimpleNamespace(now=lambda: NOW))


@pytest.fixture
def ro_key(project):
    return ApiKey.issue(project, read_only=True)[1]


@pytest.fixture
def backups(make_monitor, project):
    """The documentation's two checks: an hourly simple check with two channels,
    a daily cron check."""
    email = Channel.objects.create(project=project, kind="email", name="My Work Email",
                                   config={"to": ["a@example.com"]})
    phone = Channel.objects.create(project=project, kind="pagerduty", name="My Phone",
                                   config={"routing_key": "r" * 32})
    fs = make_monitor(name="Filesystem Backup", slug="filesystem-backup", tags=["backup", "fs"],
                      description="Runs incremental backup every hour", period=s(3600),
                      grace=s(600), channels=[email, phone])
    db = make_monitor(name="Database Backup", slug="database-backup", tags=["production", "db"],
                      description="Runs ~/db-backup.sh", kind="cron", schedule="15 5 * * *",
                      timezone="UTC", grace=s(1200), all_channels=True)
    return fs, db


# --- the documented example requests ---------------------------------------------------

def test_list_checks_example(backups, api_key):
    resp = curl("GET", "/api/v3/checks/", api_key)
    assert resp.status_code == 200
    answer = resp.json()
    assert set(answer) == {"checks"}
    fs, db = answer["checks"]
    assert (set(fs), set(db)) == (SIMPLE, CRON)
    assert (fs["name"], fs["tags"], fs["timeout"], fs["grace"]) == (
        "Filesystem Backup", "backup fs", 3600, 600)
    assert (db["schedule"], db["tz"]) == ("15 5 * * *", "UTC")
    channels = {c.name: str(c.uuid) for c in Channel.objects.all()}
    assert fs["channels"] == ",".join(sorted(channels.values()))


def test_list_checks_read_only_example(backups, ro_key):
    resp = curl("GET", "/api/v3/checks/", ro_key)
    assert resp.status_code == 200
    fs, db = resp.json()["checks"]
    assert set(fs) == SIMPLE - SECRET | {"unique_key"}
    assert set(db) == CRON - SECRET | {"unique_key"}
    assert fs["unique_key"] == hashlib.sha1(backups[0].uuid.hex[:16].encode()).hexdigest()


def test_get_check_example(backups, api_key):
    db = backups[1]
    resp = curl("GET", f"/api/v3/checks/{db.uuid}", api_key)
    assert resp.status_code == 200
    assert set(resp.json()) == CRON
    assert resp.json()["uuid"] == str(db.uuid)


def test_get_check_read_only_example(backups, ro_key):
    db = backups[1]
    by_uuid = curl("GET", f"/api/v3/checks/{db.uuid}", ro_key)
    assert by_uuid.status_code == 200 and set(by_uuid.json()) == CRON - SECRET | {"unique_key"}
    by_key = curl("GET", f"/api/v3/checks/{by_uuid.json()['unique_key']}", ro_key)
    assert by_key.status_code == 200 and by_key.json() == by_uuid.json()


def test_pause_example(backups, api_key):
    fs = backups[0]
    resp = curl("POST", f"/api/v3/checks/{fs.uuid}/pause", api_key, data="")
    assert resp.status_code == 200
    assert set(resp.json()) == SIMPLE and resp.json()["status"] == "paused"
    assert Monitor.objects.get(pk=fs.pk).paused is True
    again = curl("POST", f"/api/v3/checks/{fs.uuid}/pause", api_key, data="")
    assert again.status_code == 200 and again.json()["status"] == "paused"


def test_resume_example(backups, api_key):
    fs = backups[0]
    not_paused = curl("POST", f"/api/v3/checks/{fs.uuid}/resume", api_key, data="")
    assert (not_paused.status_code, not_paused.json()) == (409, {"error": "check is not paused"})
    curl("POST", f"/api/v3/checks/{fs.uuid}/pause", api_key, data="")
    resp = curl("POST", f"/api/v3/checks/{fs.uuid}/resume", api_key, data="")
    assert resp.status_code == 200
    assert set(resp.json()) == SIMPLE and resp.json()["status"] == "new"
    assert Monitor.objects.get(pk=fs.pk).paused is False


def test_delete_example(backups, api_key):
    fs = backups[0]
    resp = curl("DELETE", f"/api/v3/checks/{fs.uuid}", api_key)
    assert resp.status_code == 200
    assert set(resp.json()) == SIMPLE and resp.json()["uuid"] == str(fs.uuid)
    assert Monitor.objects.get(pk=fs.pk).deleted_at == NOW
    gone = curl("DELETE", f"/api/v3/checks/{fs.uuid}", api_key)
    assert (gone.status_code, gone.json()) == (404, {"error": "not found"})


def test_list_pings_example(make_monitor, api_key):
    m = make_monitor(period=s(3600), grace=s(60))
    rid = UUID("123e4567-e89b-12d3-a456-426614174000")
    sent = dict(user_agent="curl/7.68.0", remote_addr="192.0.2.0", rid=rid)
    ingest(m.pk, PingInput("start", **sent), T0)
    ingest(m.pk, PingInput("success", **sent), T0 + s(3))
    resp = curl("GET", f"/api/v3/checks/{m.uuid}/pings/", api_key)
    assert resp.status_code == 200
    success, start = resp.json()["pings"]
    assert (set(success), set(start)) == (PING_SUCCESS, PING_START)
    assert success == {"type": "success", "date": "2026-01-05T12:00:03+00:00",
                       "n": Ping.objects.get(kind="success").pk,
                       "scheme": "http", "remote_addr": "192.0.2.0", "method": "GET",
                       "ua": "curl/7.68.0", "rid": str(rid), "duration": 3.0,
                       "body_url": None}
    assert (start["type"], start["n"], start["rid"]) == (
        "start", Ping.objects.get(kind="start").pk, str(rid))


def test_list_flips_example(make_monitor, api_key):
    m = make_monitor(period=s(3600), grace=s(60))
    ingest(m.pk, PingInput("fail", exit_status=1), T0 + s(10))
    ingest(m.pk, PingInput("success"), T0 + s(70))
    resp = curl("GET", f"/api/v3/checks/{m.uuid}/flips/", api_key)
    assert resp.status_code == 200
    # Healthchecks' documentation shows a bare list; its server answers {"flips": […]}
    # (hc/api/views.py flips), which clients read: the server's shape is kept
    assert resp.json() == {"flips": [{"timestamp": "2026-01-05T12:01:10+00:00", "up": 1},
                                     {"timestamp": "2026-01-05T12:00:10+00:00", "up": 0}]}
    assert all(set(f) == FLIP for f in resp.json()["flips"])


def test_list_channels_example(backups, api_key):
    resp = curl("GET", "/api/v3/channels/", api_key)
    assert resp.status_code == 200
    email, phone = Channel.objects.order_by("pk")
    assert resp.json() == {"channels": [
        {"id": str(email.uuid), "name": "My Work Email", "kind": "email"},
        {"id": str(phone.uuid), "name": "My Phone", "kind": "pd"}]}
    assert all(set(c) == CHANNEL for c in resp.json()["channels"])


# --- errors, keys and tenants ----------------------------------------------------------

def test_keys(backups, api_key, ro_key, project):
    missing = curl("GET", "/api/v3/checks/")
    assert (missing.status_code, missing.json()) == (401, {"error": "missing api key"})
    wrong = curl("GET", "/api/v3/checks/", "cr_not-a-key")
    assert (wrong.status_code, wrong.json()) == (401, {"error": "wrong api key"})
    revoked_row, revoked = ApiKey.issue(project)
    ApiKey.objects.filter(pk=revoked_row.pk).update(revoked_at=T0)
    assert curl("GET", "/api/v3/checks/", revoked).status_code == 401
    fs = backups[0]
    # read-only keys: only the lists and single checks (and flips), as Healthchecks
    for method, path in (("POST", f"/api/v3/checks/{fs.uuid}/pause"),
                         ("DELETE", f"/api/v3/checks/{fs.uuid}"),
                         ("GET", f"/api/v3/checks/{fs.uuid}/pings/"),
                         ("GET", "/api/v3/channels/")):
        resp = curl(method, path, ro_key, data="" if method == "POST" else None)
        assert (resp.status_code, resp.json()) == (401, {"error": "this API key is read-only"})
    assert curl("GET", f"/api/v3/checks/{fs.uuid}/flips/", ro_key).status_code == 200
    assert Monitor.objects.get(pk=fs.pk).paused is False


def test_api_key_in_the_body(backups, api_key):
    fs = backups[0]
    resp = curl("POST", f"/api/v3/checks/{fs.uuid}/pause",
                data=json.dumps({"api_key": api_key}))
    assert resp.status_code == 200 and resp.json()["status"] == "paused"


def test_bad_bodies(backups, api_key):
    fs = backups[0]
    path = f"/api/v3/checks/{fs.uuid}/pause"
    assert curl("POST", path, api_key, data="{nope").json() == {
        "error": "could not parse request body"}
    resp = curl("POST", path, api_key, data="[1]")
    assert (resp.status_code, resp.json()) == (
        400, {"error": "json validation error: value is not an object"})
    assert Monitor.objects.get(pk=fs.pk).paused is False


def test_another_tenants_check_is_not_found(api_key):
    other = new_project("other")
    theirs = Monitor.objects.create(project=other, name="x", slug="x", period=s(60), grace=s(1))
    for method, path in (("GET", f"/api/v3/checks/{theirs.uuid}"),
                         ("POST", f"/api/v3/checks/{theirs.uuid}/pause"),
                         ("DELETE", f"/api/v3/checks/{theirs.uuid}"),
                         ("GET", f"/api/v3/checks/{theirs.uuid}/flips/"),
                         ("GET", f"/api/v3/checks/{hc_api.unique_key(theirs)}")):
        resp = curl(method, path, api_key, data="" if method == "POST" else None)
        assert (resp.status_code, resp.json()) == (404, {"error": "not found"}), path
    assert Monitor.objects.get(pk=theirs.pk).paused is False
    assert curl("GET", "/api/v3/checks/", api_key).json() == {"checks": []}


def test_unknown_paths_and_methods(api_key):
    assert curl("GET", "/api/v3/badges/", api_key).json() == {"error": "not found"}
    resp = curl("PUT", "/api/v3/checks/", api_key, data="{}")
    assert (resp.status_code, resp.json()) == (405, {"error": "method not allowed"})
    options = curl("OPTIONS", "/api/v3/checks/")
    assert options.status_code == 204 and options["Access-Control-Allow-Origin"] == "*"


def test_rate_limit(settings, api_key):
    settings.CRONRADAR_API_RATE = "2/min"
    assert [curl("GET", "/api/v3/channels/", api_key).status_code for _ in range(3)] == [
        200, 200, 429]
    resp = curl("GET", "/api/v3/channels/", api_key)
    assert resp.json() == {"error": "rate limit exceeded"} and int(resp["Retry-After"]) > 0


def test_list_filters(backups, api_key):
    names = lambda q: [c["name"] for c in curl("GET", "/api/v3/checks/" + q,  # noqa: E731
                                                 api_key).json()["checks"]]
    assert names("?tag=backup") == ["Filesystem Backup"]
    assert names("?tag=backup&tag=db") == []
    assert names("?tag=db&tag=production") == ["Database Backup"]
    assert names("?slug=database-backup") == ["Database Backup"]
    assert names("?slug=nothing") == []


def test_flip_filters(make_monitor, api_key, monkeypatch):
    m = make_monitor(period=s(3600), grace=s(60))
    ingest(m.pk, PingInput("fail", exit_status=1), T0 + s(10))
    ingest(m.pk, PingInput("success"), T0 + s(70))
    url = f"/api/v3/checks/{m.uuid}/flips/"
    ups = lambda q: [f["up"] for f in curl("GET", url + q, api_key).json()["flips"]]  # noqa
    start = int((T0 + s(10)).timestamp())
    assert ups(f"?start={start + 1}") == [1]
    assert ups(f"?end={start + 1}") == [0]
    assert ups(f"?start={start}&end={start + 60}") == [0]
    assert ups(f"?seconds={30 * 60 - 69}") == [1]  # NOW is T0 + 30 min
    for bad in ("?start=x", "?end=-1", "?seconds=31536001", f"?start={10**10 + 1}"):
        assert curl("GET", url + bad, api_key).status_code == 400, bad


# --- the mapping functions (explicit clock, exact values) -----------------------------------

def test_check_json_exact(make_monitor, project, settings):
    settings.CRONRADAR_BASE_URL = "https://cr.example.com"
    m = make_monitor(name="Backups", slug="backups", tags=["prod", "www"], period=s(3600),
                     grace=s(60), methods="POST")
    ingest(m.pk, PingInput("success", method="POST"), T0 + s(5))
    m.refresh_from_db()
    ch = Channel.objects.create(project=project, kind="teams", config={"url": "https://x.test"})
    url = f"https://cr.example.com/api/v3/checks/{m.uuid}"
    assert hc_api.check_json(m, T0 + s(10), readonly=False, running=False,
                             incident_open=False, channels=[ch]) == {
        "name": "Backups", "slug": "backups", "tags": "prod www", "desc": "", "grace": 60,
        "n_pings": 1, "status": "up", "started": False,
        "last_ping": "2026-01-05T12:00:05+00:00",
        "next_ping": hc_api.isostring(m.next_expected_at), "manual_resume": True,
        "methods": "POST", "subject": "", "subject_fail": "", "start_kw": "", "success_kw": "",
        "failure_kw": "", "filter_subject": False, "filter_body": False,
        "filter_http_body": False, "filter_default_fail": False,
        "badge_url": f"https://cr.example.com/badge/{project.badge_key}/backups.svg",
        "uuid": str(m.uuid), "ping_url": f"https://cr.example.com/ping/{m.uuid}",
        "update_url": url, "pause_url": url + "/pause", "resume_url": url + "/resume",
        "channels": str(ch.uuid), "timeout": 3600, "tz": "UTC"}
    assert m.next_expected_at == T0 + s(3605)


@pytest.mark.parametrize("case, expected", [
    ("new", "new"), ("up", "up"), ("late", "grace"), ("past_grace", "down"),
    ("incident", "down"), ("paused", "paused")])
def test_status(make_monitor, case, expected):
    m = make_monitor(period=s(60), grace=s(30), paused=case == "paused")
    if case != "new":
        ingest(m.pk, PingInput("success"), T0)
        m.refresh_from_db()
    at = {"late": T0 + s(70), "past_grace": T0 + s(100)}.get(case, T0 + s(10))
    assert hc_api.status(m, at, incident_open=case == "incident") == expected


def test_next_ping_only_when_up_or_in_grace(make_monitor):
    m = make_monitor(period=s(60), grace=s(30))
    args = dict(readonly=False, running=False, channels=[])
    assert hc_api.check_json(m, T0, incident_open=False, **args)["next_ping"] is None  # new
    ingest(m.pk, PingInput("success"), T0)
    m.refresh_from_db()
    assert hc_api.check_json(m, T0 + s(70), incident_open=False, **args)["next_ping"] == \
        "2026-01-05T12:01:00+00:00"
    assert hc_api.check_json(m, T0 + s(10), incident_open=True, **args)["next_ping"] is None


def test_started_is_a_running_job_on_its_slots_status(make_monitor):
    m = make_monitor(period=s(60), grace=s(30))
    ingest(m.pk, PingInput("start"), T0)
    m.refresh_from_db()
    args = dict(readonly=False, running=True, incident_open=False, channels=[])
    got = hc_api.check_json(m, T0 + s(5), completed=False, **args)
    # Healthchecks' status follows completed pings: a start alone leaves it new
    assert (got["status"], got["started"], got["next_ping"]) == ("new", True, None)
    ingest(m.pk, PingInput("success"), T0 + s(10))
    ingest(m.pk, PingInput("start"), T0 + s(70))
    m.refresh_from_db()
    got = hc_api.check_json(m, T0 + s(75), completed=True, **args)
    assert (got["status"], got["started"]) == ("up", True)


def test_a_started_check_reads_new_until_a_ping_completes(make_monitor, api_key):
    m = make_monitor(period=s(60), grace=s(30))
    ingest(m.pk, PingInput("start"), NOW - s(5))
    got = curl("GET", f"/api/v3/checks/{m.uuid}", api_key).json()
    assert (got["status"], got["started"], got["next_ping"]) == ("new", True, None)
    ingest(m.pk, PingInput("success"), NOW - s(1))
    got = curl("GET", f"/api/v3/checks/{m.uuid}", api_key).json()
    assert (got["status"], got["started"], got["next_ping"]) == (
        "up", False, hc_api.isostring(NOW + s(55)))  # a period from the start


def test_a_resumed_check_is_new_until_its_next_ping(make_monitor, api_key):
    m = make_monitor(period=s(60), grace=s(30))
    ingest(m.pk, PingInput("success"), NOW - s(10))
    curl("POST", f"/api/v3/checks/{m.uuid}/pause", api_key, data="")
    got = curl("POST", f"/api/v3/checks/{m.uuid}/resume", api_key, data="").json()
    assert (got["status"], got["last_ping"], got["next_ping"]) == ("new", None, None)
    assert curl("GET", f"/api/v3/checks/{m.uuid}", api_key).json()["status"] == "new"
    ingest(m.pk, PingInput("success"), NOW)
    got = curl("GET", f"/api/v3/checks/{m.uuid}", api_key).json()
    assert (got["status"], got["next_ping"]) == ("up", hc_api.isostring(NOW + s(60)))


def test_an_interval_check_keeps_its_tz(make_monitor, api_key):
    m = make_monitor(period=s(3600), grace=s(600))
    got = curl("POST", f"/api/v3/checks/{m.uuid}", api_key,
               data=json.dumps({"tz": "Europe/Riga"})).json()
    assert (got["tz"], got["timeout"]) == ("Europe/Riga", 3600)
    assert Monitor.objects.get(pk=m.pk).timezone == "Europe/Riga"


@pytest.mark.parametrize("unique", [["foo"], "name"])
def test_unique_is_validated_on_update_as_on_create(make_monitor, api_key, unique):
    m = make_monitor(name="a", period=s(3600), grace=s(600))
    body = json.dumps({"name": "b", "unique": unique})
    message = ("json validation error: unique is not an array" if unique == "name" else
               "json validation error: an item in 'unique' has unexpected value")
    for path in ("/api/v3/checks/", f"/api/v3/checks/{m.uuid}"):
        resp = curl("POST", path, api_key, data=body)
        assert (resp.status_code, resp.json()) == (400, {"error": message})
    assert Monitor.objects.get(pk=m.pk).name == "a"


def test_what_a_get_answered_can_be_sent_back(make_monitor, api_key):
    """An interval monitor made elsewhere (a 3 s period, a 1 s grace: below
    Healthchecks' 60 s minimum) takes its own values back; a new short one is
    refused still."""
    m = make_monitor(period=s(3), grace=s(1))
    read = curl("GET", f"/api/v3/checks/{m.uuid}", api_key).json()
    assert (read["timeout"], read["grace"]) == (3, 1)
    back = {k: read[k] for k in ("name", "slug", "tags", "desc", "timeout", "grace", "tz",
                                 "methods", "channels")}
    resp = curl("POST", f"/api/v3/checks/{m.uuid}", api_key, data=json.dumps(back))
    assert resp.status_code == 200 and (resp.json()["timeout"], resp.json()["grace"]) == (3, 1)
    resp = curl("POST", f"/api/v3/checks/{m.uuid}", api_key, data=json.dumps({"timeout": 4}))
    assert resp.status_code == 400
    assert resp.json()["error"].startswith("json validation error: timeout must be a whole")


def test_flips_exact():
    inc = [SimpleNamespace(opened_at=T0, resolved_at=T0 + s(60)),
           SimpleNamespace(opened_at=T0 + s(120), resolved_at=None)]
    assert hc_api.flips(inc) == [{"timestamp": "2026-01-05T12:02:00+00:00", "up": 0},
                                 {"timestamp": "2026-01-05T12:01:00+00:00", "up": 1},
                                 {"timestamp": "2026-01-05T12:00:00+00:00", "up": 0}]
    assert hc_api.flips(inc, since=T0 + s(60), until=T0 + s(120)) == [
        {"timestamp": "2026-01-05T12:01:00+00:00", "up": 1}]


def test_flip_window():
    q = {"start": "1767614400", "end": "1767618000"}
    assert hc_api.flip_window(q, T0) == (T0, T0 + s(3600))
    assert hc_api.flip_window({"seconds": "60"}, T0) == (T0 - s(60), None)
    assert hc_api.flip_window({"start": "1767614400", "seconds": "60"}, T0 + s(30)) == (
        T0, None)
    with pytest.raises(hc_api.HcError) as e:
        hc_api.flip_window({"seconds": "1.5"}, T0)
    assert (e.value.status, e.value.message) == (
        400, "invalid seconds: a whole number from 0 to 31536000")


def test_channel_kinds(project):
    assert set(hc_api.KINDS) == set(Channel.Kind.values)
    assert {k: hc_api.KINDS[k] for k in ("pagerduty", "teams")} == {"pagerduty": "pd",
                                                                      "teams": "msteams"}
    ch = Channel.objects.create(project=project, kind="opsgenie", name="", config={})
    assert hc_api.channel_json(ch) == {"id": str(ch.uuid), "name": "", "kind": "opsgenie"}


def test_ping_numbers_name_one_ping_for_good(make_monitor, api_key):
    m = make_monitor(period=s(3600), grace=s(60))
    first = ingest(m.pk, PingInput("success"), T0)
    url = f"/api/v3/checks/{m.uuid}/pings/"
    assert [p["n"] for p in curl("GET", url, api_key).json()["pings"]] == [first.pk]
    log = ingest(m.pk, PingInput("log"), T0 + s(1))  # not counted in n_pings
    second = ingest(m.pk, PingInput("success"), T0 + s(2))
    assert [(p["type"], p["n"]) for p in curl("GET", url, api_key).json()["pings"]] == [
        ("success", second.pk), ("log", log.pk), ("success", first.pk)]
    assert first.pk < log.pk < second.pk


def test_channels_string_follows_the_monitors_alerting(backups, api_key, project):
    fs, db = backups
    deleted = Channel.objects.create(project=project, kind="slack", config={}, deleted_at=T0)
    Alerting.objects.get(monitor=fs).channels.add(deleted)
    got = {c["name"]: c["channels"] for c in curl("GET", "/api/v3/checks/",
                                                  api_key).json()["checks"]}
    live = sorted(str(c.uuid) for c in Channel.objects.filter(deleted_at__isnull=True))
    assert got == {"Filesystem Backup": ",".join(live), "Database Backup": ",".join(live)}
    assert Incident.objects.count() == 0


# --- create and update ------------------------------------------------------------------

EXAMPLE = {"name": "Backups", "tags": "prod www", "timeout": 3600, "grace": 60}


def test_create_example(api_key, project):
    resp = curl("POST", "/api/v3/checks/", api_key, data=json.dumps(EXAMPLE))
    assert resp.status_code == 201
    got = resp.json()
    assert set(got) == SIMPLE
    assert {k: got[k] for k in ("name", "slug", "tags", "timeout", "grace", "status",
                                "channels", "desc", "methods", "n_pings")} == {
        "name": "Backups", "slug": "backups", "tags": "prod www", "timeout": 3600,
        "grace": 60, "status": "new", "channels": "", "desc": "", "methods": "", "n_pings": 0}
    m = Monitor.objects.get(uuid=got["uuid"])
    assert (m.project, m.kind, m.period, m.grace, m.tags) == (
        project, "interval", s(3600), s(60), ["prod", "www"])
    assert Alerting.objects.get(monitor=m).all_channels is False  # no channels, as Healthchecks


def test_create_example_with_the_key_in_the_body(api_key):
    resp = curl("POST", "/api/v3/checks/", data=json.dumps({"api_key": api_key, **EXAMPLE}))
    assert resp.status_code == 201 and set(resp.json()) == SIMPLE


def test_update_example(make_monitor, api_key):
    m = make_monitor(name="Old", slug="old", period=s(60), grace=s(30), tags=["x"])
    url = f"/api/v3/checks/{m.uuid}"
    resp = curl("POST", url, api_key, data=json.dumps(EXAMPLE))
    assert resp.status_code == 200 and set(resp.json()) == SIMPLE
    m.refresh_from_db()
    assert (m.name, m.slug, m.tags, m.period, m.grace) == (
        "Backups", "old", ["prod", "www"], s(3600), s(60))  # v3: the slug stays
    other = curl("POST", url, data=json.dumps({"api_key": api_key, **EXAMPLE, "desc": "d"}))
    assert other.status_code == 200 and other.json()["desc"] == "d"
    # keys left out keep their values; a schedule wins over a timeout
    cron = curl("POST", url, api_key, data=json.dumps({"schedule": "0,30 * * * *",
                                                       "tz": "Europe/Riga", "timeout": 60}))
    assert cron.status_code == 200 and set(cron.json()) == CRON
    m.refresh_from_db()
    assert (m.kind, m.schedule, m.timezone, m.name, m.description) == (
        "cron", "0,30 * * * *", "Europe/Riga", "Backups", "d")


def test_create_defaults_and_made_names(api_key):
    empty = curl("POST", "/api/v3/checks/", api_key, data="")
    assert empty.status_code == 201
    m = Monitor.objects.get(uuid=empty.json()["uuid"])
    assert (m.name, m.period, m.grace) == (str(m.uuid), s(86400), s(3600))
    first = curl("POST", "/api/v3/checks/", api_key, data=json.dumps({"name": "Backups"}))
    second = curl("POST", "/api/v3/checks/", api_key, data=json.dumps({"name": "Backups"}))
    blank = curl("POST", "/api/v3/checks/", api_key, data=json.dumps({"name": "Backups",
                                                                       "slug": ""}))
    assert first.json()["slug"] == "backups"
    # Healthchecks allows two checks one slug; CronRadar's slugs are unique in a project
    assert second.json()["slug"] == "backups-" + second.json()["uuid"][:8]
    assert blank.json()["slug"] == "backups-" + blank.json()["uuid"][:8]


def test_a_chosen_uuid_and_a_status_are_not_part_of_the_post(api_key):
    chosen = "7918b17b-a745-4db1-8575-9d2e07c97f79"
    resp = curl("POST", "/api/v3/checks/", api_key,
                data=json.dumps({"name": "a", "uuid": chosen, "status": "paused"}))
    assert resp.status_code == 201
    assert resp.json()["uuid"] != chosen and resp.json()["status"] == "new"


def test_unique_upsert(make_monitor, api_key):
    m = make_monitor(name="Backups", slug="backups", period=s(3600), grace=s(60))
    body = {"name": "Backups", "tags": "prod", "grace": 120, "unique": ["name"]}
    found = curl("POST", "/api/v3/checks/", api_key, data=json.dumps(body))
    assert found.status_code == 200 and found.json()["uuid"] == str(m.uuid)
    m.refresh_from_db()
    assert (m.tags, m.grace) == (["prod"], s(120))
    # every unique field must match; one the body leaves out: a new check
    assert curl("POST", "/api/v3/checks/", api_key, data=json.dumps(
        {**body, "unique": ["name", "timeout"], "timeout": 60})).status_code == 201
    assert curl("POST", "/api/v3/checks/", api_key, data=json.dumps(
        {"tags": "prod", "unique": ["name"]})).status_code == 201
    again = curl("POST", "/api/v3/checks/", api_key, data=json.dumps(
        {"name": "Backups", "grace": 120, "unique": ["name", "grace", "tags"], "tags": "prod"}))
    assert again.status_code == 200 and again.json()["uuid"] == str(m.uuid)
    assert Monitor.objects.filter(name="Backups", deleted_at__isnull=True).count() == 2
    for bad, message in (("name", "unique is not an array"),
                         (["desc"], "an item in 'unique' has unexpected value")):
        resp = curl("POST", "/api/v3/checks/", api_key, data=json.dumps({"unique": bad}))
        assert resp.json() == {"error": "json validation error: " + message}


def test_channels_on_create_and_update(backups, api_key, project):
    email, phone = Channel.objects.order_by("pk")
    fs = backups[0]
    url = f"/api/v3/checks/{fs.uuid}"
    by_name = curl("POST", url, api_key, data=json.dumps({"channels": "My Phone"}))
    assert by_name.json()["channels"] == str(phone.uuid)
    both = curl("POST", url, api_key, data=json.dumps(
        {"channels": f"{email.uuid},My Phone"}))
    assert both.json()["channels"] == ",".join(sorted([str(email.uuid), str(phone.uuid)]))
    assert curl("POST", url, api_key, data=json.dumps({"channels": ""})).json()["channels"] == ""
    star = curl("POST", "/api/v3/checks/", api_key, data=json.dumps({"channels": "*"}))
    assert star.json()["channels"] == ",".join(sorted([str(email.uuid), str(phone.uuid)]))
    Channel.objects.create(project=project, kind="slack", name="My Phone", config={})
    for given, message in (("nope", "invalid channel identifier: nope"),
                           (f"{email.uuid},", "empty channel identifier"),
                           ("My Phone", "non-unique channel identifier: My Phone"),
                           (3, "json validation error: channels is not a string")):
        resp = curl("POST", url, api_key, data=json.dumps({"channels": given}))
        assert (resp.status_code, resp.json()) == (400, {"error": message}), given


@pytest.mark.parametrize("body, message", [
    ({"timeout": 30}, "json validation error: timeout must be a whole number of seconds from "
                      "60 to 31536000, got 30"),
    ({"grace": "60"}, "json validation error: grace must be a whole number of seconds from 60 "
                      "to 31536000, got '60'"),
    ({"methods": "GET"}, 'json validation error: methods \'GET\': "" or "POST"'),
    ({"schedule": "*-*~1 12:00"}, "json validation error: schedule '*-*~1 12:00' is an "
                                   "OnCalendar expression: CronRadar reads 5-field cron "
                                   "expressions; write it as one"),
    ({"schedule": "61 * * * *"}, None),
    ({"schedule": "0 3 * * *", "tz": "Mars/Olympus"}, None),
    ({"success_kw": "SUCCESS", "filter_http_body": True},
     "json validation error: not mapped: filter_http_body, success_kw"),
    ({"tags": "x" * 51}, None),
])
def test_bad_create_bodies(api_key, body, message):
    resp = curl("POST", "/api/v3/checks/", api_key, data=json.dumps(body))
    assert resp.status_code == 400
    assert resp.json()["error"].startswith("json validation error: ")
    if message is not None:
        assert resp.json() == {"error": message}
    assert Monitor.objects.count() == 0


def test_serializer_errors_name_healthchecks_fields(api_key):
    resp = curl("POST", "/api/v3/checks/", api_key, data=json.dumps(
        {"schedule": "0 3 * * *", "tz": "Mars/Olympus"}))
    assert resp.json()["error"].startswith("json validation error: tz: ")


def test_read_only_keys_cannot_create_or_update(backups, ro_key):
    for path in ("/api/v3/checks/", f"/api/v3/checks/{backups[0].uuid}"):
        resp = curl("POST", path, ro_key, data=json.dumps(EXAMPLE))
        assert (resp.status_code, resp.json()) == (401, {"error": "this API key is read-only"})
    assert Monitor.objects.count() == 2


def test_first_error():
    assert hc_api.first_error({"timezone": ["unknown time zone 'X'"]}) == (
        "json validation error: tz: unknown time zone 'X'")
    assert hc_api.first_error({"alerting": {"renotify": ["too short"]}}) == (
        "json validation error: alerting: too short")
    assert hc_api.first_error(["nope"]) == "json validation error: nope"


def test_the_list_reads_the_same_few_tables_however_many_checks(make_monitor, project,
                                                                 api_key):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    email = Channel.objects.create(project=project, kind="email", config={"to": ["a@x.test"]})

    def statements() -> int:
        with CaptureQueriesContext(connection) as seen:
            assert curl("GET", "/api/v3/checks/", api_key).status_code == 200
        return len(seen.captured_queries)

    make_monitor(channels=[email])
    make_monitor(all_channels=True)
    statements()  # the key's first use also writes its last_used_at
    two = statements()
    for _ in range(5):
        make_monitor(channels=[email])
        make_monitor(all_channels=True)
    assert statements() == two


def test_not_in_the_openapi_schema():
    schema = Client().get("/api/v1/schema/?format=json").json()
    assert schema["paths"] and not [p for p in schema["paths"] if p.startswith("/api/v3/")]


def test_bad_keys_from_one_address_are_refused_without_a_lookup(
        project, api_key, monkeypatch, django_assert_num_queries):
    """The key check is the API's own (accounts.throttle): past its budget of bad
    keys an address gets 429 with Retry-After, before any lookup."""
    from accounts import throttle

    monkeypatch.setattr(throttle, "timezone", SimpleNamespace(now=lambda: NOW + s(15)))
    for n in range(throttle.KEY_FAILURES):
        assert curl("GET", "/api/v3/checks/", f"cr_bad{n}").status_code == 401
    with django_assert_num_queries(0):
        over = curl("GET", "/api/v3/checks/", "cr_bad")
    assert (over.status_code, over["Retry-After"], over.json()) == (429, "45", {
        "error": "too many invalid API keys from your address: try again in 45 seconds"})
    assert curl("GET", "/api/v3/checks/", api_key).status_code == 429  # that address waits


def test_list_checks_stays_unpaged(make_monitor, api_key):
    """/api/v1/monitors/ pages by 100; Healthchecks' list has no paging."""
    for i in range(101):
        make_monitor(name=f"job-{i}", period=s(3600))
    resp = curl("GET", "/api/v3/checks/?limit=5", api_key)
    assert (len(resp.json()["checks"]), resp.has_header("Link")) == (101, False)


def test_a_desc_over_10000_characters_is_refused_not_cut(api_key):
    """Healthchecks sets no bound on ``desc``; CronRadar's is 10,000 characters, and
    a longer one is a 400 naming ``desc`` (nothing stored), not silently cut."""
    resp = curl("POST", "/api/v3/checks/", api_key,
                data=json.dumps({"name": "Backups", "desc": "x" * 10_001}))
    assert (resp.status_code, resp.json()) == (400, {
        "error": "json validation error: desc: at most 10,000 characters (this one has "
                 "10,001); Healthchecks sets no bound, CronRadar does"})
    assert not Monitor.objects.exists()
    ok = curl("POST", "/api/v3/checks/", api_key,
              data=json.dumps({"name": "Backups", "desc": "x" * 10_000}))
    assert ok.status_code == 201 and len(ok.json()["desc"]) == 10_000
