"""The outermost WSGI layer: the operator's endpoints, answered ahead of Django.

``/healthz`` (liveness), ``/readyz`` (readiness: :mod:`cronradar.health`) and
``/metrics`` (CronRadar's own metrics: :mod:`cronradar.selfmetrics`) are answered
here, before host validation (``ALLOWED_HOSTS``) and the HTTPS redirect, so a
probe that sends a pod IP or ``127.0.0.1`` as ``Host`` gets its answer. Every
other request goes on to ``app`` (the ping route, then Django).

Every request, these and the others, gets a request id (:func:`request_id`):
bound to its log lines (``core.logs``), echoed as ``X-Request-ID`` in the answer
(pings, which ``PingRoute`` answers itself, and Django's answers alike) and, with
``CRONRADAR_ACCESS_LOG``, written in its access line (logger ``cronradar.access``,
one line a request, every client value escaped by the formatter).

``wsgi.py`` and ``manage.py serve`` both wrap their application in
:class:`Probes`.
"""
from __future__ import annotations

import itertools
import logging
import os
import re
import time
from collections.abc import Callable, Iterable

from django.conf import settings

from core import logs
from core.edge import client_address

Handler = Callable[[dict, Callable], Iterable[bytes]]
access = logging.getLogger("cronradar.access")
REQUEST_ID_MAX = 200  # characters of a proxy's X-Request-ID that are taken
_GIVEN_ID = re.compile(rf"[A-Za-z0-9._:-]{{1,{REQUEST_ID_MAX}}}", re.ASCII)


def healthz(environ: dict, start_response) -> list[bytes]:
    """``GET /healthz``: ``200 ok`` while this process serves requests. Touches
    nothing else (no database, no Redis): a liveness probe must not fail because
    a dependency did."""
    body = b"ok\n"
    start_response("200 OK", [("Content-Type", "text/plain; charset=utf-8"),
                              ("Content-Length", str(len(body))),
                              ("Cache-Control", "no-store")])
    return [b"" if environ.get("REQUEST_METHOD") == "HEAD" else body]


def _routes() -> dict[str, Handler]:
    # imported on first use: they read models, and this module loads before the apps
    from cronradar import health, selfmetrics

    return {"/healthz": healthz, "/readyz": health.readyz, "/metrics": selfmetrics.metrics}


class _Ids:
    """Request ids unique across processes, cheaper than ``uuid4`` (no system
    call per request): 16 random hex digits drawn once per process (again in a
    forked child) and a counter."""

    def __init__(self):
        self.reseed()
        os.register_at_fork(after_in_child=self.reseed)

    def reseed(self) -> None:
        self.prefix, self.counter = os.urandom(8).hex(), itertools.count(1)

    def __call__(self) -> str:
        return f"{self.prefix}{next(self.counter):08x}"


new_request_id = _Ids()


def request_id(environ: dict, trusted: bool) -> str:
    """The request's id: the proxy's ``X-Request-ID`` when ``trusted``
    (``CRONRADAR_TRUST_X_FORWARDED_FOR``) and it is 1-200 letters, digits and
    ``-_.:`` (a UUID, nginx's ``$request_id``; nothing that could pose as another
    field of a plain line), else a new one (:data:`new_request_id`: 24 hex digits)."""
    if trusted and _GIVEN_ID.fullmatch(environ.get("HTTP_X_REQUEST_ID", "")):
        return environ["HTTP_X_REQUEST_ID"]
    return new_request_id()


def _quoted(text: str) -> str:
    """``text`` for a double-quoted field of the access line: backslashes and
    quotes escaped, so a path or user agent cannot close its quotes and pose as
    the fields after it (the formatter escapes control characters)."""
    if "\\" in text or '"' in text:
        return text.replace("\\", "\\\\").replace('"', '\\"')
    return text


class Probes:
    """WSGI middleware: see the module docstring. ``app``: the WSGI application
    everything else goes to. Reads ``CRONRADAR_TRUST_X_FORWARDED_FOR`` and
    ``CRONRADAR_ACCESS_LOG`` once, when made."""

    def __init__(self, app):
        self.app = app
        self.routes = _routes()
        self.trusted = settings.CRONRADAR_TRUST_X_FORWARDED_FOR
        self.access_log = settings.CRONRADAR_ACCESS_LOG
        self.client_address = client_address

    def __call__(self, environ, start_response):
        rid = request_id(environ, self.trusted)
        header = ("X-Request-ID", rid)
        status = []

        def answer(line, headers, exc_info=None):
            status.append(line)
            if exc_info is None:  # passed on only when given, as some callers expect
                return start_response(line, [*headers, header])
            return start_response(line, [*headers, header], exc_info)

        handler = self.routes.get(environ.get("PATH_INFO", ""), self.app)
        started = time.perf_counter()
        with logs.bound(request_id=rid):
            try:
                return handler(environ, answer)
            finally:
                if self.access_log:
                    self._log(environ, status, started, rid)

    def _log(self, environ: dict, status: list, started: float, rid: str) -> None:
        """The access line: the formatter escapes the client's values (path,
        query, user agent, address), so none can start a line of its own."""
        ms = (time.perf_counter() - started) * 1000
        path = environ.get("PATH_INFO", "")
        if query := environ.get("QUERY_STRING"):
            path = f"{path}?{query}"
        code = int(status[-1].split(" ", 1)[0]) if status else None  # None: it raised
        client = self.client_address(environ) or ""
        agent = environ.get("HTTP_USER_AGENT", "")
        method = environ.get("REQUEST_METHOD", "")
        access.info('%s "%s" %s %.1fms %s "%s"', method, _quoted(path), code or "-", ms, client,
                    _quoted(agent),
                    extra={"method": method, "path": path, "status": code,
                           "duration_ms": round(ms, 1), "client": client,
                           "user_agent": agent})
