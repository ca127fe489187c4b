"""cronradar.dashboard.monitorsfile: the file cronradar apply reads, pasted or
uploaded in the dashboard: checked against the schema, its diff shown, applied
on confirmation (a refusal changes nothing); the project exported; admins only."""
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from alerts.models import Channel, EscalationPolicy
from monitors.models import Monitor
from tests.site.dashboard.conftest import signed_in

pytestmark = pytest.mark.django_db

FILE = """version: 1
channels:
  - {name: ops, kind: webhook, config: {url: "https://hooks.example.com/a", secret: s3cret}}
escalation_policies:
  - {name: night, tiers: [{delay: 0, channels: [ops]}]}
monitors:
  - {slug: nightly, name: Nightly, kind: cron, schedule: "0 3 * * *", grace: 600,
     channels: [ops], escalation_policy: night}
"""


def diff(resp) -> list[str]:
    html = resp.content.decode()
    start = html.index('<pre id="diff">') + len('<pre id="diff">')
    return html[start:html.index("</pre>", start)].splitlines()


def test_a_pasted_file_shows_its_diff_then_applies(admin, project):
    preview = admin.post("/monitors/file/", {"text": FILE, "action": "preview"})
    assert preview.status_code == 200
    assert diff(preview) == ["created channel ops", "created escalation policy night",
                             "created monitor nightly",
                             "3 created, 0 changed, 0 unchanged, 0 pruned (dry run: nothing "
                             "changed)"]
    assert "Apply these changes" in preview.content.decode()
    assert not Monitor.objects.exists() and not Channel.objects.exists()
    applied = admin.post("/monitors/file/", {"text": FILE, "action": "apply"})
    assert diff(applied)[-1] == "3 created, 0 changed, 0 unchanged, 0 pruned"
    m = Monitor.objects.get(slug="nightly")
    assert (m.alerting.escalation_policy.name, m.schedule, m.grace.total_seconds()) == (
        "night", "0 3 * * *", 600)
    changed = FILE.replace("grace: 600", "grace: 900")
    assert diff(admin.post("/monitors/file/", {"text": changed, "action": "preview"})) == [
        "unchanged channel ops", "unchanged escalation policy night",
        "changed monitor nightly: grace: 600 → 900",
        "0 created, 1 changed, 2 unchanged, 0 pruned (dry run: nothing changed)"]


def test_an_uploaded_export_round_trips_and_prunes(admin, project):
    admin.post("/monitors/file/", {"text": FILE, "action": "apply"})
    exported = admin.get("/monitors/file/export.json")
    assert exported["Content-Disposition"] == 'attachment; filename="monitors-acme.json"'
    doc = json.loads(exported.content)
    assert doc["channels"] == [{"name": "ops", "kind": "webhook", "config": {
        "url": "${CRONRADAR_OPS_URL}", "secret": "${CRONRADAR_OPS_SECRET}"}}]
    upload = SimpleUploadedFile("monitors.json", exported.content)
    resp = admin.post("/monitors/file/", {"file": upload, "action": "apply"})
    assert diff(resp)[-1] == "0 created, 0 changed, 3 unchanged, 0 pruned"
    assert Channel.objects.get().config == {"url": "https://hooks.example.com/a",
                                            "secret": "s3cret"}  # placeholders kept them
    assert admin.get("/monitors/file/export.yaml").content.decode().startswith("version: 1\n")
    doc["monitors"], doc["escalation_policies"] = [], []
    resp = admin.post("/monitors/file/", {"text": json.dumps(doc), "prune": "1",
                                          "action": "apply"})
    assert diff(resp) == ["unchanged channel ops", "pruned monitor nightly",
                          "pruned escalation policy night",
                          "0 created, 0 changed, 1 unchanged, 2 pruned"]
    assert not EscalationPolicy.objects.exists()
    assert not Monitor.objects.filter(deleted_at__isnull=True).exists()


def test_a_file_the_schema_refuses_lists_why_and_changes_nothing(admin, project):
    bad = FILE.replace("grace: 600", "grace: soon")
    resp = admin.post("/monitors/file/", {"text": bad, "action": "apply"})
    assert resp.status_code == 400
    assert "$.monitors[0].grace: &#x27;soon&#x27; is not of type &#x27;integer&#x27;" in \
        resp.content.decode()
    assert not Channel.objects.exists()


def test_the_preview_refuses_a_new_channel_whose_credential_is_kept_and_bad_yaml(admin,
                                                                                  project):
    masked = FILE.replace("secret: s3cret", "secret: '${CRONRADAR_OPS_SECRET}'")
    resp = admin.post("/monitors/file/", {"text": masked})
    assert resp.status_code == 400
    assert ("channels[0] (ops): config.secret: &#x27;***&#x27; keeps a stored credential, "
            "and the project has no channel named &#x27;ops&#x27;: give it") in \
        resp.content.decode()
    resp = admin.post("/monitors/file/", {"text": "version: 1\nmonitors:\n  - slug: a\n"
                                                  "   name: b\n"})
    assert resp.status_code == 400
    assert ("not JSON or YAML at line 4, column 4: expected &lt;block end&gt;, but found "
            "&#x27;&lt;block mapping start&gt;&#x27;") in resp.content.decode()
    assert not Channel.objects.exists()


def test_an_api_refusal_midway_rolls_back_what_came_before(admin, project):
    bad = FILE.replace("schedule: \"0 3 * * *\"", "schedule: \"0 3 * *\"")
    resp = admin.post("/monitors/file/", {"text": bad, "action": "apply"})
    assert resp.status_code == 400
    assert "refused, nothing was changed: schedule: " in resp.content.decode()
    assert not Channel.objects.exists() and not EscalationPolicy.objects.exists()


def test_only_admins_import_and_anyone_of_the_project_exports(project):
    member = signed_in(project, "member")
    assert member.post("/monitors/file/", {"text": FILE}).status_code == 403
    assert "needs the admin role" in member.get("/monitors/file/").content.decode()
    assert member.get("/monitors/file/export.yaml").status_code == 200
