"""A live CronRadar for the SDK's tests, through the standard library only: these
tests also run under Python 3.8 (tests/sdk/test_python38.py), where the server
itself cannot run.

``CRONRADAR_TEST_URL`` and ``CRONRADAR_TEST_API_KEY`` name a running service (the
3.8 run gets the one its pytest test started); without them :func:`start` starts
``manage.py serve`` through tests/live.py (pytest's run). Each test uses monitors
of its own (:func:`slug`) in the key's project.
"""
from __future__ import annotations

import atexit
import http.server
import json
import os
import socket
import tempfile
import threading
import unittest
import urllib.error
import urllib.request
import uuid
from pathlib import Path

SDK = Path(__file__).resolve().parents[2] / "sdk" / "python"
try:
    import pytest
except ImportError:  # the Python 3.8 run: unittest only
    LIVE_MARK = []
else:
    LIVE_MARK = [pytest.mark.live]


class Live:
    """A running CronRadar: ``url``, an API key of one project (``api_key``) and
    that project's ``ping_key``."""

    def __init__(self, url: str, api_key: str):
        self.url, self.api_key = url.rstrip("/"), api_key
        self.ping_key = self.api("GET", "/projects/")[1][0]["ping_key"]

    def api(self, method: str, path: str, payload=None):
        """(status, decoded JSON) of an API call with the key."""
        req = urllib.request.Request(
            f"{self.url}/api/v1{path}", method=method,
            data=None if payload is None else json.dumps(payload).encode(),
            headers={"Authorization": f"Bearer {self.api_key}",
                     "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")

    def create(self, **fields) -> dict:
        """A new monitor (``name`` defaults to a fresh slug)."""
        status, data = self.api("POST", "/monitors/", {"name": slug(), **fields})
        assert status == 201, data
        return data

    def by_slug(self, name: str) -> dict | None:
        status, data = self.api("GET", f"/monitors/by-slug/{name}/")
        return data if status == 200 else None

    def pings(self, monitor: dict) -> list:
        """The monitor's pings, oldest first."""
        return list(reversed(self.api("GET", f"/monitors/{monitor['id']}/pings/")[1]))

    def runs(self, monitor: dict) -> list:
        """The monitor's runs, oldest first."""
        return list(reversed(self.api("GET", f"/monitors/{monitor['id']}/runs/")[1]))


_shared: list = []  # the process's one Live


def start() -> Live:
    """The service of ``CRONRADAR_TEST_URL``, else a ``manage.py serve`` started on
    first use and stopped when the process exits: one for all the SDK's tests."""
    if not _shared:
        if os.environ.get("CRONRADAR_TEST_URL"):
            _shared.append(Live(os.environ["CRONRADAR_TEST_URL"],
                                os.environ["CRONRADAR_TEST_API_KEY"]))
        else:
            from tests.live import Service  # httpx, Django: pytest's run only

            service = Service(Path(tempfile.mkdtemp(prefix="cronradar-sdk-")))
            atexit.register(service.stop)
            key = service.manage("createapikey", "--project", "sdk").strip().splitlines()[-1]
            _shared.append(Live(service.url, key))
    return _shared[0]


def slug() -> str:
    """A fresh monitor slug."""
    return f"sdk-{uuid.uuid4().hex[:12]}"


def closed_url() -> str:
    """The base URL of a loopback port nothing listens on: CronRadar down."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


class Stub:
    """A local HTTP server that records every request as (method, path, body) in
    ``requests`` and answers each ``status`` with ``body``; a context manager
    (``url`` its base URL)."""

    def __init__(self, status: int = 200, body: bytes = b"OK\n"):
        stub, self.requests = self, []

        class Handler(http.server.BaseHTTPRequestHandler):
            def answer(self):
                size = int(self.headers.get("Content-Length") or 0)
                stub.requests.append((self.command, self.path, self.rfile.read(size)))
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = answer

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Stub:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


class LiveTestCase(unittest.TestCase):
    """A test against the shared live service (``self.live``), with the SDK's
    settings cleared from the environment so only what a test gives counts;
    marked ``live`` for pytest."""

    pytestmark = LIVE_MARK
    live: Live

    @classmethod
    def setUpClass(cls):
        cls.live = start()

    def setUp(self):
        for name in ("CRONRADAR_URL", "CRONRADAR_PING_KEY", "CRONRADAR_API_KEY",
                     "CRONRADAR_PING_URL"):
            if name in os.environ:
                self.addCleanup(os.environ.__setitem__, name, os.environ.pop(name))
