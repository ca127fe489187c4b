"""The account commands: createapikey, listapikeys, revokeapikey, createuser, plan and
setplan."""
import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from accounts.models import ApiKey, AuditEntry, Membership, Organisation, Project

pytestmark = pytest.mark.django_db


def test_createapikey_prints_key_last(db):
    out = io.StringIO()
    call_command("createapikey", "--project", "ops", stdout=out)
    key = out.getvalue().strip().splitlines()[-1]
    assert ApiKey.find(key).project.name == "ops"
    call_command("createapikey", "--project", "ops", stdout=io.StringIO())
    assert Project.objects.filter(name="ops").count() == 1
    assert ApiKey.objects.filter(project__name="ops").count() == 2


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
    assert not AuditEntry.objects.exists()  # the operator's key commands write no entry
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


def test_plan_creates_changes_and_clears_limits(db):
    from accounts.models import Plan

    lines = run("plan", "free", "--max-monitors", "20", "--max-channels", "5",
                "--pings-per-minute", "6", "--run-retention-days", "7")
    assert lines[1:] == ["plan 'free' (created; 0 organisations):", "  max_monitors: 20",
                         "  max_channels: 5", "  max_members: no limit",
                         "  max_api_keys: no limit", "  pings_kept: no limit",
                         "  pings_per_minute: 6", "  org_pings_per_minute: no limit",
                         "  run_retention_days: 7", "  incident_retention_days: no limit"]
    lines = run("plan", "free", "--max-monitors", "none", "--max-members", "3",
                "--max-api-keys", "2", "--pings-kept", "50", "--org-pings-per-minute", "60",
                "--incident-retention-days", "30")
    assert lines[1] == "plan 'free' (changed; 0 organisations):"
    plan = Plan.objects.get()
    assert {f: getattr(plan, f) for f in Plan.LIMITS} == {
        "max_monitors": None, "max_channels": 5, "max_members": 3, "max_api_keys": 2,
        "pings_kept": 50, "pings_per_minute": 6, "org_pings_per_minute": 60,
        "run_retention_days": 7, "incident_retention_days": 30}
    assert run("plan", "free")[1] == "plan 'free' (unchanged; 0 organisations):"
    with pytest.raises(CommandError, match="a whole number or 'none', not '-1'"):
        run("plan", "free", "--max-monitors=-1")
    with pytest.raises(CommandError, match="'none' is not a plan name"):
        run("plan", "none")
    assert Plan.objects.count() == 1


def test_setplan_by_name_or_id_records_the_change(db):
    from accounts.models import AuditEntry, Plan

    run("plan", "free", "--max-monitors", "20")
    org = Organisation.objects.create(name="acme")
    lines = run("setplan", "acme", "free")
    assert lines[1:3] == ["organisation 'acme' is now on plan 'free' (was 'none')",
                          "  max_monitors: 20"]
    org.refresh_from_db()
    assert org.plan == Plan.objects.get(name="free")
    assert run("setplan", str(org.pk), "free")[1] == "organisation 'acme' is already on plan 'free'"
    assert run("setplan", str(org.pk), "none")[1:] == [
        "organisation 'acme' is now on plan 'none' (was 'free')", "  no limits"]
    org.refresh_from_db()
    assert org.plan is None
    entries = list(AuditEntry.objects.order_by("pk").values_list(
        "organisation", "action", "actor", "target_type", "target_id", "changes"))
    assert entries == [
        (org.pk, "plan_change", "manage.py setplan", "organisation", str(org.pk),
         {"plan": [None, "free"]}),
        (org.pk, "plan_change", "manage.py setplan", "organisation", str(org.pk),
         {"plan": ["free", None]})]
    with pytest.raises(CommandError, match=r"^no plan 'gold' \(plans: free; manage.py plan"):
        run("setplan", "acme", "gold")
    with pytest.raises(CommandError, match="^no organisation called 'nope'$"):
        run("setplan", "nope", "free")
    with pytest.raises(CommandError, match="^no organisation called '999' or with id 999$"):
        run("setplan", "999", "free")


def test_a_missing_default_plan_stops_the_commands_that_make_organisations(db, settings,
                                                                          monkeypatch):
    settings.CRONRADAR_DEFAULT_PLAN = "gold"
    monkeypatch.setenv("CRONRADAR_PASSWORD", "a long passphrase 42")
    reason = r"^CRONRADAR_DEFAULT_PLAN='gold' names no plan: create it \(manage.py plan gold"
    with pytest.raises(CommandError, match=reason):
        run("createapikey", "--project", "ops")
    with pytest.raises(CommandError, match=reason):
        run("createuser", "erin", "--organisation", "acme")
    assert not Organisation.objects.exists()
