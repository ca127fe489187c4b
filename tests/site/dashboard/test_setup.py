"""The setup pages (cronradar.dashboard.setup): channels, policies, maintenance
windows, keys and members through the API's rules, and other tenants' pages."""
import re

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from accounts.models import ApiKey, Invitation, Membership
from alerts.models import Channel, EscalationPolicy, MaintenanceWindow
from tests.conftest import S, new_project
from tests.live import Receiver
from tests.site.dashboard.conftest import signed_in, text

pytestmark = pytest.mark.django_db


def test_setup_pages_create_through_the_api_rules(admin, world, project):
    assert admin.post("/channels/new/slack/", {"name": "x", "url": "ftp://no"}
                      ).status_code == 400
    admin.post("/channels/new/email/", {"name": "mail", "to": "a@example.com, "
                                                              "b@example.com"})
    assert Channel.objects.get(name="mail").config == {"to": ["a@example.com",
                                                              "b@example.com"]}
    hook = world["hook"]
    admin.post("/policies/", {"name": "two", "repeat": "1", "tier0_delay": "0",
                              "tier0_channels": [hook.pk], "tier1_delay": "600",
                              "tier1_channels": [hook.pk]})
    two = EscalationPolicy.objects.get(name="two")
    assert [int(t.delay.total_seconds()) for t in two.tiers.order_by("position")] == [0, 600]
    admin.post("/maintenance/", {"name": "upgrade", "tag": "db",
                                 "starts_at": "2030-01-01T00:00:00Z",
                                 "ends_at": "2030-01-01T01:00:00Z"})
    assert MaintenanceWindow.objects.get(name="upgrade").tag == "db"
    made = admin.post("/keys/", {"name": "ci", "read_only": "1"})
    key = re.search(r'id="new-key" type="text" readonly value="(cr_[^"]+)"',
                    made.content.decode()).group(1)
    assert ApiKey.find(key).read_only is True
    assert key not in admin.get("/keys/").content.decode()  # shown once
    assert "Delete channel ops-hook?" in text(admin.get(f"/channels/{hook.pk}/delete/"))
    assert "only channel of tier 1" in text(admin.get(f"/channels/{hook.pk}/delete/"))
    for url in ("/channels/", "/policies/", "/maintenance/", "/keys/", "/members/",
                "/account/", "/incidents/"):
        assert admin.get(url).status_code == 200, url


def test_the_channel_form_asks_for_api_url_and_never_for_the_read_only_signing_secret(
        admin, project):
    assert 'name="api_url"' in admin.get("/channels/new/opsgenie/").content.decode()
    assert 'name="signing_secret"' not in admin.get("/channels/new/webhook/").content.decode()
    admin.post("/channels/new/opsgenie/", {"name": "og", "api_key": "K",
                                           "api_url": "https://og.example.com/proxy"})
    assert Channel.objects.get(name="og").config == {
        "api_key": "K", "region": "us", "api_url": "https://og.example.com/proxy"}


def test_another_tenants_setup_pages_are_404(admin, project):
    """The isolation matrix, continued: policies, maintenance windows, API keys and
    members of another organisation are 404 to read and to change, and stay."""
    other = new_project("charlie")
    policy = EscalationPolicy.objects.create(project=other, name="their policy")
    now = timezone.now()
    window = MaintenanceWindow.objects.create(project=other, name="their window", tag="db",
                                              starts_at=now, ends_at=now + 3600 * S)
    key, _ = ApiKey.issue(other)
    stranger = get_user_model().objects.create_user("stranger", "s@example.com", "pw")
    member = Membership.objects.create(organisation=other.organisation, user=stranger)
    for method, url in [("get", f"/policies/{policy.pk}/"),
                        ("post", f"/policies/{policy.pk}/"),
                        ("post", f"/policies/{policy.pk}/delete/"),
                        ("get", f"/maintenance/{window.pk}/"),
                        ("post", f"/maintenance/{window.pk}/"),
                        ("post", f"/maintenance/{window.pk}/delete/"),
                        ("post", f"/keys/{key.pk}/revoke/"),
                        ("post", f"/members/{member.pk}/remove/")]:
        assert getattr(admin, method)(url, {"name": "mine"}).status_code == 404, (method, url)
    for page in ("/policies/", "/maintenance/", "/keys/", "/members/"):
        body = text(admin.get(page))
        assert "their policy" not in body and "their window" not in body
        assert key.prefix not in body and "stranger" not in body
    assert EscalationPolicy.objects.get(pk=policy.pk).name == "their policy"
    assert MaintenanceWindow.objects.filter(pk=window.pk).exists()
    assert ApiKey.objects.get(pk=key.pk).revoked_at is None
    assert Membership.objects.filter(pk=member.pk).exists()


