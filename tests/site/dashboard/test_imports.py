"""The dashboard's Healthchecks import (cronradar.dashboard.imports): the saved
answer of GET /api/v3/checks/ pasted or uploaded, previewed, imported, with the
report of manage.py importhealthchecks."""
import html
import json
import re
from uuid import UUID

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from monitors.models import Monitor
from tests.conftest import DATA
from tests.site.dashboard.conftest import signed_in, text

pytestmark = pytest.mark.django_db

ANSWER = (DATA / "healthchecks_checks.json").read_text()


def test_a_pasted_answer_is_previewed_then_imported(admin, project, settings):
    settings.CRONRADAR_SIGNUP = "closed"
    assert 'href="/import/healthchecks/"' in admin.get("/").content.decode()
    page = text(admin.get("/import/healthchecks/"))
    assert "Import from Healthchecks" in page and 'name="text"' in page
    preview = admin.post("/import/healthchecks/", {"text": ANSWER, "apply": "0"})
    page = text(preview)
    assert preview.status_code == 200
    assert "Preview: nothing changed yet" in page
    assert "4 to create, 0 to update, 0 unchanged, 0 not imported." in page
    assert ("check 3 (Log rotation): warning: paused with manual_resume false: Healthchecks "
            "would resume it on its next ping; CronRadar keeps it paused until you resume it "
            '<span class="muted small">[paused_auto_resume]</span>') in page
    assert not Monitor.objects.exists()
    assert '<input type="hidden" name="apply" value="1">' in page
    done = text(admin.post("/import/healthchecks/", {"text": ANSWER, "apply": "1"}))
    assert "Imported" in done and "4 created, 0 updated, 0 unchanged, 0 not imported." in done
    backup = Monitor.objects.get(slug="filesystem-backup")
    assert str(backup.uuid) == "31365bce-8da9-4729-8ff3-aaa71d56b712"
    assert f'href="/monitors/{backup.pk}/">filesystem-backup</a>' in done
    again = text(admin.post("/import/healthchecks/", {"text": ANSWER, "apply": "0"}))
    assert "0 to create, 0 to update, 4 unchanged, 0 not imported." in again
    assert 'name="apply" value="1">' not in again.split('id="report"')[1].split("</section>")[0]


def test_an_uploaded_file_is_imported(admin, project):
    upload = SimpleUploadedFile("checks.json", ANSWER.encode(), "application/json")
    page = text(admin.post("/import/healthchecks/", {"file": upload, "apply": "1"}))
    assert "4 created" in page
    assert Monitor.objects.filter(project=project).count() == 4


def test_the_dashboard_takes_a_project_of_more_than_1000_checks(admin, project):
    """The request body is bounded (DATA_UPLOAD_MAX_MEMORY_SIZE, 2.5 MB), not the
    number of checks: 1,500 checks, about 1.7 MB, are previewed."""
    check = json.loads(ANSWER)["checks"][0]
    answer = json.dumps({"checks": [{**check, "name": f"Backup {n}", "slug": f"backup-{n}",
                                     "uuid": str(UUID(int=n + 1))} for n in range(1500)]})
    assert 1_000_000 < len(answer) < 2_621_440
    page = text(admin.post("/import/healthchecks/", {"text": answer, "apply": "0"}))
    assert "1500 to create, 0 to update, 0 unchanged, 0 not imported." in page


