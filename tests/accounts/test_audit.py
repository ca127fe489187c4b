"""accounts.audit: an entry for each kind of change (who, from where, what, old and
new values, no secret), whichever way in it came (the API with a key or a
session, the dashboard, /api/v3/, signed links); sign-ins; the actor context
reset per request; GET /api/v1/audit-log/ (filters, paging, who may read it);
retention."""
import json
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client, override_settings

from accounts import audit
from accounts.invitations import accept
from accounts.models import ApiKey, AuditEntry, Invitation, Membership
from alerts import links
from alerts.models import Channel, Incident
from monitors.pings import PingInput, ingest
from tests.conftest import T0, S, new_project, s
from tests.helpers import as_key, as_person, person

pytestmark = pytest.mark.django_db
HOME = "127.0.0.1"  # the test client's REMOTE_ADDR


def entries(**filters) -> list[tuple]:
    """(actor, address, action, target_type, target_id, target_repr, changes), oldest
    first; sign-ins left out (a test's force_login is one)."""
    return [(e.actor, e.address, e.action, e.target_type, e.target_id, e.target_repr,
             e.changes) for e in AuditEntry.objects.filter(**filters).exclude(
                 action="signin").order_by("pk")]


def everything() -> str:
    """Every entry, every column, as one text (to look for a secret in)."""
    return json.dumps(list(AuditEntry.objects.values()), default=str)


@pytest.fixture
def key(project):
    row, text = ApiKey.issue(project, "deploy")
    return row, text


def test_monitor_update_pause_resume_delete_by_a_key(key, make_monitor, project):
    row, text = key
    m = make_monitor(name="nightly", period=s(60), grace=s(1))
    client, who = as_key(text), f"key {row.prefix}"
    url = f"/api/v1/monitors/{m.pk}/"
    assert client.patch(url, {"grace": 90, "name": "nightly2"}, format="json").status_code == 200
    assert client.patch(url, {"grace": 90}, format="json").status_code == 200  # no change
    client.patch(url, {"channels": "all"}, format="json")
    client.post(f"{url}pause/")
    client.post(f"{url}resume/")
    assert client.delete(url).status_code == 204
    repr_ = "acme/nightly"
    assert entries() == [
        (who, HOME, "update", "monitor", str(m.pk), repr_,
         {"grace": [1, 90], "name": ["nightly", "nightly2"]}),
        (who, HOME, "update", "monitor", str(m.pk), repr_, {"channels": [[], "all"]}),
        (who, HOME, "pause", "monitor", str(m.pk), repr_, {"paused": [False, True]}),
        (who, HOME, "resume", "monitor", str(m.pk), repr_, {"paused": [True, False]}),
        (who, HOME, "delete", "monitor", str(m.pk), repr_, {}),
    ]
    assert set(AuditEntry.objects.values_list("organisation", "actor_user")) == {
        (project.organisation_id, None)}
    assert text not in everything()


def test_hc_api_pause_and_delete_are_the_keys(key, make_monitor):
    row, text = key
    m = make_monitor(name="hc")
    headers = {"HTTP_X_API_KEY": text, "REMOTE_ADDR": "203.0.113.9"}
    assert Client().generic("POST", f"/api/v3/checks/{m.uuid}/pause", b"",
                            **headers).status_code == 200
    assert Client().delete(f"/api/v3/checks/{m.uuid}", **headers).status_code == 200
    assert [e[:3] for e in entries()] == [(f"key {row.prefix}", "203.0.113.9", "pause"),
                                          (f"key {row.prefix}", "203.0.113.9", "delete")]


