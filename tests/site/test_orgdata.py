"""cronradar.orgdata and cronradar.orgapi: exporting an organisation, deleting it
(hidden at once, its open incidents resolved on their channels, then purged) and
deleting one's own account (accounts.deletion)."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.apps import apps
from django.test import Client

from accounts import deletion
from accounts.models import ApiKey, AuditEntry, Membership, Organisation
from alerts.models import Channel, EscalationPolicy, EscalationTier, Incident, MaintenanceWindow
from cronradar import orgdata
from monitors import evaluator, signals
from monitors.models import Monitor, Ping, Run
from monitors.pings import PingInput, ingest
from tests.conftest import T0, new_project, s, send_due
from tests.helpers import as_key, as_person, heartbeats, person

pytestmark = pytest.mark.django_db
OWNER, ADMIN = Membership.Role.OWNER, Membership.Role.ADMIN


@pytest.fixture
def receiver():
    """A local webhook receiver: yields (url, requests), each request (path,
    headers, JSON body)."""
    got = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            body = self.rfile.read(int(self.headers["Content-Length"]))
            got.append((self.path, dict(self.headers), json.loads(body)))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", got
    finally:
        server.shutdown()
        server.server_close()


def populate(name: str, url: str):
    """An organisation ``name`` with an owner, a webhook channel to ``url``, an
    escalation policy, a maintenance window, a monitor with three runs and one
    with an open incident notified on the channel (at T0 + 10 s)."""
    project = new_project(name)
    org = project.organisation
    owner = person(f"{name}-owner", org, OWNER)
    hook = Channel.objects.create(project=project, kind="webhook", name=f"{name}-hook",
                                  config={"url": url, "secret": "k"})
    policy = EscalationPolicy.objects.create(project=project, name=f"{name}-policy")
    EscalationTier.objects.create(policy=policy, position=0, delay=s(0)).channels.set([hook])
    from alerts.models import Alerting
    from monitors.runs import rearm

    def monitor(slug):
        m = Monitor(project=project, name=slug, slug=slug, grace=s(60), period=s(3600))
        rearm(m, T0)
        m.save()
        Alerting.objects.create(monitor=m, all_channels=False).channels.set([hook])
        return m

    steady, failing = monitor("steady"), monitor("failing")
    MaintenanceWindow.objects.create(project=project, name="patch", monitor=steady,
                                     starts_at=T0 + s(3600), ends_at=T0 + s(7200))
    heartbeats(steady, 3, step=s(3600))
    ingest(failing.pk, PingInput("fail", exit_status=2), T0 + s(10))
    key = ApiKey.issue(project, "ci")[1]
    return org, owner, hook, steady, failing, key


def rows() -> dict[str, set]:
    """Every table's primary keys (the tables of every installed model)."""
    return {m._meta.label: set(m.objects.values_list("pk", flat=True))
            for m in apps.get_models() if m._meta.managed}


def delete(client, confirm, **extra):
    return client.delete("/api/v1/organisation/", {"confirm": confirm, **extra}, format="json")


