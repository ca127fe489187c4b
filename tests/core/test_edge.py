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


def _chunked(client, path: str, body: bytes, **extra):
    """A chunked POST without Content-Length as a server hands it to the app: its
    de-chunked body in ``wsgi.input`` (``wsgi.input_terminated`` when it says so)."""
    import io

    return client.generic("POST", path, content_type="application/json",
                          HTTP_TRANSFER_ENCODING="chunked",
                          **{"wsgi.input": io.BytesIO(body), **extra})


def test_a_chunked_api_body_is_read_when_the_server_de_chunks_it(api):
    resp = _chunked(api, "/api/v1/monitors/", b'{"name": "chunky", "period": 60, "grace": 5}',
                    **{"wsgi.input_terminated": True})
    assert resp.status_code == 201 and resp.json()["name"] == "chunky"


def test_a_chunked_api_body_from_another_server_is_a_411(api):
    resp = _chunked(api, "/api/v1/monitors/", b'{"name": "chunky", "period": 60, "grace": 5}')
    assert (resp.status_code, resp.json()) == (411, {
        "detail": "a chunked request body needs a Content-Length here: this server does "
                  "not de-chunk request bodies"})


def test_a_chunked_body_over_the_limit_is_a_413(api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    resp = _chunked(api, "/api/v1/monitors/", b'{"name": "' + b"x" * 2000 + b'"}',
                    **{"wsgi.input_terminated": True})
    assert (resp.status_code, resp.json()) == (
        413, {"detail": "request body too large: at most 1000 bytes"})
