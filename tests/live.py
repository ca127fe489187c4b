"""Helpers for tests that run the real service: a `manage.py serve` process and a
local HTTP receiver standing in for webhook / Slack / PagerDuty endpoints."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Received:
    at: float  # time.time() when the request arrived
    path: str
    headers: dict
    body: bytes
    status: int = 200  # what the receiver answered
    method: str = "POST"

    def json(self):
        return json.loads(self.body)


@dataclass
class Receiver:
    """A threaded local HTTP server that records every POST (and PUT: Matrix) and
    answers ``status``.

    delay: seconds to wait before answering; hold: an Event to wait for before
    answering (a receiver that hangs until the test lets it go); fail_every: answer
    every n-th request with 503 (and ``Retry-After: 0``).
    """

    status: int = 200
    delay: float = 0.0
    port: int = 0
    hold: threading.Event | None = None
    fail_every: int = 0
    requests: list[Received] = field(default_factory=list)

    def __post_init__(self):
        recv = self
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with lock:
                    n = len(recv.requests) + 1
                    status = 503 if recv.fail_every and n % recv.fail_every == 0 else recv.status
                    recv.requests.append(Received(time.time(), self.path, dict(self.headers),
                                                  body, status, self.command))
                if recv.delay:
                    time.sleep(recv.delay)
                if recv.hold is not None:
                    recv.hold.wait(60)
                try:
                    self.send_response(status)
                    if status == 503:
                        self.send_header("Retry-After", "0")
                    self.end_headers()
                    self.wfile.write(b"ok")
                except OSError:  # the sender gave up waiting
                    pass

            do_PUT = do_POST

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, predicate, timeout: float) -> Received:
        end = time.time() + timeout
        while time.time() < end:
            for r in list(self.requests):
                if predicate(r):
                    return r
            time.sleep(0.02)
        raise AssertionError(f"no matching request within {timeout}s; got {self.requests!r}")

    def close(self):
        self.server.shutdown()


class Service:
    """`python manage.py serve` in a subprocess on the embedded default (SQLite)."""

    def __init__(self, data_dir: Path, tick: float = 0.2, extra_env: dict | None = None,
                 port: int | None = None, args: tuple[str, ...] = ()):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")}
        self.env.update(CRONRADAR_DATA_DIR=str(data_dir), CRONRADAR_TICK_SECONDS=str(tick),
                        CRONRADAR_BASE_URL=self.url, **(extra_env or {}))
        self.log = open(data_dir / "serve.log", "w+")  # noqa: SIM115 (closed in stop())
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", str(self.port), *args],
            cwd=ROOT, env=self.env, stdout=self.log, stderr=subprocess.STDOUT)
        end = time.time() + 180  # a loaded CI machine took over 60 s (SQLite migrate + start)
        while time.time() < end:
            try:
                httpx.get(f"{self.url}/ping/", timeout=1)
                break
            except httpx.TransportError:
                assert self.proc.poll() is None, self.output()
                time.sleep(0.1)
        else:
            raise AssertionError("service did not start: " + self.output())
        self.api = self.project_api("live")

    def project_api(self, project: str) -> httpx.Client:
        """An API client with a new key of ``project`` (created if new): tests that
        share one service each use a project of their own."""
        key = self.manage("createapikey", "--project", project).strip().splitlines()[-1]
        return httpx.Client(base_url=f"{self.url}/api/v1",
                            headers={"Authorization": f"Bearer {key}"}, timeout=10)

    def manage(self, *args: str) -> str:
        return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env,
                              check=True, capture_output=True, text=True).stdout

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read()

    def kill(self):
        """SIGKILL: a crash, nothing gets to clean up."""
        self.proc.kill()
        self.proc.wait(10)
        self.log.close()

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
