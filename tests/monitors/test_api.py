"""monitors.api: monitor validation and fields, filters, pause/resume, upsert by slug,
runs and pings."""
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from monitors import evaluator
from monitors.models import Monitor, Ping, PingUsage, Run
from monitors.pings import PingInput, ingest
from tests.conftest import T0, S, new_project

pytestmark = pytest.mark.django_db


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
    ({"kind": "interval", "period": "abc"}, "period", "must be a number"),
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


def test_ping_bodies_as_text_and_as_exact_bytes(api, make_monitor):
    m = make_monitor()
    cut = "éé".encode() + "é".encode()[:1]  # truncation split the third character
    ingest(m.pk, PingInput("success", body=cut, body_size=6), T0)
    ingest(m.pk, PingInput("success", body=b"\xff\x00ok\xc3", body_size=5), T0 + timedelta(1))
    binary, truncated = api.get(f"/api/v1/monitors/{m.pk}/pings/").json()
    assert (truncated["body"], truncated["body_base64"], truncated["body_truncated"]) == (
        "éé", "w6nDqcM=", True)
    # not truncated: a trailing partial character is invalid, and replaced
    assert (binary["body"], binary["body_base64"]) == ("\ufffd\x00ok\ufffd", "/wBva8M=")


@pytest.mark.parametrize(("value", "ok"), [
    (2.5, True), ("3", False), (100, True), (None, True), (1.01, True),
    (1, False), (1.0, False), (0.5, False), (-2, False), (100.01, False), (1000, False),
    (1.001, False), ("fast", False),
])
def test_slow_factor_through_the_api(api, value, ok):
    made = api.post("/api/v1/monitors/", {"name": "j", "period": 60, "grace": 5},
                    format="json").json()
    assert made["slow_factor"] is None
    resp = api.patch(f"/api/v1/monitors/{made['id']}/", {"slow_factor": value}, format="json")
    assert resp.status_code == (200 if ok else 400), resp.json()
    if ok:
        expected = None if value is None else float(value)
        assert resp.json()["slow_factor"] == expected
        assert Monitor.objects.get(pk=made["id"]).slow_factor == (
            None if value is None else Decimal(str(value)))
    else:
        expected = {1.001: "at most 2 decimal places", "fast": "must be a number",
                    "3": "must be a number"}
        assert resp.json()["slow_factor"] == [
            expected.get(value, "must be more than 1 and at most 100 (or null: off)")]


GAP_WARNING = ("grace 600 s is at least the shortest gap between fire times (300 s): several "
               "slots are open at once; a first ping goes to the latest of them that has no "
               "run, and an earlier one without a run is reported missed at its own slot + "
               "grace")


def test_a_grace_covering_the_gap_between_fire_times_is_a_warning(api, monkeypatch):
    monkeypatch.setattr(timezone, "now", lambda: T0)
    resp = api.post("/api/v1/monitors/", {"name": "sync", "kind": "cron",
                                          "schedule": "*/5 * * * *", "grace": 600},
                    format="json")
    assert resp.status_code == 201, resp.json()
    body = resp.json()
    assert body["warnings"] == [{"code": "grace_covers_gap", "message": GAP_WARNING}]
    url = f"/api/v1/monitors/{body['id']}/"
    assert api.get(url).json()["warnings"] == body["warnings"]
    # sent back (ignored), with a grace shorter than the gap: no warning
    resp = api.patch(url, {"grace": 299, "warnings": []}, format="json")
    assert (resp.status_code, resp.json()["warnings"]) == (200, [])
    resp = api.patch(url, {"grace": 300}, format="json")
    assert [w["code"] for w in resp.json()["warnings"]] == ["grace_covers_gap"]


@pytest.mark.parametrize("grace,codes", [(59, []), (60, ["grace_covers_gap"])])
def test_an_interval_monitors_grace_covering_its_period_is_a_warning(api, grace, codes):
    resp = api.post("/api/v1/monitors/", {"name": "beat", "kind": "interval", "period": 60,
                                          "grace": grace}, format="json")
    assert resp.status_code == 201, resp.json()
    assert [w["code"] for w in resp.json()["warnings"]] == codes
    if codes:
        assert resp.json()["warnings"][0]["message"] == (
            "grace 60 s is at least the period (60 s): a run can be left out without an "
            "alert, since a first ping within grace is the expected run and the next one "
            "counts from it")


