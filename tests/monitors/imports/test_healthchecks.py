"""Healthchecks checks imported as monitors with their UUIDs (monitors.imports.
healthchecks): fetched from /api/v3/checks/ (httpx MockTransport, answers shaped as
Healthchecks' API documentation shows) or read from the saved answer; created,
updated, idempotent; UUIDs and slugs others have. Fixture:
tests/data/healthchecks_checks.json."""
import copy
import json
from uuid import UUID

import httpx
import pytest

from monitors import evaluator
from monitors.imports import healthchecks as hc
from monitors.imports.spec import ImportFailed, Remark
from monitors.models import Monitor
from tests.conftest import DATA, T0, S, new_project

pytestmark = pytest.mark.django_db

ANSWER = (DATA / "healthchecks_checks.json").read_text()
CHECKS = json.loads(ANSWER)["checks"]
BACKUP, DATABASE, ROTATION, REPLICA = (c["uuid"] for c in CHECKS)
URL = "https://hc.example.com"
UUID_TAKEN = ("this UUID cannot be used: choose another one, or leave it out for a new one")


def run(project, checks=None, proven=True, dry_run=False, now=T0):
    parsed, outcome = hc.import_checks(project, copy.deepcopy(CHECKS if checks is None
                                                              else checks),
                                       proven=proven, dry_run=dry_run, now=now)
    return outcome.as_dict(parsed)


def fields(m: Monitor) -> dict:
    return {f: getattr(m, f) for f in (
        "uuid", "name", "slug", "tags", "description", "kind", "schedule", "timezone",
        "cron_semantics", "period", "grace", "paused", "methods")}


def test_every_check_becomes_a_monitor_with_its_uuid(project):
    answer = run(project)
    assert [(c["slug"], c["where"]) for c in answer["created"]] == [
        ("filesystem-backup", "check 1 (Filesystem Backup)"),
        ("database-backup", "check 2 (Database Backup)"),
        ("log-rotation-0a3e1a4f", "check 3 (Log rotation)"),
        ("database-backup-replica-5d2c6b0e", "check 4 (Database Backup (replica))")]
    assert answer["created"][0]["monitor"] == {
        "uuid": BACKUP, "name": "Filesystem Backup", "slug": "filesystem-backup",
        "description": "Runs incremental backup every hour", "tags": ["backup", "fs"],
        "kind": "interval", "timezone": "UTC", "cron_semantics": "debian", "grace": 600,
        "paused": False, "methods": "", "schedule": "", "period": 3600}
    assert (answer["updated"], answer["unchanged"], answer["reported"]) == ([], [], [])
    by_uuid = {str(m.uuid): m for m in Monitor.objects.filter(project=project)}
    assert fields(by_uuid[DATABASE]) == {
        "uuid": UUID(DATABASE), "name": "Database Backup", "slug": "database-backup",
        "tags": ["production", "db"], "description": "Runs ~/db-backup.sh", "kind": "cron",
        "schedule": "15 5 * * *", "timezone": "Europe/Riga", "cron_semantics": "debian",
        "period": None, "grace": 1200 * S, "paused": False, "methods": "POST"}
    assert (by_uuid[ROTATION].paused, by_uuid[ROTATION].period) == (True, 86400 * S)
    assert by_uuid[DATABASE].ping_url.endswith(f"/ping/{DATABASE}")
    c2, c3, c4 = "check 2 (Database Backup)", "check 3 (Log rotation)", \
        "check 4 (Database Backup (replica))"
    assert answer["notes"] == [
        {"where": "check 1 (Filesystem Backup)", "code": "status", "message": (
            "status up: starts as new in CronRadar and is up from its next ping (the ping "
            "history stays in Healthchecks)")},
        {"where": "check 1 (Filesystem Backup)", "code": "not_mapped", "message": (
            "channels not mapped: the monitor notifies every channel of the project (choose "
            "them in CronRadar)")},
        {"where": c2, "code": "status", "message": "status down: starts as new in CronRadar, "
         "waiting for its next ping; no incident is opened for Healthchecks' outage"},
        {"where": c2, "code": "not_mapped", "message": "not mapped: failure_kw, "
         "filter_http_body, start_kw"},
        {"where": c3, "code": "slug_made", "message": "slug 'log-rotation-0a3e1a4f': the "
         "check's slug is empty"},
        {"where": c3, "code": "status", "message": "status paused: paused in CronRadar"},
        {"where": c3, "code": "paused_auto_resume", "message": "warning: paused with "
         "manual_resume false: Healthchecks would resume it on its next ping; CronRadar keeps "
         "it paused until you resume it"},
        {"where": c4, "code": "status", "message": "status new: CronRadar's is new too, until "
         "the first ping"},
        {"where": c4, "code": "slug_made", "message": "slug 'database-backup-replica-5d2c6b0e': "
         "another check has the slug 'database-backup'"}]


