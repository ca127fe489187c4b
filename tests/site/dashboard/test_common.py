"""What every dashboard page shares (cronradar.dashboard.common): sign-in, roles and
tenants, the person's time zone, 403 and 404 pages, form errors, schedules in
words. The browser path is tests/integration/test_browser.py."""
import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from accounts.models import Membership
from alerts.models import Channel, Incident
from monitors.models import Monitor
from monitors.pings import PingInput, ingest
from tests.conftest import S, new_project
from tests.site.dashboard.conftest import signed_in, text

pytestmark = pytest.mark.django_db


def test_sign_in_is_required_and_works(project):
    get_user_model().objects.create_user("ana", "ana@example.com", "a long passphrase 42")
    assert Client().get("/").url == "/login/?next=/"
    client = Client()
    resp = client.post("/login/", {"username": "ana", "password": "a long passphrase 42"})
    assert resp.status_code == 302
    nothing = client.get("/")  # a person in no organisation: a page that says so
    assert nothing.status_code == 200
    assert "You are not in any organisation yet" in text(nothing) and "Sign out" in text(nothing)
    Membership.objects.create(organisation=project.organisation,
                              user=get_user_model().objects.get(username="ana"))
    assert "Monitors" in text(client.get("/"))
    assert client.post("/logout/").status_code == 302
    assert client.get("/").status_code == 302


def test_viewers_see_no_buttons_and_cannot_post(project, world):
    viewer = signed_in(project, "viewer")
    m = world["monitor"]
    page = text(viewer.get(f"/monitors/{m.pk}/"))
    assert "Edit" not in page and "Pause" not in page and m.ping_url not in page
    assert "s3cret" not in text(viewer.get("/channels/"))
    assert "/channels/new/" not in text(viewer.get("/channels/"))  # no kind chooser
    for url in (f"/monitors/{m.pk}/pause/", f"/incidents/{world['incident'].pk}/ack/",
                "/channels/new/webhook/", "/keys/", "/monitors/new/", f"/monitors/{m.pk}/delete/"):
        assert viewer.post(url, {"name": "x"}).status_code == 403, url
    assert Monitor.objects.get(pk=m.pk).paused is False


def test_another_tenants_pages_are_404(admin, project):
    other = new_project("bravo")
    m = Monitor.objects.create(project=other, name="theirs", slug="theirs", period=60 * S,
                               grace=S)
    ingest(m.pk, PingInput("fail"), timezone.now())
    incident = Incident.objects.get(monitor=m)
    ch = Channel.objects.create(project=other, kind="webhook", config={"url": "https://b.test"})
    for method, url in [("get", f"/monitors/{m.pk}/"), ("get", f"/monitors/{m.pk}/edit/"),
                        ("post", f"/monitors/{m.pk}/pause/"),
                        ("post", f"/monitors/{m.pk}/delete/"),
                        ("get", f"/incidents/{incident.pk}/"),
                        ("post", f"/incidents/{incident.pk}/ack/"),
                        ("get", f"/channels/{ch.pk}/"), ("post", f"/channels/{ch.pk}/test/"),
                        ("post", f"/channels/{ch.pk}/delete/")]:
        assert getattr(admin, method)(url).status_code == 404, (method, url)
    assert admin.post("/switch/", {"project": other.pk}).status_code == 404
    assert "theirs" not in text(admin.get("/")) and "theirs" not in text(admin.get("/incidents/"))
    assert Monitor.objects.get(pk=m.pk).paused is False


def test_times_are_in_the_persons_zone(admin, world):
    page = text(admin.get(f"/incidents/{world['incident'].pk}/"))
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d CES?T", page)
    admin.post("/account/", {"timezone": "Asia/Tokyo"})
    assert " JST" in text(admin.get(f"/incidents/{world['incident'].pk}/"))
    assert admin.post("/account/", {"timezone": "Mars/Olympus"}).status_code == 400


# --- getting started: organisations without owner or project, people without either ---

