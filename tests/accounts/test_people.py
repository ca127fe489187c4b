"""accounts.people: an admin finds only people of their own organisations (anyone
else is invited: tests/accounts/test_invitations.py), and password links are on
CRONRADAR_BASE_URL whatever the request's host; a completed reset verifies the
address."""
import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from accounts import signup
from accounts.models import Membership, Profile
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


def test_a_completed_password_reset_verifies_the_address(project, mailoutbox, settings):
    """Someone who signed up and never followed their link gets in by the reset
    (the reset link proves the address), sign-up open or not."""
    settings.CRONRADAR_BASE_URL = "https://cron.example.org"
    settings.CRONRADAR_SIGNUP = "closed"
    user = get_user_model().objects.create_user("u@example.com", "u@example.com", "old pw 1")
    Profile.objects.create(user=user, email_verified_at=None)
    Client().post("/password-reset/", {"email": "u@example.com"})
    link = re.search(r"https://cron\.example\.org(/password-reset/\S+/)",
                     mailoutbox[0].body).group(1)
    browser = Client()
    form = browser.get(link, follow=True)
    assert not signup.is_verified(user)  # opening the link proves nothing yet
    done = browser.post(form.redirect_chain[-1][0], {"new_password1": "a new pass phrase 7",
                                                     "new_password2": "a new pass phrase 7"})
    assert (done.status_code, done["Location"]) == (302, "/login/")
    assert signup.is_verified(user)
    signed_in = Client().post("/login/", {"username": "u@example.com",
                                          "password": "a new pass phrase 7"})
    assert (signed_in.status_code, signed_in["Location"]) == (302, "/")