def test_running_it_twice_changes_nothing(project):
    run(project)
    before = [(fields(m), m.next_expected_at, m.next_evaluation_at)
              for m in Monitor.objects.order_by("pk")]
    answer = run(project, now=T0 + 3600 * S)
    assert (answer["created"], answer["updated"]) == ([], [])
    assert [u["slug"] for u in answer["unchanged"]] == [
        "filesystem-backup", "database-backup", "log-rotation-0a3e1a4f",
        "database-backup-replica-5d2c6b0e"]
    assert [(fields(m), m.next_expected_at, m.next_evaluation_at)
            for m in Monitor.objects.order_by("pk")] == before


def test_a_changed_check_updates_its_monitor_by_uuid(project):
    run(project)
    checks = copy.deepcopy(CHECKS)
    checks[0].update(name="FS Backup", slug="fs-backup", grace=900, tags="backup nightly",
                     status="paused", manual_resume=True)
    answer = run(project, checks, now=T0 + 60 * S)
    m = Monitor.objects.get(uuid=BACKUP)
    assert answer["updated"] == [{"slug": "fs-backup", "where": "check 1 (FS Backup)",
                                  "id": m.pk, "changes": {
        "name": {"old": "Filesystem Backup", "new": "FS Backup"},
        "slug": {"old": "filesystem-backup", "new": "fs-backup"},
        "grace": {"old": 600, "new": 900}, "paused": {"old": False, "new": True},
        "tags": {"old": ["backup", "fs"], "new": ["backup", "fs", "nightly"]}}}]
    assert (m.name, m.slug, m.grace, m.paused, m.tags) == (
        "FS Backup", "fs-backup", 900 * S, True, ["backup", "fs", "nightly"])
    assert len(answer["unchanged"]) == 3


def test_a_dry_run_changes_nothing(project):
    answer = run(project, dry_run=True)
    assert answer["dry_run"] is True and len(answer["created"]) == 4
    assert "id" not in answer["created"][0]
    assert not Monitor.objects.exists()


def test_a_uuid_another_project_has_is_reported_alike_and_a_taken_slug_is_made(project,
                                                                               make_monitor):
    Monitor.objects.create(project=new_project("globex"), name="t", slug="t", grace=S,
                           period=S, uuid=BACKUP)
    make_monitor(name="database-backup")  # the project's own, with another UUID
    answer = run(project)
    assert answer["reported"] == [{"where": "check 1 (Filesystem Backup)", "code": "uuid_taken",
                                   "message": f"uuid {BACKUP}: {UUID_TAKEN}"}]
    assert [c["slug"] for c in answer["created"]] == [
        "database-backup-803f680d", "log-rotation-0a3e1a4f", "database-backup-replica-5d2c6b0e"]
    assert {"where": "check 2 (Database Backup)", "code": "slug_made", "message":
            "slug 'database-backup-803f680d': another monitor of the project has the slug "
            "'database-backup'"} in answer["notes"]
    assert Monitor.objects.filter(uuid=BACKUP).get().project.name == "globex"


def test_a_uuid_twice_in_one_answer_is_imported_once(project):
    answer = run(project, [CHECKS[1], {**CHECKS[1], "name": "copy", "slug": "copy"}])
    assert [c["slug"] for c in answer["created"]] == ["database-backup"]
    assert answer["reported"] == [{"where": "check 2 (copy)", "code": "uuid_taken",
                                   "message": f"uuid {DATABASE}: an earlier check has it: not "
                                              "imported"}]


def test_a_deleted_monitor_frees_its_uuid(project, make_monitor):
    gone = make_monitor(name="old", uuid=UUID(BACKUP))
    evaluator.delete(gone.pk, T0)
    assert run(project)["created"][0]["slug"] == "filesystem-backup"
    assert Monitor.objects.filter(uuid=BACKUP, deleted_at__isnull=True).count() == 1


