"""Organisations, people, roles and keys (accounts.tenancy): the isolation matrix
(every endpoint and method, as a key of project A and as a member of organisation
A, against organisation B's objects), read-only keys, cross-tenant references and
roles."""
import pytest

from accounts.models import ApiKey, Membership, Organisation
from alerts.models import Channel, EscalationPolicy, EscalationTier, Incident, MaintenanceWindow
from monitors.models import Monitor
from monitors.pings import PingInput, ingest
from tests.conftest import T0, S, new_project
from tests.helpers import as_key, as_person, person

pytestmark = pytest.mark.django_db


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
