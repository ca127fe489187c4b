"""The Healthchecks-compatible Management API subset at ``/api/v3/`` (see
docs/api-v3.md), so scripts and the Terraform provider written for Healthchecks
work against CronRadar unchanged.

Healthchecks' documentation (``templates/docs/api.md`` of healthchecks/healthchecks)
is the contract: its field names and shapes, its ``{"error": "…"}`` answers and
status codes, POST bodies read as JSON whatever their ``Content-Type``, a
project API key in ``X-Api-Key`` (or ``api_key`` in a POST's JSON body). It
lives on the alerting floor because a check's JSON names its channels.

The outbound mapping (a monitor → a Healthchecks check, its pings, its flips, a
channel) is plain functions here; the inbound one (a check → monitor fields) is
:func:`monitors.healthchecks.check_fields`, shared with the importer. The views
are thin: :func:`endpoint` authenticates and parses, each view looks up, calls,
answers.
"""
from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from functools import wraps
from types import SimpleNamespace
from urllib.parse import quote, urlsplit
from uuid import UUID, uuid4

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.db.models import Exists, OuterRef
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.utils.text import slugify
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, serializers

from accounts import audit
from accounts.auth import ApiKeyAuthentication, CallerRateThrottle, KeyLookupsThrottled
from accounts.models import ApiKey, Project
from accounts.plans import PlanLimit
from alerts.api import MonitorSerializer
from alerts.models import Channel, Incident
from alerts.timeline import alerting_of
from monitors import evaluator, healthchecks, history, slots
from monitors.models import Monitor, Ping, PingLog, Run

# CronRadar's channel kinds as Healthchecks names them (its ``Channel.kind``).
KINDS = {"webhook": "webhook", "slack": "slack", "pagerduty": "pd", "email": "email",
         "teams": "msteams", "discord": "discord", "opsgenie": "opsgenie", "ntfy": "ntfy",
         "telegram": "telegram", "googlechat": "googlechat", "mattermost": "mattermost",
         "pushover": "po", "matrix": "matrix"}
# CronRadar's display status (monitors.slots.status, without ``running``) as
# Healthchecks' ``status``: ``late`` is Healthchecks' ``grace``.
STATUSES = {"new": "new", "up": "up", "late": "grace", "down": "down", "paused": "paused"}
PING_LIMIT = 1000  # Healthchecks' cap on a ping list (paid accounts)
MAX_TIMESTAMP = 10_000_000_000  # Healthchecks' sanity bound for ?start= / ?end= (year 2286)
MAX_SECONDS = 31_536_000  # ?seconds= at most a year, as Healthchecks
# The keys of a create or update body (Healthchecks' Spec); others are ignored,
# as Healthchecks ignores them (a chosen ``uuid`` among them: not part of its POST).
SPEC = frozenset({"name", "slug", "tags", "desc", "timeout", "grace", "schedule", "tz",
                  "manual_resume", "methods", "channels", "unique", "subject", "subject_fail",
                  "start_kw", "success_kw", "failure_kw", "filter_subject", "filter_body",
                  "filter_http_body", "filter_default_fail"})
UNIQUE = ("name", "slug", "tags", "timeout", "grace")
# What check_fields could map only by dropping part of it: refused here (400),
# so a script never believes CronRadar filters by keyword or kept a tag.
DROPPED = (healthchecks.Code.NOT_MAPPED, healthchecks.Code.TAG_NOT_MAPPED)
# The monitors API's field names as Healthchecks calls them, for error messages.
HC_NAMES = {"description": "desc", "timezone": "tz", "period": "timeout"}


class HcError(Exception):
    """A request refused: answered ``{"error": message}`` with ``status``."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.message, self.status = message, status


def error(message: str, status: int = 400) -> JsonResponse:
    """Healthchecks' error answer: ``{"error": message}``."""
    return JsonResponse({"error": message}, status=status)


# --- the outbound mapping: plain functions of plain rows -----------------------------------

def isostring(at: datetime | None) -> str | None:
    """An ISO 8601 UTC time without microseconds (``2020-03-24T14:02:03+00:00``), as
    Healthchecks writes times; None stays None."""
    return at.astimezone(UTC).replace(microsecond=0).isoformat() if at else None


