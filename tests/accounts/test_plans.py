"""accounts.plans: an organisation's plan caps what it creates, at every way in
(the API, by-slug PUT, /api/v3/, create-on-ping, the importers, the monitors
file), with a 403 naming the limit and the plan; no plan, no limit; new
organisations start on CRONRADAR_DEFAULT_PLAN."""
import copy
import html
import io
import json
import re
from datetime import timedelta

import pytest
from django.core import mail
from django.core.management import call_command
from django.test import Client

from accounts import checks, invitations, plans, signup
from accounts.models import ApiKey, AuditEntry, Invitation, Membership, Organisation, Plan
from alerts.models import Channel
from monitors import creation
from monitors.imports import healthchecks as hc_import
from monitors.models import Monitor
from tests.conftest import DATA, T0, new_project
from tests.helpers import as_person, person

pytestmark = pytest.mark.django_db

TWO = "this organisation's plan (free) allows 2 monitors"
BODY = {"name": "backup", "period": 3600, "grace": 60}


@pytest.fixture
def free(project):
    """``project``'s organisation on the plan "free": 2 monitors, 1 channel, 2
    members, 1 API key (the ``api`` fixture's key takes it)."""
    plan = Plan.objects.create(name="free", max_monitors=2, max_channels=1, max_members=2,
                               max_api_keys=1)
    Organisation.objects.filter(pk=project.organisation_id).update(plan=plan)
    project.organisation.refresh_from_db()
    return plan


def two_monitors(make_monitor):
    make_monitor(name="one")
    make_monitor(name="two")


def test_limits_and_the_message(project, free):
    assert plans.limits(project.organisation) == {
        "max_monitors": 2, "max_channels": 1, "max_members": 2, "max_api_keys": 1,
        "pings_kept": None, "pings_per_minute": None, "org_pings_per_minute": None,
        "run_retention_days": None, "incident_retention_days": None}
    assert plans.message("free", "api_keys", 1) == (
        "this organisation's plan (free) allows 1 API key")
    assert plans.message("pro", "channels", 5) == "this organisation's plan (pro) allows 5 channels"
    other = new_project("other").organisation
    assert set(plans.limits(other).values()) == {None}


def test_the_api_refuses_a_monitor_over_the_limit(api, project, free, make_monitor):
    make_monitor(name="one")
    assert api.post("/api/v1/monitors/", {**BODY, "name": "two"}, format="json").status_code == 201
    resp = api.post("/api/v1/monitors/", BODY, format="json")
    assert (resp.status_code, resp.json()) == (403, {"detail": TWO})
    assert Monitor.objects.count() == 2
    # a deleted monitor frees its place
    api.delete(f"/api/v1/monitors/{Monitor.objects.get(slug='one').pk}/")
    assert api.post("/api/v1/monitors/", BODY, format="json").status_code == 201


def test_by_slug_put_refuses_a_new_monitor_but_updates_an_existing_one(api, free, make_monitor):
    two_monitors(make_monitor)
    resp = api.put("/api/v1/monitors/by-slug/backup/", BODY, format="json")
    assert (resp.status_code, resp.json()) == (403, {"detail": TWO})
    changed = api.put("/api/v1/monitors/by-slug/one/", {"name": "One"}, format="json")
    assert (changed.status_code, Monitor.objects.get(slug="one").name) == (200, "One")


def test_v3_refuses_a_new_check(api_key, free, make_monitor):
    two_monitors(make_monitor)
    resp = Client().post("/api/v3/checks/", json.dumps({"name": "backup", "timeout": 3600}),
                         content_type="application/json", HTTP_X_API_KEY=api_key)
    assert (resp.status_code, resp.json()) == (403, {"error": TWO})
    assert Monitor.objects.count() == 2


def test_create_on_ping_refuses_and_stores_nothing(client, project, free, make_monitor):
    two_monitors(make_monitor)
    resp = client.get(f"/ping/{project.ping_key}/backup?create=1")
    assert (resp.status_code, resp.content.decode()) == (403, f"{TWO}; nothing was stored\n")
    assert Monitor.objects.count() == 2
    # a ping to an existing monitor is not a creation
    assert client.get(f"/ping/{project.ping_key}/one?create=1").status_code == 200


def test_an_import_over_the_limit_is_refused_as_a_whole(api, project, free, make_monitor):
    make_monitor(name="one", slug="backup-job")
    crontab = ("# cronradar: slug=backup-job\n0 3 * * * /bin/backup\n"
               "0 4 * * * /bin/report\n0 5 * * * /bin/rotate\n")
    for dry in ("?dry_run=1", ""):
        resp = api.post(f"/api/v1/import/crontab/{dry}", crontab, content_type="text/plain")
        assert (resp.status_code, resp.json()) == (403, {"detail": TWO})
    assert list(Monitor.objects.values_list("slug", "schedule")) == [("backup-job", "")]
    k8s = (DATA / "cronjobs.yaml").read_text()  # several CronJobs
    resp = api.post("/api/v1/import/k8s/", {"text": k8s}, format="json")
    assert (resp.status_code, resp.json()) == (403, {"detail": TWO})
    # one new monitor still fits: the import goes through
    fits = api.post("/api/v1/import/crontab/", "0 4 * * * /bin/report\n",
                    content_type="text/plain")
    assert fits.status_code == 200 and Monitor.objects.count() == 2