def test_checks_that_cannot_be_mapped_are_reported(project):
    read_only = {k: v for k, v in CHECKS[0].items() if k != "uuid"} | {"unique_key": "a6c7"}
    checks = [read_only, {**CHECKS[1], "schedule": "*-*~1 12:00"},
              {**CHECKS[1], "tz": "Mars/Olympus"}, {**CHECKS[1], "schedule": "0 0 31 2 *"},
              {"name": "x", "uuid": ROTATION, "grace": 60}, "backup"]
    answer = run(project, checks)
    assert answer["created"] == []
    database = "check {} (Database Backup)".format
    assert answer["reported"] == [
        {"where": "check 1 (Filesystem Backup)", "code": "read_only_key", "message": (
            "the check was read with a read-only API key (it has a unique_key and no uuid): use "
            "a read-write key, which gives the check's UUID and shows it is yours")},
        {"where": database(2), "code": "oncalendar", "message": "schedule '*-*~1 12:00' is an "
         "OnCalendar expression: CronRadar reads 5-field cron expressions; write it as one"},
        {"where": database(3), "code": "invalid", "message": "tz: unknown time zone "
         "'Mars/Olympus'"},
        {"where": database(4), "code": "invalid", "message": "schedule '0 0 31 2 *' never "
         "fires: no date matches its day-of-month, month and day-of-week fields"},
        {"where": "check 5 (x)", "code": "invalid", "message": "neither timeout nor schedule: "
         "no schedule to watch"},
        {"where": "check 6", "code": "invalid", "message": "a check must be a JSON object"}]


def test_a_files_uuids_need_sign_up_closed(project, settings):
    """A file proves nothing: its UUIDs are taken only where sign-up is closed; fetched
    with the Healthchecks key that owns the checks, always."""
    settings.CRONRADAR_SIGNUP = "open"
    with pytest.raises(ImportFailed, match="a file's UUIDs cannot be shown to be yours"):
        run(project, proven=False)
    assert not Monitor.objects.exists()
    assert len(run(project, proven=True)["created"]) == 4
    settings.CRONRADAR_SIGNUP = "closed"
    assert len(run(project, proven=False)["unchanged"]) == 4


def mock(status=200, body=ANSWER, seen=None):
    def answer(request):
        if seen is not None:
            seen.append(request)
        return httpx.Response(status, text=body, headers={"Content-Type": "application/json"})
    return httpx.MockTransport(answer)


def test_fetch_checks_reads_the_management_api_with_the_key():
    seen = []
    assert hc.fetch_checks(URL + "/", "KEY", mock(seen=seen)) == CHECKS
    assert [(str(r.url), r.headers["X-Api-Key"]) for r in seen] == [
        ("https://hc.example.com/api/v3/checks/", "KEY")]


@pytest.mark.parametrize("transport,message", [
    (mock(401, '{"error": "missing api key"}'), "GET https://hc.example.com/api/v3/checks/ "
     "answered 401: the API key was refused; use the project's read-write API key (Project "
     "Settings)"),
    (mock(404, "<html>"), "GET https://hc.example.com/api/v3/checks/ answered 404: not the "
     "checks (is the URL the Healthchecks site's root?)"),
    (mock(200, "<html>"), "GET https://hc.example.com/api/v3/checks/ is not JSON"),
    (mock(200, '{"check": []}'), "GET https://hc.example.com/api/v3/checks/ is not the answer "
     'of GET /api/v3/checks/: {"checks": [...]}'),
])
def test_fetch_checks_says_what_went_wrong(transport, message):
    with pytest.raises(ImportFailed) as failed:
        hc.fetch_checks(URL, "KEY", transport)
    assert str(failed.value).startswith(message)


def test_fetch_checks_when_healthchecks_is_unreachable():
    def down(request):
        raise httpx.ConnectError("connection refused")

    with pytest.raises(ImportFailed, match="ConnectError: connection refused"):
        hc.fetch_checks(URL, "KEY", httpx.MockTransport(down))
    with pytest.raises(ImportFailed, match="the Healthchecks site's address"):
        hc.fetch_checks("hc.example.com", "KEY", mock())


def many(count: int) -> list[dict]:
    """``count`` checks as Healthchecks answers them (the fixture's first, renamed)."""
    return [{**CHECKS[0], "name": f"Backup {n}", "slug": f"backup-{n}",
             "uuid": str(UUID(int=n + 1))} for n in range(count)]


def test_two_thousand_checks_import_in_a_bounded_number_of_queries(
        project, django_assert_max_num_queries):
    """A project's whole list: new monitors are inserted in batches, not one query
    per check; a second import reads and writes nothing per check."""
    import time

    started = time.monotonic()
    # one INSERT per 500 new monitors and per 500 of their audit entries, fewer
    # where the database binds fewer values (SQLite: about 30 monitors an INSERT,
    # ~65 queries, and ~25 for the entries); one per check was 2,000+
    with django_assert_max_num_queries(110):
        answer = run(project, many(2000))
    assert (len(answer["created"]), answer["reported"]) == (2000, [])
    assert answer["created"][1999]["id"] == Monitor.objects.get(slug="backup-1999").pk
    assert Monitor.objects.get(uuid=UUID(int=2000)).period == 3600 * S
    with django_assert_max_num_queries(4):
        again = run(project, many(2000))
    assert (len(again["unchanged"]), again["created"], again["updated"]) == (2000, [], [])
    assert time.monotonic() - started < 30


