"""accounts.signup: CRONRADAR_SIGNUP's modes, sign-up with its one-time
verification link (django.core.mail.outbox; a GET shows the button, its POST
verifies), the same answer for a new and a taken address, a new sign-up of an
unverified address taking over its password, the address lower-cased, the rate
limits, and the sign-in refused before verification."""
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from accounts import signup
from accounts.models import Membership, Organisation, Profile
from tests.helpers import _settings_env, person

pytestmark = pytest.mark.django_db
PASSWORD = "a long pass phrase 9"
VERIFY = re.compile(r"https://cron\.example\.org(/signup/verify/\S+/)")
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def open_signup(settings):
    """Sign-up open on an installation with its operator (while nobody exists,
    /signup/ leads to the first-account page)."""
    settings.CRONRADAR_BASE_URL = "https://cron.example.org"
    settings.CRONRADAR_SIGNUP = "open"
    person("operator", Organisation.objects.create(name="ops"), "owner")
    return settings


@pytest.mark.parametrize("raw, expected", [
    ("closed", signup.Mode("closed")),
    (" Open ", signup.Mode("open")),
    ("domain:Example.com, other.org", signup.Mode("domain", ("example.com", "other.org"))),
])
def test_the_setting_parses(raw, expected):
    assert signup.parse(raw) == expected


@pytest.mark.parametrize("raw, reason", [
    ("yes", "use closed, open or domain:example.com,other.org"),
    ("domain", "use closed, open or domain:example.com,other.org"),
    ("domain:", "'' is not an email domain: use domain:example.com,other.org"),
    ("domain:example.com,not a domain", "'not a domain' is not an email domain: use "
                                        "domain:example.com,other.org"),
])
def test_a_malformed_setting_is_refused_with_the_reason(raw, reason):
    with pytest.raises(ValueError) as refused:
        signup.parse(raw)
    assert str(refused.value) == reason


def test_a_malformed_setting_stops_the_start():
    code, output = _settings_env(CRONRADAR_SIGNUP="domain:")
    assert code != 0
    assert "(cronradar.E004) CRONRADAR_SIGNUP='domain:' is not a sign-up mode" in output
    assert "HINT: '' is not an email domain: use domain:example.com,other.org" in output
    assert _settings_env(CRONRADAR_SIGNUP="domain:example.com")[0] == 0


def test_domain_mode_allows_only_its_domains():
    mode = signup.parse("domain:example.com")
    assert (mode.allows("a@EXAMPLE.com"), mode.allows("a@evil.com"),
            mode.allows("a@sub.example.com")) == (True, False, False)
    assert not signup.Mode("closed").allows("a@example.com")


def test_signing_up_verifies_the_address_before_the_person_can_sign_in(open_signup, mailoutbox):
    answer = Client().post("/signup/", {"email": "new@example.com", "password": PASSWORD})
    assert answer.status_code == 200 and "Check your email" in answer.content.decode()
    user = get_user_model().objects.get(username="new@example.com")
    assert Profile.objects.get(user=user).email_verified_at is None
    membership = Membership.objects.select_related("organisation").get(user=user)
    assert (membership.role, membership.organisation.name,
            [p.name for p in membership.organisation.projects.all()]) == (
        "owner", "new@example.com", ["default"])
    refused = Client().post("/login/", {"username": "new@example.com", "password": PASSWORD})
    assert refused.status_code == 200
    assert "Confirm your email address first" in refused.content.decode()
    wrong = Client().post("/login/", {"username": "new@example.com", "password": "nope"})
    assert "Confirm your email" not in wrong.content.decode()  # only with the password
    assert "did not match" in wrong.content.decode()
    (mail,) = mailoutbox
    assert (mail.to, mail.subject) == (["new@example.com"],
                                       "Confirm your email address for CronRadar")
    link = VERIFY.search(mail.body).group(1)
    browser = Client()
    verified = _confirm(browser, link)
    assert (verified.status_code, verified["Location"]) == (302, "/welcome/")
    assert Profile.objects.get(user=user).email_verified_at is not None
    assert browser.get("/welcome/").status_code == 200
    assert Client().get(link).status_code == 400  # once
    assert Client().post(link).status_code == 400
    signed_in = Client().post("/login/", {"username": "new@example.com", "password": PASSWORD})
    assert (signed_in.status_code, signed_in["Location"]) == (302, "/")