def test_channels_are_recorded_with_their_secrets_masked(project):
    ana = person("ana", project.organisation, "admin")
    client = as_person(ana)
    made = client.post("/api/v1/channels/", {"kind": "slack", "name": "ops", "config": {
        "url": "https://hooks.test/SECRET-ONE"}}, format="json").json()
    client.patch(f"/api/v1/channels/{made['id']}/", {"name": "ops2", "config": {
        "url": "https://hooks.test/SECRET-TWO"}}, format="json")
    client.delete(f"/api/v1/channels/{made['id']}/")
    pk = str(made["id"])
    assert entries() == [
        ("ana", HOME, "create", "channel", pk, "ops",
         {"name": [None, "ops"], "kind": [None, "slack"], "config.url": [None, "***"]}),
        ("ana", HOME, "update", "channel", pk, "ops2",
         {"name": ["ops", "ops2"], "config.url": ["***", "***"]}),
        ("ana", HOME, "delete", "channel", pk, "ops2", {}),
    ]
    assert AuditEntry.objects.filter(actor_user=ana).count() == 3
    assert "SECRET" not in everything()


def test_a_webhook_secret_and_a_routing_key_are_masked(api, project):
    hook = api.post("/api/v1/channels/", {"kind": "webhook", "config": {
        "url": "http://127.0.0.1:9/h", "secret": "S" * 40}}, format="json").json()
    pd = api.post("/api/v1/channels/", {"kind": "pagerduty", "config": {
        "routing_key": "ROUTINGKEY123"}}, format="json").json()
    api.patch(f"/api/v1/channels/{pd['id']}/", {"config": {"routing_key": "ROUTINGKEY456"}},
              format="json")
    assert [e[6] for e in entries()] == [
        {"kind": [None, "webhook"], "config.url": [None, "***"], "config.secret": [None, "***"]},
        {"kind": [None, "pagerduty"], "config.routing_key": [None, "***"]},
        {"config.routing_key": ["***", "***"]}]
    assert hook["config"]["url"] not in everything()
    for secret in ("S" * 40, "ROUTINGKEY123", "ROUTINGKEY456", "127.0.0.1:9"):
        assert secret not in everything()


def test_escalation_policies_and_their_tiers(api, project):
    one, two = (Channel.objects.create(project=project, kind="webhook", name=n,
                                       config={"url": "http://127.0.0.1:9/", "secret": "k"})
                for n in ("one", "two"))
    p = api.post("/api/v1/escalation-policies/", {"name": "on-call", "tiers": [
        {"delay": 0, "channels": [one.pk]}]}, format="json").json()
    api.patch(f"/api/v1/escalation-policies/{p['id']}/", {"repeat": 2, "tiers": [
        {"delay": 0, "channels": [one.pk]}, {"delay": 300, "channels": [two.pk, one.pk]}]},
        format="json")
    api.delete(f"/api/v1/escalation-policies/{p['id']}/")
    got = [e[2:] for e in entries()]
    pk = str(p["id"])
    assert got == [
        ("create", "escalationpolicy", pk, "on-call",
         {"name": [None, "on-call"], "repeat": [None, 0],
          "tiers": [None, [{"delay": 0, "channels": [one.pk]}]]}),
        ("update", "escalationpolicy", pk, "on-call",
         {"repeat": [0, 2], "tiers": [[{"delay": 0, "channels": [one.pk]}],
                                      [{"delay": 0, "channels": [one.pk]},
                                       {"delay": 300, "channels": [one.pk, two.pk]}]]}),
        ("delete", "escalationpolicy", pk, "on-call", {}),
    ]


def test_maintenance_windows(api, make_monitor):
    m = make_monitor(name="m")
    w = api.post("/api/v1/maintenance-windows/", {
        "name": "upgrade", "monitor": m.pk, "starts_at": "2026-03-01T10:00:00Z",
        "ends_at": "2026-03-01T11:00:00Z"}, format="json").json()
    api.patch(f"/api/v1/maintenance-windows/{w['id']}/", {"ends_at": "2026-03-01T12:00:00Z"},
              format="json")
    api.delete(f"/api/v1/maintenance-windows/{w['id']}/")
    assert [e[2:] for e in entries()] == [
        ("create", "maintenancewindow", str(w["id"]), "upgrade",
         {"name": [None, "upgrade"], "starts_at": [None, "2026-03-01T10:00:00+00:00"],
          "ends_at": [None, "2026-03-01T11:00:00+00:00"], "timezone": [None, "UTC"],
          "monitor": [None, m.pk]}),
        ("update", "maintenancewindow", str(w["id"]), "upgrade",
         {"ends_at": ["2026-03-01T11:00:00+00:00", "2026-03-01T12:00:00+00:00"]}),
        ("delete", "maintenancewindow", str(w["id"]), "upgrade", {}),
    ]


