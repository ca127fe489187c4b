"""The /api/v1/import/ actions (monitors.imports.api): crontab and k8s imports over
the API, dry runs, errors and tenancy."""
from accounts.models import ApiKey
from monitors.models import Monitor
from tests.conftest import DATA, S, new_project
from tests.helpers import as_key, as_person, person

CRONTAB = "MAILTO=ops@example.com\n0 3 * * * /usr/local/bin/backup.sh\n@reboot /bin/warm\n"


def test_api_crontab_dry_run_answers_the_diff_and_changes_nothing(api, project, make_monitor):
    make_monitor(name="backup", slug="backup", kind="cron", schedule="0 2 * * *", grace=60 * S)
    text = CRONTAB.replace("0 3", "# cronradar: slug=backup\n0 3") + "0 4 * * * ./report.sh\n"
    resp = api.post("/api/v1/import/crontab/?dry_run=1&timezone=Europe/Rome", text,
                    content_type="text/plain")
    assert resp.status_code == 200, resp.content
    assert resp.json() == {
        "project": project.pk, "dry_run": True,
        "created": [{"slug": "report-ab531067", "where": "line 5", "monitor": {
            "name": "./report.sh", "grace": 300, "kind": "cron", "schedule": "0 4 * * *",
            "timezone": "Europe/Rome", "cron_semantics": "debian", "tags": ["crontab"]}}],
        "updated": [{"slug": "backup", "where": "line 3", "id": Monitor.objects.get().pk,
                     "changes": {"schedule": {"old": "0 2 * * *", "new": "0 3 * * *"},
                                 "timezone": {"old": "UTC", "new": "Europe/Rome"},
                                 "tags": {"old": [], "new": ["crontab"]}}}],
        "unchanged": [],
        "reported": [{"where": "line 4", "message": "@reboot runs once at boot: no schedule to "
                                                    "monitor; left as it is"}],
        "notes": [{"where": "", "message": "jobs with no CRON_TZ= or TZ= line before them are "
                                           "read in Europe/Rome: cron runs them in the host's "
                                           "time zone"},
                  {"where": "", "message": "new monitors get grace 300 s (how late a run's "
                                           "start ping may be); existing monitors keep theirs"}]}
    assert list(Monitor.objects.values_list("slug", "schedule")) == [("backup", "0 2 * * *")]


def test_api_crontab_applies_and_answers_the_wrapped_crontab(api, project):
    resp = api.post("/api/v1/import/crontab/", {"text": CRONTAB, "wrap": "exec"}, format="json")
    assert resp.status_code == 200, resp.content
    m = Monitor.objects.get()
    body = resp.json()
    assert (body["dry_run"], body["created"][0]["id"], body["created"][0]["slug"]) == (
        False, m.pk, "backup-240aaff4")
    assert body["crontab"] == (
        "MAILTO=ops@example.com\n# cronradar: slug=backup-240aaff4\n0 3 * * * cronradar exec "
        f"--url {m.ping_url} -- /usr/local/bin/backup.sh\n@reboot /bin/warm\n")
    again = api.post("/api/v1/import/crontab/", {"text": CRONTAB, "wrap": "exec"}, format="json")
    assert (again.json()["created"], again.json()["updated"], again.json()["unchanged"]) == (
        [], [], [{"slug": "backup-240aaff4", "where": "line 2", "id": m.pk}])
    assert again.json()["crontab"] == body["crontab"]


