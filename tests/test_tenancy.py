"""Organisations, people, roles and keys: the isolation matrix (every endpoint and
method, as a key of project A and as a member of organisation A, against
organisation B's objects), read-only keys, cross-tenant references, roles, and
the key lifecycle."""
import hashlib
import io
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiKey, Membership, Organisation
from alerts.models import Channel, EscalationPolicy, EscalationTier, Incident, MaintenanceWindow
from monitors.models import Monitor
from monitors.pings import PingInput, ingest
from tests.conftest import T0, new_project

pytestmark = pytest.mark.django_db
S = timedelta(seconds=1)


def person(name: str, org: Organisation, role: str):
    user = get_user_model().objects.create_user(name, f"{name}@example.com", "pw-" + name)
    Membership.objects.create(organisation=org, user=user, role=role)
    return user


def as_key(key: str) -> APIClient:
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return c


def as_person(user) -> APIClient:
    c = APIClient()
    c.force_authenticate(user=user)
    return c


@pytest.fixture
def tenant_b(db):
    """Organisation B with one of everything."""
    pb = new_project("bravo")
    ch = Channel.objects.create(project=pb, kind="webhook", name="b-hook",
                                config={"url": "https://b.test/h", "secret": "s"})
    m = Monitor.objects.create(project=pb, name="b-job", slug="b-job", period=60 * S, grace=S)
    ingest(m.pk, PingInput("fail"), T0)
    incident = Incident.objects.get(monitor=m)
    policy = EscalationPolicy.objects.create(project=pb, name="b-policy")
    EscalationTier.objects.create(policy=policy, position=0, delay=S).channels.set([ch])
    window = MaintenanceWindow.objects.create(project=pb, name="b-window", monitor=m,
                                              starts_at=T0, ends_at=T0 + 60 * S)
    key, _ = ApiKey.issue(pb, "b-key")
    bob = person("bob", pb.organisation, "owner")
    return {"org": pb.organisation, "project": pb, "channel": ch, "monitor": m,
            "incident": incident, "policy": policy, "window": window, "key": key,
            "membership": bob.memberships.get()}


@pytest.fixture
def callers(project):
    """Organisation A's callers: a read-write key, a read-only key, an admin."""
    return {"rw key": as_key(ApiKey.issue(project, "rw")[1]),
            "ro key": as_key(ApiKey.issue(project, "ro", read_only=True)[1]),
            "admin": as_person(person("alice", project.organisation, "admin")),
            "owner": as_person(person("olga", project.organisation, "owner"))}


def b_urls(b) -> list[tuple[str, str]]:
    """(method, url) of every route that takes one of B's objects."""
    v = "/api/v1"
    m, ch, inc = b["monitor"].pk, b["channel"].pk, b["incident"].pk
    routes = []
    for url in (f"{v}/monitors/{m}/", f"{v}/channels/{ch}/",
                f"{v}/escalation-policies/{b['policy'].pk}/",
                f"{v}/maintenance-windows/{b['window'].pk}/", f"{v}/api-keys/{b['key'].pk}/",
                f"{v}/members/{b['membership'].pk}/"):
        routes += [("get", url), ("patch", url), ("delete", url)]
    for url in (f"{v}/projects/{b['project'].pk}/", f"{v}/organisations/{b['org'].pk}/"):
        routes += [("get", url), ("patch", url)]
    routes += [("get", f"{v}/monitors/{m}/runs/"), ("get", f"{v}/monitors/{m}/pings/"),
               ("get", f"{v}/monitors/{m}/stats/"),
               ("get", f"{v}/monitors/{m}/advice/"),
               ("get", f"{v}/incidents/{inc}/"), ("post", f"{v}/monitors/{m}/pause/"),
               ("post", f"{v}/monitors/{m}/resume/"),
               ("get", f"{v}/monitors/by-slug/{b['monitor'].slug}/"),
               ("post", f"{v}/channels/{ch}/test/"), ("post", f"{v}/incidents/{inc}/ack/"),
               ("post", f"{v}/incidents/{inc}/resolve/")]
    return routes


LISTS = ["monitors", "channels", "incidents", "deliveries", "escalation-policies",
         "maintenance-windows", "api-keys", "members", "projects", "organisations"]