def test_export_then_delete_a_populated_organisation(receiver):
    url, got = receiver
    populate("other", url + "/other")
    send_due(T0 + s(10))
    before = rows()
    org, owner, hook, steady, failing, key = populate("acme", url)
    send_due(T0 + s(10))
    assert [(p, b["event"]) for p, _, b in got] == [("/hook/other", "incident.opened"),
                                                    ("/hook", "incident.opened")]
    client = as_person(owner)
    archive = b"".join(client.get("/api/v1/organisation/export/").streaming_content)
    exported = json.loads(archive)
    assert [m["slug"] for m in exported["monitors"]] == ["steady", "failing"]
    assert len(exported["runs"]) == 4 and len(exported["incidents"]) == 1

    answer = delete(client, "acme")
    assert answer.status_code == 202
    assert answer.json()["detail"] == ("acme is deleted: it is hidden now, and purged once "
                                       "the resolves of its open incidents are sent")
    # hidden at once: its objects, its key and its pings are unknown
    assert client.get(f"/api/v1/monitors/{steady.pk}/").status_code == 404
    assert client.get("/api/v1/organisations/").json() == []
    assert as_key(key).get("/api/v1/monitors/").status_code == 401
    pings = Ping.objects.count()
    for path in (f"/ping/{steady.uuid}", f"/ping/{steady.project.ping_key}/steady",
                 f"/ping/{steady.project.ping_key}/new-one?create=1"):
        response = Client().get(path)
        assert (response.status_code, response.content) == (
            404, b"not found: no monitor with this ping URL\n"), path
    assert Ping.objects.count() == pings
    hidden = Monitor.objects.filter(project__organisation=org, next_evaluation_at=None)
    assert hidden.count() == 2

    # the next tick: its monitors are not evaluated (no missed runs); the retention
    # job's purge pass resolves the open incident on its channel first
    at = T0 + s(100)
    evaluator.tick(at)
    assert Run.objects.filter(monitor__project__organisation=org).count() == 4
    signals.prune.send(sender=None, now=at)
    incident = Incident.objects.get(monitor=failing)
    assert (incident.resolved_at, incident.resolution) == (at, "organisation deleted")
    assert orgdata.purge_pass(at) == 0  # the resolve is not delivered yet
    evaluator.tick(at)
    assert Monitor.objects.filter(pk=failing.pk).exists()  # nor is the monitor removed
    send_due(at)
    acme = [(headers, body) for path, headers, body in got if path == "/hook"]
    assert [b["event"] for _, b in acme] == ["incident.opened", "incident.resolved"]
    headers, body = acme[-1]
    resolved = incident.events.get(kind="resolved")
    assert (headers["Content-Type"], headers["X-CronRadar-Event"]) == (
        "application/json", "incident.resolved")
    links = body["context"].pop("links")  # signed: their tokens carry a time
    assert (links["incident"], links["monitor_page"]) == (
        f"http://127.0.0.1:8000/api/v1/incidents/{incident.pk}/",
        f"http://127.0.0.1:8000/monitors/{failing.pk}/")
    assert body == {
        "schema": "cronradar.incident.v1", "event": "incident.resolved",
        "event_id": resolved.pk, "occurred_at": "2026-01-05T12:01:40Z",
        "message": "organisation deleted",
        "context": {"last_ping_at": "2026-01-05T12:00:10Z", "last_ping_body": "",
                    "run_duration": None, "scheduled_at": "2026-01-05T12:00:10+00:00",
                    "timezone": "UTC"},
        "incident": {"id": incident.pk, "cause": "failed", "severity": "critical",
                     "summary": "failing: run failed (exit status 2)",
                     "opened_at": "2026-01-05T12:00:10Z", "resolved_at": "2026-01-05T12:01:40Z",
                     "acknowledged_at": None, "acknowledged_by": "",
                     "resolution": "organisation deleted", "missed_count": 0,
                     "failure_count": 1, "dedup_key": str(incident.dedup_key)},
        "monitor": {"id": failing.pk, "uuid": str(failing.uuid), "name": "failing",
                    "slug": "failing", "project": "acme", "tags": []}}
    evaluator.tick(at + s(5))  # the evaluator removes the monitors now
    assert not Monitor.objects.filter(project__organisation=org).exists()
    assert orgdata.purge_pass(at + s(5)) == 1

    after = rows()
    entry = AuditEntry.objects.get(action="organisation_delete")
    assert (entry.organisation, entry.organisation_name, entry.target_id, entry.at) == (
        None, "acme", str(org.pk), entry.at)
    added = {label: after[label] - before[label] for label in after
             if after[label] - before[label]}
    lost = {label: before[label] - after[label] for label in after
            if before[label] - after[label]}
    user = type(owner)._meta.label
    # the installation's own rows (the chore, the evaluator's liveness) and the person
    installation = {"monitors.LivenessSpan"}
    assert {k: v for k, v in added.items() if k not in installation} == {
        "accounts.AuditEntry": {entry.pk}, user: {owner.pk}}
    assert lost == {}
    assert orgdata.purge_pass(at + s(20)) == 0  # nothing left to do


def test_export_archive(receiver):
    url, _ = receiver
    org, owner, hook, steady, failing, key = populate("acme", url)
    response = as_person(owner).get("/api/v1/organisation/export/")
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"] == "application/json"
    day = AuditEntry.objects.get(action="export").at.date()
    assert response["Content-Disposition"] == \
        f'attachment; filename="cronradar-acme-{day:%Y-%m-%d}.json"'
    archive = json.loads(b"".join(response.streaming_content))
    assert (archive["format"], archive["version"]) == ("cronradar-organisation", 1)
    assert list(archive) == ["format", "version", "exported_at", "organisation", "projects",
                             "monitors", "channels", "escalation_policies",
                             "maintenance_windows", "runs", "incidents"]
    assert archive["organisation"]["name"] == "acme"
    assert archive["channels"] == [{
        "id": hook.pk, "project": hook.project_id, "kind": "webhook", "name": "acme-hook",
        "config": {"url": "***", "secret": "***", "signing_secret": "***"},
        "created_at": archive["channels"][0]["created_at"], "last_error": "",
        "failing_since": None}]
    assert archive["escalation_policies"][0]["tiers"] == [{"delay": 0, "channels": [hook.pk]}]
    assert archive["maintenance_windows"][0]["monitor"] == steady.pk
    assert [(r["monitor"], r["outcome"]) for r in archive["runs"]] == [
        (steady.pk, "succeeded")] * 3 + [(failing.pk, "failed")]
    incident = archive["incidents"][0]
    assert (incident["monitor"], incident["cause"]) == (failing.pk, "failed")
    assert [d["status"] for e in incident["events"] for d in e["deliveries"]] == ["pending"]
    assert "k" not in json.dumps(archive["channels"]).replace("kind", "").replace("hook", "")
    entry = AuditEntry.objects.get(action="export")
    assert (entry.organisation, entry.actor_user, entry.actor, entry.target_type) == (
        org, owner, owner.username, "organisation")


