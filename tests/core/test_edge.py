"""core.edge: oversized bodies are a 413, an unreachable database a 503, and a NUL in
a query a 400."""
import pytest
from django.db import OperationalError

from accounts import auth

pytestmark = pytest.mark.django_db


def test_an_api_body_over_the_limit_is_a_json_413(api, settings, make_monitor, client):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    resp = api.post("/api/v1/monitors/", {"name": "x" * 2000, "period": 60, "grace": 5},
                    format="json")
    assert (resp.status_code, resp.json()) == (
        413, {"detail": "request body too large: at most 1000 bytes"})
    m = make_monitor()  # a ping keeps its first CRONRADAR_PING_BODY_LIMIT bytes instead
    assert client.post(f"/ping/{m.uuid}", b"y" * 5000,
                       content_type="text/plain").status_code == 200


def test_the_default_limit_answers_413_too(api):
    resp = api.post("/api/v1/monitors/", b'{"name": "' + b"x" * 3_000_000 + b'"}',
                    content_type="application/json")
    assert resp.status_code == 413 and resp.json()["detail"].startswith("request body too large")


def test_the_api_answers_503_while_the_database_is_down(api, monkeypatch):
    def down(self, request):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(auth.ApiKeyAuthentication, "authenticate", down)
    resp = api.get("/api/v1/monitors/")
    assert (resp.status_code, resp["Retry-After"], resp.json()) == (
        503, "5", {"detail": "database unavailable, nothing was stored: retry in 5 seconds"})


def test_a_nul_in_a_query_is_refused(api):
    resp = api.get("/api/v1/monitors/?q=%00")
    assert (resp.status_code, resp.json()) == (
        400, {"detail": "NUL characters are not allowed in the URL"})