def test_projects_and_the_organisation(project):
    org = project.organisation
    olga = person("olga", org, "owner")
    client = as_person(olga)
    made = client.post("/api/v1/projects/", {"name": "web", "organisation": org.pk},
                       format="json").json()
    client.patch(f"/api/v1/projects/{made['id']}/", {"name": "www"}, format="json")
    client.patch(f"/api/v1/organisations/{org.pk}/", {"name": "Acme Inc"}, format="json")
    assert [e[:] for e in entries()] == [
        ("olga", HOME, "create", "project", str(made["id"]), "web", {"name": [None, "web"]}),
        ("olga", HOME, "update", "project", str(made["id"]), "www", {"name": ["web", "www"]}),
        ("olga", HOME, "update", "organisation", str(org.pk), "Acme Inc",
         {"name": ["acme", "Acme Inc"]}),
    ]


def test_api_keys_are_recorded_without_the_key(project):
    ana = person("ana", project.organisation, "admin")
    client = as_person(ana)
    made = client.post("/api/v1/api-keys/", {"name": "ci", "read_only": True},
                       format="json").json()
    client.delete(f"/api/v1/api-keys/{made['id']}/")
    client.delete(f"/api/v1/api-keys/{made['id']}/")  # twice: one entry
    assert entries() == [
        ("ana", HOME, "key_create", "api_key", str(made["id"]), "ci",
         {"name": [None, "ci"], "prefix": [None, made["prefix"]], "read_only": [None, True],
          "project": [None, project.pk]}),
        ("ana", HOME, "key_revoke", "api_key", str(made["id"]), "ci", {}),
    ]
    assert made["key"] not in everything()


def test_members_added_changed_removed_and_joining_by_invitation(project):
    org = project.organisation
    olga = person("olga", org, "owner")
    dan = person("dan", new_project("elsewhere").organisation, "viewer")
    Membership.objects.create(organisation=dan.memberships.get().organisation, user=olga,
                              role="viewer")
    client = as_person(olga)
    added = client.post("/api/v1/members/", {"username": "dan", "role": "viewer",
                                             "organisation": org.pk}, format="json").json()
    client.patch(f"/api/v1/members/{added['id']}/", {"role": "admin"}, format="json")
    client.delete(f"/api/v1/members/{added['id']}/")
    invited = Invitation.objects.create(organisation=org, email="eve@example.com",
                                        role="member", invited_by="olga")
    eve = get_user_model().objects.create_user("eve", "eve@example.com", "pw")
    accept(invited, eve, T0)
    assert entries(organisation=org) == [
        ("olga", HOME, "member_add", "user", str(dan.pk), "dan", {"role": [None, "viewer"]}),
        ("olga", HOME, "role_change", "user", str(dan.pk), "dan", {"role": ["viewer", "admin"]}),
        ("olga", HOME, "member_remove", "user", str(dan.pk), "dan", {"role": ["admin", None]}),
        ("eve", None, "member_add", "user", str(eve.pk), "eve",
         {"role": [None, "member"], "invited_by": [None, "olga"]}),
    ]
    assert AuditEntry.objects.filter(action="member_add").last().at == T0


@pytest.fixture
def incident(make_monitor):
    m = make_monitor(name="backup", period=s(3600), grace=s(60))
    ingest(m.pk, PingInput("fail"), T0)
    return Incident.objects.get()