def unique_key(monitor: Monitor) -> str:
    """Healthchecks' ``unique_key``: SHA-1 (hex) of the first 16 hex digits of the
    UUID, a stable id read-only keys see instead of the UUID."""
    return hashlib.sha1(monitor.uuid.hex[:16].encode()).hexdigest()


def status(monitor: Monitor, now: datetime, *, incident_open: bool,
           completed: bool = True) -> str:
    """Healthchecks' ``status`` of ``monitor`` at ``now``: ``new``, ``up``,
    ``grace`` (CronRadar's ``late``), ``down`` (an open incident, or past its
    grace) or ``paused``. A running job reads as its slot's state, as in
    Healthchecks v3 (``started`` says it runs). ``completed``: it has had a
    success or fail ping; without one, a monitor whose last ping is a start is
    still ``new``, as Healthchecks' status follows completed pings only."""
    if (not completed and not monitor.paused and not incident_open
            and monitor.last_ping_at is not None and monitor.last_ping_at == monitor.last_start_at):
        return "new"
    return STATUSES[slots.status(monitor, now, running=False, incident_open=incident_open)]


def check_json(monitor: Monitor, now: datetime, *, readonly: bool, running: bool,
               incident_open: bool, channels: Iterable[Channel], completed: bool = True
               ) -> dict:
    """``monitor`` as a Healthchecks v3 check.

    running: it has an open run (``started``); incident_open: it has an open
    incident (``down``); channels: those it notifies (``channels``, their UUIDs);
    completed: it has had a success or fail ping (see :func:`status`).
    Interval monitors give ``timeout`` (the period, seconds) and ``tz``, cron
    monitors ``schedule`` and ``tz``. CronRadar has no keyword filtering (``*_kw`` are
    "", ``filter_*`` false) and keeps a paused monitor paused until it is
    resumed (``manual_resume`` true). ``readonly``: without ``uuid``, the URLs
    and ``channels``, with ``unique_key`` instead (Healthchecks' read-only keys).
    """
    base = settings.CRONRADAR_BASE_URL
    state = status(monitor, now, incident_open=incident_open, completed=completed)
    result = {
        "name": monitor.name,
        "slug": monitor.slug,
        "tags": " ".join(monitor.tags),
        "desc": monitor.description,
        "grace": int(monitor.grace.total_seconds()),
        "n_pings": monitor.n_pings,
        "status": state,
        "started": running,
        "last_ping": isostring(monitor.last_ping_at),
        # when the next ping is due; Healthchecks has none for new, paused, down checks
        "next_ping": isostring(monitor.next_expected_at) if state in ("up", "grace") else None,
        "manual_resume": True,
        "methods": monitor.methods,
        "subject": "",
        "subject_fail": "",
        "start_kw": "",
        "success_kw": "",
        "failure_kw": "",
        "filter_subject": False,
        "filter_body": False,
        "filter_http_body": False,
        "filter_default_fail": False,
        "badge_url": f"{base}/badge/{monitor.project.badge_key}/{quote(monitor.slug)}.svg",
    }
    if readonly:
        result["unique_key"] = unique_key(monitor)
    else:
        update_url = f"{base}/api/v3/checks/{monitor.uuid}"
        result.update(uuid=str(monitor.uuid), ping_url=monitor.ping_url, update_url=update_url,
                      pause_url=update_url + "/pause", resume_url=update_url + "/resume",
                      channels=",".join(sorted(str(c.uuid) for c in channels)))
    if monitor.kind == Monitor.Kind.CRON:
        result.update(schedule=monitor.schedule, tz=monitor.timezone)
    else:  # tz too (Healthchecks stores it on any check, answers it for cron ones)
        result.update(timeout=int(monitor.period.total_seconds()), tz=monitor.timezone)
    return result