@pytest.mark.parametrize("who", ["rw key", "ro key", "admin", "owner"])
def test_another_tenants_objects_are_404_and_never_listed(callers, tenant_b, who):
    client = callers[who]
    for method, url in b_urls(tenant_b):
        resp = getattr(client, method)(url, {"name": "pwned"}, format="json")
        assert (resp.status_code, resp.json()) == (404, {"detail": "Not found."}), (method, url)
    b_ids = {"monitors": tenant_b["monitor"].pk, "channels": tenant_b["channel"].pk,
             "incidents": tenant_b["incident"].pk, "escalation-policies": tenant_b["policy"].pk,
             "maintenance-windows": tenant_b["window"].pk, "api-keys": tenant_b["key"].pk,
             "members": tenant_b["membership"].pk, "projects": tenant_b["project"].pk,
             "organisations": tenant_b["org"].pk}
    for name in LISTS:
        listed = client.get(f"/api/v1/{name}/").json()
        assert isinstance(listed, list), (name, listed)
        assert b_ids.get(name) not in {row["id"] for row in listed}, name
        if name == "deliveries":
            assert listed == []  # only B has notifications
    assert client.get(f"/api/v1/incidents/?monitor={tenant_b['monitor'].pk}").json() == []
    assert client.get(f"/api/v1/deliveries/?channel={tenant_b['channel'].pk}").json() == []
    # nothing of B changed
    assert Monitor.objects.get(pk=tenant_b["monitor"].pk).deleted_at is None
    assert Channel.objects.get(pk=tenant_b["channel"].pk).name == "b-hook"
    assert Incident.objects.get(pk=tenant_b["incident"].pk).acknowledged_at is None
    assert ApiKey.objects.get(pk=tenant_b["key"].pk).revoked_at is None
    assert Organisation.objects.get(pk=tenant_b["org"].pk).name == "bravo"


@pytest.mark.parametrize("who", ["rw key", "admin"])
def test_writes_can_never_point_into_another_tenant(callers, tenant_b, project, who):
    client = callers[who]
    b = tenant_b
    mine = Channel.objects.create(project=project, kind="webhook",
                                  config={"url": "https://a.test/h", "secret": "s"})
    job = {"name": "a-job", "period": 60, "grace": 5}
    for path, body, field, message in [
        ("monitors", {**job, "channels": [b["channel"].pk]}, "channels",
         f"no channel with id {b['channel'].pk} in this project"),
        ("monitors", {**job, "escalation_policy": b["policy"].pk}, "escalation_policy",
         f"no escalation policy with id {b['policy'].pk} in this project"),
        ("monitors", {**job, "project": b["project"].pk}, "project",
         f"no project with id {b['project'].pk} that you can see"),
        ("escalation-policies", {"name": "p", "tiers": [
            {"delay": 0, "channels": [mine.pk, b["channel"].pk]}]}, "tiers",
         f"no channel with id {b['channel'].pk} in this project"),
        ("maintenance-windows", {"name": "w", "monitor": b["monitor"].pk,
                                 "starts_at": "2026-01-01T00:00:00Z",
                                 "ends_at": "2026-01-01T01:00:00Z"}, "monitor",
         f"no monitor with id {b['monitor'].pk} in this project"),
        ("api-keys", {"name": "k", "project": b["project"].pk}, "project",
         f"no project with id {b['project'].pk} that you can see"),
        ("channels", {"kind": "webhook", "config": {"url": "https://a.test/x"},
                      "project": b["project"].pk}, "project",
         f"no project with id {b['project'].pk} that you can see"),
    ]:
        resp = client.post(f"/api/v1/{path}/", body, format="json")
        assert resp.status_code == 400, (path, resp.json())
        assert message in str(resp.json()[field]), (path, resp.json())
    assert not Monitor.objects.filter(name="a-job").exists()


