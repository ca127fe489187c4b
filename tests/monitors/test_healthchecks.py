"""The Healthchecks -> CronRadar mapping of a check (monitors.healthchecks).
Fixture: tests/data/healthchecks_checks.json, shaped as GET /api/v3/checks/ answers
in Healthchecks' API documentation."""
import json

import pytest

from monitors.healthchecks import Code, Note, Refused, check_fields, made_slug
from tests.conftest import DATA

CHECKS = json.loads((DATA / "healthchecks_checks.json").read_text())["checks"]
BACKUP, DATABASE, ROTATION, REPLICA = CHECKS


def test_a_simple_check_maps_to_an_interval_monitor():
    assert check_fields(BACKUP) == ({
        "uuid": "31365bce-8da9-4729-8ff3-aaa71d56b712", "name": "Filesystem Backup",
        "slug": "filesystem-backup", "tags": ["backup", "fs"],
        "description": "Runs incremental backup every hour", "kind": "interval",
        "period": 3600, "grace": 600, "methods": "", "paused": False,
    }, [Note(Code.STATUS, "status up: starts as new in CronRadar and is up from its next ping "
                          "(the ping history stays in Healthchecks)")])


def test_a_cron_check_maps_to_a_cron_monitor_and_lists_its_keyword_filters():
    assert check_fields(DATABASE) == ({
        "uuid": "803f680d-e89b-492b-82ef-2be7b774a92d", "name": "Database Backup",
        "slug": "database-backup", "tags": ["production", "db"],
        "description": "Runs ~/db-backup.sh", "timezone": "Europe/Riga", "kind": "cron",
        "schedule": "15 5 * * *", "grace": 1200, "methods": "POST", "paused": False,
    }, [Note(Code.STATUS, "status down: starts as new in CronRadar, waiting for its next "
                          "ping; no incident is opened for Healthchecks' outage"),
        Note(Code.NOT_MAPPED, "not mapped: failure_kw, filter_http_body, start_kw")])


def test_paused_without_manual_resume_imports_paused_with_a_warning_and_an_empty_slug_is_made():
    fields, notes = check_fields(ROTATION)
    assert (fields["slug"], fields["paused"], fields["tags"]) == (
        "log-rotation-0a3e1a4f", True, [])
    assert notes == [
        Note(Code.SLUG_MADE, "slug 'log-rotation-0a3e1a4f': the check's slug is empty"),
        Note(Code.STATUS, "status paused: paused in CronRadar"),
        Note(Code.PAUSED_AUTO_RESUME, "warning: paused with manual_resume false: Healthchecks "
             "would resume it on its next ping; CronRadar keeps it paused until you resume it")]


def test_paused_with_manual_resume_has_no_warning():
    _, notes = check_fields({**ROTATION, "manual_resume": True, "slug": "rotation"})
    assert [n.code for n in notes] == [Code.STATUS]


@pytest.mark.parametrize("status,paused,said", [
    ("new", False, "status new: CronRadar's is new too, until the first ping"),
    ("grace", False, "status grace (late): starts as new in CronRadar, waiting for its next "
                     "ping; no incident is opened for the late run"),
])
def test_every_status_maps_to_the_nearest_state_with_a_note(status, paused, said):
    fields, notes = check_fields({"status": status})
    assert (fields, notes) == ({"paused": paused}, [Note(Code.STATUS, said)])


def test_tags_cronradar_cannot_store_are_listed_as_not_mapped():
    long = "x" * 51
    fields, notes = check_fields({"tags": ["prod", "two words", long, "prod"]})
    assert fields == {"tags": ["prod"]}
    assert notes == [Note(Code.TAG_NOT_MAPPED, "tag 'two words' not mapped: contains a space"),
                     Note(Code.TAG_NOT_MAPPED, f"tag '{long[:39]} not mapped: longer than 50 "
                                               "characters")]
    fields, notes = check_fields({"tags": " ".join(f"t{i}" for i in range(52))})
    assert len(fields["tags"]) == 50
    assert notes == [Note(Code.TAG_NOT_MAPPED, f"tag 't{i}' not mapped: more than 50 tags")
                     for i in (50, 51)]


def test_a_partial_body_maps_only_its_keys():
    """The POST body of /api/v3/checks/<uuid>: what it gives, nothing else."""
    assert check_fields({"name": "Backups", "timeout": 300}) == (
        {"name": "Backups", "kind": "interval", "period": 300}, [])
    assert check_fields({"schedule": "*/5 * * * *", "timeout": 300, "unique": ["name"],
                         "channels": "*", "api_key": "k"}) == (
        {"kind": "cron", "schedule": "*/5 * * * *"}, [])
    assert check_fields({}) == ({}, [])


def test_no_name_is_named_after_the_slug():
    assert check_fields({"name": "", "slug": "nightly"}) == (
        {"name": "nightly", "slug": "nightly"},
        [Note(Code.NAME_MADE, "name 'nightly': the check has no name")])
    fields, _ = check_fields({"name": "", "slug": "", "uuid": BACKUP["uuid"]})
    assert (fields["name"], fields["slug"]) == ("check-31365bce", "check-31365bce")


def test_a_read_only_keys_answer_is_refused():
    check = {k: v for k, v in BACKUP.items() if k != "uuid"} | {"unique_key": "a6c7b0a8"}
    with pytest.raises(Refused) as refused:
        check_fields(check)
    assert refused.value.note.code == Code.READ_ONLY_KEY
    assert str(refused.value) == (
        "the check was read with a read-only API key (it has a unique_key and no uuid): use a "
        "read-write key, which gives the check's UUID and shows it is yours")


@pytest.mark.parametrize("check,code,message", [
    ({"schedule": "*-*~1 12:00"}, Code.ONCALENDAR, "schedule '*-*~1 12:00' is an OnCalendar "
     "expression: CronRadar reads 5-field cron expressions; write it as one"),
    ({"timeout": 59}, Code.INVALID, "timeout must be a whole number of seconds from 60 to "
     "31536000, got 59"),
    ({"grace": "600"}, Code.INVALID, "grace must be a whole number of seconds from 60 to "
     "31536000, got '600'"),
    ({"grace": True}, Code.INVALID, "grace must be a whole number of seconds from 60 to "
     "31536000, got True"),
    ({"methods": "GET"}, Code.INVALID, "methods 'GET': \"\" or \"POST\""),
    ({"uuid": "not-a-uuid"}, Code.INVALID, "uuid 'not-a-uuid' is not a UUID"),
    ({"status": "sleeping"}, Code.INVALID, "status 'sleeping': one of new, up, grace, down, "
     "paused"),
    ({"name": 7}, Code.INVALID, "name must be a string"),
    ({"tags": 7}, Code.INVALID, "tags must be a string of space-separated tags"),
    ({"manual_resume": "yes"}, Code.INVALID, "manual_resume must be true or false"),
    ([], Code.INVALID, "a check must be a JSON object"),
])
def test_values_of_the_wrong_kind_are_refused(check, code, message):
    with pytest.raises(Refused) as refused:
        check_fields(check)
    assert (refused.value.note.code, refused.value.note.message) == (code, message)


def test_made_slug():
    assert made_slug("Nightly Report!", "5d2c6b0e-2f55") == "nightly-report-5d2c6b0e"
    assert made_slug("", "5d2c6b0e-2f55") == "check-5d2c6b0e"
    assert made_slug("Nightly", None) == "nightly"
    assert len(made_slug("n" * 200, "5d2c6b0e")) == 100
