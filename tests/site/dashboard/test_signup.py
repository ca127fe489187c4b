"""cronradar.dashboard.signup: "Create the first account" at / on an empty
database (gone once someone exists; the production setup token), and the
onboarding page with its test ping through the ping path, shown live."""
import json
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from accounts import firstrun
from accounts.models import Membership, Organisation
from alerts.models import Channel
from cronradar.dashboard.signup import TEST_PING_AGENT
from monitors.models import Monitor, PingLog
from tests.conftest import new_project
from tests.site.dashboard.conftest import signed_in, text

pytestmark = pytest.mark.django_db
PASSWORD = "a long pass phrase 9"
FORM = {"email": "op@example.com", "password": PASSWORD, "organisation": "Acme"}


def test_an_empty_installation_offers_the_first_account_at_the_root():
    browser = Client()
    page = browser.get("/")
    assert page.status_code == 200 and "<h1>Create the first account</h1>" in text(page)
    assert 'name="organisation"' in text(page) and 'name="token"' not in text(page)
    assert "create the first account" in text(browser.get("/login/"))
    weak = browser.post("/", {**FORM, "password": "short"})
    assert weak.status_code == 400 and "This password is too short" in text(weak)
    made = browser.post("/", FORM)
    assert (made.status_code, made["Location"]) == (302, "/welcome/")
    assert "Welcome to CronRadar" in text(browser.get("/welcome/"))  # signed in
    assert Membership.objects.get().organisation.name == "Acme"
    gone = Client().get("/")
    assert (gone.status_code, gone["Location"]) == (302, "/login/?next=/")
    assert Client().post("/", {**FORM, "email": "b@example.com"}).status_code == 302
    assert get_user_model().objects.count() == 1
    assert "create the first account" not in text(Client().get("/login/"))


def test_the_page_names_the_organisation_it_adopts():
    Organisation.objects.create(name="from-createapikey")
    page = text(Client().get("/"))
    assert "owner of the organisation <strong>from-createapikey</strong>" in page
    assert 'name="organisation"' not in page


def test_production_needs_the_setup_token(settings):
    settings.PRODUCTION = True
    token = firstrun.setup_token()
    page = Client().get("/")
    assert 'name="token"' in text(page)
    wrong = Client().post("/", {**FORM, "token": "guess"})
    assert wrong.status_code == 400
    assert "The setup token is wrong: use the one migrate and serve print." in text(wrong)
    assert get_user_model().objects.count() == 0
    assert Client().post("/", {**FORM, "token": token}).status_code == 302


def test_the_welcome_page_walks_to_a_channel_a_monitor_and_its_ping_line(project,
                                                                          make_monitor):
    owner = signed_in(project, "owner")
    page = text(owner.get("/welcome/"))
    assert 'href="/channels/">Add a channel' in page
    assert 'href="/monitors/new/">Create a monitor' in page
    Channel.objects.create(project=project, kind="webhook", name="hook",
                           config={"url": "https://hook.test/h", "secret": "s"})
    m = make_monitor(name="nightly")
    page = text(owner.get("/welcome/"))
    assert f'Done: <a href="/monitors/{m.pk}/">nightly</a>' in page
    assert f"curl -fsS -m 10 --retry 5 -o /dev/null {m.ping_url}" in page
    assert "No ping yet." in page and "Send a test ping" in page


def test_the_test_ping_goes_through_the_ping_path_and_shows_live(project, make_monitor):
    owner = signed_in(project, "owner")
    m = make_monitor(name="nightly")
    sent = owner.post(f"/welcome/{m.pk}/test-ping/", HTTP_ACCEPT="application/json")
    assert sent.status_code == 200
    (ping,) = PingLog.objects.filter(monitor=m)
    assert (ping.kind, ping.method, ping.user_agent) == ("success", "POST", TEST_PING_AGENT)
    assert json.loads(sent.content) == {"pings": [{
        "at": ping.received_at.isoformat(), "kind": "success", "method": "POST",
        "user_agent": TEST_PING_AGENT}]}
    m.refresh_from_db()
    assert m.last_ping_at == ping.received_at  # the monitor's own update, as any ping
    polled = owner.get(f"/welcome/{m.pk}/pings.json")
    assert json.loads(polled.content) == json.loads(sent.content)
    assert owner.post(f"/welcome/{m.pk}/test-ping/").status_code == 302  # without script
    assert PingLog.objects.filter(monitor=m).count() == 2


def test_the_test_ping_is_for_members_of_the_project(project, make_monitor):
    m = make_monitor(name="nightly")
    viewer = signed_in(project, "viewer")
    assert viewer.post(f"/welcome/{m.pk}/test-ping/").status_code == 403
    assert viewer.get(f"/welcome/{m.pk}/pings.json").status_code == 200
    other = signed_in(new_project("elsewhere"), "owner", "eve")
    assert other.post(f"/welcome/{m.pk}/test-ping/").status_code == 404
    assert other.get(f"/welcome/{m.pk}/pings.json").status_code == 404
    assert not PingLog.objects.exists()
    assert Monitor.objects.get().last_ping_at is None