def test_members_page_adds_only_known_people_and_invites_others(project, mailoutbox,
                                                                 settings):
    settings.CRONRADAR_BASE_URL = "https://cron.example.org"
    admin = signed_in(project, "admin", "alice")
    from accounts.models import Organisation

    get_user_model().objects.create_user("stranger", "s@example.com", "pw")
    Membership.objects.create(organisation=Organisation.objects.create(name="theirs"),
                              user=get_user_model().objects.get(username="stranger"))
    answers = [admin.post("/members/", {"username": who, "role": "member"})
               for who in ("stranger", "nobody")]
    bodies = [(a.status_code, re.sub(r"stranger|nobody|"
                                     r'name="csrfmiddlewaretoken" value="[^"]+"|'
                                     r'nonce="[^"]+"', "?",
                                     text(a))) for a in answers]
    # an account elsewhere and no account answer the same: nothing to learn from
    assert bodies[0] == bodies[1] and bodies[0][0] == 400
    assert "no such person in your organisations; to invite someone, give their email" \
        in text(answers[0])
    bad = admin.post("/members/", {"username": "newbie", "email": "bad", "role": "member"})
    assert bad.status_code == 400 and "valid email" in text(bad)
    invited = [admin.post("/members/", {"email": who, "role": "viewer"})
               for who in ("s@example.com", "n@example.com")]
    assert [a.status_code for a in invited] == [302, 302]
    assert not Membership.objects.filter(user__username="stranger",
                                         organisation=project.organisation).exists()
    assert [m.to for m in mailoutbox] == [["s@example.com"], ["n@example.com"]]
    page = text(admin.get("/members/"))
    assert "Invitations waiting" in page
    assert "n@example.com as viewer" in page and "s@example.com as viewer" in page


def test_maintenance_windows_are_in_the_persons_zone(admin, project):
    admin.post("/account/", {"timezone": "America/Los_Angeles"})
    made = admin.post("/maintenance/", {"name": "upgrade", "tag": "db",
                                        "starts_at": "2030-01-01 00:00",
                                        "ends_at": "2030-01-01T10:00:00Z"})
    assert made.status_code == 302
    w = MaintenanceWindow.objects.get(name="upgrade")
    assert w.starts_at.isoformat() == "2030-01-01T08:00:00+00:00"  # read in Los Angeles
    page = text(admin.get("/maintenance/"))
    assert "2030-01-01 00:00:00 PST → 2030-01-01 02:00:00 PST" in page
    assert "Times in America/Los_Angeles" in page and "2030-01-01T00:00:00Z" not in page
    assert ('<input id="w-tz" type="text" name="timezone" list="zones" autocomplete="off" '
            'value="America/Los_Angeles">') in page  # a new window's zone: the person's
    assert w.timezone == "America/Los_Angeles"
    edit = text(admin.get(f"/maintenance/{w.pk}/"))
    assert ('<input id="w-start" type="datetime-local" step="1" name="starts_at" '
            'value="2030-01-01T00:00:00">') in edit
    for bad in ("1999-12-31T00:00:00Z", "2101-01-01 00:00", "0001-01-01 00:00"):
        resp = admin.post("/maintenance/", {"name": "odd", "tag": "db", "starts_at": bad,
                                            "ends_at": "2030-01-01T10:00:00Z"})
        assert resp.status_code == 400 and "the year must be 2000 to 2100" in text(resp)
    assert not MaintenanceWindow.objects.filter(name="odd").exists()


def delays(page: str) -> dict[str, str]:
    """The policy form's delay fields as shown: ``tier<n>_delay`` and its unit."""
    return {k: v for k, v in shown_form(page).items() if "_delay" in k}


