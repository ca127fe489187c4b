"""What the SDK's tests share: a live `manage.py serve` per module (``service``), a
local stand-in for the service's API (``stub``) answering from handlers, and a
handler paging a list as the service does."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest
from cronradar_sdk.client import ApiClient

from tests.live import Service

KEY = "cr_test"


class Stub:
    """A local HTTP server answering from ``routes``: {(method, path): handler}, a
    handler taking (query, body, stub) and returning (status, headers, json)."""

    def __init__(self, routes):
        self.routes, self.requests = routes, []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self):
                parts = urlsplit(self.path)
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                stub.requests.append((self.command, self.path, dict(self.headers), raw))
                route = stub.routes.get((self.command, parts.path))
                status, headers, data = (route(parse_qs(parts.query), raw, stub) if route
                                         else (404, {}, {"detail": "Not found."}))
                body = b"" if data is None else json.dumps(data).encode()
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_PUT = do_POST = do_DELETE = do_PATCH = _any

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def client(self, **kw):
        return ApiClient(url=self.url, api_key=KEY, **kw)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """A running service for the module's live tests (each uses a project of its own)."""
    s = Service(tmp_path_factory.mktemp("sdk"))
    yield s
    s.stop()


@pytest.fixture
def stub():
    """Make a :class:`Stub` from routes; every one made is closed after the test."""
    made = []

    def make(routes):
        made.append(Stub(routes))
        return made[-1]
    yield make
    for s in made:
        s.close()


def paged(items, size, host=None):
    """A handler paging ``items`` by ``size`` with a cursor, as CronRadar's lists do;
    ``host``: the Link's URL on that host (as a proxy might write it)."""
    def handler(query, body, stub):
        start = int(query.get("cursor", ["0"])[0])
        page = items[start:start + size]
        headers = {}
        if start + size < len(items):
            base = host or stub.url
            headers["Link"] = (f'<{base}/api/v1/monitors/?limit={size}&cursor={start + size}>;'
                               ' rel="next"')
        return 200, headers, page
    return handler