def test_a_read_only_key_reads_everything_and_changes_nothing(callers, project, make_monitor):
    ro = callers["ro key"]
    m = make_monitor(name="job")
    ch = Channel.objects.create(project=project, kind="webhook",
                                config={"url": "https://a.test/h", "secret": "s"})
    ingest(m.pk, PingInput("fail"), T0)
    incident = Incident.objects.get()
    got = ro.get(f"/api/v1/monitors/{m.pk}/").json()
    # a ping would change it: no ping URL, no uuid
    assert (got["name"], got["ping_url"], got["uuid"]) == ("job", None, None)
    assert ro.get(f"/api/v1/monitors/{m.pk}/advice/").json()["monitor"] == m.pk
    assert ro.get("/api/v1/projects/").json()[0]["ping_key"] is None
    writes = [("post", "/api/v1/monitors/", {"name": "x", "period": 60, "grace": 5}),
              ("patch", f"/api/v1/monitors/{m.pk}/", {"paused": True}),
              ("delete", f"/api/v1/monitors/{m.pk}/", None),
              ("post", "/api/v1/channels/", {"kind": "webhook", "config": {"url": "https://x.t"}}),
              ("patch", f"/api/v1/channels/{ch.pk}/", {"name": "x"}),
              ("delete", f"/api/v1/channels/{ch.pk}/", None),
              ("post", f"/api/v1/channels/{ch.pk}/test/", None),
              ("post", f"/api/v1/incidents/{incident.pk}/ack/", None),
              ("post", f"/api/v1/incidents/{incident.pk}/resolve/", None),
              ("post", "/api/v1/escalation-policies/", {"name": "p", "tiers": []}),
              ("post", "/api/v1/maintenance-windows/", {"name": "w"}),
              ("post", "/api/v1/api-keys/", {"name": "k"}),
              ("post", "/api/v1/projects/", {"name": "p"}),
              ("post", "/api/v1/members/", {"username": "alice"})]
    for method, url, body in writes:
        resp = getattr(ro, method)(url, body, format="json")
        assert (resp.status_code, resp.json()) == (
            403, {"detail": "this API key is read-only"}), (method, url)
    m.refresh_from_db()
    assert (m.paused, m.deleted_at, Channel.objects.filter(deleted_at=None).count()) == (
        False, None, 1)
    assert Incident.objects.get().acknowledged_at is None


def test_roles_inside_an_organisation(project, make_monitor):
    org = project.organisation
    viewer, member, admin = (as_person(person(n, org, n)) for n in ("viewer", "member", "admin"))
    job = {"name": "j", "period": 60, "grace": 5}
    hook = {"kind": "webhook", "config": {"url": "https://a.test/h"}}
    assert viewer.get("/api/v1/monitors/").status_code == 200
    assert viewer.post("/api/v1/monitors/", job, format="json").json() == {
        "detail": "this needs the member role in the organisation"}
    created = member.post("/api/v1/monitors/", job, format="json")
    assert created.status_code == 201 and created.json()["project"] == project.pk
    assert created.json()["ping_url"].endswith(created.json()["uuid"])
    assert member.post("/api/v1/channels/", hook, format="json").json() == {
        "detail": "this needs the admin role in the organisation"}
    assert admin.post("/api/v1/channels/", hook, format="json").status_code == 201
    url = f"/api/v1/monitors/{created.json()['id']}/"
    assert viewer.patch(url, {"paused": True}, format="json").status_code == 403
    assert (viewer.get(url).json()["ping_url"], viewer.get(url).json()["uuid"]) == (None, None)
    assert member.patch(url, {"paused": True}, format="json").json()["paused"] is True
    assert admin.patch(f"/api/v1/organisations/{org.pk}/", {"name": "x"},
                       format="json").status_code == 403


def test_a_person_in_two_organisations_names_the_project(project):
    other = new_project("second")
    both = person("both", project.organisation, "member")
    Membership.objects.create(organisation=other.organisation, user=both, role="member")
    client = as_person(both)
    job = {"name": "j", "period": 60, "grace": 5}
    assert client.post("/api/v1/monitors/", job, format="json").json() == {
        "project": ["required: you are in several projects; give the id of one"]}
    made = client.post("/api/v1/monitors/", {**job, "project": other.pk}, format="json").json()
    assert made["project"] == other.pk
    assert sorted(m["project"] for m in client.get("/api/v1/monitors/").json()) == [other.pk]
    moved = client.patch(f"/api/v1/monitors/{made['id']}/", {"project": project.pk},
                         format="json")
    assert moved.json() == {"project": ["cannot be changed"]}


