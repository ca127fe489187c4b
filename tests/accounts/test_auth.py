"""accounts.auth: the API key as a bearer token or X-Api-Key, the per-key rate limit,
a signed-in person's CSRF token, and the sign-in by an email-shaped username
without letter case."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.test import APIClient

from accounts.models import ApiKey
from tests.helpers import person

pytestmark = pytest.mark.django_db


def test_auth_bearer_and_x_api_key(client, api_key):
    assert client.get("/api/v1/monitors/").status_code == 401
    assert client.get("/api/v1/monitors/", HTTP_AUTHORIZATION="Bearer nope").status_code == 401
    assert client.get("/api/v1/monitors/", HTTP_AUTHORIZATION=f"Bearer {api_key}").json() == []
    assert client.get("/api/v1/monitors/", HTTP_X_API_KEY=api_key).status_code == 200


def test_api_rate_limit_per_key(api, project, settings):
    settings.CRONRADAR_API_RATE = "3/min"
    assert [api.get("/api/v1/monitors/").status_code for _ in range(3)] == [200, 200, 200]
    over = api.get("/api/v1/monitors/")
    assert over.status_code == 429 and 1 <= int(over["Retry-After"]) <= 60
    assert "throttled" in over.json()["detail"]
    from tests.helpers import as_key

    other = as_key(ApiKey.issue(project)[1])  # another key has its own budget
    assert other.get("/api/v1/monitors/").status_code == 200


def test_a_hung_rate_limit_cache_lets_api_requests_through(api, settings, monkeypatch, caplog):
    """Redis (the throttle's cache) accepts connections and never answers: requests
    are answered, unlimited, with one warning line and no traceback."""
    import logging

    from accounts import auth, throttle
    from core import logs
    from tests.helpers import hung_redis_cache

    monkeypatch.setattr(auth, "cache_down", logs.Outage(
        "cache", "API request(s) let through without their rate limit", level=logging.WARNING))
    monkeypatch.setattr(throttle, "cache_down", logs.Outage("cache"))  # the key check's
    settings.CRONRADAR_API_RATE = "1/min"
    with hung_redis_cache(settings):
        assert [api.get("/api/v1/monitors/").status_code for _ in range(3)] == [200, 200, 200]
    lines = [r for r in caplog.records if r.name == "accounts.auth"]
    assert [(r.levelno, r.exc_info) for r in lines] == [(logging.WARNING, None)]
    assert "1 API request(s) let through without their rate limit" in lines[0].getMessage()


def test_a_signed_in_person_needs_the_csrf_token_to_write(project):
    person("carol", project.organisation, "admin")
    client = APIClient(enforce_csrf_checks=True)
    assert client.login(username="carol", password="pw-carol")
    assert client.get("/api/v1/projects/").json()[0]["name"] == "acme"
    resp = client.post("/api/v1/monitors/", {"name": "j", "period": 60, "grace": 5},
                       format="json")
    assert resp.status_code == 403 and "CSRF" in resp.json()["detail"]


def _signs_in(username: str, password: str) -> str | None:
    """The username of whoever the sign-in page lets in, or None."""
    browser = Client()
    answer = browser.post("/login/", {"username": username, "password": password})
    if answer.status_code != 302:
        return None
    return get_user_model().objects.get(pk=browser.session["_auth_user_id"]).username


def test_an_email_shaped_username_signs_in_without_letter_case():
    users = get_user_model().objects
    users.create_user("mixed.case@corp.test", "mixed.case@corp.test", "pw-mixed")
    users.create_user("Legacy.Case@Corp.test", "Legacy.Case@Corp.test", "pw-legacy")
    assert _signs_in("Mixed.Case@Corp.test", "pw-mixed") == "mixed.case@corp.test"
    assert _signs_in("legacy.case@corp.test", "pw-legacy") == "Legacy.Case@Corp.test"
    assert _signs_in("MIXED.case@corp.test", "wrong") is None


def test_usernames_differing_only_in_case_stay_apart():
    """The exact username first; a case-insensitive match only when it is the one."""
    users = get_user_model().objects
    users.create_user("ann@corp.test", "ann@corp.test", "pw-lower")
    users.create_user("Ann@corp.test", "ann2@corp.test", "pw-upper")
    users.create_user("bob", "bob@corp.test", "pw-bob")
    assert _signs_in("ann@corp.test", "pw-lower") == "ann@corp.test"
    assert _signs_in("Ann@corp.test", "pw-upper") == "Ann@corp.test"
    assert _signs_in("ann@corp.test", "pw-upper") is None  # not the other one's password
    assert _signs_in("Ann@corp.test", "pw-lower") is None
    assert _signs_in("ANN@corp.test", "pw-lower") is None  # two match: neither is picked
    assert _signs_in("ANN@corp.test", "pw-upper") is None
    assert _signs_in("bob", "pw-bob") == "bob"
    assert _signs_in("BOB", "pw-bob") is None  # only email-shaped usernames


def test_bad_keys_from_one_address_are_refused_without_a_lookup(
        client, api_key, django_assert_num_queries):
    """300 bad keys: the first KEY_FAILURES answer 401 (each a lookup), the rest
    429 with Retry-After and no database query; another address is unaffected,
    and a good key from the throttled address waits too."""
    from accounts import throttle

    bad = [client.get("/api/v1/monitors/", HTTP_X_API_KEY=f"cr_bad{n}",
                      REMOTE_ADDR="192.0.2.10") for n in range(throttle.KEY_FAILURES)]
    assert {a.status_code for a in bad} == {401}
    for n in range(300 - throttle.KEY_FAILURES):
        with django_assert_num_queries(0):
            over = client.get("/api/v1/monitors/", HTTP_AUTHORIZATION=f"Bearer cr_bad-{n}",
                              REMOTE_ADDR="192.0.2.10")
        assert over.status_code == 429
    wait = int(over["Retry-After"])
    assert 1 <= wait <= 60
    assert over.json() == {"detail": "too many invalid API keys from your address: try "
                                     f"again in {wait} second{'' if wait == 1 else 's'}"}
    assert client.get("/api/v1/monitors/", HTTP_X_API_KEY=api_key,
                      REMOTE_ADDR="192.0.2.10").status_code == 429
    assert client.get("/api/v1/monitors/", HTTP_X_API_KEY=api_key,
                      REMOTE_ADDR="198.51.100.7").status_code == 200
    assert client.get("/api/v1/monitors/", HTTP_X_API_KEY="cr_bad",
                      REMOTE_ADDR="198.51.100.7").status_code == 401