def test_a_tiers_delay_takes_a_unit_and_is_shown_in_one(admin, world):
    hook = world["hook"].pk
    made = admin.post("/policies/", {
        "name": "night", "repeat": "0", "tier0_delay": "0", "tier0_delay_unit": "seconds",
        "tier0_channels": [hook], "tier1_delay": "1.5", "tier1_delay_unit": "hours",
        "tier1_channels": [hook], "tier2_delay": "90", "tier2_channels": [hook]})
    assert made.status_code == 302, text(made)  # tier 3: no unit, seconds (older forms)
    night = EscalationPolicy.objects.get(name="night")
    assert [int(t.delay.total_seconds()) for t in night.tiers.order_by("position")] == [
        0, 5400, 90]
    listed = text(admin.get("/policies/"))
    assert ("<ol><li>at once: ops-hook</li><li>after 1 h 30 min: ops-hook</li>"
            "<li>after 1 min 30 s: ops-hook</li></ol>") in listed
    assert "<ol><li>at once: ops-hook</li></ol>" in listed  # world's on-call
    edit = text(admin.get(f"/policies/{night.pk}/"))
    assert delays(edit) == {
        "tier0_delay": "0", "tier0_delay_unit": "seconds",
        "tier1_delay": "90", "tier1_delay_unit": "minutes",
        "tier2_delay": "90", "tier2_delay_unit": "seconds",
        "tier3_delay": "", "tier3_delay_unit": "seconds",
        "tier4_delay": "", "tier4_delay_unit": "seconds"}
    assert ('<label for="f-tier1_delay">Delay <span class="muted small">(after the previous '
            'tier)</span></label>') in edit
    assert '<select name="tier1_delay_unit" aria-label="Delay: unit">' in edit


@pytest.mark.parametrize("number, unit, problem", [
    ("2", "weeks", "unknown unit &#x27;weeks&#x27;: use days, hours, minutes, seconds"),
    ("1.5", "seconds", "1.5 seconds is not a whole number of seconds")])
def test_a_delay_that_is_no_whole_number_of_seconds_is_refused_as_typed(admin, world, number,
                                                                        unit, problem):
    hook = world["hook"].pk
    resp = admin.post("/policies/", {"name": "night", "repeat": "2", "tier0_delay": "0",
                                     "tier0_channels": [hook], "tier1_delay": number,
                                     "tier1_delay_unit": unit, "tier1_channels": [hook]})
    assert resp.status_code == 400
    page = text(resp)
    assert f'<p class="alert" role="alert">tier 2 delay: {problem} </p>' in page
    assert f'<p class="error" id="e-tier1_delay">{problem}</p>' in page
    assert (f'<input id="f-tier1_delay" type="number" min="0" step="any" name="tier1_delay" '
            f'value="{number}" aria-invalid="true" aria-describedby="e-tier1_delay">') in page
    assert ('<input id="p-name" type="text" name="name" value="night">' in page
            and 'name="repeat" min="0" max="9" value="2">' in page)
    assert not EscalationPolicy.objects.filter(name="night").exists()


def test_a_deleted_monitor_does_not_hold_its_policy_in_the_dashboard(admin, world):
    from alerts.models import Alerting
    from monitors import evaluator

    policy, m = world["policy"], world["monitor"]
    Alerting.objects.filter(monitor=m).update(escalation_policy=policy)
    url = f"/policies/{policy.pk}/delete/"
    assert "In use by nightly-backup" in text(admin.get(url))
    assert admin.post(url).status_code == 409 and EscalationPolicy.objects.filter(
        pk=policy.pk).exists()
    evaluator.delete(m.pk, timezone.now())  # kept (with its settings) until purged
    assert "Monitors no longer use it." in text(admin.get(url))
    assert admin.post(url).status_code == 302
    assert not EscalationPolicy.objects.filter(pk=policy.pk).exists()
    assert Alerting.objects.get(monitor=m).escalation_policy is None


def test_the_usage_page_is_linked_and_shows_the_counts_against_the_plan(project, make_monitor):
    from accounts.models import Plan

    project.organisation.plan = Plan.objects.create(name="free", max_monitors=20)
    project.organisation.save()
    make_monitor()
    admin = signed_in(project)
    page = text(admin.get("/usage/"))
    assert '<a href="/usage/" aria-current="page">Usage</a>' in page
    assert "Plan: <strong>free</strong>" in page
    assert "<tr><td>Monitors</td><td>1</td><td>20</td></tr>" in page
    assert "<tr><td>Channels</td><td>0</td><td>no limit</td></tr>" in page
    assert "<dt>Refused</dt><dd>0 (over a ping rate limit" in page
    # a viewer, who may not read usage, is not offered the link to a 403
    viewer = signed_in(project, "viewer")
    assert 'href="/usage/"' not in text(viewer.get("/"))
    assert viewer.get("/usage/").status_code == 403


def on_plan(project, **limits):
    from accounts.models import Organisation, Plan

    plan = Plan.objects.create(name="free", **limits)
    Organisation.objects.filter(pk=project.organisation_id).update(plan=plan)


