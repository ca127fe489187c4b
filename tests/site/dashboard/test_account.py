"""The person's own pages (cronradar.dashboard.account): the project switcher and
creating a project."""
import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from accounts.models import Membership
from tests.site.dashboard.conftest import signed_in, text

pytestmark = pytest.mark.django_db


def test_an_organisation_without_a_project_offers_to_create_one(db):
    from accounts.models import Organisation, Project

    org = Organisation.objects.create(name="acme")
    ana = get_user_model().objects.create_user("ana", "ana@example.com", "pw")
    Membership.objects.create(organisation=org, user=ana, role="owner")
    client = Client()
    client.force_login(ana)
    page = client.get("/")
    assert page.status_code == 200 and "No project yet" in text(page)
    assert 'action="/projects/new/"' in text(page)
    assert client.post("/projects/new/", {"organisation": org.pk, "name": ""}
                       ).status_code == 400
    made = client.post("/projects/new/", {"organisation": org.pk, "name": "production"})
    assert made.status_code == 302 and made.url == "/"
    assert Project.objects.get(organisation=org).name == "production"
    assert "Monitors" in text(client.get("/")) and "acme / production" in text(client.get("/"))
    assert 'href="/projects/new/"' in text(client.get("/"))  # the switcher offers another


def test_only_admins_create_projects(project):
    member = signed_in(project, "member")
    assert 'href="/projects/new/"' not in text(member.get("/"))
    assert member.post("/projects/new/", {"organisation": project.organisation_id,
                                          "name": "mine"}).status_code == 403
    assert not project.organisation.projects.filter(name="mine").exists()
    viewer_only = get_user_model().objects.create_user("vic", "v@example.com", "pw")
    from accounts.models import Organisation

    Membership.objects.create(organisation=Organisation.objects.create(name="lone"),
                              user=viewer_only, role="viewer")
    client = Client()
    client.force_login(viewer_only)
    page = text(client.get("/"))
    assert "No project yet" in page and "Ask an admin or owner" in page
    assert 'action="/projects/new/"' not in page


@pytest.mark.parametrize("back, lands", [
    ("/monitors/3/", "/"), ("/monitors/3/edit/", "/"), ("/incidents/5/", "/incidents/"),
    ("/channels/4/", "/channels/"), ("/maintenance/2/", "/maintenance/"),
    ("/policies/7/", "/policies/"), ("/incidents/", "/incidents/"), ("/", "/"),
    ("/account/", "/account/"), ("https://evil.example/", "/")])
def test_switching_project_from_an_object_page_lands_on_its_list(admin, project, back, lands):
    other = project.organisation.projects.create(name="staging")
    resp = admin.post("/switch/", {"project": other.pk, "next": back})
    assert (resp.status_code, resp.url) == (302, lands)


def test_the_theme_is_chosen_on_the_profile_and_set_on_every_page(admin):
    """Profile.theme: auto until chosen (the CSS then follows prefers-color-scheme);
    chosen on /account/, it is the <html data-theme> of every page; a POST with only
    the time zone (the first visit's script) keeps it; an unknown one is refused."""
    from accounts.models import Profile

    assert '<html lang="en" data-theme="auto">' in text(admin.get("/"))
    page = text(admin.get("/account/"))
    assert '<input type="radio" name="theme" value="auto" checked>' in page
    assert admin.post("/account/", {"theme": "dark"}).url == "/account/"
    for path in ("/", "/incidents/", "/account/", "/docs/"):
        assert '<html lang="en" data-theme="dark">' in text(admin.get(path)), path
    assert '<input type="radio" name="theme" value="dark" checked>' in text(admin.get("/account/"))
    assert admin.post("/account/", {"timezone": "Asia/Tokyo"}).status_code == 302
    assert Profile.objects.values_list("timezone", "theme").get(user__username="admin") == \
        ("Asia/Tokyo", "dark")
    refused = admin.post("/account/", {"timezone": "Europe/Paris", "theme": "blue"})
    assert refused.status_code == 400
    assert "unknown theme &#x27;blue&#x27;: auto, light or dark" in text(refused)
    assert Profile.objects.values_list("timezone", "theme").get(user__username="admin") == \
        ("Asia/Tokyo", "dark")
    assert admin.post("/account/", {"theme": "light"}).status_code == 302
    assert '<html lang="en" data-theme="light">' in text(admin.get("/"))


def test_pages_without_a_person_follow_the_browser(client, db):
    assert '<html lang="en" data-theme="auto">' in text(client.get("/login/"))