def test_a_signed_in_person_needs_the_csrf_token_to_write(project):
    person("carol", project.organisation, "admin")
    client = APIClient(enforce_csrf_checks=True)
    assert client.login(username="carol", password="pw-carol")
    assert client.get("/api/v1/projects/").json()[0]["name"] == "acme"
    resp = client.post("/api/v1/monitors/", {"name": "j", "period": 60, "grace": 5},
                       format="json")
    assert resp.status_code == 403 and "CSRF" in resp.json()["detail"]


# --- keys -------------------------------------------------------------------------------

def test_keys_are_shown_once_stored_keyed_and_revocable(api, project):
    made = api.post("/api/v1/api-keys/", {"name": "ci", "read_only": True}, format="json")
    assert made.status_code == 201
    body = made.json()
    key = body.pop("key")
    assert (body["name"], body["read_only"], body["prefix"], body["project"]) == (
        "ci", True, key[:12], project.pk)
    row = ApiKey.objects.get(pk=body["id"])
    assert key not in (row.key_hash, row.prefix + row.key_hash)
    assert row.key_hash != hashlib.sha256(key.encode()).hexdigest()  # keyed, not plain
    assert row.key_hash == ApiKey.keyed_hash(key)
    assert "key" not in api.get(f"/api/v1/api-keys/{row.pk}/").json()
    ci = as_key(key)
    assert ci.get("/api/v1/monitors/").status_code == 200
    row.refresh_from_db()
    assert row.last_used_at is not None and timezone.now() - row.last_used_at < 60 * S
    assert api.patch(f"/api/v1/api-keys/{row.pk}/", {"read_only": False},
                     format="json").status_code == 400
    assert api.delete(f"/api/v1/api-keys/{row.pk}/").status_code == 204
    assert ci.get("/api/v1/monitors/").json() == {"detail": "invalid or revoked API key"}
    revoked_at = ApiKey.objects.get(pk=row.pk).revoked_at
    assert api.delete(f"/api/v1/api-keys/{row.pk}/").status_code == 204  # twice: no change
    assert ApiKey.objects.get(pk=row.pk).revoked_at == revoked_at


def test_a_key_from_before_keyed_hashing_works_and_is_rehashed(project):
    key = "cr_" + "x" * 40
    row = ApiKey.objects.create(project=project, name="old", scheme="sha256",
                                key_hash=hashlib.sha256(key.encode()).hexdigest(),
                                prefix=key[:8])
    assert as_key(key).get("/api/v1/monitors/").status_code == 200
    row.refresh_from_db()
    assert (row.scheme, row.prefix, row.key_hash) == ("hmac", key[:12], ApiKey.keyed_hash(key))
    assert as_key(key).get("/api/v1/monitors/").status_code == 200
    assert as_key(key[:-1] + "y").get("/api/v1/monitors/").status_code == 401


def test_a_rotated_secret_key_keeps_keys_working_through_the_fallbacks(project, settings):
    _, key = ApiKey.issue(project)
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "a-new-secret-key-" + "z" * 40
    assert as_key(key).get("/api/v1/monitors/").status_code == 200


# --- members ----------------------------------------------------------------------------