def test_the_shortest_gap_is_measured_over_the_next_1000_fire_times(api, monkeypatch):
    # 03:30 daily in Europe/Berlin, with a 23 h grace: the gaps are 24 h except
    # around a DST change, when one is 23 h (spring) and one 25 h (autumn); the
    # next 1,000 fire times from Jan 5 include one
    monkeypatch.setattr(timezone, "now", lambda: T0)
    resp = api.post("/api/v1/monitors/", {
        "name": "nightly", "kind": "cron", "schedule": "30 3 * * *",
        "timezone": "Europe/Berlin", "grace": 23 * 3600}, format="json")
    assert resp.json()["warnings"][0]["message"].startswith(
        "grace 82800 s is at least the shortest gap between fire times (82800 s)")


CHOSEN = "31365bce-8da9-4729-8ff3-aaa71d56b712"
UUID_TAKEN = ["this UUID cannot be used: choose another one, or leave it out for a new one"]


def _other_tenants_api(name="globex"):
    from rest_framework.test import APIClient

    from accounts.models import ApiKey

    other = new_project(name)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {ApiKey.issue(other)[1]}")
    return other, client


def test_a_new_monitor_may_be_given_its_uuid_by_post_and_by_slug(api, settings):
    settings.CRONRADAR_SIGNUP = "closed"
    resp = api.post("/api/v1/monitors/", {"name": "backup", "kind": "interval", "period": 3600,
                                          "grace": 60, "uuid": CHOSEN.upper()}, format="json")
    assert resp.status_code == 201, resp.json()
    assert resp.json()["uuid"] == CHOSEN
    assert resp.json()["ping_url"] == f"{settings.CRONRADAR_BASE_URL}/ping/{CHOSEN}"
    other = "803f680d-e89b-492b-82ef-2be7b774a92d"
    resp = api.put("/api/v1/monitors/by-slug/db/", {"name": "db", "period": 60, "grace": 60,
                                                     "uuid": other}, format="json")
    assert (resp.status_code, resp.json()["uuid"]) == (201, other)
    assert str(Monitor.objects.get(slug="db").uuid) == other


def test_the_uuid_setting_defaults_to_closed(api, settings):
    del settings.CRONRADAR_SIGNUP  # not set: another part of issue 20 adds it
    resp = api.post("/api/v1/monitors/", {"name": "b", "period": 60, "grace": 60,
                                          "uuid": CHOSEN}, format="json")
    assert (resp.status_code, resp.json()["uuid"]) == (201, CHOSEN)


@pytest.mark.parametrize("signup", ["open", "domain:example.com"])
def test_a_chosen_uuid_is_refused_unless_sign_up_is_closed(api, settings, signup):
    settings.CRONRADAR_SIGNUP = signup
    resp = api.post("/api/v1/monitors/", {"name": "b", "period": 60, "grace": 60,
                                          "uuid": CHOSEN}, format="json")
    assert resp.status_code == 400
    assert resp.json() == {"uuid": [
        "a chosen uuid needs sign-up closed on this installation (CRONRADAR_SIGNUP=closed), or "
        "manage.py importhealthchecks with the Healthchecks API key of the check: leave it out "
        "for a new one"]}
    assert not Monitor.objects.exists()
    resp = api.post("/api/v1/monitors/", {"name": "b", "period": 60, "grace": 60,
                                          "uuid": None}, format="json")
    assert resp.status_code == 201  # null: none chosen


def test_a_uuid_in_use_is_refused_alike_whoever_holds_it(api, make_monitor, project):
    """Another tenant's monitor or the caller's own: the same answer (nothing revealed);
    a deleted monitor frees its UUID."""
    other, other_api = _other_tenants_api()
    theirs = Monitor.objects.create(project=other, name="t", slug="t", grace=S, period=S,
                                    uuid=CHOSEN)
    mine = make_monitor(name="mine")
    answers = [api.post("/api/v1/monitors/", {"name": "b", "period": 60, "grace": 60,
                                              "uuid": str(u)}, format="json")
               for u in (CHOSEN, mine.uuid)]
    assert [(a.status_code, a.json()) for a in answers] == [(400, {"uuid": UUID_TAKEN})] * 2
    assert other_api.put("/api/v1/monitors/by-slug/x/", {"name": "x", "period": 60, "grace": 60,
                                                         "uuid": str(mine.uuid)},
                         format="json").json() == {"uuid": UUID_TAKEN}
    evaluator.delete(theirs.pk, T0)
    resp = api.post("/api/v1/monitors/", {"name": "b", "period": 60, "grace": 60,
                                          "uuid": CHOSEN}, format="json")
    assert (resp.status_code, resp.json()["uuid"]) == (201, CHOSEN)


