"""accounts.invitations: an admin invites an address; the answer and the email are
the same whether or not it has an account; someone new accepts choosing a
username and password, someone with an account after signing in as that address,
someone whose account was never verified with its password (which verifies it)."""
import re
import time
from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model
from django.core import signing
from django.test import Client

from accounts import invitations, signup
from accounts.models import Invitation, Membership, Profile
from tests.conftest import new_project
from tests.helpers import as_person, person

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
LINK = re.compile(r"https://cron\.example\.org(/invitations/\S+/)")


@pytest.fixture
def alice(project, settings):
    settings.CRONRADAR_BASE_URL = "https://cron.example.org"
    return as_person(person("alice", project.organisation, "admin"))


def _invite(alice, email, **extra):
    return alice.post("/api/v1/members/", {"email": email, "role": "viewer", **extra},
                      format="json")


def test_the_answer_and_the_email_are_the_same_whether_the_address_has_an_account(
        alice, project, mailoutbox):
    person("stranger", new_project("theirs").organisation, "owner")  # stranger@example.com
    answers = [_invite(alice, e) for e in ("stranger@example.com", "nobody@example.com")]
    assert [a.status_code for a in answers] == [202, 202]
    assert answers[0].json() == {
        "organisation": project.organisation_id, "email": "stranger@example.com",
        "role": "viewer", "invited": True,
        "detail": "invitation sent to stranger@example.com: they join the organisation when "
                  "they accept it"}
    assert answers[1].json() == {**answers[0].json(), "email": "nobody@example.com",
                                 "detail": answers[0].json()["detail"].replace(
                                     "stranger@", "nobody@")}
    assert [m.to for m in mailoutbox] == [["stranger@example.com"], ["nobody@example.com"]]
    assert {m.subject for m in mailoutbox} == {"alice invited you to acme on CronRadar"}
    bodies = [LINK.sub("LINK", m.body).replace(m.to[0], "ADDRESS") for m in mailoutbox]
    assert bodies[0] == bodies[1]
    assert "alice invited you to the organisation acme on CronRadar, as viewer." in bodies[0]
    assert not Membership.objects.filter(organisation=project.organisation,
                                         user__username="stranger").exists()
    assert not get_user_model().objects.filter(email="nobody@example.com").exists()


def test_someone_new_chooses_a_username_and_password(alice, project, mailoutbox):
    assert _invite(alice, "nb@example.com", username="newbie").status_code == 202
    link = LINK.search(mailoutbox[0].body).group(1)
    page = Client()
    shown = page.get(link)
    assert shown.status_code == 200 and 'value="newbie"' in shown.content.decode()
    weak = page.post(link, {"username": "newbie", "password": "123"})
    assert weak.status_code == 400 and "This password is too short" in weak.content.decode()
    person("taken", new_project("theirs").organisation, "owner")
    taken = page.post(link, {"username": "Taken", "password": "a long pass phrase 9"})
    assert "the username &#x27;Taken&#x27; is taken: choose another" in taken.content.decode()
    joined = page.post(link, {"username": "newbie", "password": "a long pass phrase 9"})
    assert joined.status_code == 302 and joined["Location"] == "/welcome/"
    newbie = get_user_model().objects.get(username="newbie")
    assert (newbie.email, newbie.check_password("a long pass phrase 9")) == (
        "nb@example.com", True)
    assert Profile.objects.get(user=newbie).email_verified_at is not None
    assert Membership.objects.get(user=newbie).role == "viewer"
    assert page.get("/welcome/").status_code == 200  # signed in
    assert Client().get(link).status_code == 404  # used