def ping_json(ping: Ping | PingLog, scheme: str) -> dict:
    """A stored ping as Healthchecks lists it. ``n``: its id, which grows with each
    ping stored and never changes (Healthchecks counts a check's pings from 1;
    CronRadar's ``n_pings`` leaves log pings and duplicates out, so a count would
    not name one ping for good). ``scheme``: the ping URL's (CronRadar does not
    store each ping's). ``duration`` (seconds, 2 decimals): on the ping that
    ended a run with a start. ``body_url``: null (``/pings/<n>/body`` is not
    served)."""
    result = {"type": ping.kind, "date": ping.received_at.astimezone(UTC).isoformat(),
              "n": ping.pk, "scheme": scheme, "remote_addr": ping.remote_addr or "",
              "method": ping.method, "ua": ping.user_agent,
              "rid": str(ping.rid) if ping.rid else None}
    run = ping.run
    if (ping.kind in (Ping.Kind.SUCCESS, Ping.Kind.FAIL) and run is not None
            and run.duration is not None and run.ended_at == ping.received_at):
        result["duration"] = round(run.duration.total_seconds(), 2)
    result["body_url"] = None
    return result


def flips(incidents: Iterable[Incident], since: datetime | None = None,
          until: datetime | None = None) -> list[dict]:
    """A monitor's status changes from its incidents, newest first: an incident's
    opening is a flip to down (``"up": 0``), its resolution back up (``"up": 1``).
    ``since`` (inclusive) and ``until`` (exclusive) bound the flips' times."""
    found = []
    for incident in incidents:
        found.append((incident.opened_at, 0))
        if incident.resolved_at is not None:
            found.append((incident.resolved_at, 1))
    found.sort(key=lambda flip: flip[0], reverse=True)
    return [{"timestamp": isostring(at), "up": up} for at, up in found
            if (since is None or at >= since) and (until is None or at < until)]


def channel_json(channel: Channel) -> dict:
    """A channel as Healthchecks lists an integration: its stable ``uuid`` as
    ``id``, ``name``, and Healthchecks' name of its kind."""
    return {"id": str(channel.uuid), "name": channel.name, "kind": KINDS[channel.kind]}


def flip_window(query, now: datetime) -> tuple[datetime | None, datetime | None]:
    """``?start=`` / ``?end=`` (UNIX timestamps) and ``?seconds=`` (the last so many)
    as (since, until); raises HcError 400 naming the bad one."""
    since = until = None
    for name in ("start", "end"):
        raw = query.get(name)
        if raw is None:
            continue
        if not (raw.isascii() and raw.isdigit() and int(raw) <= MAX_TIMESTAMP):
            raise HcError(f"invalid {name}: a UNIX timestamp from 0 to {MAX_TIMESTAMP}")
        at = datetime.fromtimestamp(int(raw), UTC)
        since, until = (at, until) if name == "start" else (since, at)
    raw = query.get("seconds")
    if raw is not None:
        if not (raw.isascii() and raw.isdigit() and int(raw) <= MAX_SECONDS):
            raise HcError(f"invalid seconds: a whole number from 0 to {MAX_SECONDS}")
        recent = now - timedelta(seconds=int(raw))
        since = recent if since is None else max(since, recent)
    return since, until


# --- the inbound side: a create or update body -------------------------------------------

def monitor_fields(body: dict, uuid: UUID, name: str | None = None) -> dict:
    """A create or update body -> the values :class:`alerts.api.MonitorSerializer`
    takes, through :func:`monitors.healthchecks.check_fields` (the one inbound
    mapping). Only :data:`SPEC` keys are read; ``channels`` and ``unique`` are
    the caller's (:func:`resolve_channels`, :func:`is_match`).

    ``uuid`` is the monitor's (a new one's is made by the caller), ``name`` an
    existing monitor's (None: a new monitor). An empty slug becomes the slug of
    the name plus the UUID's first 8 characters; a new monitor without a name is
    named after its slug, else its UUID, and gets Healthchecks' defaults for
    what the body leaves out (``timeout`` one day, ``grace`` one hour) and no
    channels. Raises HcError 400 for a value check_fields refuses or could map
    only by dropping part of it (keyword filters, email subjects, a tag longer
    than 50 characters)."""
    spec = {k: v for k, v in body.items() if k in SPEC - {"channels", "unique"}}
    given = {**spec, "uuid": str(uuid)}
    if name is not None:
        given.setdefault("name", name)  # an update keeps the name an empty slug is made of
    try:
        fields, notes = healthchecks.check_fields(given)
    except healthchecks.Refused as e:
        raise HcError(f"json validation error: {e.note.message}") from None
    if dropped := [n.message for n in notes if n.code in DROPPED]:
        raise HcError("json validation error: " + "; ".join(dropped))
    fields.pop("uuid")
    if name is None:
        fields.setdefault("kind", Monitor.Kind.INTERVAL)
        if fields["kind"] == Monitor.Kind.INTERVAL:
            fields.setdefault("period", healthchecks.DEFAULTS["timeout"])
        fields.setdefault("grace", healthchecks.DEFAULTS["grace"])
        fields["channels"] = []
    return fields