def plan_sentence(resp) -> str | None:
    import html

    found = re.search(r'<p class="alert plan-limit" role="alert">([^<]*)</p>', text(resp))
    return html.unescape(found.group(1)) if found else None


def test_at_the_plans_limit_the_sentence_replaces_the_create_forms(admin, project):
    on_plan(project, max_channels=1, max_api_keys=1, max_members=1)
    body = {"name": "a", "url": "https://hook.test/a"}
    assert plan_sentence(admin.get("/channels/")) is None
    assert admin.post("/channels/new/webhook/", body).status_code == 302
    for url in ("/channels/", "/channels/new/webhook/"):
        page = admin.get(url)
        assert plan_sentence(page) == "this organisation's plan (free) allows 1 channel"
        assert "Create channel" not in text(page) and 'href="/channels/new/' not in text(page)
    refused = admin.post("/channels/new/webhook/", {**body, "name": "b"})
    assert (refused.status_code, plan_sentence(refused)) == (
        403, "this organisation's plan (free) allows 1 channel")
    assert Channel.objects.count() == 1
    # keys: the admin's first key fills the plan
    assert admin.post("/keys/", {"name": "ci"}).status_code == 200
    refused = admin.post("/keys/", {"name": "two"})
    assert (refused.status_code, plan_sentence(refused)) == (
        403, "this organisation's plan (free) allows 1 API key")
    assert ApiKey.objects.count() == 1 and "Create key" not in text(refused)
    # members: the admin is the one member the plan allows
    page = admin.get("/members/")
    assert plan_sentence(page) == ("this organisation's plan (free) allows 1 member (people "
                                   "and invitations waiting)")
    refused = admin.post("/members/", {"email": "new@example.com", "role": "member"})
    assert refused.status_code == 403 and "allows 1 member" in plan_sentence(refused)
    assert not Invitation.objects.exists()


def test_the_kind_chooser_links_every_kind_to_its_setup_page(admin, project):
    from alerts.integrations import KINDS

    page = text(admin.get("/channels/"))
    for kind in KINDS:
        assert f'<a href="/channels/new/{kind}/">{kind}</a>' in page
    assert ('<a href="/channels/new/slack/">slack</a> <span class="small muted">Slack '
            'incoming webhook (https://api.slack.com/messaging/webhooks).</span>') in page
    assert admin.get("/channels/new/fax/").status_code == 404


def test_a_kinds_setup_page_shows_only_its_fields_and_where_to_get_them(admin, project):
    page = text(admin.get("/channels/new/opsgenie/"))
    inputs = re.findall(r'<(?:input|select) id="c-([a-z_]+)" (?:type="([a-z]+)" )?', page)
    assert inputs == [("name", "text"), ("api_key", "password"), ("region", ""),
                      ("api_url", "url")]
    assert ('<label for="c-api_key">API integration key <span class="required">(required)'
            '</span></label>') in page
    assert ('<select id="c-region" name="region"><option value="">default</option><option>us'
            '</option><option>eu</option></select>') in page
    assert ('<a href="https://support.atlassian.com/opsgenie/docs/create-a-default-api-'
            'integration/" rel="nofollow">https://support.atlassian.com/opsgenie/docs/create-'
            'a-default-api-integration/</a>') in page
    email = text(admin.get("/channels/new/email/"))
    assert re.findall(r'<input id="c-([a-z_]+)" type="([a-z]+)"', email) == [
        ("name", "text"), ("to", "text")]
    assert "Several, separated by commas." in email


def test_a_fake_kind_gets_a_setup_page_from_its_constants_alone(admin, project, monkeypatch):
    import types

    from alerts import integrations
    from alerts.integrations import webhook

    fake = types.ModuleType("fake", "Fax machine over HTTP.\n\nMore words.")
    fake.HELP = "Ask your fax vendor: https://fax.example.com/docs"
    fake.CONFIG_SCHEMA = {"type": "object", "required": ["number"], "properties": {
        "number": {"type": "string", "description": "fax number"},
        "pin": {"type": "string", "format": "password", "description": "PIN"},
        "paper": {"type": "string", "enum": ["a4", "letter"]},
        "serial": {"type": "string", "readOnly": True}}}
    fake.validate_config = lambda config, previous=None: config
    fake.build_notice = webhook.build_notice
    monkeypatch.setitem(integrations.KINDS, "fax", fake)
    page = text(admin.get("/channels/new/fax/"))
    assert "<p>Fax machine over HTTP.</p>" in page
    assert ('<p class="kind-help">Ask your fax vendor: <a href="https://fax.example.com/docs" '
            'rel="nofollow">https://fax.example.com/docs</a></p>') in page
    assert re.findall(r'<(?:input|select) id="c-([a-z_]+)"', page) == [
        "name", "number", "pin", "paper"]
    assert "<a href=\"/channels/new/fax/\">fax</a>" in text(admin.get("/channels/"))