def test_a_healthchecks_import_over_the_limit_writes_nothing(project, free, make_monitor):
    make_monitor(name="one")
    checks = json.loads((DATA / "healthchecks_checks.json").read_text())["checks"]
    assert len(checks) > 1
    with pytest.raises(plans.PlanLimit, match=f"^{re.escape(TWO)}$"):
        hc_import.import_checks(project, copy.deepcopy(checks), proven=True, dry_run=False,
                                now=T0)
    assert Monitor.objects.count() == 1
    # the operator's command passes quota=False
    parsed, outcome = hc_import.import_checks(project, copy.deepcopy(checks), proven=True,
                                              dry_run=False, now=T0, quota=False)
    assert Monitor.objects.count() == 1 + len(outcome.created)


def test_the_monitors_file_is_refused_whole(project, free, make_monitor):
    from tests.site.dashboard.conftest import signed_in

    make_monitor(name="one")
    text = ("version: 1\nmonitors:\n"
            "  - {slug: a, name: A, kind: interval, period: 60, grace: 60}\n"
            "  - {slug: b, name: B, kind: interval, period: 60, grace: 60}\n")
    resp = signed_in(project).post("/monitors/file/", {"text": text, "action": "apply"})
    assert resp.status_code == 400
    assert f"refused, nothing was changed: {TWO}" in html.unescape(resp.content.decode())
    assert Monitor.objects.count() == 1


def test_the_operators_commands_bypass_the_plan(project, free, make_monitor, tmp_path):
    two_monitors(make_monitor)
    crontab = tmp_path / "crontab"
    crontab.write_text("0 4 * * * /bin/report\n")
    call_command("importcrontab", str(crontab), "--project", "acme", stdout=io.StringIO())
    assert Monitor.objects.count() == 3


def test_every_creation_is_audited(project, api, client):
    api.post("/api/v1/monitors/", BODY, format="json")
    client.get(f"/ping/{project.ping_key}/made-by-ping?create=1")
    entries = AuditEntry.objects.filter(action="create").order_by("pk")
    assert [(e.organisation_id, e.target_type, e.target_repr) for e in entries] == [
        (project.organisation_id, "monitor", str(Monitor.objects.get(slug="backup"))),
        (project.organisation_id, "monitor", str(Monitor.objects.get(slug="made-by-ping")))]
    assert entries[1].target_id == str(Monitor.objects.get(slug="made-by-ping").pk)
    assert [e.changes for e in entries] == [CREATED_BACKUP, CREATED_BY_PING]


# a monitor's create entry: the values the API shows ({field: [None, value]}; None and ""
# left out)
CREATED_BACKUP = {
    "name": [None, "backup"], "slug": [None, "backup"], "kind": [None, "interval"],
    "timezone": [None, "UTC"], "cron_semantics": [None, "debian"], "period": [None, 3600],
    "grace": [None, 60], "concurrency": [None, "allow"], "max_attempts": [None, 1],
    "tags": [None, []], "paused": [None, False]}
CREATED_BY_PING = {
    **CREATED_BACKUP, "name": [None, "made-by-ping"], "slug": [None, "made-by-ping"],
    "period": [None, 86400], "grace": [None, 3600]}


def test_a_bulk_import_records_each_monitors_values_in_one_insert(project):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    made = [Monitor(name=n, slug=n, period=timedelta(minutes=5), grace=timedelta(seconds=30),
                    tags=["etl"]) for n in ("one", "two")]
    with CaptureQueriesContext(connection) as seen:
        creation.create_many(project, made, T0, quota=False)
    inserts = [q["sql"] for q in seen.captured_queries
               if q["sql"].startswith('INSERT INTO "accounts_auditentry"')]
    assert len(inserts) == 1
    got = {e.target_id: e.changes for e in AuditEntry.objects.filter(action="create")}
    common = {"kind": [None, "interval"], "timezone": [None, "UTC"],
              "cron_semantics": [None, "debian"], "period": [None, 300], "grace": [None, 30],
              "concurrency": [None, "allow"], "max_attempts": [None, 1],
              "tags": [None, ["etl"]], "paused": [None, False]}
    assert got == {str(m.pk): {"name": [None, m.name], "slug": [None, m.name], **common}
                   for m in made}


def test_no_plan_no_limit(api, project):
    for n in range(5):
        assert api.post("/api/v1/monitors/", {**BODY, "name": f"m{n}"},
                        format="json").status_code == 201
    for n in range(3):
        made = api.post("/api/v1/channels/", {"kind": "webhook", "name": f"c{n}", "config": {
            "url": f"https://hook.test/{n}"}}, format="json")
        assert made.status_code == 201, made.content
    assert creation.count(project.organisation) == 5