def resolve_channels(raw, available: Iterable[Channel]) -> str | list[int]:
    """Healthchecks' ``channels``: ``"*"`` every channel (CronRadar's ``"all"``,
    channels added later included), ``""`` none, else comma-separated channel
    UUIDs or names of ``available`` -> their ids. HcError 400 for an empty, an
    unknown or an ambiguous identifier (Healthchecks' messages)."""
    if not isinstance(raw, str):
        raise HcError("json validation error: channels is not a string")
    if raw == "*":
        return "all"
    if raw == "":
        return []
    available = list(available)
    chosen = set()
    for given in raw.split(","):
        if given == "":
            raise HcError("empty channel identifier")
        found = [c for c in available if str(c.uuid) == given or c.name == given]
        if not found:
            raise HcError(f"invalid channel identifier: {given}")
        if len(found) > 1:
            raise HcError(f"non-unique channel identifier: {given}")
        chosen.add(found[0].pk)
    return sorted(chosen)


def unique_of(body: dict) -> list[str]:
    """The body's ``unique`` (which fields an upsert matches on); HcError 400 unless
    a list of :data:`UNIQUE` names."""
    unique = body.get("unique", [])
    if not isinstance(unique, list):
        raise HcError("json validation error: unique is not an array")
    if any(u not in UNIQUE for u in unique):
        raise HcError("json validation error: an item in 'unique' has unexpected value")
    return unique


def is_match(monitor: Monitor, fields: dict, unique: list[str]) -> bool:
    """Whether ``monitor`` has every ``unique`` field as the mapped body ``fields``
    give it (``timeout``: an interval monitor of that period). The caller makes
    sure the body has each of them (Healthchecks creates when one is left out)."""
    wanted = {"name": "name", "slug": "slug", "tags": "tags", "timeout": "period",
              "grace": "grace"}
    for key in unique:
        field = wanted[key]
        value = getattr(monitor, field)
        if isinstance(value, timedelta):
            value = int(value.total_seconds())
        if field == "period" and monitor.kind != Monitor.Kind.INTERVAL:
            return False
        if value != fields[field]:
            return False
    return True


def first_error(detail) -> str:
    """The first message of a serializer's errors, as ``json validation error:
    <field>: <message>`` with Healthchecks' field names."""
    field = None
    while isinstance(detail, dict | list):
        if isinstance(detail, dict):
            key, detail = next(iter(detail.items()))
            field = field or key
        else:
            detail = detail[0]
    where = f"{HC_NAMES.get(field, field)}: " if field else ""
    return f"json validation error: {where}{detail}"


# --- the edge: who calls, with what body --------------------------------------------------

def _key(request: HttpRequest, body: dict) -> ApiKey:
    """The caller's key: ``X-Api-Key``, else ``api_key`` in the JSON body; HcError
    401 when missing, unknown or revoked; 429 while the address is throttled for
    unknown keys (:mod:`accounts.throttle`)."""
    key = request.headers.get("X-Api-Key", "").strip() or str(body.get("api_key", "")).strip()
    if not key:
        raise HcError("missing api key", 401)
    try:  # the API's own key check (it also notes the key's last use, and throttles)
        found = ApiKeyAuthentication().authenticate(SimpleNamespace(
            META={**request.META, "HTTP_X_API_KEY": key}))
    except KeyLookupsThrottled as e:
        exc = HcError(str(e.detail), 429)
        exc.retry_after = e.wait
        raise exc from None
    except exceptions.AuthenticationFailed:
        found = None
    if found is None:
        raise HcError("wrong api key", 401)
    return found[1]