def test_acknowledge_and_resolve_through_the_api(key, incident):
    row, text = key
    client, who = as_key(text), f"key {row.prefix}"
    client.post(f"/api/v1/incidents/{incident.pk}/ack/", {"note": "looking"}, format="json")
    client.post(f"/api/v1/incidents/{incident.pk}/ack/", format="json")  # again: no entry
    client.post(f"/api/v1/incidents/{incident.pk}/resolve/", {"by": "ana"}, format="json")
    client.post(f"/api/v1/incidents/{incident.pk}/resolve/", {"by": "ana"}, format="json")
    repr_ = f"incident {incident.pk} of acme/backup"
    assert entries() == [
        (who, HOME, "acknowledge", "incident", str(incident.pk), repr_,
         {"by": [None, "deploy"], "note": [None, "looking"]}),
        (who, HOME, "resolve", "incident", str(incident.pk), repr_, {"by": [None, "ana"]}),
    ]


def test_a_signed_link_acknowledges_as_a_signed_link(incident):
    token = links.make(incident.pk, "ack").rsplit("/", 2)[-2]
    resp = Client().post(f"/incident-link/{token}/", REMOTE_ADDR="198.51.100.7")
    assert resp.status_code == 200
    assert entries() == [("signed link", "198.51.100.7", "acknowledge", "incident",
                          str(incident.pk), f"incident {incident.pk} of acme/backup",
                          {"by": [None, "a signed link"]})]


def test_the_dashboard_records_the_person(project, make_monitor, incident):
    ana = person("ana", project.organisation, "admin")
    browser = Client()
    browser.force_login(ana)
    m = incident.monitor
    browser.post(f"/incidents/{incident.pk}/resolve/", {"note": "fixed"})
    browser.post(f"/monitors/{m.pk}/pause/", REMOTE_ADDR="192.0.2.1")
    assert [e[:3] + e[6:] for e in entries()] == [
        ("ana", HOME, "resolve", {"by": [None, "ana"], "note": [None, "fixed"]}),
        ("ana", "192.0.2.1", "pause", {"paused": [False, True]}),
    ]
    key = ApiKey.issue(project, "x")[0]
    browser.post(f"/keys/{key.pk}/revoke/")
    assert entries()[-1][:4] == ("ana", HOME, "key_revoke", "api_key")


def test_the_actor_does_not_outlive_its_request(api):
    assert api.get("/api/v1/monitors/").status_code == 200
    assert audit.current() == audit.NOBODY
    entry = audit.record("update", None, target_type="x", target_id="1")
    assert (entry.actor, entry.address, entry.actor_user) == ("", None, None)


# --- sign-ins ----------------------------------------------------------------------------

def test_sign_ins_and_failed_sign_ins_in_each_organisation(project):
    other = new_project("other").organisation
    ana = person("ana", project.organisation, "member")
    Membership.objects.create(organisation=other, user=ana, role="viewer")
    browser = Client(REMOTE_ADDR="192.0.2.5")
    browser.post("/login/", {"username": "ana", "password": "wrong"})
    browser.post("/login/", {"username": "nobody-here", "password": "wrong"})  # not recorded
    assert browser.post("/login/", {"username": "ana", "password": "pw-ana"}).status_code == 302
    got = sorted((e.organisation_id, e.action, e.actor, e.address, e.target_id)
                 for e in AuditEntry.objects.all())
    assert got == sorted((org, action, "ana", "192.0.2.5", str(ana.pk))
                         for org in (project.organisation_id, other.pk)
                         for action in ("signin_failed", "signin"))
    assert "nobody-here" not in everything() and "wrong" not in everything()


# --- the API -----------------------------------------------------------------------------

def _log(n, org, now=T0):
    """n entries in ``org`` at ``now`` + i seconds: monitor i, actor ana or bob."""
    return [audit.record("update" if i % 2 else "pause", org, target_type="monitor",
                         target_id=str(i), target_repr=f"m{i}", at=now + i * S,
                         actor=audit.Actor("ana" if i % 2 else "bob", None, "10.0.0.1"),
                         changes={"grace": [i, i + 1]}) for i in range(n)]