def test_export_reads_in_bounded_chunks(receiver, monkeypatch):
    url, _ = receiver
    org, owner, *_ = populate("acme", url)
    monkeypatch.setattr(orgdata, "CHUNK", 1)
    archive = json.loads("".join(orgdata.export(org, _request(owner), T0)))
    assert [r["outcome"] for r in archive["runs"]] == ["succeeded"] * 3 + ["failed"]


def _request(user):
    from rest_framework.request import Request
    from rest_framework.test import APIRequestFactory, force_authenticate

    raw = APIRequestFactory().get("/")
    force_authenticate(raw, user=user)
    request = Request(raw)
    request.user = user
    return request


def test_who_may_export_and_delete(receiver):
    url, _ = receiver
    org, owner, hook, steady, failing, key = populate("acme", url)
    admin = person("ada", org, ADMIN)
    for client in (as_person(admin), as_key(key)):
        assert client.get("/api/v1/organisation/export/").status_code == 403
        assert delete(client, "acme").status_code == 403
    assert as_key(key).get("/api/v1/organisation/export/").json() == {
        "detail": "this needs a person with the owner role; API keys cannot do it"}
    assert as_person(admin).get("/api/v1/organisation/export/").json() == {
        "detail": "this needs the owner role in the organisation"}
    other = new_project("other").organisation
    assert as_person(owner).get(
        f"/api/v1/organisation/export/?organisation={other.pk}").status_code == 404
    Organisation.objects.get(pk=org.pk, deleted_at=None)


def test_delete_needs_the_typed_name(receiver):
    url, _ = receiver
    org, owner, *_ = populate("acme", url)
    client = as_person(owner)
    for typed in ("Acme", "acme ", ""):
        answer = delete(client, typed)
        assert (answer.status_code, answer.json()) == (
            400, {"confirm": ["type the organisation's name (acme) to confirm"]})
    assert delete(client, "acme", colour=1).json() == {"colour": ["unknown field"]}
    Organisation.objects.get(pk=org.pk, deleted_at=None)
    assert not AuditEntry.objects.filter(action="organisation_delete").exists()


def test_delete_picks_the_organisation_named_among_several(receiver):
    url, _ = receiver
    org, owner, *_ = populate("acme", url)
    second = new_project("beta").organisation
    Membership.objects.create(organisation=second, user=owner, role=OWNER)
    client = as_person(owner)
    assert client.get("/api/v1/organisation/export/").json() == {
        "organisation": ["required: you are in several organisations; give the id of one"]}
    assert delete(client, "beta").status_code == 202
    assert Organisation.objects.get(pk=second.pk).deleted_at is not None
    assert Organisation.objects.get(pk=org.pk).deleted_at is None
    assert [o["name"] for o in client.get("/api/v1/organisations/").json()] == ["acme"]


def test_deleting_an_account(receiver):
    url, _ = receiver
    org, owner, *_ = populate("acme", url)
    member = person("mo", org, Membership.Role.MEMBER)
    with pytest.raises(deletion.Refused) as refused:
        deletion.delete_account(owner, T0)
    assert (refused.value.reason, str(refused.value)) == (
        "last_owner", "you are the last owner of acme: make someone else an owner or delete "
                      "the organisation first")
    member.memberships.update(role=OWNER)
    assert deletion.delete_account(owner, T0) == ["acme"]
    assert not type(owner).objects.filter(pk=owner.pk).exists()
    entry = AuditEntry.objects.get(action="account_delete")
    assert (entry.organisation, entry.target_repr, entry.at) == (org, "acme-owner", T0)
    assert list(Membership.objects.filter(organisation=org).values_list("user__username",
                                                                         flat=True)) == ["mo"]


def test_last_owner_of_an_empty_organisation_deletes_it_with_the_account(db):
    org = new_project("solo").organisation
    owner = person("sol", org, OWNER)
    assert deletion.delete_account(owner, T0) == []
    assert Organisation.objects.get(pk=org.pk).deleted_at == T0


def test_the_purge_resumes_from_the_rows(receiver, monkeypatch):
    """No state in memory: each pass reads what is left (here one monitor a pass,
    as after a crash between two)."""
    url, _ = receiver
    org, owner, hook, steady, failing, key = populate("acme", url)
    monkeypatch.setattr(orgdata, "RETIRE_BATCH", 1)
    deletion.delete_organisation(org, owner, "acme", T0 + s(20))
    waiting = Monitor.objects.filter(project__organisation=org, next_evaluation_at=None)
    assert orgdata.purge_pass(T0 + s(30)) == 0 and waiting.count() == 1
    assert orgdata.purge_pass(T0 + s(40)) == 0 and waiting.count() == 0
    send_due(T0 + s(40))
    evaluator.tick(T0 + s(50))  # removes the monitors
    signals.prune.send(sender=None, now=T0 + s(60))  # the retention job purges the rest
    assert not Organisation.objects.filter(pk=org.pk).exists()
    assert list(Organisation.objects.values_list("name", flat=True)) == []
    assert AuditEntry.objects.get().organisation_name == "acme"