def _body(request: HttpRequest) -> dict:
    """A POST's body as a JSON object, whatever its ``Content-Type`` (Healthchecks'
    examples use ``curl --data``, a form type); {} when empty."""
    if request.method != "POST" or not request.body:
        return {}
    try:
        body = json.loads(request.body)
    except (ValueError, RecursionError):
        raise HcError("could not parse request body") from None
    if not isinstance(body, dict):
        raise HcError("json validation error: value is not an object")
    return body


def _throttle(request: HttpRequest) -> None:
    """The API's rate limit per key (``CRONRADAR_API_RATE``): HcError 429 over it,
    with the wait in ``Retry-After``."""
    throttle = CallerRateThrottle()
    if not throttle.allow_request(request, None):
        exc = HcError("rate limit exceeded", 429)
        exc.retry_after = math.ceil(throttle.wait() or 1)
        raise exc


def endpoint(*methods: str, reads: tuple[str, ...] = ("GET",)) -> Callable:
    """Decorator of a v3 view answering ``methods``: CSRF-exempt (keys, not
    cookies), CORS open as Healthchecks' (``Access-Control-Allow-Origin: *``),
    405 for other methods (``Allow`` on every answer), the body parsed
    (``request.hc_json``), the key authenticated (``request.auth``, the project
    ``request.project``) and rate-limited; a read-only key may only use ``reads`` (401 otherwise, as
    Healthchecks answers it). An :class:`HcError` becomes its answer."""
    allowed = ", ".join((*methods, "OPTIONS"))

    def decorate(view):
        @csrf_exempt
        @wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if request.method == "OPTIONS":
                response = HttpResponse(status=204)
            elif request.method not in methods:
                response = error("method not allowed", 405)
            else:
                response = _answer(view, request, reads, *args, **kwargs)
            response["Allow"] = allowed  # on every answer, a 405 and OPTIONS with it
            response["Access-Control-Allow-Origin"] = "*"
            response["Access-Control-Allow-Headers"] = "X-Api-Key"
            response["Access-Control-Allow-Methods"] = allowed
            response["Access-Control-Max-Age"] = "600"
            return response

        return wrapper

    return decorate


def _answer(view, request: HttpRequest, reads, *args, **kwargs) -> HttpResponse:
    try:
        request.hc_json = _body(request)
        request.auth = _key(request, request.hc_json)
        audit.set_actor(audit.key_actor(request.auth, request.META))  # _key has no address
        if request.auth.read_only and request.method not in reads:
            raise HcError("this API key is read-only", 401)
        request.user = AnonymousUser()  # a key, not a person (accounts.tenancy)
        request.project = request.auth.project
        _throttle(request)
        return view(request, *args, **kwargs)
    except HcError as e:
        response = error(e.message, e.status)
        if hasattr(e, "retry_after"):
            response["Retry-After"] = str(e.retry_after)
        return response


# --- lookups ----------------------------------------------------------------------------------

def monitors_of(project: Project):
    """The project's live monitors, with what their JSON needs (whether a run or an
    incident is open, whether a success or fail ping is stored, their alerting and
    channels) in the same query."""
    open_run = Run.objects.open().filter(monitor=OuterRef("pk"))
    # a success or fail ping stored: a ping row, or a run keeping its ping
    completed = PingLog.objects.filter(monitor=OuterRef("pk"),
                                       kind__in=(Ping.Kind.SUCCESS, Ping.Kind.FAIL))
    open_incident = Incident.objects.filter(monitor=OuterRef("pk"), resolved_at__isnull=True)
    return (Monitor.objects.filter(project=project, deleted_at__isnull=True)
            .annotate(is_running=Exists(open_run), has_open_incident=Exists(open_incident),
                      has_completed=Exists(completed))
            .select_related("project", "alerting").prefetch_related("alerting__channels")
            .order_by("pk"))


def find(project: Project, code) -> Monitor:
    """The live monitor of ``project`` with UUID ``code``; HcError 404 otherwise
    (another project's monitor too: CronRadar never tells it exists)."""
    monitor = monitors_of(project).filter(uuid=code).first()
    if monitor is None:
        raise HcError("not found", 404)
    return monitor


def find_by_unique_key(project: Project, key: str) -> Monitor:
    """The live monitor of ``project`` whose :func:`unique_key` is ``key``; HcError
    404 otherwise."""
    for monitor in monitors_of(project):
        if unique_key(monitor) == key:
            return monitor
    raise HcError("not found", 404)