def test_an_invitation_the_lowered_plan_has_no_room_for_says_so(project, settings):
    from accounts import invitations
    from accounts.models import Plan
    from tests.helpers import person

    settings.CRONRADAR_BASE_URL = "https://cron.example.org"
    person("olga", project.organisation, "owner")
    found = invitations.invite(project.organisation, "nb@example.com", "member", "olga")
    plan = Plan.objects.create(name="free", max_members=1)
    Organisation.objects.filter(pk=project.organisation_id).update(plan=plan)
    link = invitations.link(found).removeprefix("https://cron.example.org")
    resp = Client().post(link, {"username": "newbie", "password": "a long pass phrase 9"})
    assert resp.status_code == 403
    assert ("this organisation&#x27;s plan (free) allows 1 member: ask the admin who invited "
            "you.") in resp.content.decode()
    assert not get_user_model().objects.filter(username="newbie").exists()


def test_sign_up_with_a_missing_default_plan_says_so_and_makes_nobody(project, settings,
                                                                      caplog):
    from tests.helpers import person

    person("olga", project.organisation, "owner")  # not the first run
    settings.CRONRADAR_SIGNUP = "open"
    settings.CRONRADAR_DEFAULT_PLAN = "gold"
    resp = Client().post("/signup/", {"email": "new@example.com",
                                      "password": "a long pass phrase 9"})
    assert resp.status_code == 503
    assert "the installation&#x27;s default plan is missing" in resp.content.decode()
    assert list(get_user_model().objects.values_list("username", flat=True)) == ["olga"]
    assert Organisation.objects.count() == 1
    assert "CRONRADAR_DEFAULT_PLAN='gold' names no plan" in caplog.text

@pytest.fixture
def clock(monkeypatch):
    """The sign-in throttle's clock (django.utils.timezone.now), set by the test."""
    from datetime import UTC, datetime

    at = {"now": datetime(2026, 12, 1, 12, 0, tzinfo=UTC)}
    monkeypatch.setattr("django.utils.timezone.now", lambda: at["now"])
    return at


def test_thirty_wrong_passwords_then_the_right_one_wait_out_the_cool_off(clock):
    from django.contrib.auth.signals import user_login_failed

    get_user_model().objects.create_user("ana@corp.test", "ana@corp.test", PASSWORD)
    failed = []

    def note(sender, credentials, **kwargs):
        failed.append(credentials["username"])
    user_login_failed.connect(note)
    browser = Client(REMOTE_ADDR="192.0.2.10")
    try:
        answers = [browser.post("/login/", {"username": "ana@corp.test", "password": "nope"})
                   for _ in range(30)]
    finally:
        user_login_failed.disconnect(note)
    assert [a.status_code for a in answers] == [200] * 5 + [429] * 25
    assert len(failed) == 5  # each checked password; the refused ones were not checked
    right = {"username": "ana@corp.test", "password": PASSWORD}
    refused = browser.post("/login/", right)
    assert (refused.status_code, refused["Retry-After"]) == (429, "1")
    assert "Too many failed sign-ins: try again in 1 second." in text(refused)
    assert "_auth_user_id" not in browser.session
    clock["now"] += timedelta(seconds=1)
    assert browser.post("/login/", {"username": "ana@corp.test", "password": "no"}
                        ).status_code == 200  # checked: the 6th failure, a 2 s wait
    refused = browser.post("/login/", right)
    assert (refused.status_code, refused["Retry-After"]) == (429, "2")
    assert "Too many failed sign-ins: try again in 2 seconds." in text(refused)
    clock["now"] += timedelta(seconds=1.5)
    assert browser.post("/login/", right)["Retry-After"] == "1"
    clock["now"] += timedelta(seconds=0.5)
    assert browser.post("/login/", right).status_code == 302  # signed in, the pair reset
    assert Client(REMOTE_ADDR="192.0.2.10").post("/login/", {
        "username": "ana@corp.test", "password": "nope"}).status_code == 200


def test_the_owner_signs_in_from_elsewhere_while_a_guesser_waits(clock):
    get_user_model().objects.create_user("ana@corp.test", "ana@corp.test", PASSWORD)
    guesser = Client(REMOTE_ADDR="192.0.2.10")
    for _ in range(5):
        guesser.post("/login/", {"username": "ana@corp.test", "password": "nope"})
    assert guesser.post("/login/", {"username": "ana@corp.test", "password": PASSWORD}
                        ).status_code == 429
    owner = Client(REMOTE_ADDR="198.51.100.7")
    assert owner.post("/login/", {"username": "ana@corp.test",
                                  "password": PASSWORD}).status_code == 302


def test_the_admin_sign_in_is_throttled_too(clock):
    get_user_model().objects.create_superuser("root", "root@corp.test", PASSWORD)
    browser = Client(REMOTE_ADDR="192.0.2.10")
    for _ in range(5):
        browser.post("/admin/login/", {"username": "root", "password": "nope"})
    wrong = browser.post("/admin/login/", {"username": "root", "password": "nope"})
    assert (wrong.status_code, wrong["Retry-After"]) == (429, "1")
    refused = browser.post("/admin/login/", {"username": "root", "password": PASSWORD})
    assert (refused.status_code, refused["Retry-After"]) == (429, "1")
    assert "too many failed sign-ins: try again in 1 second" in text(refused)
    assert "_auth_user_id" not in browser.session
    assert browser.get("/admin/login/").status_code == 200  # the page itself is not refused
    clock["now"] += timedelta(seconds=1)
    signed_in = browser.post("/admin/login/", {"username": "root", "password": PASSWORD})
    assert (signed_in.status_code, signed_in.has_header("Retry-After")) == (302, False)