def test_members_are_managed_by_admins_and_an_owner_stays(project):
    org = project.organisation
    olga, alice = person("olga", org, "owner"), person("alice", org, "admin")
    elsewhere = new_project("elsewhere").organisation
    person("dan", elsewhere, "viewer")  # dan shares "elsewhere" with alice: she can add him
    Membership.objects.create(organisation=elsewhere, user=alice, role="viewer")
    owner, admin = as_person(olga), as_person(alice)
    added = admin.post("/api/v1/members/", {"email": "DAN@example.com", "role": "viewer",
                                            "organisation": org.pk}, format="json")
    assert added.status_code == 201, added.json()
    assert {k: added.json()[k] for k in ("organisation", "username", "role")} == {
        "organisation": org.pk, "username": "dan", "role": "viewer"}
    assert admin.post("/api/v1/members/", {"username": "dan", "organisation": org.pk},
                      format="json").json() == {"username": ["dan is already a member"]}
    assert admin.post("/api/v1/members/", {"username": "nobody", "organisation": org.pk},
                      format="json").json() == {
        "username": ["no such person in your organisations; to add someone new, give a new "
                     "username and email"]}
    mine = olga.memberships.get()
    assert admin.patch(f"/api/v1/members/{mine.pk}/", {"role": "member"},
                       format="json").json() == {
        "detail": "only an owner can grant or change the owner role"}
    assert owner.patch(f"/api/v1/members/{mine.pk}/", {"role": "admin"},
                       format="json").json() == {
        "role": ["an organisation keeps at least one owner: make another owner first"]}
    assert owner.delete(f"/api/v1/members/{mine.pk}/").status_code == 400
    dan = added.json()["id"]
    assert admin.patch(f"/api/v1/members/{dan}/", {"role": "member"},
                       format="json").json()["role"] == "member"
    assert admin.delete(f"/api/v1/members/{dan}/").status_code == 204
    key = as_key(ApiKey.issue(project)[1])
    assert len(key.get("/api/v1/members/").json()) == 2
    assert key.post("/api/v1/members/", {"username": "dan"}, format="json").json() == {
        "detail": "members are managed by people with the admin role; API keys can only "
                  "list them"}


def test_projects_and_their_ping_keys(project):
    admin = as_person(person("alice", project.organisation, "admin"))
    made = admin.post("/api/v1/projects/", {"name": "staging"}, format="json")
    assert made.status_code == 201
    assert (made.json()["organisation"], len(made.json()["ping_key"])) == (
        project.organisation_id, 22)
    assert admin.post("/api/v1/projects/", {"name": "staging"}, format="json").json() == {
        "name": ["a project named 'staging' exists in this organisation"]}
    assert [p["name"] for p in admin.get("/api/v1/projects/").json()] == ["acme", "staging"]
    key = as_key(ApiKey.issue(project)[1])
    assert key.get("/api/v1/projects/").json()[0]["ping_key"] == project.ping_key
    assert key.post("/api/v1/projects/", {"name": "x"}, format="json").status_code == 403


# --- commands ---------------------------------------------------------------------------

def run(*args) -> list[str]:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().splitlines()


def test_the_key_commands(db, settings):
    lines = run("createapikey", "--project", "ops", "--read-only", "--name", "grafana")
    assert lines[0].startswith("using database: sqlite ") or lines[0].startswith(
        "using database: postgresql ")
    key = lines[-1]
    row = ApiKey.find(key)
    assert (row.project.name, row.project.organisation.name, row.read_only, row.name) == (
        "ops", "ops", True, "grafana")
    listed = run("listapikeys", "--project", "ops")
    assert listed[1] == f"project 'ops' in organisation 'ops': ping key {row.project.ping_key}"
    assert listed[2].startswith(f"{row.pk}\t{key[:12]}…\tgrafana\tread-only\tcreated ")
    assert listed[2].endswith("\tlast used never\tactive")
    assert run("revokeapikey", key[:12])[1].startswith(f"revoked API key {row.pk} (")
    assert ApiKey.find(key) is None
    Organisation.objects.create(name="other").projects.create(name="ops")
    with pytest.raises(CommandError, match="several projects are called 'ops'"):
        run("createapikey", "--project", "ops")
    assert ApiKey.find(run("createapikey", "--project", "ops", "--organisation",
                           "other")[-1]).project.organisation.name == "other"


def test_createuser_makes_a_person_who_can_sign_in(db, monkeypatch):
    monkeypatch.setenv("CRONRADAR_PASSWORD", "a long passphrase 42")
    assert run("createuser", "erin", "--organisation", "acme", "--email", "e@x.test")[-1] == (
        "erin is owner of organisation 'acme' (new)")
    assert run("createuser", "fred", "--organisation", "acme")[-1] == (
        "fred is member of organisation 'acme'")
    assert run("createuser", "fred", "--organisation", "acme", "--role", "viewer")[-1] == (
        "fred is viewer of organisation 'acme'")
    assert APIClient().login(username="erin", password="a long passphrase 42")
    monkeypatch.setenv("CRONRADAR_PASSWORD", "short")
    with pytest.raises(CommandError, match="password refused"):
        run("createuser", "gina", "--organisation", "acme")