def render(monitor: Monitor, now: datetime, readonly: bool = False,
           live: list[Channel] | None = None) -> dict:
    """:func:`check_json` of a monitor from :func:`monitors_of` (``live``: its
    project's live channels, read once for a list)."""
    alerting = alerting_of(monitor)
    if alerting.all_channels:
        chosen = live if live is not None else live_channels(monitor.project)
    else:
        chosen = [c for c in alerting.channels.all() if c.deleted_at is None]
    return check_json(monitor, now, readonly=readonly, running=monitor.is_running,
                      incident_open=monitor.has_open_incident, channels=chosen,
                      completed=monitor.has_completed)


def live_channels(project: Project) -> list[Channel]:
    """The project's channels not deleted, oldest first."""
    return list(Channel.objects.filter(project=project, deleted_at__isnull=True).order_by("pk"))


def fresh(monitor: Monitor) -> Monitor:
    """``monitor`` read again through :func:`monitors_of` (after a change)."""
    return monitors_of(monitor.project).get(pk=monitor.pk)


# --- the views ---------------------------------------------------------------------------

def save(request, monitor: Monitor | None, body: dict) -> Monitor:
    """Create (``monitor`` None) or update a monitor from a create or update body,
    through the monitors API's serializer (its validation, its upserts' rules);
    returns it. A slug another monitor of the project has becomes the slug of the
    name plus a UUID prefix, as the importer does. HcError 400 for a bad body,
    403 when the plan allows no more monitors."""
    creating = monitor is None
    uuid = uuid4() if creating else monitor.uuid
    if not creating:
        body = unchanged_left_out(monitor, body)
    fields = monitor_fields(body, uuid, None if creating else monitor.name)
    if "channels" in body:
        fields["channels"] = resolve_channels(body["channels"], live_channels(request.project))
    slug = fields.get("slug") or (slugify(fields["name"])[:100] if creating else None)
    if slug and Monitor.objects.filter(project=request.project, slug=slug,
                                       deleted_at__isnull=True).exclude(
            pk=getattr(monitor, "pk", None)).exists():
        fields["slug"] = healthchecks.made_slug(fields["name"], str(uuid))
    serializer = MonitorSerializer(monitor, data=fields, partial=not creating,
                                   context={"request": request})
    try:
        serializer.is_valid(raise_exception=True)
        # a new monitor's UUID is made here, not chosen by the caller
        return serializer.save(**({"uuid": uuid} if creating else {}))
    except serializers.ValidationError as e:
        raise HcError(first_error(e.detail)) from None
    except PlanLimit as e:  # as Healthchecks answers its checks limit: 403
        raise HcError(str(e.detail), 403) from None
    except Monitor.DoesNotExist:  # deleted by a concurrent request
        raise HcError("not found", 404) from None


def unchanged_left_out(monitor: Monitor, body: dict) -> dict:
    """``body`` without the ``timeout`` and ``grace`` ``monitor`` already has
    (whole seconds, as its JSON shows them): CronRadar's own values may be outside
    Healthchecks' 60 s minimum (a monitor made with a 3 s period), and a client
    that sends back what it read (Terraform's read-then-apply) changes nothing."""
    same = {"grace": monitor.grace}
    if monitor.kind == Monitor.Kind.INTERVAL and not body.get("schedule"):
        same["timeout"] = monitor.period
    return {k: v for k, v in body.items()
            if not (k in same and type(v) is int and v == int(same[k].total_seconds()))}


@endpoint("GET", "POST")
def checks(request):
    """``GET /api/v3/checks/``: every check of the key's project (not paged),
    ``?tag=`` (repeatable: all of them) and ``?slug=`` filter. ``POST``: create
    a check (201), or with ``unique`` update the first that matches (200)."""
    now, live = timezone.now(), live_channels(request.project)
    if request.method == "POST":
        body, unique = request.hc_json, unique_of(request.hc_json)
        match = None
        if unique and all(key in body for key in unique):  # else Healthchecks creates
            fields = monitor_fields(body, uuid4(), name="")
            match = next((m for m in monitors_of(request.project)
                          if is_match(m, fields, unique)), None)
        monitor = save(request, match, body)
        return JsonResponse(render(fresh(monitor), now), status=200 if match else 201)
    tags = set(request.GET.getlist("tag"))
    found = monitors_of(request.project)
    if slug := request.GET.get("slug"):
        found = found.filter(slug=slug)
    return JsonResponse({"checks": [render(m, now, request.auth.read_only, live)
                                    for m in found if tags <= set(m.tags)]})