def test_api_k8s_takes_yaml(api, project):
    text = (DATA / "cronjobs.yaml").read_text()
    dry = api.post("/api/v1/import/k8s/?dry_run=true", text, content_type="application/yaml")
    assert dry.status_code == 200, dry.content
    assert [c["slug"] for c in dry.json()["created"]] == ["nightly-report", "cache-warmer",
                                                           "ledger-close"]
    assert dry.json()["created"][0]["monitor"] == {
        "name": "reporting/nightly-report", "kind": "cron", "schedule": "0 2 * * *",
        "timezone": "Europe/Berlin", "cron_semantics": "kubernetes", "concurrency": "forbid",
        "deadline": 4200, "max_attempts": 3, "paused": False, "grace": 600,
        "tags": ["kubernetes", "ns:reporting"]}
    assert dry.json()["reported"][2] == {
        "where": "document 6 (line 89)", "message": "spec.schedule starts with "
        "CRON_TZ=Europe/London: Kubernetes 1.29+ refuses a time zone in the schedule on create "
        "(older CronJobs still carry it); write timeZone: Europe/London and schedule: "
        "'15 4 * * *' in spec: not imported"}
    assert not Monitor.objects.exists() and "crontab" not in dry.json()
    done = api.post("/api/v1/import/k8s/", {"text": text}, format="json")
    assert done.status_code == 200 and len(done.json()["created"]) == 3
    assert len(done.json()["reported"]) == 3
    assert Monitor.objects.get(slug="ledger-close").timezone == "America/New_York"
    # a monitor an earlier import gave a max_runtime keeps it, and the answer says so
    report = Monitor.objects.get(slug="nightly-report")
    Monitor.objects.filter(pk=report.pk).update(max_runtime=3600 * S)
    again = api.post("/api/v1/import/k8s/", text, content_type="application/yaml").json()
    assert (again["updated"], len(again["unchanged"])) == ([], 3)
    assert again["notes"][-1] == {
        "where": "document 1 (line 2)", "message": "max_runtime 3600 s kept: a Kubernetes "
        "import does not set it: activeDeadlineSeconds maps to deadline (clear max_runtime if an "
        "earlier import set it)"}
    assert Monitor.objects.get(pk=report.pk).max_runtime == 3600 * S


def test_api_import_errors(api, project, api_key):
    post = api.post
    assert post("/api/v1/import/k8s/", "a: [1", content_type="text/plain").json() == {
        "text": ["not YAML at line 1: expected ',' or ']', but got '<stream end>'"]}
    assert post("/api/v1/import/crontab/?timezone=Mars/Base", CRONTAB,
                content_type="text/plain").json() == {"timezone": ["unknown time zone "
                                                                   "'Mars/Base'"]}
    assert post("/api/v1/import/crontab/", {"text": CRONTAB, "wrap": "ssh"}, format="json"
                ).json() == {"wrap": ['"ssh" is not a valid choice.']}
    assert post("/api/v1/import/crontab/", {"txt": "x"}, format="json").json() == {
        "txt": ["unknown field"]}
    assert post("/api/v1/import/crontab/", [CRONTAB], format="json").json() == {
        "detail": ['the body must be the file (text/plain) or a JSON object {"text": "..."}']}
    bad = post("/api/v1/import/crontab/", b"0 0 * * * caf\xe9", content_type="text/plain")
    assert (bad.status_code, bad.json()) == (400, {"detail": "the body must be UTF-8 text"})
    assert post("/api/v1/import/crontab/?project=99999999999999999999", CRONTAB,
                content_type="text/plain").status_code == 400
    assert not Monitor.objects.exists()


def test_api_import_is_tenant_scoped(api, project):
    other = new_project("bravo")
    for url, text in (("/api/v1/import/crontab/", CRONTAB), ("/api/v1/import/k8s/", "")):
        resp = api.post(url, {"text": text, "project": other.pk}, format="json")
        assert (resp.status_code, resp.json()) == (
            400, {"project": [f"no project with id {other.pk} that you can see"]})
        resp = api.post(f"{url}?project={other.pk}&dry_run=1", text, content_type="text/plain")
        assert resp.status_code == 400
    read_only = as_key(ApiKey.issue(project, "ro", read_only=True)[1])
    resp = read_only.post("/api/v1/import/crontab/?dry_run=1", CRONTAB, content_type="text/plain")
    assert (resp.status_code, resp.json()) == (403, {"detail": "this API key is read-only"})
    assert not Monitor.objects.exists()
    # people: a viewer may not; a member of several projects says which
    viewer = as_person(person("vera", project.organisation, "viewer"))
    assert viewer.post("/api/v1/import/k8s/", {"text": ""}, format="json").status_code == 403
    second = project.organisation.projects.create(name="second")
    member = as_person(person("max", project.organisation, "member"))
    assert member.post("/api/v1/import/crontab/", {"text": CRONTAB}, format="json").json() == {
        "project": ["required: you are in several projects; give the id of one"]}
    resp = member.post("/api/v1/import/crontab/", {"text": CRONTAB, "project": second.pk},
                       format="json")
    assert resp.status_code == 200
    assert list(Monitor.objects.values_list("project", flat=True)) == [second.pk]