def test_the_audit_log_api_filters_and_pages(project):
    org = project.organisation
    olga = person("olga", org, "owner")
    made = _log(5, org)
    _log(2, new_project("other").organisation)  # another tenant's: never shown
    audit.record("signin", None, target_type="user", target_id="1")  # installation-level
    client = as_person(olga)
    page = client.get("/api/v1/audit-log/?limit=2")
    assert [e["id"] for e in page.json()] == [made[4].pk, made[3].pk]
    assert page.json()[0] == {
        "id": made[4].pk, "at": "2026-01-05T12:00:04Z", "organisation": org.pk,
        "actor": "bob", "address": "10.0.0.1", "action": "pause",
        "target": {"type": "monitor", "id": "4", "repr": "m4"}, "changes": {"grace": [4, 5]}}
    nxt = page["Link"].split(";")[0].strip("<>")
    assert nxt.endswith(f"cursor={made[3].pk}") and "limit=2" in nxt
    assert [e["id"] for e in client.get(nxt).json()] == [made[2].pk, made[1].pk]
    ids = lambda q: [e["id"] for e in client.get(f"/api/v1/audit-log/?{q}").json()]  # noqa: E731
    assert ids("object=monitor:3") == [made[3].pk]
    assert ids("target_type=monitor&target_id=2") == [made[2].pk]
    assert ids("actor=ana") == [made[3].pk, made[1].pk]
    assert ids("action=pause") == [made[4].pk, made[2].pk, made[0].pk]
    assert ids("since=2026-01-05T12:00:01Z&until=2026-01-05T12:00:03Z") == [made[2].pk,
                                                                            made[1].pk]
    assert client.get("/api/v1/audit-log/?action=nap").json() == {"action": [
        "unknown action 'nap': use " + ", ".join(AuditEntry.Action.values)]}
    assert client.get("/api/v1/audit-log/?object=monitor").json() == {"object": [
        "must be <type>:<id>, e.g. monitor:12"]}
    assert client.get("/api/v1/audit-log/?since=yesterday").status_code == 400


def test_only_admins_owners_and_read_write_keys_read_the_log(project, key):
    org = project.organisation
    made = _log(1, org)
    for role in ("member", "viewer"):
        resp = as_person(person(role, org, role)).get("/api/v1/audit-log/")
        assert (resp.status_code, resp.json()) == (403, {
            "detail": "the audit log needs the admin role in the organisation"})
    assert [e["id"] for e in as_person(person("ada", org, "admin")).get(
        "/api/v1/audit-log/").json()] == [made[0].pk]
    assert [e["id"] for e in as_key(key[1]).get("/api/v1/audit-log/").json()] == [made[0].pk]
    reader = ApiKey.issue(project, read_only=True)[1]
    assert as_key(reader).get("/api/v1/audit-log/").json() == {
        "detail": "the audit log needs the admin role: this API key is read-only"}
    assert Client().get("/api/v1/audit-log/").status_code == 401


def test_the_endpoint_is_in_the_schema(api):
    schema = api.get("/api/v1/schema/?format=json").json()
    params = {p["name"] for p in schema["paths"]["/api/v1/audit-log/"]["get"]["parameters"]}
    assert {"object", "target_type", "target_id", "actor", "action", "since", "until",
            "cursor", "limit"} <= params


# --- retention ---------------------------------------------------------------------------

@override_settings(CRONRADAR_AUDIT_RETENTION_DAYS=30)
def test_retention_deletes_old_entries_in_batches(project):
    now = T0 + timedelta(days=100)
    old = _log(3, project.organisation, now=now - timedelta(days=31))
    installation = audit.record("organisation_delete", None, at=now - timedelta(days=40))
    kept = _log(2, project.organisation, now=now - timedelta(days=29))
    assert audit.prune(now, batch=2) == 4
    assert sorted(AuditEntry.objects.values_list("pk", flat=True)) == [e.pk for e in kept]
    assert installation.pk not in AuditEntry.objects.values_list("pk", flat=True)
    assert old  # three of them, gone


