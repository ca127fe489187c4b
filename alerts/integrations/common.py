"""What the integration modules share: the request type, JSON encoding, time
formatting, config checks (see the package docstring for the contract)."""
from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import html
import ipaddress
import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db.models import Q
from django.urls import get_script_prefix, get_urlconf, reverse

from alerts import links
from alerts.models import IncidentEvent
from core.destinations import check_url
from monitors import history

USER_AGENT = "CronRadar/0.1"
# Event kinds that produce notifications; the other kinds only extend a timeline.
NOTIFY_EVENT_KINDS = frozenset({*IncidentEvent.PAGING, IncidentEvent.Kind.ACKNOWLEDGED,
                                IncidentEvent.Kind.RESOLVED, IncidentEvent.Kind.CHANNEL_REMOVED,
                                IncidentEvent.Kind.STABLE})


@dataclass(frozen=True)
class OutgoingRequest:
    """One HTTP request to send: ``body`` is sent byte for byte with ``headers``.

    ``signing_key``: the Standard Webhooks key of a request that carries a
    ``webhook-id`` header; :meth:`stamped` adds its ``webhook-timestamp`` and
    ``webhook-signature`` for the time of an attempt (the sender calls it just
    before each attempt, so a retry after a backoff is never stale).
    ``method``: ``POST`` unless the service wants another (Matrix: ``PUT``).
    ``redact``: credentials inside ``url`` (a Telegram bot token is in its path):
    the sender replaces each with ``***`` in an attempt's error, so they never
    reach ``last_error``, the attempt log or the logs.
    ``before``: requests sent first, in order, within the same attempt (Pushover:
    cancelling an incident's emergency receipts before its acknowledge). Each must
    be idempotent: one that must be retried (a network error, 429, 5xx) fails the
    attempt, which is then retried whole, those sent already included; another
    answer (2xx, or a 4xx: nothing left to do there) lets the attempt go on."""

    url: str
    body: bytes
    headers: dict[str, str]
    signing_key: bytes | None = None
    method: str = "POST"
    redact: tuple[str, ...] = ()
    before: tuple[OutgoingRequest, ...] = ()

    def stamped(self, at: datetime) -> OutgoingRequest:
        """This request as sent at ``at``: unchanged without a ``signing_key``; else
        with ``webhook-timestamp`` (Unix seconds) and ``webhook-signature: v1,<base64
        HMAC-SHA256 of "<webhook-id>.<timestamp>.<body>">`` (Standard Webhooks)."""
        if self.signing_key is None:
            return self
        timestamp = str(int(at.timestamp()))
        signed = b".".join([self.headers["webhook-id"].encode(), timestamp.encode(), self.body])
        signature = base64.b64encode(hmac.new(self.signing_key, signed, hashlib.sha256).digest())
        return replace(self, headers={**self.headers, "webhook-timestamp": timestamp,
                                      "webhook-signature": f"v1,{signature.decode()}"})


@dataclass(frozen=True)
class OutgoingEmail:
    """One email to send through Django's mail backend: a text and an HTML part."""

    to: tuple[str, ...]
    subject: str
    text: str
    html: str


TITLES = {"opened": "Incident opened", "escalated": "Escalated", "renotified": "Still open",
          "acknowledged": "Acknowledged", "resolved": "Resolved",
          "channel_removed": "No longer following", "stable": "Stable again"}


def describe(event) -> tuple[str, str]:
    """(title, text) of a notifying event for people: "Incident opened: Nightly
    backup" and the incident's summary (or what the event says)."""
    incident = event.incident
    title = f"{TITLES[event.kind]}: {incident.monitor.name}"
    if event.kind == "opened":
        return title, incident.summary
    if event.kind == "channel_removed":
        return title, ("This channel was removed from the monitor while its incident is "
                       "open; you will not hear more about this incident here.")
    if event.kind in ("escalated", "renotified"):
        return title, f"{incident.summary}\n{event.message}"
    return title, event.message or incident.summary


def marked(event, marks: dict, removed: str, done: str) -> str:
    """How a kind marks an incident ``event`` (a severity's emoji, a colour):
    ``marks[severity]`` while it pages (``critical``'s for a severity it lacks),
    ``removed`` for ``channel_removed``, ``done`` for an acknowledgement, a
    resolve or ``stable``."""
    if event.kind in IncidentEvent.PAGING:
        return marks.get(event.incident.severity, marks["critical"])
    return removed if event.kind == IncidentEvent.Kind.CHANNEL_REMOVED else done