def test_a_taken_address_gets_the_same_page_and_an_email_saying_so(open_signup, mailoutbox):
    person("ana", Organisation.objects.get(name="ops"), "member")
    pages = [Client().post("/signup/", {"email": e, "password": PASSWORD}).content.decode()
             for e in ("ana@example.com", "new@example.com")]
    shown = [re.sub(r'(value|nonce)="[^"]+"|ana@example\.com|new@example\.com', "?", p)
             for p in pages]
    assert shown[0] == shown[1]
    assert get_user_model().objects.filter(email__iexact="ana@example.com").count() == 1
    taken, new = mailoutbox
    assert (taken.to, taken.subject) == (["ana@example.com"],
                                         "You already have a CronRadar account")
    assert "Sign in here: https://cron.example.org/login/" in taken.body
    assert "https://cron.example.org/password-reset/" in taken.body
    assert new.subject == "Confirm your email address for CronRadar"


def _confirm(browser: Client, link: str):
    """Open a verification link and press its confirm button (the GET's page)."""
    page = browser.get(link)
    assert page.status_code == 200, page.content.decode()
    assert "<h1>Confirm your email address</h1>" in page.content.decode()
    return browser.post(link)


def test_an_unverified_address_signing_up_again_gets_a_new_link(open_signup, mailoutbox):
    for _ in range(2):
        Client().post("/signup/", {"email": "new@example.com", "password": PASSWORD})
    assert get_user_model().objects.filter(email="new@example.com").count() == 1
    first, second = (VERIFY.search(m.body).group(1) for m in mailoutbox)
    assert Client().get(first).status_code == 400  # the newer sign-up voided it
    assert _confirm(Client(), second).status_code == 302


def test_whoever_signed_the_address_up_first_cannot_keep_their_password(
        open_signup, mailoutbox):
    """The attack: a stranger signs the owner's address up with their password;
    the owner later signs up with their own and follows the newest link."""
    Client().post("/signup/", {"email": "pre2@corp.test", "password": "attacker pass 1234"})
    Client().post("/signup/", {"email": "pre2@corp.test", "password": PASSWORD})
    attackers, owners = (VERIFY.search(m.body).group(1) for m in mailoutbox)
    owner = Client()
    assert _confirm(owner, owners)["Location"] == "/welcome/"
    assert owner.get("/welcome/").status_code == 200
    user = get_user_model().objects.get(username="pre2@corp.test")
    assert (user.check_password(PASSWORD), user.check_password("attacker pass 1234")) == (
        True, False)
    attacker = Client().post("/login/", {"username": "pre2@corp.test",
                                         "password": "attacker pass 1234"})
    assert (attacker.status_code, "did not match" in attacker.content.decode()) == (200, True)
    assert Client().post(attackers).status_code == 400


def test_a_verification_link_opened_with_get_confirms_nothing(open_signup, mailoutbox):
    """Mail scanners open links: only the page's button (a POST with the CSRF
    token) verifies."""
    Client().post("/signup/", {"email": "new@example.com", "password": PASSWORD})
    link = VERIFY.search(mailoutbox[0].body).group(1)
    user = get_user_model().objects.get(username="new@example.com")
    for _ in range(2):
        page = Client().get(link)
        assert page.status_code == 200 and "new@example.com" in page.content.decode()
        assert 'name="csrfmiddlewaretoken"' in page.content.decode()
    assert not signup.is_verified(user)
    strict = Client(enforce_csrf_checks=True)
    assert strict.post(link).status_code == 403  # no CSRF token
    assert not signup.is_verified(user)
    page = strict.get(link)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"',
                      page.content.decode()).group(1)
    done = strict.post(link, {"csrfmiddlewaretoken": token})
    assert (done.status_code, done["Location"]) == (302, "/welcome/")
    assert signup.is_verified(user)