def test_read_checks_takes_the_answer_or_a_bare_list():
    assert hc.read_checks(ANSWER) == CHECKS
    assert hc.read_checks(json.dumps(CHECKS)) == CHECKS
    assert len(hc.read_checks(json.dumps({"checks": [{}] * 10_000}))) == 10_000
    with pytest.raises(ImportFailed, match="^10001 checks: at most 10000 in one import$"):
        hc.read_checks(json.dumps({"checks": [{}] * 10_001}))
    assert Remark("check 1", "m", "status").as_dict() == {"where": "check 1", "message": "m",
                                                          "code": "status"}


HC_PING_KEY = "jq3WmSKH3kN8lTBnoWEoxw"


def test_the_healthchecks_ping_key_keeps_the_slug_urls(project, client, settings):
    settings.CRONRADAR_SIGNUP = "closed"
    parsed, outcome = hc.import_checks(project, copy.deepcopy(CHECKS), proven=True,
                                       dry_run=True, now=T0, ping_key=HC_PING_KEY)
    project.refresh_from_db()
    assert project.ping_key != HC_PING_KEY
    assert parsed.notes[0] == Remark("", "the project's ping key would be "
                                      f"{HC_PING_KEY}, Healthchecks': its checks' slug URLs "
                                      "/ping/<ping key>/<slug> work here (the old key's do "
                                      "not)", "ping_key")
    hc.import_checks(project, copy.deepcopy(CHECKS), proven=True, dry_run=False, now=T0,
                     ping_key=HC_PING_KEY)
    project.refresh_from_db()
    assert project.ping_key == HC_PING_KEY
    assert client.get(f"/ping/{HC_PING_KEY}/filesystem-backup").status_code == 200
    parsed, _ = hc.import_checks(project, copy.deepcopy(CHECKS), proven=True, dry_run=False,
                                 now=T0, ping_key=HC_PING_KEY)
    assert "ping_key" not in [n.code for n in parsed.notes]  # already: nothing said


@pytest.mark.parametrize("signup,key,message", [
    ("open", HC_PING_KEY, "a chosen ping key needs sign-up closed on this installation"),
    ("closed", "short", "the ping key is 16 to 64 letters, digits, '-' and '_'"),
    ("closed", "-" + HC_PING_KEY, "the ping key is 16 to 64"),
    ("closed", "taken-by-another-project", "this ping key cannot be used: another project "
     "has it"),
])
def test_a_ping_key_that_cannot_be_taken_fails_the_import(project, settings, signup, key,
                                                          message):
    settings.CRONRADAR_SIGNUP = signup
    other = new_project("globex")
    other.ping_key = "taken-by-another-project"
    other.save()
    with pytest.raises(ImportFailed, match=message):
        hc.import_checks(project, copy.deepcopy(CHECKS), proven=True, dry_run=False, now=T0,
                         ping_key=key)
    assert not Monitor.objects.exists()


def test_a_monitor_deleted_meanwhile_is_a_conflict_and_nothing_is_written(project, monkeypatch):
    from monitors.imports.spec import Conflict

    run(project)
    checks = copy.deepcopy(CHECKS)
    checks[0]["name"], checks[1]["name"] = "renamed", "renamed too"
    real = evaluator.edit

    def edit(pk, changes, now):
        if changes.get("name") == "renamed too":
            raise Monitor.DoesNotExist  # deleted by someone else after it was read
        return real(pk, changes, now)

    monkeypatch.setattr(evaluator, "edit", edit)
    with pytest.raises(Conflict, match="created or deleted meanwhile: nothing was changed"):
        run(project, checks)
    assert Monitor.objects.get(uuid=BACKUP).name == "Filesystem Backup"  # rolled back


def test_a_desc_over_10000_characters_is_reported_and_the_check_not_imported(project):
    answer = run(project, [{**CHECKS[0], "desc": "x" * 10_001}, CHECKS[1]])
    assert answer["reported"] == [{
        "where": "check 1 (Filesystem Backup)", "code": "invalid",
        "message": "desc: at most 10,000 characters (this one has 10,001); Healthchecks "
                   "sets no bound, CronRadar does"}]
    assert [str(m.uuid) for m in Monitor.objects.all()] == [DATABASE]
