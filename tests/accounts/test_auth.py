"""accounts.auth: the API key as a bearer token or X-Api-Key, the per-key rate limit,
and a signed-in person's CSRF token."""
import pytest
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


def test_a_signed_in_person_needs_the_csrf_token_to_write(project):
    person("carol", project.organisation, "admin")
    client = APIClient(enforce_csrf_checks=True)
    assert client.login(username="carol", password="pw-carol")
    assert client.get("/api/v1/projects/").json()[0]["name"] == "acme"
    resp = client.post("/api/v1/monitors/", {"name": "j", "period": 60, "grace": 5},
                       format="json")
    assert resp.status_code == 403 and "CSRF" in resp.json()["detail"]