def test_the_unverified_are_sent_to_the_password_reset_once_signup_is_closed(
        open_signup, mailoutbox):
    Client().post("/signup/", {"email": "new@example.com", "password": PASSWORD})
    login = {"username": "new@example.com", "password": PASSWORD}
    assert "sign up again" in Client().post("/login/", login).content.decode()
    open_signup.CRONRADAR_SIGNUP = "closed"
    closed = Client().post("/login/", login).content.decode()
    assert "sign up again" not in closed
    assert ("Confirm your email address first: follow the link we emailed you, or use "
            "&quot;Forgot your password?&quot; below (the reset link confirms your "
            "address).") in closed
    open_signup.CRONRADAR_SIGNUP = "domain:other.org"  # no longer takes this address
    assert "sign up again" not in Client().post("/login/", login).content.decode()


def test_the_address_is_stored_lower_cased_and_signs_in_in_any_case(open_signup, mailoutbox):
    Client().post("/signup/", {"email": "Mixed.Case@Corp.test", "password": PASSWORD})
    user = get_user_model().objects.get(email__iexact="mixed.case@corp.test")
    assert (user.username, user.email, mailoutbox[0].to) == (
        "mixed.case@corp.test", "mixed.case@corp.test", ["mixed.case@corp.test"])
    _confirm(Client(), VERIFY.search(mailoutbox[0].body).group(1))
    for typed in ("mixed.case@corp.test", "Mixed.Case@Corp.test", "MIXED.CASE@CORP.TEST"):
        signed_in = Client().post("/login/", {"username": typed, "password": PASSWORD})
        assert (typed, signed_in.status_code) == (typed, 302)
    Client().post("/signup/", {"email": "MIXED.case@corp.test", "password": PASSWORD})
    assert get_user_model().objects.filter(email__iexact="mixed.case@corp.test").count() == 1
    assert mailoutbox[-1].subject == "You already have a CronRadar account"


def test_a_sign_up_racing_another_for_the_same_address_makes_one_account(
        open_signup, mailoutbox, monkeypatch):
    """The other sign-up's account appears between the look-up and the insert:
    the unique username refuses the second, which is answered as a taken address."""
    real = signup.same_address
    calls = []

    def raced(email):
        calls.append(email)
        if len(calls) == 1:  # the look-up saw nobody; then the other request won
            other = get_user_model().objects.create_user(email, email, "other pass 1234")
            Profile.objects.create(user=other, email_verified_at=None)
            return real("nobody@nowhere.invalid")
        return real(email)

    monkeypatch.setattr(signup, "same_address", raced)
    assert signup.sign_up("race@example.com", PASSWORD, "192.0.2.1") == signup.Outcome.SENT
    (user,) = get_user_model().objects.filter(email="race@example.com")
    assert user.check_password(PASSWORD)  # the newer sign-up's password, its link
    assert [m.subject for m in mailoutbox] == ["Confirm your email address for CronRadar"]
    assert signup.link_owner(*VERIFY.search(mailoutbox[0].body).group(1).split("/")[3:5]) \
        == user


def test_weak_passwords_and_bad_addresses_are_refused(open_signup, mailoutbox):
    weak = Client().post("/signup/", {"email": "new@example.com", "password": "new@example.com"})
    assert weak.status_code == 400
    assert "The password is too similar to the username." in weak.content.decode()
    bad = Client().post("/signup/", {"email": "not-an-address", "password": PASSWORD})
    assert bad.status_code == 400 and "Enter a valid email address." in bad.content.decode()
    assert (get_user_model().objects.count(), mailoutbox) == (1, [])  # the operator