def test_a_uuid_taken_between_validation_and_save_is_the_same_400(api, monkeypatch):
    import monitors.api

    real, calls = monitors.api.uuid_taken, []
    # validate() misses it (another request creates it just after); create() sees it
    monkeypatch.setattr(monitors.api, "uuid_taken",
                        lambda value: bool(calls.append(value)) or len(calls) > 1 and real(value))
    Monitor.objects.create(project=new_project("globex"), name="t", slug="t", grace=S, period=S,
                           uuid=CHOSEN)
    resp = api.post("/api/v1/monitors/", {"name": "b", "period": 60, "grace": 60,
                                          "uuid": CHOSEN}, format="json")
    monkeypatch.undo()
    assert (resp.status_code, resp.json()) == (400, {"uuid": UUID_TAKEN})


def test_a_monitors_uuid_cannot_be_changed_but_its_own_is_ignored(api, make_monitor):
    m = make_monitor(name="backup")
    url = f"/api/v1/monitors/{m.pk}/"
    assert api.patch(url, {"uuid": str(m.uuid), "name": "b2"}, format="json").status_code == 200
    assert api.patch(url, {"uuid": None}, format="json").status_code == 200
    resp = api.patch(url, {"uuid": CHOSEN}, format="json")
    assert (resp.status_code, resp.json()) == (400, {"uuid": [
        "cannot be changed: it is the key of the monitor's ping URLs"]})
    resp = api.put("/api/v1/monitors/by-slug/backup/", {"uuid": CHOSEN}, format="json")
    assert resp.status_code == 400
    assert Monitor.objects.get().uuid == m.uuid


def test_description_and_methods_are_writable_and_n_pings_read_only(api, make_monitor):
    resp = api.post("/api/v1/monitors/", {
        "name": "b", "period": 60, "grace": 60, "description": "Runs ~/db-backup.sh",
        "methods": "POST", "n_pings": 5}, format="json")
    assert resp.status_code == 201, resp.json()
    body = resp.json()
    assert (body["description"], body["methods"], body["n_pings"]) == (
        "Runs ~/db-backup.sh", "POST", 0)
    m = Monitor.objects.get()
    assert (m.description, m.methods, m.n_pings) == ("Runs ~/db-backup.sh", "POST", 0)
    resp = api.patch(f"/api/v1/monitors/{m.pk}/", {"methods": "GET"}, format="json")
    assert resp.status_code == 400 and "methods" in resp.json()
    resp = api.patch(f"/api/v1/monitors/{m.pk}/", {"methods": "", "description": ""},
                     format="json")
    assert (resp.json()["methods"], resp.json()["description"]) == ("", "")


def test_a_monitor_shows_its_refused_pings_this_month_and_runs_their_reason(api, make_monitor):
    from monitors.usage import month_of

    m, other = make_monitor(), make_monitor()
    PingUsage.objects.create(monitor=m, month=month_of(timezone.now()), pings=10, refused=4)
    PingUsage.objects.create(monitor=m, month=date(2000, 1, 1), pings=10, refused=9)
    Run.objects.create(monitor=m, slot_at=T0, outcome="unknown", reason="rate_limited")
    listed = {row["id"]: row["pings_refused"] for row in api.get("/api/v1/monitors/").json()}
    assert listed == {m.pk: 4, other.pk: 0}
    assert api.get(f"/api/v1/monitors/{m.pk}/").json()["pings_refused"] == 4
    [run] = api.get(f"/api/v1/monitors/{m.pk}/runs/").json()
    assert (run["outcome"], run["reason"]) == ("unknown", "rate_limited")


def test_the_monitors_list_is_paged_in_id_order_with_a_link(api, make_monitor):
    ids = [make_monitor(name=f"job-{i:03}", period=3600 * S).pk for i in range(105)]
    first = api.get("/api/v1/monitors/")
    assert [m["id"] for m in first.json()] == ids[:100]
    assert first["Link"] == (f'<http://testserver/api/v1/monitors/?cursor={ids[99]}>; '
                             'rel="next"')
    rest = api.get("/api/v1/monitors/", {"cursor": ids[99]})
    assert [m["id"] for m in rest.json()] == ids[100:]
    assert "Link" not in rest


def test_the_monitors_lists_next_link_keeps_limit_and_filters(api, make_monitor):
    now = timezone.now()
    made = [make_monitor(name=f"job-{i}", tags=["db"] if i % 2 else [], period=3600 * S,
                         paused=i % 3 == 0, created=now) for i in range(8)]
    want = [m.pk for m in made if "db" in m.tags and not m.paused]
    assert want == [made[1].pk, made[5].pk, made[7].pk]
    query = {"tag": "db", "status": "new", "q": "job", "limit": 2}
    page = api.get("/api/v1/monitors/", query)
    assert [m["id"] for m in page.json()] == want[:2]
    assert page["Link"] == ('<http://testserver/api/v1/monitors/?tag=db&status=new&q=job'
                            f'&limit=2&cursor={want[1]}>; rel="next"')
    nxt = api.get(page["Link"][1:page["Link"].index(">")])
    assert [m["id"] for m in nxt.json()] == want[2:]
    assert "Link" not in nxt


