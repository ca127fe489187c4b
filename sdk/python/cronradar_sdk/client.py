"""A client of CronRadar's management API (``/api/v1/``), standard library only.

    client = ApiClient()                      # CRONRADAR_URL, CRONRADAR_API_KEY
    client = ApiClient(url="https://cronradar.example.com", api_key="cr_...")
    monitor = client.put("monitors/by-slug/nightly-report/", {"name": "Nightly report", ...})
    every = client.list("monitors/")          # all pages, following Link: rel="next"

Paths are relative to ``<url>/api/v1/`` (a leading ``/`` is allowed; so is a path
starting ``/api/``, or a full URL on the service's own host). Bodies and answers are
JSON. Any answer that is not a 2xx raises :class:`ApiError` with its ``status`` and
the server's message; so does a service that cannot be reached (``status`` 0).
``429`` and ``503`` (which the service answers before doing anything) are retried
after their ``Retry-After`` (at most :data:`MAX_WAIT` seconds each), and network
errors for the methods that may be repeated (GET, PUT, DELETE), ``retries`` times.
"""
from __future__ import annotations

import builtins
import json
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, NamedTuple

from cronradar_sdk import __version__

USER_AGENT = f"cronradar-sdk/{__version__}"
MAX_WAIT = 10.0  # seconds: the longest Retry-After the client waits for
MAX_PAGES = 10000  # a list longer than this many pages is a loop, not a list
IDEMPOTENT = ("GET", "HEAD", "PUT", "DELETE")
_NEXT = re.compile(r'<([^>]*)>\s*;[^,]*\brel="?next"?', re.IGNORECASE)


class ApiError(Exception):
    """An API call that did not succeed: ``status`` (the HTTP status; 0 when the
    service could not be reached), ``message`` (the server's ``detail`` or its
    messages per field, ``field: message; ...``), ``data`` (the decoded answer, or
    None), ``method`` and ``url``."""

    def __init__(self, status: int, message: str, data: Any = None, method: str = "",
                 url: str = ""):
        super().__init__(f"{method} {url}: {status or 'unreachable'}: {message}".strip())
        self.status, self.message, self.data = status, message, data
        self.method, self.url = method, url


class ApiResponse(NamedTuple):
    """One answer: ``status``, ``headers`` (names in lower case) and ``data`` (the
    decoded JSON; None for an empty body)."""

    status: int
    headers: dict[str, str]
    data: Any


