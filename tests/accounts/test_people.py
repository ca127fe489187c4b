"""accounts.people: an admin finds only people of their own organisations (anyone
else is invited: tests/accounts/test_invitations.py), and password links are on
CRONRADAR_BASE_URL whatever the request's host."""
import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from accounts.models import Membership
from tests.conftest import new_project
from tests.helpers import as_person, person

pytestmark = pytest.mark.django_db


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
        w: (400, {"username": ["no such person in your organisations; to invite someone, "
                               "give their email"]}) for w in answers}
    assert not Membership.objects.filter(organisation=project.organisation,
                                         user__username="stranger").exists()
    assert mailoutbox == []


def test_the_reset_link_is_on_the_base_url_whatever_the_host(project, mailoutbox, settings):
    settings.CRONRADAR_BASE_URL = "https://cron.example.org"
    get_user_model().objects.create_user("ana", "ana@example.com", "pw-ana")
    resp = Client().post("/password-reset/", {"email": "ana@example.com"},
                         HTTP_HOST="evil.example")
    assert resp.status_code == 302
    (mail,) = mailoutbox
    assert "https://cron.example.org/password-reset/" in mail.body
    assert "evil.example" not in mail.body and "evil.example" not in mail.subject