def test_the_retention_job_prunes_the_audit_log(project, settings):
    from monitors.retention import prune

    settings.CRONRADAR_AUDIT_RETENTION_DAYS = 90
    now = T0 + timedelta(days=200)
    _log(2, project.organisation, now=now - timedelta(days=91))
    kept = _log(1, project.organisation, now=now - timedelta(days=89))
    assert prune(now).audit == 2
    assert list(AuditEntry.objects.values_list("pk", flat=True)) == [kept[0].pk]


def test_create_on_ping_acts_as_the_ping_key(project, monkeypatch):
    from monitors import pings

    seen = []
    real = pings.create_on_ping

    def spy(*args, **kw):
        seen.append(audit.current())
        return real(*args, **kw)

    monkeypatch.setattr(pings, "create_on_ping", spy)
    resp = Client().get(f"/ping/{project.ping_key}/new-job?create=1", REMOTE_ADDR="192.0.2.44")
    assert resp.status_code == 201
    assert seen == [audit.Actor(f"ping key {project.ping_key[:6]}", None, "192.0.2.44")]
    assert audit.current() == audit.NOBODY


def test_values_are_kept_as_the_api_shows_them():
    import uuid
    from decimal import Decimal

    u = uuid.UUID(int=1)
    assert audit.diff({"slow_factor": None, "grace": timedelta(seconds=60)}, {
        "slow_factor": Decimal("2.50"), "grace": timedelta(minutes=2), "uuid": u,
        "at": T0, "tags": ("b", "a"), "token": "x"}, secret={"token"}) == {
        "slow_factor": [None, 2.5], "grace": [60, 120], "uuid": [None, str(u)],
        "at": [None, "2026-01-05T12:00:00+00:00"], "tags": [None, ["a", "b"]],
        "token": [None, "***"]}
    assert audit.diff({"token": "x"}, {"token": None}, secret={"token"}) == {
        "token": ["***", None]}


def test_a_secret_set_where_there_was_none_and_removed(api, project):
    made = api.post("/api/v1/channels/", {"kind": "ntfy", "name": "n", "config": {
        "url": "https://ntfy.test/alerts"}}, format="json").json()
    url = f"/api/v1/channels/{made['id']}/"
    assert api.patch(url, {"config": {"url": "https://ntfy.test/alerts", "token": "TOKEN1"}},
                     format="json").status_code == 200
    assert api.patch(url, {"config": {"url": "https://ntfy.test/alerts", "token": None}},
                     format="json").status_code == 200
    assert Channel.objects.get(pk=made["id"]).config == {"url": "https://ntfy.test/alerts"}
    assert [e[6] for e in entries(action="update")] == [
        {"config.token": [None, "***"]}, {"config.token": ["***", None]}]
    assert "TOKEN1" not in everything()


def test_a_person_reads_each_organisation_they_administer(project):
    other = new_project("other").organisation
    ada = person("ada", project.organisation, "admin")
    Membership.objects.create(organisation=other, user=ada, role="owner")
    third = new_project("third").organisation
    Membership.objects.create(organisation=third, user=ada, role="member")
    mine, theirs, no = _log(1, project.organisation), _log(1, other), _log(1, third)
    client = as_person(ada)
    assert [e["id"] for e in client.get("/api/v1/audit-log/").json()] == [theirs[0].pk,
                                                                        mine[0].pk]
    assert [e["id"] for e in client.get(
        f"/api/v1/audit-log/?organisation={other.pk}").json()] == [theirs[0].pk]
    assert client.get(f"/api/v1/audit-log/?organisation={third.pk}").json() == []
    assert no  # a member there: never shown
