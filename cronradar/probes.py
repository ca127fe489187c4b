"""The outermost WSGI layer: the operator's endpoints, answered ahead of Django.

``/healthz`` (liveness), ``/readyz`` (readiness: :mod:`cronradar.health`) and
``/metrics`` (CronRadar's own metrics: :mod:`cronradar.selfmetrics`) are answered
here, before host validation (``ALLOWED_HOSTS``) and the HTTPS redirect, so a
probe that sends a pod IP or ``127.0.0.1`` as ``Host`` gets its answer. Every
other request goes on to ``app`` (the ping route, then Django).

``wsgi.py`` and ``manage.py serve`` both wrap their application in
:class:`Probes`.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

Handler = Callable[[dict, Callable], Iterable[bytes]]


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


class Probes:
    """WSGI middleware: see the module docstring. ``app``: the WSGI application
    everything else goes to."""

    def __init__(self, app):
        self.app = app
        self.routes = _routes()

    def __call__(self, environ, start_response):
        handler = self.routes.get(environ.get("PATH_INFO", ""))
        if handler is not None:
            return handler(environ, start_response)
        return self.app(environ, start_response)