def test_an_answer_over_the_request_bound_is_a_413(admin, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 4096
    resp = admin.post("/import/healthchecks/", {"text": ANSWER, "apply": "0"})
    assert (resp.status_code, resp.content) == (
        413, b"request body too large: at most 4096 bytes\n")
    assert not Monitor.objects.exists()


@pytest.mark.parametrize("data,message", [
    ({"text": "not json"}, "the pasted text is not JSON"),
    ({"text": '{"check": []}'}, "the pasted text is not the answer of GET /api/v3/checks/"),
    ({"file": SimpleUploadedFile("c.json", b"\xff\xfe")}, "the file is not UTF-8 text"),
])
def test_what_is_not_an_answer_is_a_400_saying_why(admin, project, data, message):
    resp = admin.post("/import/healthchecks/", data)
    assert resp.status_code == 400 and message in text(resp)
    assert not Monitor.objects.exists()


def test_where_sign_up_is_open_a_pasted_answer_cannot_take_uuids(admin, settings):
    settings.CRONRADAR_SIGNUP = "open"
    resp = admin.post("/import/healthchecks/", {"text": ANSWER, "apply": "1"})
    assert resp.status_code == 400
    assert "a file&#x27;s UUIDs cannot be shown to be yours" in text(resp)
    assert not Monitor.objects.exists()


@pytest.mark.parametrize("path,given", [("/import/healthchecks/", "answer"),
                                        ("/import/crontab/", "crontab"),
                                        ("/import/k8s/", "manifest")])
def test_a_viewer_sees_the_page_but_cannot_import(project, path, given):
    viewer = signed_in(project, "viewer")
    assert "Importing needs the member role." in text(viewer.get(path))
    body = {"answer": ANSWER, "crontab": CRONTAB, "manifest": MANIFEST}[given]
    assert viewer.post(path, {"text": body, "apply": "1"}).status_code == 403
    assert not Monitor.objects.exists()


CRONTAB = "MAILTO=ops@example.com\n# cronradar: slug=backup\n0 3 * * * /usr/local/bin/backup.sh\n"
MANIFEST = """apiVersion: batch/v1
kind: CronJob
metadata: {name: report}
spec:
  schedule: "30 4 * * *"
  timeZone: Europe/Rome
  jobTemplate: {spec: {template: {spec: {containers: [{name: r, image: busybox}]}}}}
"""


def buttons(resp) -> list[str]:
    """The buttons of the page's main part, in order."""
    main = resp.content.decode().split("<main", 1)[1].split("</main>", 1)[0]
    return re.findall(r"<button[^>]*>[^<]*</button>", main)


PREVIEW = '<button type="submit" name="apply" value="0">Preview</button>'
IMPORT = '<button type="submit">Import</button>'


def report_form(resp) -> dict[str, str]:
    """What the report's "Import" form sends: its hidden fields, newlines kept."""
    report = resp.content.decode().split('id="report"', 1)[1].split("</section>", 1)[0]
    form = report.split("<form", 1)[1].split("</form>", 1)[0]
    return {m[1]: html.unescape(m[2]) for m in re.finditer(
        r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form)
        if m[1] != "csrfmiddlewaretoken"}


@pytest.mark.parametrize("path", ["/import/crontab/", "/import/k8s/"])
def test_the_form_only_previews(admin, project, path):
    """Paste or upload, a dry run shown as a diff, then apply: the form's one
    button is the dry run."""
    assert buttons(admin.get(path)) == [PREVIEW]


def test_a_crontab_is_previewed_as_a_diff_then_imported(admin, project, make_monitor):
    page = text(admin.get("/"))
    assert 'href="/import/crontab/"' in page and 'href="/import/k8s/"' in page
    make_monitor(name="backup", kind="cron", schedule="0 2 * * *", timezone="UTC")
    preview = admin.post("/import/crontab/", {"text": CRONTAB + "15 * * * * ./sync.sh\n",
                                              "timezone": "Europe/Berlin", "wrap": "exec",
                                              "apply": "0"})
    page = text(preview)
    assert preview.status_code == 200 and "Preview: nothing changed yet" in page
    assert "1 to create, 1 to update, 0 unchanged, 0 not imported." in page
    assert "schedule <code>0 2 * * *</code> → <code>0 3 * * *</code>" in page
    assert "timezone <code>UTC</code> → <code>Europe/Berlin</code>" in page
    assert sorted(Monitor.objects.values_list("slug", flat=True)) == ["backup"]
    assert buttons(preview) == [IMPORT, PREVIEW]  # Import only under the diff
    assert report_form(preview) == {  # the same input again, to apply
        "text": CRONTAB + "15 * * * * ./sync.sh\n", "timezone": "Europe/Berlin",
        "wrap": "exec", "apply": "1"}
    applied = admin.post("/import/crontab/", report_form(preview))
    done = text(applied)
    assert "Imported" in done and "1 created, 1 updated, 0 unchanged, 0 not imported." in done
    assert buttons(applied) == [PREVIEW]
    made = Monitor.objects.exclude(slug="backup").get()
    assert (made.kind, made.schedule, made.timezone, made.tags) == (
        "cron", "15 * * * *", "Europe/Berlin", ["crontab"])
    backup = Monitor.objects.get(slug="backup")
    assert (backup.schedule, backup.timezone) == ("0 3 * * *", "Europe/Berlin")
    assert "The crontab, each job wrapped" in done and backup.ping_url in done
    assert f"cronradar exec --url {backup.ping_url} -- /usr/local/bin/backup.sh" in done
    again = admin.post("/import/crontab/", {"text": CRONTAB, "timezone": "Europe/Berlin",
                                            "apply": "0"})
    assert "0 to create, 0 to update, 1 unchanged, 0 not imported." in text(again)
    assert buttons(again) == [PREVIEW]  # nothing to apply: no Import


def test_kubernetes_manifests_are_uploaded_previewed_and_imported(admin, project):
    upload = SimpleUploadedFile("cronjobs.yaml", MANIFEST.encode(), "application/yaml")
    preview = admin.post("/import/k8s/", {"file": upload, "apply": "0"})
    page = text(preview)
    assert "1 to create, 0 to update, 0 unchanged, 0 not imported." in page
    assert "schedule <code>30 4 * * *</code>" in page and not Monitor.objects.exists()
    assert buttons(preview) == [IMPORT, PREVIEW]
    assert report_form(preview) == {"text": MANIFEST, "apply": "1"}  # the file, as text
    done = text(admin.post("/import/k8s/", report_form(preview)))
    assert "1 created" in done
    m = Monitor.objects.get()
    assert (m.slug, m.schedule, m.timezone) == ("report", "30 4 * * *", "Europe/Rome")
    assert f'href="/monitors/{m.pk}/">report</a>' in done


@pytest.mark.parametrize("path,data,status,message", [
    ("/import/k8s/", {"text": "a: [1"}, 400, "not YAML"),
    ("/import/crontab/", {"text": CRONTAB, "timezone": "Mars/Base"}, 400,
     "time zone: unknown time zone"),
    ("/import/crontab/", {"text": CRONTAB, "wrap": "nohup"}, 400,
     "wrap must be curl or exec, not &#x27;nohup&#x27;"),
    ("/import/crontab/", {"file": SimpleUploadedFile("c", b"\xff\xfe")}, 400,
     "the file is not UTF-8 text"),
])
def test_what_cannot_be_imported_is_a_4xx_saying_why(admin, project, path, data, status,
                                                     message):
    resp = admin.post(path, {**data, "apply": "1"})
    assert resp.status_code == status and message in text(resp)
    assert not Monitor.objects.exists()


def test_over_the_plans_limit_nothing_is_imported(admin, project, make_monitor):
    from accounts.models import Organisation, Plan

    plan = Plan.objects.create(name="free", max_monitors=1)
    Organisation.objects.filter(pk=project.organisation_id).update(plan=plan)
    resp = admin.post("/import/k8s/", {"text": MANIFEST + "---\n" + MANIFEST.replace(
        "name: report", "name: other"), "apply": "1"})
    assert resp.status_code == 403
    assert "this organisation&#x27;s plan (free) allows 1 monitor" in text(resp)
    assert not Monitor.objects.exists()



def test_the_reports_lines_carry_no_empty_code_or_place(admin, project):
    """A remark without a code ends with its message (no "[]"); one about the whole
    file starts with its message (no empty place before a colon)."""
    page = text(admin.post("/import/crontab/", {
        "text": "0 3 * * * /usr/local/bin/backup.sh\n@reboot ./warm.sh\n",
        "timezone": "UTC", "apply": "0"}))
    assert ("<li>line 2: @reboot runs once at boot: no schedule to monitor; left as it "
            "is</li>") in page
    assert ("<li>New monitors get grace 300 s (how late a run's start ping may be); "
            "existing monitors keep theirs</li>").replace("'", "&#x27;") in page
    assert "[]" not in page and "<li>: " not in page
    bad = MANIFEST.replace("30 4 * * *", "61 4 * * *")
    k8s = text(admin.post("/import/k8s/", {"text": bad, "apply": "0"})).split('id="report"')[1]
    assert "0 to create, 0 to update, 0 unchanged, 1 not imported." in k8s
    assert re.search(r"<h3>Not imported</h3><ul><li>document 1[^<]*</li></ul>", k8s), k8s


def test_the_crontabs_zone_is_the_persons_from_the_zone_list(admin, project):
    admin.post("/account/", {"timezone": "Asia/Tokyo"})
    page = text(admin.get("/import/crontab/"))
    assert ('<input id="im-zone" type="text" name="timezone" list="zones" autocomplete="off" '
            'value="Asia/Tokyo">') in page
    assert '<option value="Europe/Berlin">' in page.split('<datalist id="zones">', 1)[1]
    admin.post("/import/crontab/", {"text": CRONTAB, "timezone": "", "apply": "1"})
    assert Monitor.objects.get().timezone == "Asia/Tokyo"  # left empty: the person's