def test_a_person_in_no_organisation_gets_a_page_not_a_bare_404(db):
    staff = get_user_model().objects.create_user("root", "r@example.com", "pw", is_staff=True)
    client = Client()
    client.force_login(staff)
    page = client.get("/")
    assert page.status_code == 200 and page["Content-Type"].startswith("text/html")
    assert 'href="/admin/"' in text(page) and "Sign out" in text(page)
    assert "createuser root --organisation NAME" in text(page)
    other = client.get("/channels/")
    assert other.status_code == 404 and "You are not in any organisation yet" in text(other)


def test_the_404_page_is_html_with_navigation(admin):
    missing = admin.get("/monitors/99999/")
    assert missing.status_code == 404 and missing["Content-Type"].startswith("text/html")
    assert "<h1>Not found</h1>" in text(missing) and 'href="/incidents/"' in text(missing)
    nowhere = admin.get("/no/such/page/")
    assert nowhere.status_code == 404 and 'href="/incidents/"' in text(nowhere)
    assert Client().get("/cli/nothing").content == b"not found\n"  # machines: plain text


def test_a_refusal_is_a_403_page_logged_in_one_line(project, world, caplog):
    viewer = signed_in(project, "viewer")
    with caplog.at_level("INFO"):
        resp = viewer.post("/channels/new/webhook/", {"name": "x"})
    assert resp.status_code == 403 and "this needs the admin role" in text(resp)
    assert 'href="/incidents/"' in text(resp)  # a page with the navigation
    refusals = [r for r in caplog.records if "Forbidden" in r.getMessage()]
    assert len(refusals) == 1 and refusals[0].exc_info is None
    assert all(r.exc_info is None for r in caplog.records)


# --- crafted posts, password links, adding people -----------------------------------

@pytest.mark.parametrize("url, form", [
    ("/monitors/new/", {"name": "x", "kind": "interval", "period": "60", "grace": "60",
                        "timezone": "UTC", "channels": "²"}),
    ("EDIT", {"name": "x", "kind": "interval", "period": "60", "grace": "60",
              "timezone": "UTC", "channels": "١٢"}),
    ("/policies/", {"name": "p", "tier0_delay": "0", "tier0_channels": "²"}),
    ("/switch/", {"project": "²"}),
    ("/switch/", {"project": "abc"}),
    ("/members/", {"member": "²", "role": "viewer"}),
    ("/members/", {"member": "abc", "role": "viewer"}),
    ("/members/", {"member": "99999999999999999999999", "role": "viewer"}),
])
def test_crafted_ids_are_form_errors_not_500s(admin, world, url, form):
    if url == "EDIT":
        url = f"/monitors/{world['monitor'].pk}/edit/"
    resp = admin.post(url, form)
    assert 400 <= resp.status_code < 500, resp.status_code
    if url != "/switch/":
        assert 'class="alert"' in text(resp) or 'class="error"' in text(resp)


@pytest.mark.parametrize("schedule, words", [
    ("@daily", "At 00:00 (UTC)"), ("@hourly", "Every hour (UTC)"),
    ("@weekly", "At 00:00, only on Sunday (UTC)"),
    ("@monthly", "At 00:00, on day 1 of the month (UTC)"),
    ("0 0 * * 0-7", "At 00:00 (UTC)"), ("0 0 * * 1-7", "At 00:00 (UTC)"),
    ("0 0 * * 0,7", "At 00:00, only on Sunday (UTC)"),
    ("0 0 * * 5-7", "At 00:00, Friday through Sunday (UTC)")])
def test_schedules_in_words(schedule, words):
    from cronradar.dashboard.common import schedule_words

    assert schedule_words("cron", schedule, None, "UTC") == words


def test_the_zone_is_named_on_every_page(admin, world):
    admin.post("/account/", {"timezone": "Asia/Dubai"})
    for url in ("/", f"/monitors/{world['monitor'].pk}/", f"/incidents/{world['incident'].pk}/"):
        page = text(admin.get(url))
        assert "times in Asia/Dubai" in page and "+04" in page, url