def test_someone_with_an_account_joins_after_signing_in_as_that_address(
        alice, project, mailoutbox):
    stranger = person("stranger", new_project("theirs").organisation, "owner")
    _invite(alice, "STRANGER@example.com")
    link = LINK.search(mailoutbox[0].body).group(1)
    anonymous = Client().get(link)
    assert f'href="/login/?next={link}"' in anonymous.content.decode()
    other = Client()
    other.force_login(person("mallory", new_project("hers").organisation, "owner"))
    assert "this invitation is for STRANGER@example.com" in other.get(link).content.decode()
    other.post(link)
    assert not Membership.objects.filter(organisation=project.organisation,
                                         user__username="mallory").exists()
    signed_in = Client()
    assert signed_in.login(username="stranger", password="pw-stranger")
    joined = signed_in.post(link)
    assert (joined.status_code, joined["Location"]) == (302, "/")
    assert signed_in.session["project_id"] == project.pk  # looking at the new organisation
    assert Membership.objects.get(organisation=project.organisation, user=stranger).role == \
        "viewer"
    assert Client().get(link).status_code == 404


def test_a_new_invitation_replaces_the_pending_one_and_links_expire(
        alice, project, mailoutbox, monkeypatch):
    _invite(alice, "nb@example.com")
    _invite(alice, "nb@example.com", role="member")
    first, second = (LINK.search(m.body).group(1) for m in mailoutbox)
    assert Client().get(first).status_code == 404
    assert Client().get(second).status_code == 200
    assert list(Invitation.objects.values_list("email", "role")) == [("nb@example.com",
                                                                     "member")]
    eight_days_ago = int(time.time()) - 8 * 86400
    monkeypatch.setattr(signing.TimestampSigner, "timestamp",
                        lambda self: signing.b62_encode(eight_days_ago))
    old = invitations.link(Invitation.objects.get())
    monkeypatch.undo()
    assert invitations.find(old.rsplit("/invitations/", 1)[1].strip("/")) is None
    assert Client().get(old.replace("https://cron.example.org", "")).status_code == 404


def test_an_accepted_invitation_keeps_an_existing_members_role(project):
    dan = person("dan", project.organisation, "admin")
    found = invitations.invite(project.organisation, "dan@example.com", "viewer", "alice",
                               now=NOW)
    membership = invitations.accept(found, dan, NOW)
    assert (membership.role, Invitation.objects.get().accepted_at) == ("admin", NOW)
    assert invitations.accept(found, dan, NOW) is None  # once


def test_an_unverified_account_joins_with_its_password_which_verifies_it(
        alice, project, mailoutbox, settings):
    """Signed up under open, never confirmed, sign-up now closed: the invitation's
    link proves the address, the account's password proves the account."""
    settings.CRONRADAR_SIGNUP = "closed"
    pre = get_user_model().objects.create_user("pre@corp.test", "pre@corp.test",
                                               "their pass phrase 5")
    Profile.objects.create(user=pre, email_verified_at=None)
    _invite(alice, "Pre@Corp.test")
    link = LINK.search(mailoutbox[0].body).group(1)
    page = Client()
    shown = page.get(link).content.decode()
    assert "Sign in to accept" not in shown and 'name="password"' in shown
    assert 'href="/password-reset/"' in shown
    wrong = page.post(link, {"password": "a guess"})
    assert wrong.status_code == 400
    assert "This is not the account&#x27;s password" in wrong.content.decode()
    assert not signup.is_verified(pre)
    assert not Membership.objects.filter(user=pre, organisation=project.organisation).exists()
    joined = page.post(link, {"password": "their pass phrase 5"})
    assert (joined.status_code, joined["Location"]) == (302, "/")
    assert signup.is_verified(pre)
    assert Membership.objects.get(organisation=project.organisation, user=pre).role == "viewer"
    assert page.session["project_id"] == project.pk
    assert Client().get(link).status_code == 404  # used
    assert Client().login(username="pre@corp.test", password="their pass phrase 5")


def test_a_new_persons_address_is_stored_lower_cased(alice, project, mailoutbox):
    _invite(alice, "New.Person@Corp.test")
    link = LINK.search(mailoutbox[0].body).group(1)
    assert 'value="new.person@corp.test"' in Client().get(link).content.decode()
    Client().post(link, {"username": "new.person@corp.test",
                         "password": "a long pass phrase 9"})
    assert list(get_user_model().objects.filter(username="new.person@corp.test")
                .values_list("email", flat=True)) == ["new.person@corp.test"]
