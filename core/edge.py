"""Edge middleware: failures around a request become clear answers, never a 500.

- A request body larger than ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (outside ``/ping/``,
  which stores the first ``CRONRADAR_PING_BODY_LIMIT`` bytes of any body) is
  answered ``413`` before it is read.
- A chunked request body (``Transfer-Encoding: chunked``, no ``Content-Length``)
  outside ``/ping/`` (which reads it itself) is read from the server's
  ``wsgi.input`` when the server de-chunks it and says so
  (``wsgi.input_terminated``: granian and waitress, so ``manage.py serve`` too)
  and given to Django with its length (Django reads no body without one); from
  any other server it is answered ``411`` (:data:`CHUNKED_MESSAGE`), never
  silently taken as empty. Larger than ``DATA_UPLOAD_MAX_MEMORY_SIZE``: ``413``.
- A NUL character in the path or the query string (PostgreSQL text cannot hold
  one) is answered ``400`` (:func:`has_nul`; ``/ping/`` checks it itself).
- While the database is unreachable (``OperationalError`` / ``InterfaceError``:
  PostgreSQL restarting, SQLite locked for longer than its busy timeout) the
  answer is ``503`` with ``Retry-After``, which ``curl --retry`` and most HTTP
  clients retry. Nothing was stored then, so nothing acknowledged is lost.

Answers are JSON ``{"detail": ...}`` under ``/api/`` and plain text elsewhere.
"""
from __future__ import annotations

import io
import ipaddress
import logging
from functools import lru_cache

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.handlers.wsgi import LimitedStream
from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse

log = logging.getLogger(__name__)
RETRY_AFTER = 5  # seconds


def _answer(request, status: int, message: str) -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": message}, status=status)
    return HttpResponse(message + "\n", status=status, content_type="text/plain; charset=utf-8")


def has_nul(request) -> bool:
    """Whether the request's path or a query parameter (decoded) holds a NUL."""
    return "\x00" in request.path or any("\x00" in text for name, values in request.GET.lists()
                                          for text in (name, *values))


NUL_MESSAGE = "NUL characters are not allowed in the URL"
CHUNKED_MESSAGE = ("a chunked request body needs a Content-Length here: this server "
                   "does not de-chunk request bodies")


def is_chunked(meta: dict) -> bool:
    """Whether a request's body is chunked without a ``Content-Length`` (Django
    reads no body then)."""
    return ("chunked" in meta.get("HTTP_TRANSFER_ENCODING", "").lower()
            and not meta.get("CONTENT_LENGTH"))


class EdgeMiddleware:
    """See the module docstring. Goes first in ``MIDDLEWARE``."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if not request.path.startswith("/ping/"):
            if is_chunked(request.META) and (refused := self._read_chunked(request, limit)):
                return refused
            try:
                size = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                size = 0
            if limit is not None and size > limit:
                return self._too_large(request, limit)
        if has_nul(request):
            return _answer(request, 400, NUL_MESSAGE)
        try:
            return self.get_response(request)
        except (OperationalError, InterfaceError) as exc:  # raised outside a view
            return self._unavailable(request, exc)

    def process_exception(self, request, exc):
        if isinstance(exc, RequestDataTooBig):
            return self._too_large(request, settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        if isinstance(exc, (OperationalError, InterfaceError)):
            return self._unavailable(request, exc)
        return None

    def _read_chunked(self, request, limit: int | None) -> HttpResponse | None:
        """Read a chunked body the server de-chunked and hand it to Django with
        its ``Content-Length``; the refusal (411, 413) otherwise, else None."""
        if not request.META.get("wsgi.input_terminated"):
            return _answer(request, 411, CHUNKED_MESSAGE)
        stream = request.META["wsgi.input"]
        body = stream.read() if limit is None else stream.read(limit + 1)
        if limit is not None and len(body) > limit:
            return self._too_large(request, limit)
        request.META["CONTENT_LENGTH"] = str(len(body))
        request._stream = LimitedStream(io.BytesIO(body), len(body))
        return None

    @staticmethod
    def _too_large(request, limit: int) -> HttpResponse:
        return _answer(request, 413, f"request body too large: at most {limit} bytes")

    @staticmethod
    def _unavailable(request, exc) -> HttpResponse:
        log.warning("database unavailable for %s %s: %s", request.method, request.path, exc)
        resp = _answer(request, 503, "database unavailable, nothing was stored: "
                                     f"retry in {RETRY_AFTER} seconds")
        resp["Retry-After"] = str(RETRY_AFTER)
        return resp


def client_address(meta: dict) -> str | None:
    """The client's IP address from a WSGI environ (``request.META``):
    ``REMOTE_ADDR``, or behind a trusted proxy (``CRONRADAR_TRUST_X_FORWARDED_FOR``)
    the last ``X-Forwarded-For`` entry, the address that proxy saw. Anything that
    is not an IP address is ignored; None when neither is one. ``GET /metrics``
    (:mod:`cronradar.selfmetrics`), the throttles and the audit log take the
    same address."""
    candidates = [meta.get("REMOTE_ADDR", "")]
    if settings.CRONRADAR_TRUST_X_FORWARDED_FOR:
        candidates.insert(0, meta.get("HTTP_X_FORWARDED_FOR", "").rsplit(",", 1)[-1])
    for value in candidates:
        if (address := _ip(value)) is not None:
            return address
    return None


@lru_cache(maxsize=4096)
def _ip(value: str) -> str | None:
    """``value`` as an IP address in its normal form, None if it is not one
    (cached: the same hosts ping again and again)."""
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        return None