@pytest.mark.parametrize("query,error", [
    ({"limit": "0"}, {"limit": ["must be an integer from 1 to 1000"]}),
    ({"limit": "1001"}, {"limit": ["must be an integer from 1 to 1000"]}),
    ({"cursor": "x"}, {"cursor": ["not a cursor of this list: use the Link header's URL"]}),
])
def test_the_monitors_lists_limit_and_cursor_are_checked(api, query, error):
    resp = api.get("/api/v1/monitors/", query)
    assert (resp.status_code, resp.json()) == (400, error)


def test_the_monitors_list_reads_filtered_monitors_in_batches(api, make_monitor, monkeypatch):
    from monitors import api as monitors_api

    made = [make_monitor(name=f"job-{i}", tags=["db"] if i >= 5 else [], period=3600 * S)
            for i in range(8)]
    monkeypatch.setattr(monitors_api, "FILTER_BATCH", 2)
    page = api.get("/api/v1/monitors/", {"tag": "db", "limit": 2})
    assert [m["id"] for m in page.json()] == [made[5].pk, made[6].pk]
    assert page["Link"].endswith(f'cursor={made[6].pk}>; rel="next"')


def test_put_on_a_monitor_is_a_405_that_allow_does_not_list(api, make_monitor):
    m = make_monitor()
    resp = api.put(f"/api/v1/monitors/{m.pk}/", {"name": "x"}, format="json")
    assert (resp.status_code, resp.json()) == (405, {
        "detail": "use PATCH, or PUT on /monitors/by-slug/<slug>/"})
    assert resp["Allow"] == "GET, PATCH, DELETE, HEAD, OPTIONS"
    assert api.options(f"/api/v1/monitors/{m.pk}/")["Allow"] == resp["Allow"]
    assert api.options("/api/v1/monitors/")["Allow"] == "GET, POST, HEAD, OPTIONS"


@pytest.mark.parametrize("body,error", [
    ({"name": 5}, {"name": ["must be a string"]}),
    ({"slug": 12, "description": False}, {"slug": ["must be a string"],
                                          "description": ["must be a string"]}),
    ({"tags": ["db", 3]}, {"tags": ["must be a string"]}),
    ({"urgency": 1}, {"urgency": ['"1" is not a valid choice.']}),
])
def test_a_number_where_a_string_is_expected_is_a_400(api, make_monitor, body, error):
    m = make_monitor(name="job")
    resp = api.patch(f"/api/v1/monitors/{m.pk}/", body, format="json")
    assert (resp.status_code, resp.json()) == (400, error)
    assert Monitor.objects.get().name == "job"


@pytest.mark.parametrize("body,error", [
    ({"grace": "10"}, {"grace": ["must be a number"]}),
    ({"period": "60"}, {"period": ["must be a number"]}),
    ({"max_attempts": "3"}, {"max_attempts": ["must be a number"]}),
    ({"failure_threshold": "2"}, {"failure_threshold": ["must be a number"]}),
    ({"slow_factor": "2"}, {"slow_factor": ["must be a number"]}),
    ({"grace": True}, {"grace": ["must be a number"]}),
    ({"paused": "true"}, {"paused": ["must be true or false"]}),
    ({"paused": 1}, {"paused": ["must be true or false"]}),
    ({"grace": 1.5}, {"grace": ["must be a whole number of seconds"]}),
])
def test_a_json_body_takes_only_json_numbers_and_booleans(api, body, error):
    for send in (lambda b: api.post("/api/v1/monitors/", b, format="json"),
                 lambda b: api.put("/api/v1/monitors/by-slug/job/", b, format="json")):
        resp = send({"name": "job", "period": 60, "grace": 10, **body})
        assert (resp.status_code, resp.json()) == (400, error)
    assert not Monitor.objects.exists()
    resp = api.post("/api/v1/monitors/", {"name": "job", "period": 60, "grace": 10,
                                          "slow_factor": 2.5, "paused": True}, format="json")
    assert resp.status_code == 201


def test_description_holds_at_most_10000_characters(api):
    resp = api.post("/api/v1/monitors/", {"name": "a", "period": 60, "grace": 10,
                                          "description": "x" * 10_001}, format="json")
    assert (resp.status_code, resp.json()) == (400, {"description": [
        "Ensure this field has no more than 10000 characters."]})
    resp = api.post("/api/v1/monitors/", {"name": "a", "period": 60, "grace": 10,
                                          "description": "x" * 10_000}, format="json")
    assert resp.status_code == 201
    assert len(Monitor.objects.get().description) == 10_000
