"""The ping endpoint (Healthchecks-compatible URLs). Thin: parse, then ingest.

URL forms, each for GET, HEAD and POST::

    /ping/<uuid>[/start|/fail|/log|/<exit status 0-255>][?rid=<uuid>]
    /ping/<project ping key>/<slug>[/start|/fail|/log|/<exit status>][?rid=<uuid>]

Responses are plain text: 200 ``OK``; 404 unknown monitor; 400 bad exit status,
action or rid; 405 other methods. No session, CSRF or login.
"""
import ipaddress
from uuid import UUID

from django.conf import settings
from django.http import HttpResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from monitors.models import Monitor
from monitors.pings import PingInput, ingest

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


def _shown(text: str) -> str:
    """At most 40 characters of user input for an error message, control
    characters escaped (never echoed raw)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text[:40])


def _client_address(request) -> str | None:
    """The pinging client's IP address: ``REMOTE_ADDR``, or behind a trusted proxy
    (``CRONRADAR_TRUST_X_FORWARDED_FOR``) the last ``X-Forwarded-For`` entry, the
    address that proxy saw. Anything that is not an IP address is ignored."""
    candidates = [request.META.get("REMOTE_ADDR", "")]
    if settings.CRONRADAR_TRUST_X_FORWARDED_FOR:
        candidates.insert(0, request.META.get("HTTP_X_FORWARDED_FOR", "").rsplit(",", 1)[-1])
    for value in candidates:
        try:
            return str(ipaddress.ip_address(value.strip()))
        except ValueError:
            continue
    return None


def _read_body(request) -> tuple[bytes, int]:
    """The first CRONRADAR_PING_BODY_LIMIT bytes of the body and the full size."""
    if request.method != "POST":
        return b"", 0
    limit = settings.CRONRADAR_PING_BODY_LIMIT
    kept = request.read(limit)
    size = len(kept)
    while chunk := request.read(CHUNK):  # drain (and count) what we don't keep
        size += len(chunk)
    return kept, size


@csrf_exempt
def ping(request, path: str):
    if request.method not in ("GET", "HEAD", "POST"):
        resp = _text(405, "method not allowed: use GET, HEAD or POST")
        resp["Allow"] = "GET, HEAD, POST"
        return resp
    parts = path.strip("/").split("/")
    uuid = _as_uuid(parts[0])
    if uuid is not None and len(parts) <= 2:
        lookup = {"uuid": uuid}
        action = parts[1] if len(parts) == 2 else None
    elif uuid is None and len(parts) in (2, 3) and parts[0] and parts[1]:
        lookup = {"project__ping_key": parts[0], "slug": parts[1]}
        action = parts[2] if len(parts) == 3 else None
    else:
        return _text(404, "not found: use /ping/<uuid>[/action] "
                          "or /ping/<ping key>/<slug>[/action]")
    try:
        kind, exit_status = _parse_action(action)
    except ValueError as e:
        return _text(400, str(e))
    rid = None
    if raw_rid := request.GET.get("rid"):
        rid = _as_uuid(raw_rid.strip())
        if rid is None:
            return _text(400, "rid must be a UUID, e.g. ?rid=$(uuidgen)")
    monitor_id = Monitor.objects.filter(**lookup).values_list("pk", flat=True).first()
    if monitor_id is None:
        return _text(404, "not found: no monitor with this ping URL")
    body, size = _read_body(request)
    ping_input = PingInput(
        kind=kind, exit_status=exit_status, rid=rid, method=request.method,
        remote_addr=_client_address(request),
        user_agent=request.META.get("HTTP_USER_AGENT", ""), body=body, body_size=size,
    )
    try:
        ingest(monitor_id, ping_input, timezone.now())
    except Monitor.DoesNotExist:
        return _text(404, "not found: no monitor with this ping URL")
    return _text(200, "OK")