def test_channels_over_the_limit(api, project, free):
    body = {"kind": "webhook", "name": "ops", "config": {"url": "https://hook.test/a"}}
    assert api.post("/api/v1/channels/", body, format="json").status_code == 201
    resp = api.post("/api/v1/channels/", {**body, "name": "two"}, format="json")
    assert (resp.status_code, resp.json()) == (
        403, {"detail": "this organisation's plan (free) allows 1 channel"})
    assert Channel.objects.count() == 1


def test_api_keys_over_the_limit(project, free):
    admin = person("ada", project.organisation, Membership.Role.ADMIN)
    made = as_person(admin).post("/api/v1/api-keys/", {"project": project.pk}, format="json")
    assert made.status_code == 201
    resp = as_person(admin).post("/api/v1/api-keys/", {"project": project.pk}, format="json")
    assert (resp.status_code, resp.json()) == (
        403, {"detail": "this organisation's plan (free) allows 1 API key"})
    # a revoked key frees its place
    as_person(admin).delete(f"/api/v1/api-keys/{made.json()['id']}/")
    again = as_person(admin).post("/api/v1/api-keys/", {"project": project.pk}, format="json")
    assert again.status_code == 201 and ApiKey.objects.filter(revoked_at=None).count() == 1


def test_members_count_people_and_pending_invitations(project, free):
    org = project.organisation
    owner = person("olga", org, Membership.Role.OWNER)
    other = new_project("elsewhere").organisation
    person("bob", other, Membership.Role.MEMBER)
    Membership.objects.create(organisation=other, user=owner, role=Membership.Role.OWNER)
    invited = as_person(owner).post("/api/v1/members/", {
        "organisation": org.pk, "email": "new@example.com"}, format="json")
    assert invited.status_code == 202
    assert invitations.members(org) == 2
    refused = as_person(owner).post("/api/v1/members/", {
        "organisation": org.pk, "username": "bob"}, format="json")
    assert (refused.status_code, refused.json()) == (
        403, {"detail": "this organisation's plan (free) allows 2 members"})
    with pytest.raises(plans.PlanLimit):
        invitations.invite(org, "third@example.com", "member", "olga")
    # inviting the same address again replaces the pending invitation: no new place
    invitations.invite(org, "new@example.com", "viewer", "olga")
    assert (Invitation.objects.filter(organisation=org).count(), len(mail.outbox)) == (1, 2)


def test_accepting_an_invitation_after_the_plan_was_lowered(project, free, django_user_model):
    org = project.organisation
    person("olga", org, Membership.Role.OWNER)
    invitation = invitations.invite(org, "new@example.com", "member", "olga", now=T0)
    invitee = django_user_model.objects.create_user("new", "new@example.com", "pw")
    Plan.objects.filter(pk=free.pk).update(max_members=1)
    org.refresh_from_db()
    with pytest.raises(plans.PlanLimit, match="allows 1 member$"):
        invitations.accept(invitation, invitee, T0)
    assert Invitation.objects.get().accepted_at is None
    assert not Membership.objects.filter(user=invitee).exists()
    Plan.objects.filter(pk=free.pk).update(max_members=2)
    org.refresh_from_db()
    assert invitations.accept(invitation, invitee, T0).role == "member"


def test_new_organisations_get_the_default_plan(db, settings, django_user_model):
    free = Plan.objects.create(name="free", max_monitors=20)
    settings.CRONRADAR_DEFAULT_PLAN = "free"
    user = django_user_model.objects.create_user("a@x.test", "a@x.test", "pw")
    assert signup.give_organisation(user, "a@x.test").plan == free
    call_command("createapikey", "--project", "ops", stdout=io.StringIO())
    assert Organisation.objects.get(name="ops").plan == free
    settings.CRONRADAR_DEFAULT_PLAN = ""
    assert Organisation.objects.create(name="self-hosted").plan is None


def test_sign_up_puts_the_organisation_on_the_default_plan(db, settings):
    free = Plan.objects.create(name="free", max_monitors=20)
    settings.CRONRADAR_DEFAULT_PLAN = "free"
    settings.CRONRADAR_SIGNUP = "open"
    assert signup.sign_up("new@example.com", "a long passphrase 42", "192.0.2.1") == \
        signup.Outcome.SENT
    assert Membership.objects.get(user__email="new@example.com").organisation.plan == free


def test_an_unknown_default_plan_is_a_clear_error(db, settings):
    settings.CRONRADAR_DEFAULT_PLAN = "gold"
    message = ("CRONRADAR_DEFAULT_PLAN='gold' names no plan: create it (manage.py plan gold "
               "--max-monitors ...) or change the setting")
    with pytest.raises(plans.UnknownPlan) as raised:
        Organisation.objects.create(name="x")
    assert str(raised.value) == message
    assert not Organisation.objects.filter(name="x").exists()
    [warning] = checks.default_plan_setting()
    assert (warning.id, warning.msg) == ("accounts.W001", message)
    Plan.objects.create(name="gold")
    assert checks.default_plan_setting() == []
    settings.CRONRADAR_DEFAULT_PLAN = ""
    assert checks.default_plan_setting() == []
