"""The importcrontab and importk8s commands (fixtures: tests/data/crontab.txt,
etc-crontab.txt and cronjobs.yaml)."""
import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from monitors.imports import crontab
from monitors.models import Monitor
from tests.conftest import DATA, S, new_project
from tests.monitors.conftest import GRACE, curl_wrap


def command(name, *args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(name, *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def monitor_fields(m: Monitor) -> dict:
    return {f: getattr(m, f) for f in (
        "name", "kind", "schedule", "timezone", "cron_semantics", "period", "grace",
        "max_runtime", "concurrency", "max_attempts", "paused", "tags")}


def test_importcrontab_creates_prints_the_wrapped_crontab_and_is_idempotent(project):
    path = str(DATA / "crontab.txt")
    out, err = command("importcrontab", path, "--project", "acme", "--dry-run")
    assert out == "" and not Monitor.objects.exists()
    assert err.splitlines()[1:3] == [
        "project 'acme' in organisation 'acme'",
        "dry run, nothing changed: 7 created, 0 updated, 0 unchanged, 5 reported"]
    assert err.startswith("using database: ")

    out, err = command("importcrontab", path, "--project", "acme")
    monitors = {m.slug: m for m in Monitor.objects.all()}
    assert len(monitors) == 7
    assert monitor_fields(monitors["invoice-run"]) == {
        "name": "Monthly invoices", "kind": "cron", "schedule": "0 6 1 * *",
        "timezone": "Europe/Berlin", "cron_semantics": "debian", "period": None, "grace": GRACE,
        "max_runtime": None, "concurrency": "allow", "max_attempts": 1, "paused": False,
        "tags": ["crontab"]}
    assert monitors["invoice-run"].next_expected_at is not None  # armed as the API does
    assert err.splitlines()[3] == (
        "  created pg-backup-8b2f4abd (line 8): name '/usr/local/bin/pg-backup.sh --full >> "
        "/var/log/pg-backup.log 2>&1', grace 300, kind 'cron', schedule '0 3 * * *', timezone "
        "'UTC', cron_semantics 'debian', tags [\"crontab\"]")
    assert "  line 11: @reboot runs once at boot: no schedule to monitor; left as it is" in err
    m = monitors["mail-ba23c378"]
    assert out.splitlines()[22:24] == [
        "# cronradar: slug=mail-ba23c378",
        "0 7 * * mon-fri " + curl_wrap(f"http://127.0.0.1:8000/ping/{m.uuid}",
                                       'mail -s "daily report" ops@example.com')
        + "%Report attached.%Bye"]

    before = {m.slug: (m.next_expected_at, m.next_evaluation_at) for m in Monitor.objects.all()}
    again, err = command("importcrontab", path, "--project", "acme")
    assert again == out
    assert "0 created, 0 updated, 7 unchanged, 5 reported" in err
    assert {m.slug: (m.next_expected_at, m.next_evaluation_at)
            for m in Monitor.objects.all()} == before


def test_importcrontab_reads_the_installed_wrapped_crontab_and_stdin(project, monkeypatch,
                                                                     tmp_path):
    first, _ = command("importcrontab", str(DATA / "crontab.txt"), "--project", "acme")
    monkeypatch.setattr("sys.stdin", io.StringIO(first))
    again, err = command("importcrontab", "-", "--project", "acme")
    assert again == first and "0 created, 0 updated, 7 unchanged" in err
    assert "already wrapped by an import, read as the command inside: lines 9, 11, 13, 16, 18, " \
           "22, 24" in err


def test_importcrontab_updates_existing_monitors_and_keeps_what_the_file_does_not_say(
        project, make_monitor):
    make_monitor(name="billing", slug="invoice-run", kind="cron", schedule="0 5 1 * *",
                 grace=900 * S, tags=["billing"])
    _, err = command("importcrontab", str(DATA / "crontab.txt"), "--project", "acme",
                     "--timezone", "Europe/Madrid")
    assert ("  updated invoice-run (line 17): schedule '0 5 1 * *' -> '0 6 1 * *', timezone "
            "'UTC' -> 'Europe/Berlin', name 'billing' -> 'Monthly invoices', tags [\"billing\"] "
            "-> [\"billing\", \"crontab\"]") in err.splitlines()
    m = Monitor.objects.get(slug="invoice-run")
    assert (m.grace, m.tags, m.schedule) == (900 * S, ["billing", "crontab"], "0 6 1 * *")
    assert Monitor.objects.get(slug="php-0ebd2ac8").timezone == "Europe/Madrid"


def test_importcrontab_system_crontab_by_path_and_errors(project, tmp_path, monkeypatch):
    monkeypatch.setattr(crontab, "is_system_crontab", lambda path: path.endswith("etc-crontab.txt"))
    out, err = command("importcrontab", str(DATA / "etc-crontab.txt"), "--project", "acme",
                       "--wrap", "exec")
    assert f"notes:\n  {DATA / 'etc-crontab.txt'} is a system crontab: the 6th field is the user" \
        in err
    vacuum = Monitor.objects.get(slug="vacuumdb-a6124607")
    assert (vacuum.tags, vacuum.schedule) == (["crontab", "user:postgres"], "0 0 * * *")
    assert f"@daily\tpostgres\tcronradar exec --url {vacuum.ping_url} -- /usr/bin/vacuumdb" in out
    with pytest.raises(CommandError, match="no project 'nope'"):
        command("importcrontab", str(DATA / "crontab.txt"), "--project", "nope")
    with pytest.raises(CommandError, match="missing.txt: No such file or directory"):
        command("importcrontab", str(tmp_path / "missing.txt"), "--project", "acme")
    (tmp_path / "latin1").write_bytes(b"0 0 * * * caf\xe9\n")
    with pytest.raises(CommandError, match="latin1: not UTF-8 text"):
        command("importcrontab", str(tmp_path / "latin1"), "--project", "acme")
    with pytest.raises(CommandError, match="unknown time zone 'Nowhere/City'"):
        command("importcrontab", str(DATA / "crontab.txt"), "--project", "acme", "--timezone",
                "Nowhere/City")


def test_importk8s_creates_updates_and_is_idempotent(project, tmp_path):
    path = str(DATA / "cronjobs.yaml")
    out, _ = command("importk8s", path, "--project", "acme", "--dry-run")
    assert "dry run, nothing changed: 3 created, 0 updated, 0 unchanged, 3 reported" in out
    assert not Monitor.objects.exists()
    out, _ = command("importk8s", path, "--project", "acme")
    assert out.splitlines()[0].startswith("using database: ")
    lines = out.splitlines()
    reported = lines.index("reported (not imported):")
    assert lines[reported + 1:reported + 4] == [
        "  document 2 (line 28): kind ConfigMap (v1) is not a CronJob: skipped",
        "  document 5 (line 74): schedule '0 0 30 2 *' never fires: no date matches its "
        "day-of-month, month and day-of-week fields: not imported",
        "  document 6 (line 89): spec.schedule starts with CRON_TZ=Europe/London: Kubernetes "
        "1.29+ refuses a time zone in the schedule on create (older CronJobs still carry it); "
        "write timeZone: Europe/London and schedule: '15 4 * * *' in spec: not imported"]
    assert ("  document 4 (line 54): warning: concurrencyPolicy Forbid with no "
            "activeDeadlineSeconds: one hung Job blocks every later run (the controller starts "
            "none while it runs); set activeDeadlineSeconds") in lines
    report = Monitor.objects.get(slug="nightly-report")
    assert monitor_fields(report) == {
        "name": "reporting/nightly-report", "kind": "cron", "schedule": "0 2 * * *",
        "timezone": "Europe/Berlin", "cron_semantics": "kubernetes", "period": None,
        "grace": 600 * S, "max_runtime": None, "concurrency": "forbid", "max_attempts": 3,
        "paused": False, "tags": ["kubernetes", "ns:reporting"]}
    assert report.deadline == 4200 * S  # activeDeadlineSeconds 3600 + grace 600
    warmer = Monitor.objects.get(slug="cache-warmer")
    assert monitor_fields(warmer) == {
        "name": "web/cache.warmer", "kind": "cron", "schedule": "*/10 * * * *",
        "timezone": "UTC", "cron_semantics": "kubernetes", "period": None, "grace": GRACE,
        "max_runtime": None, "concurrency": "replace", "max_attempts": 7, "paused": True,
        "tags": ["kubernetes", "ns:web"]}
    assert warmer.deadline is None
    assert not Monitor.objects.filter(slug="legacy-export").exists()
    out, _ = command("importk8s", path, "--project", "acme")
    assert "0 created, 0 updated, 3 unchanged, 3 reported" in out
    assert " kept: " not in out
    # an earlier import set max_runtime from activeDeadlineSeconds: kept, with a note; a
    # deadline set through the API on a CronJob with no activeDeadlineSeconds is kept too
    Monitor.objects.filter(slug="nightly-report").update(max_runtime=3600 * S)
    Monitor.objects.filter(slug="ledger-close").update(deadline=1800 * S)
    out, _ = command("importk8s", path, "--project", "acme")
    assert "0 created, 0 updated, 3 unchanged, 3 reported" in out
    assert out.splitlines()[-1] == (
        "  document 1 (line 2): max_runtime 3600 s kept: a Kubernetes import does not set it: "
        "activeDeadlineSeconds maps to deadline (clear max_runtime if an earlier import set it)")
    assert Monitor.objects.get(slug="nightly-report").max_runtime == 3600 * S
    assert Monitor.objects.get(slug="ledger-close").deadline == 1800 * S
    # the manifest changes: the warmer is resumed and gets activeDeadlineSeconds; its grace
    # stays, and its deadline is counted from that grace
    Monitor.objects.filter(slug="cache-warmer").update(grace=120 * S)
    changed = (DATA / "cronjobs.yaml").read_text().replace("  suspend: true\n", "").replace(
        "  concurrencyPolicy: Replace\n", "  concurrencyPolicy: Replace\n  timeZone: Asia/Tokyo\n"
    ).replace("    spec:\n      template:\n        spec:\n          restartPolicy: OnFailure\n",
              "    spec:\n      activeDeadlineSeconds: 900\n      template:\n        spec:\n"
              "          restartPolicy: OnFailure\n")
    (tmp_path / "cronjobs.yaml").write_text(changed)
    out, _ = command("importk8s", str(tmp_path / "cronjobs.yaml"), "--project", "acme")
    assert ("  updated cache-warmer (document 3 (line 36)): timezone 'UTC' -> 'Asia/Tokyo', "
            "paused true -> false, deadline null -> 1020") in out.splitlines()
    warmer = Monitor.objects.get(slug="cache-warmer")
    assert (warmer.paused, warmer.timezone, warmer.grace, warmer.deadline) == (
        False, "Asia/Tokyo", 120 * S, 1020 * S)
    (tmp_path / "bad.yaml").write_text("kind: [\n")
    with pytest.raises(CommandError, match=r"bad.yaml: not YAML at line 2"):
        command("importk8s", str(tmp_path / "bad.yaml"), "--project", "acme")


HC_CHECKS = DATA / "healthchecks_checks.json"


def test_importhealthchecks_fetches_with_the_key_and_is_idempotent(project, settings):
    """--url: the checks' UUIDs are taken even where sign-up is open (the key owns them)."""
    import httpx
    import respx

    settings.CRONRADAR_SIGNUP = "open"
    with respx.mock(assert_all_called=True) as router:
        route = router.get("https://hc.example.com/api/v3/checks/").mock(
            return_value=httpx.Response(200, text=HC_CHECKS.read_text()))
        out, _ = command("importhealthchecks", "--url", "https://hc.example.com",
                         "--api-key", "KEY", "--project", "acme", "--dry-run")
        assert not Monitor.objects.exists()
        assert "dry run, nothing changed: 4 created, 0 updated, 0 unchanged, 0 reported" in out
        out, _ = command("importhealthchecks", "--url", "https://hc.example.com",
                         "--api-key", "KEY")  # the installation's only project
        again, _ = command("importhealthchecks", "--url", "https://hc.example.com",
                           "--api-key", "KEY", "--project", "acme")
    assert route.calls.last.request.headers["X-Api-Key"] == "KEY"
    lines = out.splitlines()
    assert lines[0].startswith("using database: ")
    assert lines[1:4] == [
        "project 'acme' in organisation 'acme'",
        "4 created, 0 updated, 0 unchanged, 0 reported",
        "  created filesystem-backup (check 1 (Filesystem Backup)): uuid "
        "'31365bce-8da9-4729-8ff3-aaa71d56b712', name 'Filesystem Backup', slug "
        "'filesystem-backup', description 'Runs incremental backup every hour', tags "
        '["backup", "fs"], kind \'interval\', timezone \'UTC\', cron_semantics \'debian\', '
        "grace 600, paused false, methods '', schedule '', period 3600"]
    assert ("  check 3 (Log rotation): warning: paused with manual_resume false: Healthchecks "
            "would resume it on its next ping; CronRadar keeps it paused until you resume it"
            ) in lines
    assert "0 created, 0 updated, 4 unchanged, 0 reported" in again
    assert Monitor.objects.count() == 4


def test_importhealthchecks_prints_only_its_report(project, settings, caplog):
    """httpx's "HTTP Request: GET …" INFO line is not part of the output (settings'
    LOGGING keeps httpx at WARNING: its lines carry whole URLs)."""
    import logging

    import httpx
    import respx

    caplog.set_level(logging.INFO)
    with respx.mock(assert_all_called=True) as router:
        router.get("https://hc.example.com/api/v3/checks/").mock(
            return_value=httpx.Response(200, text='{"checks": []}'))
        out, err = command("importhealthchecks", "--url", "https://hc.example.com",
                           "--api-key", "KEY", "--project", "acme")
    assert out.splitlines()[1:] == ["project 'acme' in organisation 'acme'",
                                    "0 created, 0 updated, 0 unchanged, 0 reported"]
    assert (err, [r.getMessage() for r in caplog.records if r.name.startswith("httpx")]) == (
        "", [])


def test_importhealthchecks_says_which_organisations_have_the_project(project):
    from accounts.models import Organisation

    Organisation.objects.create(name="Globex Corp").projects.create(name="acme")
    with pytest.raises(CommandError) as raised:
        command("importhealthchecks", "--from-json", str(HC_CHECKS), "--project", "acme")
    assert str(raised.value) == (
        "several projects are called 'acme', in the organisations 'acme', 'Globex Corp': say "
        "which with --organisation acme or --organisation 'Globex Corp'")


def test_importhealthchecks_from_a_saved_answer(project, settings, tmp_path):
    settings.CRONRADAR_SIGNUP = "closed"
    out, _ = command("importhealthchecks", "--from-json", str(HC_CHECKS), "--project", "acme")
    assert "4 created, 0 updated, 0 unchanged, 0 reported" in out
    assert str(Monitor.objects.get(slug="database-backup").uuid) == (
        "803f680d-e89b-492b-82ef-2be7b774a92d")
    out, _ = command("importhealthchecks", "--from-json", str(HC_CHECKS), "--project", "acme",
                     "--ping-key", "jq3WmSKH3kN8lTBnoWEoxw")
    assert ("  the project's ping key is jq3WmSKH3kN8lTBnoWEoxw, Healthchecks': its checks' "
            "slug URLs /ping/<ping key>/<slug> work here (the old key's do not)") in out
    project.refresh_from_db()
    assert project.ping_key == "jq3WmSKH3kN8lTBnoWEoxw"
    settings.CRONRADAR_SIGNUP = "open"
    with pytest.raises(CommandError, match="a file's UUIDs cannot be shown to be yours"):
        command("importhealthchecks", "--from-json", str(HC_CHECKS), "--project", "acme")


@pytest.mark.parametrize("args,message", [
    (["--url", "https://hc.example.com"], "--url needs --api-key"),
    (["--from-json", "x.json", "--api-key", "K"], "--api-key goes with --url"),
    (["--from-json", "/nonexistent/checks.json"], "/nonexistent/checks.json: No such file"),
    (["--from-json", "x.json", "--project", "nope"], "no project 'nope'"),
])
def test_importhealthchecks_refuses_what_it_cannot_do(project, args, message):
    with pytest.raises(CommandError, match=message):
        command("importhealthchecks", *args)


def test_importhealthchecks_needs_a_project_where_there_are_several(project):
    new_project("globex")
    with pytest.raises(CommandError, match="--project is required: this installation has "
                                           "several projects"):
        command("importhealthchecks", "--from-json", str(HC_CHECKS))