def test_send_test_before_saving_stores_nothing_and_says_what_the_receiver_said(
        admin, project):
    receiver = Receiver()
    try:
        form = {"name": "ops", "url": receiver.url + "/hook", "secret": "k",
                "action": "test"}
        resp = admin.post("/channels/new/webhook/", form)
        assert resp.status_code == 200
        assert ('<p class="notice" role="status">Test to ops: delivered (200)</p>'
                in text(resp))
        assert receiver.requests[0].json()["channel"] == {"id": None, "name": "ops",
                                                          "kind": "webhook"}
        assert not Channel.objects.exists()
        assert f'value="{receiver.url}/hook"' in text(resp)  # what was entered stays
        receiver.status = 500
        failed = text(admin.post("/channels/new/webhook/", form))
        assert '<p class="alert" role="status">Test to ops: failed: HTTP 500: ok</p>' in failed
        bad = admin.post("/channels/new/webhook/", {**form, "url": "ftp://x"})
        assert bad.status_code == 400 and "config: url: " in text(bad)
        assert len(receiver.requests) == 2 and not Channel.objects.exists()
        # then saved as tested
        assert admin.post("/channels/new/webhook/", {**form, "action": "save"}
                          ).status_code == 302
        assert Channel.objects.get().config == {"url": receiver.url + "/hook", "secret": "k"}
    finally:
        receiver.close()


def test_an_edit_page_shows_its_kinds_fields_and_keeps_a_secret_left_empty(admin, project):
    receiver = Receiver()
    try:
        ch = Channel.objects.create(project=project, kind="ntfy", name="phone", config={
            "url": receiver.url + "/alerts", "token": "tk-secret"})
        page = text(admin.get(f"/channels/{ch.pk}/"))
        assert re.findall(r'<input id="c-([a-z_]+)" type="([a-z]+)"', page) == [
            ("name", "text"), ("url", "url"), ("token", "password")]
        assert "tk-secret" not in page and "Leave empty to keep the stored one." in page
        tested = admin.post(f"/channels/{ch.pk}/", {"name": "phone", "url": receiver.url +
                                                    "/other", "token": "", "action": "test"})
        assert "Test to phone: delivered (200)" in text(tested)
        assert receiver.requests[0].headers["Authorization"] == "Bearer tk-secret"
        assert receiver.requests[0].json()["topic"] == "other"
        assert admin.post(f"/channels/{ch.pk}/", {"name": "pager", "url": receiver.url +
                                                  "/other", "token": ""}).status_code == 302
        ch.refresh_from_db()
        assert (ch.name, ch.config) == ("pager", {"url": receiver.url + "/other",
                                                  "token": "tk-secret"})
    finally:
        receiver.close()


def test_a_viewer_reads_a_channels_page_without_its_secrets_or_form(project, world):
    viewer = signed_in(project, "viewer")
    page = text(viewer.get(f"/channels/{world['hook'].pk}/"))
    assert "<dt>url</dt><dd>***</dd>" in page and "s3cret" not in page
    assert "<form" not in page.split("<main", 1)[-1]
    assert viewer.post(f"/channels/{world['hook'].pk}/", {"name": "x",
                                                          "action": "test"}).status_code == 403
    assert viewer.get("/channels/new/webhook/").status_code == 403

@pytest.mark.parametrize("typed, stored", [
    ("2026-07-01T12:00", "2026-07-01T10:00:00+00:00"),  # CEST
    ("2026-03-29T02:30", "2026-03-29T01:30:00+00:00"),  # skipped: read with CET, 03:30 CEST
    ("2026-10-25T02:30", "2026-10-25T00:30:00+00:00"),  # twice: the first, CEST
    ("2026-10-25T02:30:00+01:00", "2026-10-25T01:30:00+00:00")])  # an offset is kept
def test_a_windows_times_are_read_in_its_chosen_zone(admin, typed, stored):
    made = admin.post("/maintenance/", {"name": "upgrade", "tag": "db", "starts_at": typed,
                                        "ends_at": "2026-12-31T00:00",
                                        "timezone": "Europe/Berlin"})
    assert made.status_code == 302, text(made)
    w = MaintenanceWindow.objects.get(name="upgrade")
    assert (w.starts_at.isoformat(), w.timezone) == (stored, "Europe/Berlin")
    assert w.ends_at.isoformat() == "2026-12-30T23:00:00+00:00"