def facts(event, c: dict | None = None) -> list[tuple[str, str]]:
    """(name, value) pairs every notification shows: monitor, cause, severity,
    opening time, scheduled time, last ping (times in the monitor's time zone
    with its offset), run duration. ``c``: the incident's :func:`context`, when
    the caller has it already."""
    incident = event.incident
    monitor = incident.monitor
    c = c or context(incident)
    out = [("Monitor", f"{monitor.name} ({monitor.project.name}/{monitor.slug})"),
           ("Cause", incident.cause), ("Severity", incident.severity),
           ("Opened", local(incident.opened_at, monitor.timezone))]
    if c["scheduled_at"]:
        out.append(("Scheduled", c["scheduled_at"]))
    if monitor.last_ping_at is not None:
        out.append(("Last ping", local(monitor.last_ping_at, monitor.timezone)))
    if c["run_duration"] is not None:
        out.append(("Run took", f"{c['run_duration']}s"))
    return out


ELLIPSIS = "…"  # marks every cut: a reader always sees that text is missing


def cut(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters, its end cut off and marked with
    an ellipsis: integrations truncate to their service's limits, never fail on
    them."""
    return text if len(text) <= limit else text[:max(0, limit - 1)] + ELLIPSIS


def escaped_cut(text: str, limit: int, *, br: bool = False) -> str:
    """``text`` HTML-escaped as element content (``&``, ``<``, ``>``; ``br``:
    newlines as ``<br>``) in at most ``limit``
    characters: cut before escaping, so never inside an entity, the cut marked with
    an ellipsis; it ends within 5 characters of ``limit`` ("" when ``limit`` < 1)."""
    if limit < 1:
        return ""
    n = limit
    while len(out := _escape(cut(text, n), br)) > limit:
        n -= max(1, (len(out) - limit) // 5)  # an escaped character is at most 5 long
    return out


def _escape(text: str, br: bool) -> str:
    out = html.escape(text, quote=False)  # text, not an attribute: & < > only
    return out.replace("\n", "<br>") if br else out


def tail(text: str, limit: int) -> str:
    """The end of ``text`` in at most ``limit`` characters, its start cut off and
    marked with an ellipsis (a log's last lines say most)."""
    return text if len(text) <= limit else ELLIPSIS + text[len(text) - max(0, limit - 1):]


def local(value: datetime, tz: str) -> str:
    """``value`` in time zone ``tz`` with its offset, to the second
    (``2025-01-01T13:00:05+01:00``): how people are shown times."""
    return value.astimezone(ZoneInfo(tz)).replace(microsecond=0).isoformat()


def page_links(c: dict) -> list[tuple[str, str]]:
    """(label, absolute URL) of the links a person is offered in an incident's
    :func:`context` ``c``: Acknowledge and Resolve (signed, no login), the
    incident's and the monitor's dashboard pages; never an API URL (it answers
    401 in a browser)."""
    c = c["links"]
    return [(label, c[key]) for key, label in (
        ("acknowledge", "Acknowledge"), ("resolve", "Resolve"),
        ("incident_page", "Incident"), ("monitor_page", "Monitor")) if c[key]]


def encode_json(document: object) -> bytes:
    """Serialize ``document`` once, canonically (sorted keys, no spaces, UTF-8)."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode()


def isoformat(value: datetime | None) -> str | None:
    """ISO-8601 in UTC with a ``Z`` suffix (the API's format), or None."""
    if value is None:
        return None
    text = value.astimezone(UTC).isoformat()
    return text.removesuffix("+00:00") + "Z"


def outage_text(event) -> str:
    """One sentence describing an ``outage.summary`` notice for people."""
    d = event.detail
    n = d["unknown_slots"]
    runs = "1 expected run" if n == 1 else f"{n} expected runs"
    return (f"CronRadar could not receive pings from {d['started_at']} to "
            f"{d['ended_at']}: {runs} of project {event.project.name} "
            f"fell in that time and are recorded as unknown, not missed.")


OUTAGE_TITLE = "CronRadar was unreachable"
TEST_TITLE = "CronRadar test notification"


def testing_text(channel) -> str:
    """What a channel's test notification says."""
    return (f"This is a test notification from CronRadar to channel {channel}: all is well. "
            "Nothing is wrong with your monitors.")


def channel_page(channel) -> str:
    """The absolute URL of ``channel``'s page on the dashboard (a channel not saved,
    tested before saving: the channels page)."""
    if channel.pk is None:
        return f"{settings.CRONRADAR_BASE_URL}{reverse('dashboard:channels')}"
    return f"{settings.CRONRADAR_BASE_URL}{page('dashboard:channel', channel.pk)}"


def page(name: str, pk: int) -> str:
    """``reverse(name, args=[pk])`` of a route whose one argument is an ``<int:pk>``
    (a dashboard page), the same path, from the route's text reversed once per
    process, URL configuration and script prefix (``reverse`` costs ~15 µs, a
    webhook makes two a notification)."""
    head, tail = _route(name, get_urlconf() or settings.ROOT_URLCONF, get_script_prefix())
    return f"{head}{int(pk)}{tail}"


_MARK = 987_654_321_012_345_678  # an id no path holds by chance


@functools.cache
def _route(name: str, urlconf: str, prefix: str) -> tuple[str, str]:
    """(the path before the id, after it) of ``name`` (:func:`page`); ``prefix``
    is the script prefix ``reverse`` reads."""
    head, mark, tail = reverse(name, urlconf=urlconf, args=[_MARK]).partition(str(_MARK))
    if not mark:
        raise ValueError(f"route {name!r} does not take an integer id")
    return head, tail


def unknown_notice(event) -> ValueError:
    """The error a ``build_notice`` raises for a notice kind it does not build."""
    return ValueError(f"notice kind {event.kind!r} has no builder")


CHANNEL_TITLES = {"channel.failing": "Channel failing", "channel.recovered": "Channel recovered"}


def channel_facts(event) -> dict:
    """The ``channel`` of a ``channel.failing`` / ``channel.recovered`` notice
    (``event.detail["channel"]``, see :mod:`alerts.health`): ``{"id", "name",
    "kind", "failing_since", "last_error", "held"}`` (``failing_since`` ISO-8601;
    ``held``: the channel's notifications pending or being sent). Raises
    ``ValueError`` for another kind of event."""
    if event.kind not in CHANNEL_TITLES:
        raise ValueError(f"event kind {event.kind!r} is not a channel notice")
    return event.detail["channel"]


def channel_text(event) -> tuple[str, str]:
    """(title, text) of a channel notice for people: "Channel failing: Ops hook"
    and what it means, with since when, the last error and what is held."""
    c = channel_facts(event)
    name, held = c["name"], c["held"]
    waiting = f"{held} notification{'s' * (held != 1)}"
    if event.kind == "channel.failing":
        text = (f"Notifications to {name} ({c['kind']}) have been failing since "
                f"{c['failing_since']}: {c['last_error'] or 'no answer'}. {waiting} "
                f"{'is' if held == 1 else 'are'} held and will be sent when it works again.")
    else:
        text = (f"Notifications to {name} ({c['kind']}) are delivered again; it had been "
                f"failing since {c['failing_since']} (last error: "
                f"{c['last_error'] or 'none'}). {waiting} still to send.")
    return f"{CHANNEL_TITLES[event.kind]}: {name}", text


def broken_channel_page(event) -> str:
    """The dashboard page of the channel a ``channel.failing`` /
    ``channel.recovered`` notice is about (its health and deliveries)."""
    return f"{settings.CRONRADAR_BASE_URL}{page('dashboard:channel', channel_facts(event)['id'])}"


def channel_fact_rows(event) -> list[tuple[str, str]]:
    """(name, value) pairs a channel notice shows: channel, failing since, last
    error, held."""
    c = channel_facts(event)
    return [("Channel", f"{c['name']} ({c['kind']} #{c['id']})"),
            ("Failing since", c["failing_since"] or ""), ("Last error", c["last_error"] or ""),
            ("Held", str(c["held"]))]


def check_notifiable(event) -> None:
    """Raise ``ValueError`` unless ``event.kind`` is one that notifies."""
    if event.kind not in NOTIFY_EVENT_KINDS:
        raise ValueError(f"event kind {event.kind!r} does not notify")


def check_fields(config: object, allowed: set[str]) -> dict:
    """Return ``config`` if it is a dict with only ``allowed`` keys, else ValueError."""
    if not isinstance(config, dict):
        raise ValueError("config: must be an object")  # noqa: TRY004 (API contract)
    unknown = sorted(set(config) - allowed)
    if unknown:
        raise ValueError(f"{unknown[0]}: unknown field")
    for key, value in config.items():
        if _has_nul(value):
            raise ValueError(f"{key}: NUL characters are not allowed")
    return config


def _has_nul(value: object) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def validate_url(config: dict, field: str, *, https_only: bool = False) -> str:
    """Return ``config[field]`` if it is an absolute http(s) URL with a host that
    notifications may reach (:func:`core.destinations.check_url`).

    ``https_only`` still accepts ``http`` for loopback hosts (``localhost``,
    127.0.0.0/8, ``::1``) so local receivers and tests work.
    Raises ``ValueError("<field>: <message>")``.
    """
    value = config.get(field)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ValueError(f"{field}: this field is required")
    if not isinstance(value, str):
        raise ValueError(f"{field}: must be a string")
    value = value.strip()
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{field}: must be an http(s) URL")
    try:
        check_url(value)
    except ValueError as exc:
        raise ValueError(f"{field}: {exc}") from None
    if https_only and parts.scheme == "http" and not _is_loopback(parts.hostname):
        raise ValueError(f"{field}: must be an https URL")
    return value


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def json_post(url: str, document: object, **headers: str) -> OutgoingRequest:
    """A POST of ``document`` as canonical JSON with CronRadar's user agent."""
    return OutgoingRequest(url=url, body=encode_json(document), headers={
        "Content-Type": "application/json", "User-Agent": USER_AGENT, **headers})


BODY_TAIL = 500  # characters of the last ping's body a notification carries
LATEST = "_context_latest"  # (latest run, latest ping) set on a monitor by prefetch_latest


def prefetch_latest(monitors) -> None:
    """Read the latest run (by time, one with a slot) and the latest ping of each of ``monitors``
    (distinct instances; those :func:`context` reads) in two queries for all of
    them, and keep them on the instances, so building a batch of notifications
    does not cost two queries each (the delivery engine's batches)."""
    monitors = [m for m in monitors if m.pk is not None]
    if not monitors:
        return
    ids = sorted({m.pk for m in monitors})
    # each monitor's newest by index (monitors.history), not a window over its history
    runs = {r.monitor_id: r
            for r in history.newest_runs_of(ids, 1, where=Q(slot_at__isnull=False))}
    pings = history.newest_pings_of(ids)
    for m in monitors:
        setattr(m, LATEST, (runs.get(m.pk), pings.get(m.pk)))


def context(incident) -> dict:
    """What every incident notification carries besides the incident itself:
    ``scheduled_at`` (the latest run's slot, in the monitor's time zone with its
    offset), ``timezone``, ``last_ping_at``, ``run_duration`` (seconds, of that run,
    when it ended), ``last_ping_body`` (the last 500 characters of the last ping's
    body; a longer body's start is cut off, marked with ``…``) and ``links``:
    signed ``acknowledge`` and ``resolve`` links (valid ``CRONRADAR_LINK_MAX_AGE``),
    the dashboard pages ``monitor_page`` and ``incident_page``, and the API URLs
    ``monitor`` and ``incident`` (all absolute, from ``CRONRADAR_BASE_URL``).
    Reads the monitor's latest run and ping (two small queries), unless
    :func:`prefetch_latest` read them for a batch already."""
    monitor = incident.monitor
    if hasattr(monitor, LATEST):
        run, ping = getattr(monitor, LATEST)
    else:
        run = history.runs_newest_first(monitor).exclude(slot_at=None).first()
        ping = history.latest_ping(monitor)
    body = bytes(ping.body).decode("utf-8", "replace") if ping else ""
    base = settings.CRONRADAR_BASE_URL
    return {
        "scheduled_at": (run.slot_at.astimezone(ZoneInfo(monitor.timezone)).isoformat()
                         if run else None),
        "timezone": monitor.timezone,
        "last_ping_at": isoformat(monitor.last_ping_at),
        "run_duration": (int(run.duration.total_seconds())
                         if run and run.duration is not None else None),
        "last_ping_body": tail(body, BODY_TAIL),
        "links": {
            "acknowledge": links.make(incident.pk, "ack"),
            "resolve": links.make(incident.pk, "resolve"),
            "monitor": f"{base}/api/v1/monitors/{monitor.pk}/",
            "monitor_page": f"{base}{page('dashboard:monitor', monitor.pk)}",
            "incident": f"{base}/api/v1/incidents/{incident.pk}/",
            "incident_page": f"{base}{page('dashboard:incident', incident.pk)}",
        },
    }