class ApiClient:
    """Calls ``<url>/api/v1/`` with ``api_key`` as ``Authorization: Bearer``.

    url: the service's base URL (``https://cronradar.example.com``), default the
    ``CRONRADAR_URL`` environment variable; api_key: a project API key, default
    ``CRONRADAR_API_KEY``; timeout: seconds per request; retries: how many times a
    request is repeated (see the module's docstring). Raises ValueError when the URL
    or the key is missing or the URL is not http(s).
    """

    def __init__(self, url: str | None = None, api_key: str | None = None,
                 timeout: float = 10.0, retries: int = 2):
        url = (url or os.environ.get("CRONRADAR_URL") or "").strip().rstrip("/")
        api_key = (api_key or os.environ.get("CRONRADAR_API_KEY") or "").strip()
        if not url:
            raise ValueError("no service URL: set CRONRADAR_URL (or give url=)")
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the service URL must be http(s)://host, not {url!r}")
        if not api_key:
            raise ValueError("no API key: set CRONRADAR_API_KEY (or give api_key=)")
        self.url, self.api_key = url, api_key
        self.timeout, self.retries = timeout, retries
        self._origin = (parts.scheme, parts.netloc)

    def url_of(self, path: str) -> str:
        """The full URL of ``path`` (see the module's docstring). A full URL on
        another host keeps only its path and query, so the key never leaves the
        service (a proxy may write its own host into a ``Link``)."""
        parts = urllib.parse.urlsplit(path)
        if parts.scheme:
            if (parts.scheme, parts.netloc) == self._origin:
                return path
            path = urllib.parse.urlunsplit(("", "", parts.path, parts.query, ""))
        if path.startswith("/api/"):
            return self.url + path
        return f"{self.url}/api/v1/{path.lstrip('/')}"

    def request(self, method: str, path: str, body: Any = None,
                params: dict[str, Any] | None = None) -> ApiResponse:
        """Send one request (``body`` as JSON, ``params`` as the query) and answer
        it; raises :class:`ApiError` unless the status is 2xx."""
        url = self.url_of(path)
        if params:
            url += ("&" if "?" in url else "?") + urllib.parse.urlencode(params, doseq=True)
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {self.api_key}", "Accept": "application/json",
                   "User-Agent": USER_AGENT}
        if data is not None:
            headers["Content-Type"] = "application/json"
        attempt = 0
        while True:
            req = urllib.request.Request(url, data=data, headers=headers, method=method)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    return ApiResponse(resp.status, _headers(resp.headers),
                                       _decode(resp.read()))
            except urllib.error.HTTPError as e:
                raw = e.read()
                wait = _retry_after(e.headers.get("Retry-After"))
                if e.code in (429, 503) and attempt < self.retries and wait is not None:
                    attempt += 1
                    time.sleep(wait)
                    continue
                answer = _decode(raw, strict=False)
                raise ApiError(e.code, message_of(answer, e.reason), answer, method,
                               _safe(url)) from None
            except (urllib.error.URLError, OSError) as e:
                if method in IDEMPOTENT and attempt < self.retries:
                    attempt += 1
                    time.sleep(0.5 * attempt)
                    continue
                reason = getattr(e, "reason", e)
                raise ApiError(0, f"cannot reach {self.url}: {reason}", None, method,
                               _safe(url)) from None

    def get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        """``GET path``: the decoded answer (one page of a list: see :meth:`list`)."""
        return self.request("GET", path, params=params).data

    def put(self, path: str, body: Any) -> Any:
        """``PUT path`` with ``body``: the decoded answer. Upserts (``monitors/by-slug/
        <slug>/``, ``channels/by-name/<name>/``, ``escalation-policies/by-name/
        <name>/``) answer 201 when they created, 200 when they updated: see
        :meth:`request` for the status."""
        return self.request("PUT", path, body).data

    def post(self, path: str, body: Any = None) -> Any:
        """``POST path`` with ``body``: the decoded answer."""
        return self.request("POST", path, body).data

    def patch(self, path: str, body: Any) -> Any:
        """``PATCH path`` with ``body``: the decoded answer."""
        return self.request("PATCH", path, body).data

    def delete(self, path: str) -> None:
        """``DELETE path``."""
        self.request("DELETE", path)

    def list(self, path: str, params: dict[str, Any] | None = None) -> builtins.list[Any]:
        """Every item of the list at ``path``: its pages in order, following each
        answer's ``Link: <url>; rel="next"`` until an answer has none. Raises
        :class:`ApiError` when an answer is not a JSON list, or when a next page
        repeats one already read (the list would never end)."""
        items: list[Any] = []
        seen = set()
        resp = self.request("GET", path, params=params)
        while True:
            if not isinstance(resp.data, list):
                raise ApiError(resp.status, "the answer is not a list", resp.data, "GET",
                               _safe(self.url_of(path)))
            items.extend(resp.data)
            nxt = next_link(resp.headers.get("link", ""))
            if nxt is None:
                return items
            if nxt in seen or len(seen) >= MAX_PAGES:
                raise ApiError(resp.status, f"the list's next page repeats: {_safe(nxt)}",
                               None, "GET", _safe(nxt))
            seen.add(nxt)
            resp = self.request("GET", nxt)


def next_link(header: str) -> str | None:
    """The URL of ``rel="next"`` in a ``Link`` header (RFC 8288), None without one."""
    found = _NEXT.search(header or "")
    return found.group(1) if found else None


def _headers(message) -> dict[str, str]:
    return {k.lower(): v for k, v in message.items()}


def _decode(raw: bytes, strict: bool = True) -> Any:
    """JSON ``raw`` decoded (None when empty); not JSON: ApiError, or the text when
    not ``strict`` (an error page)."""
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except ValueError:
        text = raw.decode("utf-8", "replace").strip()
        if strict:
            raise ApiError(200, f"the answer is not JSON: {text[:200]}") from None
        return text


def message_of(answer: Any, reason: str = "") -> str:
    """The server's message: its messages as ``field: message; ...`` (nested fields
    joined with dots, list items by index; ``detail`` unnamed), or ``reason``."""
    text = "; ".join(_messages(answer, ""))
    return text[:1000] or str(reason)


def _messages(value: Any, where: str) -> list[str]:
    if isinstance(value, dict):
        found = []
        for key, inner in value.items():
            named = "" if key in ("detail", "non_field_errors") else str(key)
            found += _messages(inner, ".".join(p for p in (where, named) if p))
        return found
    if isinstance(value, list):
        if any(isinstance(v, (dict, list)) for v in value):
            found = []
            for i, inner in enumerate(value):
                found += _messages(inner, f"{where}.{i}" if where else str(i))
            return found
        return [f"{where}: {v}" if where else str(v) for v in value]
    if value in (None, ""):
        return []
    return [f"{where}: {value}" if where else str(value)]


def _safe(url: str) -> str:
    """``url`` without its query (a ping key or cursor has no place in a message)."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def _retry_after(raw: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` of seconds (none given: 1); None when it
    asks for longer than :data:`MAX_WAIT` (not worth waiting for)."""
    try:
        wait = float(raw) if raw else 1.0
    except ValueError:
        wait = 1.0
    return max(wait, 0.0) if wait <= MAX_WAIT else None
