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
