"""Helpers test modules of more than one folder share (what one folder's tests
share is in its conftest.py): API clients acting as a key or a person, runs for
duration drift, settings read in a child process, retention's small limits
(``small``, an autouse fixture: a module that wants it imports it), and Standard
Webhooks' own verification of a signed webhook."""
import base64
import hashlib
import hmac
import json
import threading
import time
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from math import floor

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from accounts.models import Membership, Organisation
from monitors.pings import PingInput, ingest
from tests.conftest import T0, s

# --- callers ---------------------------------------------------------------------------

def person(name: str, org: Organisation, role: str):
    user = get_user_model().objects.create_user(name, f"{name}@example.com", "pw-" + name)
    Membership.objects.create(organisation=org, user=user, role=role)
    return user


def as_key(key: str) -> APIClient:
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return c


def as_person(user) -> APIClient:
    c = APIClient()
    c.force_authenticate(user=user)
    return c


# --- runs for duration drift (slot i is T0 + i hours) ---------------------------------

H = timedelta(hours=1)


def slot(i):
    return T0 + i * H


def runs_of(monitor, seconds_each, start_at=0):
    """A run per hour from hour ``start_at``: started on the hour, ended after each of
    ``seconds_each`` (a negative one fails with exit status 1 after its magnitude)."""
    for i, secs in enumerate(seconds_each, start=start_at):
        ingest(monitor.pk, PingInput("start"), slot(i))
        end = PingInput("fail", exit_status=1) if secs < 0 else PingInput("success")
        ingest(monitor.pk, end, slot(i) + s(abs(secs)))


def slow_monitor(make_monitor, **fields):
    return make_monitor(name="backup", period=H, grace=s(600), slow_factor=Decimal("2.0"),
                        **fields)


# --- settings in a child process ---------------------------------------------------------

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


# --- retention ---------------------------------------------------------------------------

DAY = timedelta(days=1)


@pytest.fixture(autouse=True)
def small(settings):
    settings.CRONRADAR_KEEP_PINGS = 5
    settings.CRONRADAR_KEEP_RUNS = 4
    settings.CRONRADAR_RUN_RETENTION_DAYS = 10
    settings.CRONRADAR_INCIDENT_RETENTION_DAYS = 30
    settings.CRONRADAR_PRUNE_BATCH = 3  # several batches per monitor


def heartbeats(monitor, n, start=T0, step=timedelta(seconds=3), body=b""):
    """``n`` success pings ``step`` apart from ``start``. With a ``body`` each is a
    ping row on both databases; without, on PostgreSQL each is kept in its run
    (monitors.pings._kept_in_run)."""
    for i in range(n):
        ingest(monitor.pk, PingInput("success", body=body, body_size=len(body)), start + i * step)


# --- Standard Webhooks ------------------------------------------------------------------

def spec_verify(signing_secret: str, headers: dict, body: bytes, now: datetime) -> dict:
    """Standard Webhooks' own verification, as its reference library does it
    (standard-webhooks/standard-webhooks, libraries/python/standardwebhooks/
    webhooks.py, Webhook.verify): the key is the base64 after ``whsec_``; the
    signed content ``{id}.{timestamp}.{body}``; ``v1,`` signatures, space
    separated, compared in constant time; 5 minutes' tolerance either way."""
    key = base64.b64decode(signing_secret.removeprefix("whsec_") + "==")
    headers = {k.lower(): v for k, v in headers.items()}
    msg_id, stamp = headers["webhook-id"], headers["webhook-timestamp"]
    sent = datetime.fromtimestamp(float(stamp), tz=UTC)
    if sent < now - timedelta(minutes=5) or sent > now + timedelta(minutes=5):
        raise ValueError("timestamp out of tolerance")
    timestamp_str = str(floor(sent.timestamp()))
    expected = hmac.new(key, f"{msg_id}.{timestamp_str}.{body.decode()}".encode(),
                        hashlib.sha256).digest()
    for versioned in headers["webhook-signature"].split(" "):
        version, signature = versioned.split(",")
        if version == "v1" and hmac.compare_digest(expected, base64.b64decode(signature)):
            return json.loads(body)
    raise ValueError("no matching signature")


def wsgi_call(app, path: str, method: str = "GET", headers: dict | None = None,
              remote_addr: str = "127.0.0.1", body: bytes = b"", host: str = "10.1.2.3:8000"
              ) -> tuple[str, dict, bytes]:
    """Call the WSGI ``app`` as a server would: (status line, headers, body).
    ``headers``: HTTP headers by their usual names (``{"X-Request-ID": "a"}``);
    ``host``: the Host header (by default an address ALLOWED_HOSTS may not list,
    as a probe sends)."""
    import io

    path_info, _, query = path.partition("?")
    environ = {"REQUEST_METHOD": method, "PATH_INFO": path_info, "QUERY_STRING": query,
               "SERVER_NAME": "testserver", "SERVER_PORT": "80", "wsgi.url_scheme": "http",
               "wsgi.input": io.BytesIO(body), "CONTENT_LENGTH": str(len(body)),
               "REMOTE_ADDR": remote_addr, "HTTP_HOST": host, "SERVER_PROTOCOL": "HTTP/1.1",
               "wsgi.errors": io.StringIO()}
    for name, value in (headers or {}).items():
        environ["HTTP_" + name.upper().replace("-", "_")] = value
    seen: dict = {}

    def start_response(status, response_headers, exc_info=None):
        seen["status"], seen["headers"] = status, dict(response_headers)

    chunks = app(environ, start_response)
    out = b"".join(chunks)
    if hasattr(chunks, "close"):
        chunks.close()
    return seen["status"], seen["headers"], out


class StuckRead:
    """A probe read that blocks until ``release`` is set (a database that accepts
    and never answers), counting the threads it was started on; call it with any
    arguments. ``free()`` releases it and waits until cronradar.guard's thread
    has finished it."""

    def __init__(self, returns=None):
        self.release = threading.Event()
        self.threads: list[str] = []
        self.returns = returns

    def __call__(self, *args, **kwargs):
        self.threads.append(threading.current_thread().name)
        self.release.wait(30)
        return self.returns

    def free(self):
        from cronradar import guard

        self.release.set()
        deadline = time.monotonic() + 5
        while guard.within(lambda: None, 1) != (True, None):
            assert time.monotonic() < deadline, "the probes' read thread is still stuck"
            time.sleep(0.01)


@contextmanager
def hung_redis_cache(settings):
    """The default cache on a Redis that accepts connections and never answers (a
    hung Redis), with the production socket timeouts, for the block; yields the
    listening socket (its backlog holds every connection made to it)."""
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    settings.CACHES = {"default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": f"redis://127.0.0.1:{server.getsockname()[1]}/0",
        "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5}}}
    try:
        yield server
    finally:
        server.close()
