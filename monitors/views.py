"""The ping endpoint (Healthchecks-compatible URLs). Thin: parse, then ingest.

URL forms, each for GET, HEAD and POST::

    /ping/<uuid>[/start|/fail|/log|/<exit status 0-255>][?rid=<uuid>][&slot=<time>]
    /ping/<project ping key>/<slug>[/start|/fail|/log|/<exit status>][?rid=<uuid>][&slot=<time>]

and, for requests to ``CRONRADAR_PING_HOST`` (a host name of its own, as
Healthchecks' hosted ``hc-ping.com``), the same at the root path: ``/<uuid>...``,
``/<ping key>/<slug>...``; that host answers nothing but pings.

:class:`PingRoute` sends these URLs to :func:`ping` ahead of Django's middleware
(as WSGI middleware around the Django application, in ``cronradar.wsgi`` and
``manage.py serve``); the URLconf routes them too (the test client, and any
deployment that loads Django's bare handler).

``/ping/<ping key>/<slug>?create=1`` makes the monitor when the slug is new
(:func:`monitors.pings.create_on_ping`) and answers 201 ``Created``, or 403
with the plan's limit (``this organisation's plan (free) allows 20 monitors``)
when the plan allows no more monitors (nothing stored).

``slot`` names the scheduled time the run is for (RFC 3339 or Unix seconds,
:func:`parse_slot`; checked against the monitor by :func:`monitors.slots.named_slot`).

Responses are plain text: 200 ``OK``; 404 unknown monitor; 400 bad exit status,
action, rid, slot or creation parameter (nothing stored); 405 other methods, and GET
or HEAD to a monitor whose ``methods`` is ``POST`` (nothing stored); 429 over a
ping rate limit (the plan's, else ``CRONRADAR_PING_RATE``; :mod:`monitors.ratelimit`),
with ``Retry-After`` (not stored, counted in the monitor's refused pings). No
session, CSRF or login.
"""
import logging
import re
import time
from datetime import UTC, datetime, timedelta
from uuid import UUID

from django.conf import settings
from django.core.handlers.wsgi import WSGIRequest
from django.db import InterfaceError, OperationalError, connection
from django.http import HttpResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from accounts import audit
from accounts.models import Project
from accounts.plans import PlanLimit
from core import metrics
from core.edge import NUL_MESSAGE, RETRY_AFTER, client_address, has_nul, is_chunked
from monitors import pings, ratelimit

log = logging.getLogger(__name__)

ACTIONS = {"start": "start", "fail": "fail", "log": "log"}
CHUNK = 64 * 1024


def _text(status: int, message: str) -> HttpResponse:
    return HttpResponse(message + "\n", status=status, content_type="text/plain; charset=utf-8")


def _as_uuid(value: str) -> UUID | None:
    try:
        return UUID(value) if len(value) == 36 else None
    except ValueError:
        return None


def _parse_action(action: str | None) -> tuple[str, int | None]:
    """('success'|'start'|'fail'|'log', exit status) or raises ValueError(message)."""
    if action is None or action == "":
        return "success", None
    if action in ACTIONS:
        return ACTIONS[action], None
    if action.isascii() and action.lstrip("-").isdigit():
        code = int(action)
        if not 0 <= code <= 255:
            raise ValueError(f"exit status must be an integer from 0 to 255, got {action}")
        return ("success" if code == 0 else "fail"), code
    if any(ch.isdigit() for ch in action):
        raise ValueError(f"exit status must be an integer from 0 to 255, got {_shown(action)}")
    raise ValueError(f"unknown ping action '{_shown(action)}': use start, fail, log or 0-255")


_RFC3339 = re.compile(r"(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?)"
                      r"(?:[Zz]|([+\- ])(\d{2}):(\d{2}))")
SLOT_FORMAT = ("slot must be an RFC 3339 time with its offset (2026-01-05T10:00:00Z, "
               "2026-01-05T10:00:00%2B02:00) or Unix seconds (1767607200)")


def parse_slot(raw: str) -> datetime:
    """The ``slot`` query parameter as an aware UTC time: Unix seconds, or RFC 3339
    with its offset, where a space stands for the offset's ``+`` too (a query
    string decodes an unescaped ``+`` as a space). Raises ValueError (the message)."""
    if raw.isascii() and raw.isdigit() and len(raw) <= 11:
        return datetime.fromtimestamp(int(raw), UTC)
    match = _RFC3339.fullmatch(raw)
    if match is None:
        raise ValueError(f"{SLOT_FORMAT}, got '{_shown(raw)}'")
    day, clock, sign, hours, minutes = match.groups()
    try:
        local = datetime.fromisoformat(f"{day}T{clock}")
        offset = timedelta(0) if sign is None else (
            (-1 if sign == "-" else 1) * timedelta(hours=int(hours), minutes=int(minutes)))
        if offset >= timedelta(days=1):
            raise ValueError("offset")
        return (local - offset).replace(tzinfo=UTC)
    except (ValueError, OverflowError):
        raise ValueError(f"{SLOT_FORMAT}, got '{_shown(raw)}'") from None