def test_the_first_person_of_an_organisation_without_owner_is_its_owner(db, monkeypatch):
    """createapikey --project makes an organisation with no members (the README's
    first path): the person createuser adds next must be able to run it."""
    monkeypatch.setenv("CRONRADAR_PASSWORD", "a long passphrase 42")
    lines = run("createapikey", "--project", "myteam")
    assert "organisation 'myteam' has no owner yet" in lines[1]
    with pytest.raises(CommandError, match="'myteam' is an organisation without an owner"):
        run("createuser", "ana", "--organisation", "myteam", "--role", "admin")
    assert run("createuser", "ana", "--organisation", "myteam")[-1] == (
        "ana is owner of organisation 'myteam' (it had no owner: its first person is its owner)")
    assert run("createuser", "bo", "--organisation", "myteam")[-1] == (
        "bo is member of organisation 'myteam'")
    assert Membership.objects.get(user__username="ana").role == "owner"
    lines = run("createuser", "cy", "--organisation", "newco")
    assert lines[-2] == ("'newco' has no project yet: sign in to the dashboard and create "
                         "one, or run manage.py createapikey --project NAME --organisation "
                         "'newco'")
    assert lines[-1] == "cy is owner of organisation 'newco' (new)"


def test_createuser_keeps_an_owner_and_checks_names(db, monkeypatch):
    monkeypatch.setenv("CRONRADAR_PASSWORD", "a long passphrase 42")
    with pytest.raises(CommandError, match="'acme' is a new organisation: its first person is "
                                           "its owner"):
        run("createuser", "ana", "--organisation", "acme", "--role", "admin")
    assert not Organisation.objects.filter(name="acme").exists()  # nothing half made
    run("createuser", "ana", "--organisation", "acme")
    with pytest.raises(CommandError, match="ana is the only owner of 'acme'"):
        run("createuser", "ana", "--organisation", "acme", "--role", "admin")
    run("createuser", "bo", "--organisation", "acme", "--role", "owner")
    assert run("createuser", "ana", "--organisation", "acme", "--role", "admin")[-1] == (
        "ana is admin of organisation 'acme'")
    for args, message in [(("bad user!", "--organisation", "acme"), "username refused"),
                          (("u" * 151, "--organisation", "acme"), "username refused"),
                          (("cy", "--organisation", "o" * 101), "organisation name must be")]:
        with pytest.raises(CommandError, match=message):
            run("createuser", *args)
    for project in ("", "   ", "p" * 101):
        with pytest.raises(CommandError, match="project name must be 1 to 100"):
            run("createapikey", "--project", project)


def test_an_admin_finds_only_people_of_their_organisations(project, mailoutbox, settings):
    """Anyone else on the installation reads exactly as a name nobody has: adding a
    stranger is refused, and the answer tells nothing about who has an account."""
    settings.CRONRADAR_BASE_URL = "https://cron.example.org"
    admin = as_person(person("alice", project.organisation, "admin"))
    person("stranger", new_project("theirs").organisation, "owner")
    answers = {who: admin.post("/api/v1/members/", body, format="json")
               for who, body in [("stranger", {"username": "stranger"}),
                                 ("nobody", {"username": "nobody"})]}
    assert {w: (a.status_code, a.json()) for w, a in answers.items()} == {
        w: (400, {"username": ["no such person in your organisations; to add someone new, "
                               "give a new username and email"]}) for w in answers}
    by_email = [admin.post("/api/v1/members/", {"email": e}, format="json").json()
                for e in ("stranger@example.com", "nobody@example.com")]
    assert by_email[0] == by_email[1]
    assert not Membership.objects.filter(organisation=project.organisation,
                                         user__username="stranger").exists()
    new = admin.post("/api/v1/members/", {"username": "newbie", "email": "nb@example.com",
                                          "role": "member"}, format="json")
    assert new.status_code == 201, new.json()
    newbie = get_user_model().objects.get(username="newbie")
    assert not newbie.has_usable_password()
    assert [m.to for m in mailoutbox] == [["nb@example.com"]]
    assert "https://cron.example.org/password-reset/" in mailoutbox[0].body
    assert "alice added you to the organisation acme" in mailoutbox[0].body