def test_domain_mode_refuses_other_domains(open_signup, mailoutbox):
    open_signup.CRONRADAR_SIGNUP = "domain:example.com,other.org"
    refused = Client().post("/signup/", {"email": "a@evil.com", "password": PASSWORD})
    assert refused.status_code == 400
    assert "Sign-up takes addresses of example.com, other.org only." in \
        refused.content.decode()
    assert Client().post("/signup/", {"email": "a@other.org",
                                      "password": PASSWORD}).status_code == 200
    assert [m.to for m in mailoutbox] == [["a@other.org"]]


def test_closed_mode_has_no_signup(settings):
    settings.CRONRADAR_SIGNUP = "closed"
    person("someone", Organisation.objects.create(name="o"), "owner")
    closed = Client().get("/signup/")
    assert closed.status_code == 404 and "Sign-up is closed" in closed.content.decode()
    assert Client().post("/signup/", {"email": "a@example.com",
                                      "password": PASSWORD}).status_code == 404
    assert get_user_model().objects.count() == 1
    assert 'href="/signup/"' not in Client().get("/login/").content.decode()
    settings.CRONRADAR_SIGNUP = "open"
    assert 'href="/signup/"' in Client().get("/login/").content.decode()


def test_attempts_are_limited_per_address_and_per_client(open_signup, mailoutbox):
    for _ in range(signup.ADDRESS_LIMIT):
        assert Client().post("/signup/", {"email": "new@example.com",
                                          "password": PASSWORD}).status_code == 200
    over = Client().post("/signup/", {"email": "NEW@example.com", "password": PASSWORD})
    assert over.status_code == 429 and "Too many sign-up attempts" in over.content.decode()
    assert len(mailoutbox) == signup.ADDRESS_LIMIT
    for i in range(signup.CLIENT_LIMIT - signup.ADDRESS_LIMIT - 1):
        Client().post("/signup/", {"email": f"n{i}@example.com", "password": PASSWORD})
    assert Client().post("/signup/", {"email": "last@example.com", "password": PASSWORD},
                         REMOTE_ADDR="127.0.0.1").status_code == 429
    assert Client().post("/signup/", {"email": "last@example.com", "password": PASSWORD},
                         REMOTE_ADDR="192.0.2.7").status_code == 200


def test_a_verification_link_expires(open_signup, settings, monkeypatch):
    user = get_user_model().objects.create_user("u@example.com", "u@example.com", PASSWORD)
    Profile.objects.create(user=user, email_verified_at=None)
    naive = NOW.replace(tzinfo=None)  # the token generator's clock is naive
    monkeypatch.setattr(signup.tokens, "_now", lambda: naive)
    link = signup.verification_link(user)
    uid, token = link.rstrip("/").split("/")[-2:]
    monkeypatch.setattr(signup.tokens, "_now",
                        lambda: naive + timedelta(seconds=settings.PASSWORD_RESET_TIMEOUT + 1))
    assert signup.verify(uid, token, now=NOW) is None
    monkeypatch.setattr(signup.tokens, "_now", lambda: naive)
    assert signup.verify(uid, token, now=NOW) == user
    assert Profile.objects.get(user=user).email_verified_at == NOW
    assert signup.verify(uid, token, now=NOW) is None  # once


def test_people_made_any_other_way_are_verified(project):
    staff = get_user_model().objects.create_superuser("root", "root@example.com", PASSWORD)
    assert signup.is_verified(staff)  # no profile row
    Profile.objects.get_or_create(user=staff)
    assert signup.is_verified(staff)


def test_while_nobody_exists_signup_leads_to_the_first_account(settings):
    settings.CRONRADAR_SIGNUP = "open"
    answer = Client().post("/signup/", {"email": "a@example.com", "password": PASSWORD})
    assert (answer.status_code, answer["Location"]) == (302, "/")
    assert not get_user_model().objects.exists()
