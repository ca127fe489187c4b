"""Input edges: oversized bodies, an unreachable database, ping bodies through the
API, channel secrets on a change."""
from datetime import timedelta

import pytest
from django.db import OperationalError

from accounts import auth
from alerts.models import Channel
from monitors import views
from monitors.pings import PingInput, ingest
from tests.conftest import T0

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


def test_pings_answer_503_with_retry_after_while_the_database_is_down(client, make_monitor,
                                                                       monkeypatch):
    m = make_monitor()

    def down(*args, **kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr(views.pings, "ingest_at", down)
    resp = client.get(f"/ping/{m.uuid}")
    assert (resp.status_code, resp["Retry-After"], resp.content) == (
        503, "5", b"database unavailable, nothing was stored: retry in 5 seconds\n")


def test_the_api_answers_503_while_the_database_is_down(api, monkeypatch):
    def down(self, request):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(auth.ApiKeyAuthentication, "authenticate", down)
    resp = api.get("/api/v1/monitors/")
    assert (resp.status_code, resp["Retry-After"], resp.json()) == (
        503, "5", {"detail": "database unavailable, nothing was stored: retry in 5 seconds"})


def test_ping_bodies_as_text_and_as_exact_bytes(api, make_monitor):
    m = make_monitor()
    cut = "éé".encode() + "é".encode()[:1]  # truncation split the third character
    ingest(m.pk, PingInput("success", body=cut, body_size=6), T0)
    ingest(m.pk, PingInput("success", body=b"\xff\x00ok\xc3", body_size=5), T0 + timedelta(1))
    binary, truncated = api.get(f"/api/v1/monitors/{m.pk}/pings/").json()
    assert (truncated["body"], truncated["body_base64"], truncated["body_truncated"]) == (
        "éé", "w6nDqcM=", True)
    # not truncated: a trailing partial character is invalid, and replaced
    assert (binary["body"], binary["body_base64"]) == ("\ufffd\x00ok\ufffd", "/wBva8M=")


def test_changing_a_webhook_url_keeps_its_secret(api, project):
    hook = api.post("/api/v1/channels/", {"kind": "webhook", "config": {
        "url": "https://a.test/h"}}, format="json").json()
    changed = api.patch(f"/api/v1/channels/{hook['id']}/", {"config": {"url": "https://b.test/h"}},
                        format="json").json()
    assert changed["config"] == {"url": "https://b.test/h", "secret": hook["config"]["secret"]}
    assert Channel.objects.get().config["secret"] == hook["config"]["secret"]
    rotated = api.patch(f"/api/v1/channels/{hook['id']}/", {"config": {
        "url": "https://b.test/h", "secret": "new"}}, format="json").json()
    assert rotated["config"]["secret"] == "new"


@pytest.mark.parametrize("trust,forwarded,stored", [
    (False, "203.0.113.9", "127.0.0.1"),
    (True, "198.51.100.1, 203.0.113.9", "203.0.113.9"),  # the address nginx saw
    (True, "not-an-address", "127.0.0.1"),
    (True, "", "127.0.0.1"),
])
def test_client_address_behind_a_trusted_proxy(client, make_monitor, settings, trust, forwarded,
                                               stored):
    settings.CRONRADAR_TRUST_X_FORWARDED_FOR = trust
    m = make_monitor()
    assert client.get(f"/ping/{m.uuid}", HTTP_X_FORWARDED_FOR=forwarded).status_code == 200
    assert m.pings.get().remote_addr == stored


def _settings_env(**env):
    """Import cronradar.settings in a child process with ``env``; (exit code, output)."""
    import os
    import subprocess
    import sys

    from tests.live import ROOT

    code = "import django; django.setup(); from django.core.management import call_command; " \
           "call_command('check')"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("CRONRADAR_", "DATABASE"))}
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={**clean, "DJANGO_SETTINGS_MODULE": "cronradar.settings", **env})
    return proc.returncode, proc.stdout + proc.stderr


def test_production_refuses_the_default_key_any_host_and_no_ssrf_guard(tmp_path):
    rc, out = _settings_env(CRONRADAR_ENV="production", CRONRADAR_DATA_DIR=str(tmp_path),
                            CRONRADAR_BLOCK_PRIVATE_ADDRESSES="false")
    assert rc != 0
    assert "cronradar.E001" in out and "cronradar.E002" in out and "cronradar.E003" in out
    rc, out = _settings_env(CRONRADAR_ENV="production", CRONRADAR_DATA_DIR=str(tmp_path),
                            SECRET_KEY="x" * 50, ALLOWED_HOSTS="cron.example.com")
    assert rc == 0, out


def test_booleans_are_read_strictly(tmp_path):
    rc, out = _settings_env(CRONRADAR_DATA_DIR=str(tmp_path),
                            CRONRADAR_BLOCK_PRIVATE_ADDRESSES="ture")
    assert rc != 0 and "CRONRADAR_BLOCK_PRIVATE_ADDRESSES='ture': use true or false" in out


def test_production_turns_on_the_guard_and_secure_cookies(settings):
    import importlib
    import os
    from unittest import mock

    with mock.patch.dict(os.environ, {"CRONRADAR_ENV": "production"}):
        import cronradar.settings as module

        fresh = importlib.reload(module)
        values = (fresh.CRONRADAR_BLOCK_PRIVATE_ADDRESSES, fresh.SESSION_COOKIE_SECURE,
                  fresh.CSRF_COOKIE_SECURE)
    importlib.reload(module)  # back to the test environment's values
    assert values == (True, True, True)