def test_a_window_with_an_unknown_zone_is_refused(admin):
    resp = admin.post("/maintenance/", {"name": "upgrade", "tag": "db",
                                        "starts_at": "2026-07-01T12:00",
                                        "ends_at": "2026-07-01T13:00",
                                        "timezone": "Europe/Atlantis"})
    assert resp.status_code == 400
    assert "timezone: unknown time zone &#x27;Europe/Atlantis&#x27;" in text(resp)
    assert not MaintenanceWindow.objects.exists()


def test_a_recurring_windows_duration_takes_a_unit(admin):
    made = admin.post("/maintenance/", {"name": "nightly", "tag": "db", "schedule": "0 2 * * *",
                                        "timezone": "UTC", "duration": "2",
                                        "duration_unit": "hours"})
    assert made.status_code == 302, text(made)
    w = MaintenanceWindow.objects.get(name="nightly")
    assert w.duration.total_seconds() == 7200
    edit = text(admin.get(f"/maintenance/{w.pk}/"))
    assert 'name="duration" value="2">' in edit
    assert '<option value="hours" selected>hours</option>' in edit


def shown_form(page: str) -> dict[str, str]:
    """The values a browser would send back from the page's last form, untouched:
    each named input's value and each select's selected option."""
    form = page.rsplit("<form", 1)[1].split("</form>", 1)[0]
    values = {m["name"]: m["value"] for m in re.finditer(
        r'<input [^>]*name="(?P<name>[^"]+)"[^>]*value="(?P<value>[^"]*)"', form)}
    for select in re.finditer(r'<select [^>]*name="([^"]+)"(.*?)</select>', form, re.S):
        chosen = re.search(r'<option value="([^"]*)" selected', select[2])
        values[select[1]] = chosen[1] if chosen else ""
    return values


@pytest.mark.parametrize("start, end", [
    # the second 02:30 of a fall-back night in Berlin (01:30Z; the first is 00:30Z)
    ("2027-10-31T01:30:00+00:00", "2027-10-31T01:50:00+00:00"),
    ("2027-06-01T12:00:45+00:00", "2027-06-01T12:30:59.250000+00:00")])  # seconds, a fraction
def test_a_window_saved_unchanged_keeps_its_times(admin, project, start, end):
    from datetime import datetime

    w = MaintenanceWindow.objects.create(
        project=project, name="db", tag="db", timezone="Europe/Berlin",
        starts_at=datetime.fromisoformat(start), ends_at=datetime.fromisoformat(end))
    shown = shown_form(text(admin.get(f"/maintenance/{w.pk}/")))
    assert admin.post(f"/maintenance/{w.pk}/", shown).status_code == 302
    w.refresh_from_db()
    assert (w.starts_at.isoformat(), w.ends_at.isoformat()) == (start, end)


def test_a_windows_shown_time_is_read_again_when_its_zone_changes(admin, project):
    from datetime import datetime

    w = MaintenanceWindow.objects.create(
        project=project, name="db", tag="db", timezone="Europe/Berlin",
        starts_at=datetime.fromisoformat("2027-10-31T01:30:00+00:00"),
        ends_at=datetime.fromisoformat("2027-10-31T01:50:00+00:00"))
    shown = shown_form(text(admin.get(f"/maintenance/{w.pk}/")))
    assert (shown["starts_at"], shown["ends_at"]) == ("2027-10-31T02:30:00",
                                                      "2027-10-31T02:50:00")
    admin.post(f"/maintenance/{w.pk}/", {**shown, "timezone": "UTC"})
    w.refresh_from_db()  # the same wall times, now in UTC
    assert (w.starts_at.isoformat(), w.ends_at.isoformat()) == (
        "2027-10-31T02:30:00+00:00", "2027-10-31T02:50:00+00:00")


def test_the_windows_monitor_list_is_sorted_by_name(admin, make_monitor):
    for name in ("zeta", "alpha", "Mid"):
        make_monitor(name=name)
    page = text(admin.get("/maintenance/"))
    select = re.search(r'<select id="w-monitor".*?</select>', page, re.S)[0]
    assert re.findall(r'<option value="\d+" >([^<]+)</option>', select) == [
        "alpha", "Mid", "zeta"]