@endpoint("GET", "POST", "DELETE")
def single(request, code):
    """``GET /api/v3/checks/<uuid>``: one check; ``POST``: update it (keys left out
    keep their values); ``DELETE``: delete it, answering the check as it was."""
    monitor, now = find(request.project, code), timezone.now()
    if request.method == "POST":
        unique_of(request.hc_json)  # validated as on create, though an update matches nothing
        return JsonResponse(render(fresh(save(request, monitor, request.hc_json)), now))
    answer = render(monitor, now, request.auth.read_only)
    if request.method == "DELETE":
        try:
            evaluator.delete(monitor.pk, now)
        except Monitor.DoesNotExist:  # deleted by a concurrent request
            raise HcError("not found", 404) from None
    return JsonResponse(answer)


@endpoint("GET")
def single_by_unique_key(request, key):
    """``GET /api/v3/checks/<unique_key>``: one check, by a read-only key's id."""
    return JsonResponse(render(find_by_unique_key(request.project, key), timezone.now(),
                               request.auth.read_only))


def _set_paused(request, code, paused: bool) -> JsonResponse:
    monitor, now = find(request.project, code), timezone.now()
    if not paused and not monitor.paused:
        raise HcError("check is not paused", 409)
    # resumed as Healthchecks resumes a check: new (no last ping) until its next ping
    changes = {"paused": False, "last_ping_at": None, "last_start_at": None} if not paused \
        else {"paused": True}
    try:
        evaluator.edit(monitor.pk, changes, now)
    except Monitor.DoesNotExist:
        raise HcError("not found", 404) from None
    return JsonResponse(render(fresh(monitor), now))


@endpoint("POST", reads=())
def pause(request, code):
    """``POST /api/v3/checks/<uuid>/pause``: pause (already paused: unchanged)."""
    return _set_paused(request, code, True)


@endpoint("POST", reads=())
def resume(request, code):
    """``POST /api/v3/checks/<uuid>/resume``: resume a paused check (409 if it is
    not paused); as in Healthchecks it is ``new`` again (its last ping and start
    are cleared) and waits for its next ping, slots during the pause not held
    against it."""
    return _set_paused(request, code, False)


@endpoint("GET", reads=())
def pings(request, code):
    """``GET /api/v3/checks/<uuid>/pings/``: its stored pings, newest first, at most
    :data:`PING_LIMIT` (read-write keys only, as Healthchecks)."""
    monitor = find(request.project, code)
    rows = list(history.newest_pings(monitor, PING_LIMIT).select_related("run"))
    scheme = urlsplit(settings.CRONRADAR_BASE_URL).scheme or "http"
    return JsonResponse({"pings": [ping_json(p, scheme) for p in rows]})


def _flips(request, monitor: Monitor) -> JsonResponse:
    since, until = flip_window(request.GET, timezone.now())
    incidents = Incident.objects.filter(monitor=monitor).only("opened_at", "resolved_at")
    return JsonResponse({"flips": flips(incidents, since, until)})


@endpoint("GET")
def flips_by_uuid(request, code):
    """``GET /api/v3/checks/<uuid>/flips/``: its status changes (see :func:`flips`),
    ``?seconds=``, ``?start=``, ``?end=``."""
    return _flips(request, find(request.project, code))


@endpoint("GET")
def flips_by_unique_key(request, key):
    """``GET /api/v3/checks/<unique_key>/flips/``: as :func:`flips_by_uuid`."""
    return _flips(request, find_by_unique_key(request.project, key))


@endpoint("GET", reads=())
def channels(request):
    """``GET /api/v3/channels/``: the project's channels (read-write keys only, as
    Healthchecks)."""
    return JsonResponse({"channels": [channel_json(c) for c in live_channels(request.project)]})


def not_found(request, rest=""):
    """Any other ``/api/v3/`` path: Healthchecks' 404 shape."""
    return error("not found", 404)