def _shown(text: str) -> str:
    """At most 40 characters of user input for an error message, control
    characters escaped (never echoed raw)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text[:40])


def _read_body(request) -> tuple[bytes, int]:
    """The first CRONRADAR_PING_BODY_LIMIT bytes of the body and the full size.

    A chunked body (``Transfer-Encoding: chunked``, no ``Content-Length``: ``curl
    -X POST -T -``) is read from the server's ``wsgi.input``, which de-chunks it:
    Django reads no body without a length. Behind nginx it arrives with a length.
    Raises ValueError (a message) when the body ends before its ``Content-Length``:
    the client gave up sending it (it will not read an answer either), and the
    ping is not stored."""
    if request.method != "POST":
        return b"", 0
    stream = request
    declared = request.META.get("CONTENT_LENGTH")
    if is_chunked(request.META):
        stream = request.META["wsgi.input"]
    limit = settings.CRONRADAR_PING_BODY_LIMIT
    kept = stream.read(limit)
    size = len(kept)
    while chunk := stream.read(CHUNK):  # drain (and count) what we don't keep
        size += len(chunk)
    if declared and declared.isdigit() and size < int(declared):
        raise ValueError(f"incomplete body: {size} of its {declared} bytes arrived; "
                         "nothing was stored")
    return kept, size


# the answers to a stored ping, as (status, text) until they must be an HttpResponse:
# PingRoute writes them without building one
OK, CREATED = (200, "OK"), (201, "Created")
_WSGI_ANSWERS = {answer: (f"{answer[0]} {answer[1]}", (answer[1] + "\n").encode())
                 for answer in (OK, CREATED)}


@csrf_exempt
def ping(request, path: str) -> HttpResponse:
    """The ping view (module docstring)."""
    started = time.perf_counter()
    answer = _ping(request, path)
    response = _text(*answer) if isinstance(answer, tuple) else answer
    metrics.PING_DURATION.observe(time.perf_counter() - started)
    return response


def on_ping_host(host: str) -> bool:
    """Whether a request's ``Host`` header names ``CRONRADAR_PING_HOST`` (any case;
    a port and a final dot ignored)."""
    wanted = settings.CRONRADAR_PING_HOST
    if not wanted or not host:
        return False
    name = host if host.endswith("]") else host.rsplit(":", 1)[0]  # an IPv6 literal has ':'
    return name.rstrip(".").lower() == wanted


def _ping(request, path: str, base: str = "/ping/") -> HttpResponse | tuple[int, str]:
    if request.method not in ("GET", "HEAD", "POST"):
        resp = _text(405, "method not allowed: use GET, HEAD or POST")
        resp["Allow"] = "GET, HEAD, POST"
        return resp
    if has_nul(request):
        return _text(400, NUL_MESSAGE)
    parts = path.strip("/").split("/")
    uuid = _as_uuid(parts[0])
    if uuid is not None and len(parts) <= 2:
        lookup = {"uuid": uuid}
        action = parts[1] if len(parts) == 2 else None
    elif uuid is None and len(parts) in (2, 3) and parts[0] and parts[1]:
        lookup = {"project__ping_key": parts[0], "slug": parts[1]}
        action = parts[2] if len(parts) == 3 else None
    else:
        return _text(404, f"not found: use {base}<uuid>[/action] "
                          f"or {base}<ping key>/<slug>[/action]")
    try:
        kind, exit_status = _parse_action(action)
    except ValueError as e:
        return _text(400, str(e))
    rid = None
    if raw_rid := request.GET.get("rid"):
        rid = _as_uuid(raw_rid.strip())
        if rid is None:
            return _text(400, "rid must be a UUID, e.g. ?rid=$(uuidgen)")
    slot = None
    if (raw_slot := request.GET.get("slot")) is not None:
        try:
            slot = parse_slot(raw_slot)
        except ValueError as e:
            return _text(400, str(e))
    created = False
    if "slug" in lookup:
        where = pings.lookup(ping_key=lookup["project__ping_key"], slug=lookup["slug"])
        key = ("k", parts[0], parts[1])
    else:
        where = pings.lookup(uuid=lookup["uuid"])
        key = ("u", uuid)
    # what the ping is counted against: remembered per ping URL (no statement per ping)
    target = ratelimit.target(key, where)
    if target is None and "slug" in lookup and request.GET.get("create") == "1":
        project_id = (Project.objects.filter(  # not of an organisation being deleted
            ping_key=parts[0], organisation__deleted_at__isnull=True)
                      .values_list("pk", flat=True).first())
        if project_id is not None:
            try:  # the audit log's actor of the monitor's creation
                with audit.acting(audit.ping_key_actor(parts[0], request.META)):
                    _, created = pings.create_on_ping(
                        project_id, parts[1], request.GET, timezone.now(), slot)
            except pings.SlotError as e:
                return _text(400, f"{e}; nothing was stored")
            except ValueError as e:
                return _text(400, str(e))
            except PlanLimit as e:
                return _text(403, f"{e.detail}; nothing was stored")
            target = ratelimit.target(key, where)
    if target is None:
        return _text(404, "not found: no monitor with this ping URL")
    if refusal := ratelimit.hit(target, timezone.now()):
        resp = _text(429, refusal.message())
        resp["Retry-After"] = str(refusal.retry_after)
        return resp
    try:
        body, size = _read_body(request)
    except ValueError as e:
        return _text(400, str(e))
    ping_input = pings.PingInput(
        kind=kind, exit_status=exit_status, rid=rid, slot=slot, method=request.method,
        remote_addr=client_address(request.META),
        user_agent=request.META.get("HTTP_USER_AGENT", ""), body=body, body_size=size,
    )
    try:
        stored = pings.ingest_at(where, ping_input, timezone.now())
    except pings.SlotError as e:
        return _text(400, f"{e}; nothing was stored")
    except pings.MethodRefused:
        resp = _text(405, f"method not allowed: this monitor takes POST pings only (its "
                          f"methods is POST), not {request.method}; nothing was stored")
        resp["Allow"] = "POST"
        return resp
    if stored is None:  # deleted since it was remembered
        ratelimit.forget_url(key)
        return _text(404, "not found: no monitor with this ping URL")
    metrics.ping_stored(kind)
    return CREATED if created else OK


def _guarded(request, path: str, base: str) -> HttpResponse | tuple[int, str]:
    """:func:`_ping`, with a database that cannot be reached answered ``503`` as
    :class:`core.edge.EdgeMiddleware` does (the broken connection is closed; the
    next request opens a new one) and a bug a plain-text ``500``, logged. Each
    request is timed in ``cronradar_ping_duration_seconds``."""
    started = time.perf_counter()
    try:
        return _ping(request, path, base)
    except (OperationalError, InterfaceError) as exc:
        connection.close()
        log.warning("database unavailable for a ping: %s", exc)
        response = _text(503, "database unavailable, nothing was stored: "
                              f"retry in {RETRY_AFTER} seconds")
        response["Retry-After"] = str(RETRY_AFTER)
        return response
    except Exception:
        log.exception("ping %s failed", request.path_info[:200])
        return _text(500, "internal error")
    finally:
        metrics.PING_DURATION.observe(time.perf_counter() - started)


class PingRoute:
    """WSGI middleware: ``/ping/...`` requests, and every request to
    ``CRONRADAR_PING_HOST`` (pings at the root path, as ``https://hc-ping.com/<uuid>``),
    go straight to :func:`ping`.

    A ping needs none of what Django's middleware and request signals do (sessions,
    CSRF, authentication, static files, a ``SELECT 1`` health check of the database
    connection per request), and they cost a ping path about a fifth of its CPU
    (bench/README.md). Everything else goes to ``app``. Failures: :func:`_guarded`.
    """

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO", "").startswith("/ping/"):
            base = "/ping/"
        elif on_ping_host(environ.get("HTTP_HOST", "")):
            base = "/"
        else:
            return self.app(environ, start_response)
        request = WSGIRequest(environ)
        response = _guarded(request, request.path_info[len(base):], base)
        if isinstance(response, tuple):  # stored: the common answer, ready-made
            status, body = _WSGI_ANSWERS[response]
            start_response(status, [("Content-Type", "text/plain; charset=utf-8"),
                                    ("Content-Length", str(len(body)))])
            return [b"" if request.method == "HEAD" else body]
        body = b"" if request.method == "HEAD" else response.content
        headers = [*response.items(), ("Content-Length", str(len(response.content)))]
        start_response(f"{response.status_code} {response.reason_phrase}", headers)
        return [body]


class PingHostMiddleware:
    """Django middleware, first in ``MIDDLEWARE``: a request to
    ``CRONRADAR_PING_HOST`` is a ping at the root path, answered as :class:`PingRoute`
    answers it ahead of Django (the test client, a deployment that loads Django's
    bare handler). Other hosts go on unchanged."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if (request.path_info.startswith("/ping/")
                or not on_ping_host(request.META.get("HTTP_HOST", ""))):
            return self.get_response(request)
        answer = _guarded(request, request.path_info[1:], "/")
        return _text(*answer) if isinstance(answer, tuple) else answer
