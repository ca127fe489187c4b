"""A monitor's history on the dashboard: the event log (``/monitors/<id>/events/``:
pings, runs, incident timeline events and notifications in one timeline, newest
first, filtered by kind, paged back as far as retention keeps them), a ping's body
(``/monitors/<id>/pings/<ping id>/body/``, text/plain), and what the monitor page
adds from them: downtime per month, the run statistics and the advisor's
recommendation.

The assembly is plain functions the tests call (:func:`timeline`, :func:`downtime`,
:func:`kept`, :func:`sections`); the views only parse the query and render.

Paging is a keyset on time: an event's key is (time, kind rank, id), newest first;
``?before=<key>`` gives the events older than that key. Each kind is one query
limited to the page size plus one (the merge takes the newest page of all of
them in Python), so a page is four queries whatever the history holds, and two
events at the same time are never lost or shown twice across pages.
"""
from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from urllib.parse import urlencode

from django.conf import settings
from django.db.models import Q
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, render

from accounts import plans
from alerts.models import Delivery, Incident, IncidentEvent
from cronradar.dashboard.common import MAX_ID, duration, local, page
from insights import stats
from insights.api import monitor_advice
from monitors import history
from monitors.models import Monitor
from monitors.runs import REASONS

KINDS = ("ping", "run", "incident", "notification")  # also the rank at equal times
PAGE = 50
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# incident causes that mean the job did not do its work (downtime per month)
DOWN_CAUSES = ("missed", "stuck", "deadline", "failed")
NOT_DOWN_CAUSES = tuple(c for c in Incident.Cause.values if c not in DOWN_CAUSES)
MONTHS = 6


@dataclass(frozen=True)
class Event:
    """One line of the event log. ``kind``: one of :data:`KINDS`; ``pk``: the row's
    id in its table (a ping, a run, an incident event, a delivery); ``what``: its
    coded state (a ping's kind, a run's outcome, an incident event's kind, a
    delivery's status); ``text``: the facts in words; ``href``: where more is
    (an incident's page), ``body``: the ping body's URL ("" without one)."""

    at: datetime
    kind: str
    pk: int
    what: str
    text: str
    href: str = ""
    body: str = ""

    @property
    def key(self) -> tuple[datetime, int, int]:
        return self.at, KINDS.index(self.kind), self.pk

    @property
    def cursor(self) -> str:
        """The key as ``?before=`` takes it: ``<microseconds since 1970>_<kind>_<id>``."""
        at = self.at - EPOCH
        micros = (at.days * 86400 + at.seconds) * 1_000_000 + at.microseconds
        return f"{micros}_{self.kind}_{self.pk}"


@dataclass(frozen=True)
class Page:
    """A page of the log: ``events`` newest first, ``older`` the cursor of the next
    page (None: nothing older is kept)."""

    events: list[Event]
    older: str | None


class BadQuery(ValueError):
    """A ``kind`` or ``before`` the log does not know (the page answers 400 with
    the message)."""


def parse_cursor(value: str | None) -> tuple[datetime, int, int] | None:
    """The key of ``?before=`` (see :attr:`Event.cursor`); None when absent.
    :class:`BadQuery` when it is not one."""
    if value is None or value == "":
        return None
    bad = BadQuery(f"before: not a position in the log: {value[:40]!r}")
    parts = value.split("_")
    if (len(parts) != 3 or parts[1] not in KINDS
            or not all(p.isascii() and p.isdigit() and len(p) <= 19 for p in parts[::2])
            or int(parts[2]) > MAX_ID):
        raise bad
    try:
        at = EPOCH + timedelta(microseconds=int(parts[0]))
    except OverflowError:  # past the year 9999
        raise bad from None
    return at, KINDS.index(parts[1]), int(parts[2])


def parse_kinds(values: Sequence[str]) -> tuple[str, ...]:
    """The kinds ``?kind=`` asks for (every kind when none), in :data:`KINDS` order;
    :class:`BadQuery` naming an unknown one."""
    unknown = [v for v in values if v not in KINDS]
    if unknown:
        raise BadQuery(f"kind: {unknown[0][:40]!r} is not one of {', '.join(KINDS)}")
    return tuple(k for k in KINDS if k in values) or KINDS


def _older(qs, field: str, kind: str, cursor, by_hour: bool = False):
    """``qs`` limited to rows whose key (``field``, the kind's rank, id) is below
    ``cursor``: the same time is older only for a lower rank, or the same rank and
    a lower id. by_hour: a run or ping history (:mod:`monitors.history`), bounded
    by its hour too (its index's key on PostgreSQL)."""
    if cursor is None:
        return qs
    at, rank, pk = cursor
    mine = KINDS.index(kind)
    if by_hour:
        qs = history.before(qs, at, field, inclusive=True)
    if mine < rank:
        return qs.filter(**{f"{field}__lte": at})
    if mine > rank:
        return qs.filter(**{f"{field}__lt": at})
    return qs.filter(Q(**{f"{field}__lt": at}) | Q(**{field: at, "pk__lt": pk}))


def _pings(m: Monitor, cursor, n: int, zone) -> list[Event]:
    # the pings it keeps (monitors.history.kept_pings); the bodies are not read
    qs = _older(history.kept_pings(m), "received_at", "ping", cursor, by_hour=True)
    out = []
    for p in qs.defer("body")[:n]:
        facts = [f"exit {p.exit_status}" if p.exit_status is not None else "",
                 f"{p.body_size} bytes{' (truncated)' if p.body_truncated else ''}"
                 if p.body_size else "",
                 "duplicate" if p.duplicate else "",
                 f"{p.method} from {p.remote_addr}" if p.remote_addr else p.method]
        out.append(Event(p.received_at, "ping", p.pk, p.kind, ", ".join(f for f in facts if f),
                         body=f"/monitors/{m.pk}/pings/{p.pk}/body/" if p.body_size else ""))
    return out


def _runs(m: Monitor, cursor, n: int, zone) -> list[Event]:
    # a run's time is its start, else its end, else its slot (as the runs list's since)
    qs = history.runs(m).filter(at__isnull=False)
    out = []
    for r in history.newest_first(_older(qs, "at", "run", cursor, by_hour=True))[:n]:
        facts = [f"slot {local(r.slot_at, zone)}" if r.slot_at else "",
                 f"took {duration(r.duration)}" if r.duration is not None else "",
                 f"exit {r.exit_status}" if r.exit_status is not None else "",
                 f"{r.reason}: {REASONS[r.reason]}" if r.reason else ""]
        out.append(Event(r.at, "run", r.pk, r.outcome, ", ".join(f for f in facts if f)))
    return out


def _incident_events(m: Monitor, cursor, n: int, zone) -> list[Event]:
    qs = _older(IncidentEvent.objects.filter(incident__monitor=m), "at", "incident", cursor)
    out = []
    for e in qs.order_by("-at", "-pk")[:n]:
        text = f"incident #{e.incident_id}" + (f": {e.message}" if e.message else "")
        if e.count > 1:
            text += f" (×{e.count}, last {local(e.last_at, zone)})"
        out.append(Event(e.at, "incident", e.pk, e.kind, text,
                         href=f"/incidents/{e.incident_id}/"))
    return out


def _notifications(m: Monitor, cursor, n: int, zone) -> list[Event]:
    # a delivery's time is when it became due (created_at: every row has one)
    qs = _older(Delivery.objects.filter(incident__monitor=m), "created_at", "notification",
                cursor)
    out = []
    for d in qs.select_related("channel", "event").order_by("-created_at", "-pk")[:n]:
        channel = d.channel.name or f"{d.channel.kind} #{d.channel_id}"
        text = (f"{channel} ({d.channel.kind}): {d.event.kind} of incident #{d.incident_id}, "
                f"{d.attempts} attempt{'' if d.attempts == 1 else 's'}")
        if d.delivered_at:
            text += f", delivered {local(d.delivered_at, zone)}"
        if d.last_error:
            text += f": {d.last_error}"
        out.append(Event(d.created_at, "notification", d.pk, d.status, text,
                         href=f"/incidents/{d.incident_id}/"))
    return out


READERS = {"ping": _pings, "run": _runs, "incident": _incident_events,
           "notification": _notifications}


def timeline(m: Monitor, kinds: Iterable[str] = KINDS,
             before: tuple[datetime, int, int] | None = None, zone=UTC,
             size: int = PAGE) -> Page:
    """The page of ``m``'s log older than ``before`` (a key from :func:`parse_cursor`;
    None: the newest), of the ``kinds`` asked for (see :data:`KINDS`), ``size``
    events at most, newest first (equal times: notification, incident, run, ping,
    then the higher id first). One query per kind, each limited to ``size`` + 1
    rows, merged here; times in the texts are shown in ``zone``."""
    kinds = [k for k in KINDS if k in set(kinds)]
    streams = [READERS[k](m, before, size + 1, zone) for k in kinds]
    merged = list(heapq.merge(*streams, key=lambda e: e.key, reverse=True))
    shown = merged[:size]
    return Page(shown, shown[-1].cursor if len(merged) > size else None)


def _days(value: float) -> str:
    return f"{value:g} day{'' if value == 1 else 's'}"


def kept(m: Monitor) -> list[str]:
    """What retention keeps of ``m``'s history (the settings, or its organisation's
    plan where it says; docs/configuration.md, "Retention"), one sentence per kind
    of row: how far back the log can go."""
    limits = plans.limits(m.project.organisation)
    pings = limits["pings_kept"] or settings.CRONRADAR_KEEP_PINGS
    run_days = limits["run_retention_days"] or settings.CRONRADAR_RUN_RETENTION_DAYS
    incident_days = (limits["incident_retention_days"]
                     or settings.CRONRADAR_INCIDENT_RETENTION_DAYS)
    return [f"pings: the newest {pings}",
            f"runs: the newest {settings.CRONRADAR_KEEP_RUNS}, and every run of the last "
            f"{_days(run_days)}",
            f"incidents, with their timeline and notifications: until {_days(incident_days)} "
            "after they are resolved"]


# --- the views -------------------------------------------------------------------------

def _monitor(request, pk: int) -> Monitor:
    # with its plan: the page says what retention keeps (kept)
    return get_object_or_404(Monitor.objects.select_related("project__organisation__plan"),
                             pk=pk, project=request.project, deleted_at__isnull=True)


@page
def event_log(request, pk: int):
    """``/monitors/<id>/events/`` (``?kind=`` any of :data:`KINDS`, several at once;
    ``?before=``: the older page). An unknown kind or position: 400."""
    m = _monitor(request, pk)
    try:
        kinds = parse_kinds(request.GET.getlist("kind"))
        before = parse_cursor(request.GET.get("before"))
    except BadQuery as e:
        return render(request, "dashboard/error.html", {"title": "Bad request",
                                                        "text": str(e)}, status=400)
    log = timeline(m, kinds, before, request.zone)
    filtered = [("kind", k) for k in kinds] if kinds != KINDS else []
    return render(request, "dashboard/monitor_events.html", {
        "m": m, "kinds": KINDS, "chosen": kinds, "paged": before is not None,
        "events": [{"e": e, "at": local(e.at, request.zone)} for e in log.events],
        "older": f"?{urlencode([*filtered, ('before', log.older)])}" if log.older else "",
        "newest": f"?{urlencode(filtered)}" if filtered else "?",
        "kept": kept(m)})


@page
def ping_body(request, pk: int, ping_pk: int):
    """``/monitors/<id>/pings/<ping id>/body/``: the body as it was stored (UTF-8,
    undecodable bytes replaced), text/plain; a ping of another monitor or project:
    404."""
    m = _monitor(request, pk)
    body = (history.pings(m).filter(pk=ping_pk).values_list("body", flat=True).first()
            if 0 < ping_pk <= MAX_ID else None)
    if body is None:
        raise Http404
    response = HttpResponse(bytes(body).decode("utf-8", "replace"),
                            content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = "inline"
    return response


# --- what the monitor page adds ----------------------------------------------------------

@dataclass(frozen=True)
class Month:
    """Downtime in one calendar month of a zone: ``start`` its first day,
    ``count`` the incidents that opened in it, ``total`` the time they (and ones
    still running from the month before) were open within it."""

    start: date
    count: int
    total: timedelta


def month_starts(now: datetime, zone, months: int = MONTHS) -> list[datetime]:
    """Midnight of the 1st, in ``zone``, of the ``months`` months up to ``now``'s
    (newest first), and of the month after it (so each month is [start, next))."""
    here = now.astimezone(zone)
    index = here.year * 12 + here.month - 1  # months since the year 0
    return [datetime(i // 12, i % 12 + 1, 1, tzinfo=zone)
            for i in range(index + 1, index - months, -1)]


def downtime(spans: Iterable[tuple[datetime, datetime | None]], now: datetime, zone,
             months: int = MONTHS) -> list[Month]:
    """Downtime per calendar month in ``zone``, the ``months`` months up to ``now``'s,
    newest first; a month without any is there with 0.

    ``spans``: (opened, resolved or None while open) of the incidents that count.
    An incident counts in the month it opened; its time is split at midnight of
    the 1st, each month getting the part within it (an open one up to ``now``)."""
    starts = month_starts(now, zone, months)
    spans = [(o, min(r or now, now)) for o, r in spans]
    out = []
    for end, start in zip(starts, starts[1:], strict=False):
        count = sum(1 for o, _ in spans if start <= o < end)
        total = sum((min(r, end) - max(o, start) for o, r in spans if o < end and r > start),
                    timedelta())
        out.append(Month(start.date(), count, total))
    return out


def monitor_downtime(m: Monitor, now: datetime, zone, months: int = MONTHS) -> list[Month]:
    """:func:`downtime` of ``m``'s incidents whose cause is one of
    :data:`DOWN_CAUSES` (one query)."""
    first = month_starts(now, zone, months)[-1]
    spans = (Incident.objects.filter(monitor=m, cause__in=DOWN_CAUSES, opened_at__lt=now)
             .filter(Q(resolved_at__isnull=True) | Q(resolved_at__gt=first))
             .values_list("opened_at", "resolved_at"))
    return downtime(spans, now, zone, months)


def _seconds(value: int | None) -> str:
    if value is None:
        return "–"
    return duration(timedelta(seconds=value)) if value >= 0 else f"{-value} s early"


def sections(m: Monitor, now: datetime, zone) -> dict:
    """The monitor page's downtime, run statistics and advice (four queries:
    incidents, the runs of the statistics, the advisor's two)."""
    figures = stats.summarize(stats.select_runs(m, settings.CRONRADAR_STATS_RUNS)[0],
                              m.max_attempts)
    rate = "–" if figures.success_rate is None else f"{figures.success_rate:.1%}"
    return {
        "downtime": [{"month": f"{d.start:%B %Y}", "count": d.count,
                      "total": duration(d.total) if d.total else "0"}
                     for d in monitor_downtime(m, now, zone)],
        "down_causes": ", ".join(DOWN_CAUSES), "not_down_causes": ", ".join(
            c.replace("_", " ") for c in NOT_DOWN_CAUSES),
        "stats": {"runs": figures.runs, "rate": rate, "judged": figures.judged,
                  "succeeded": figures.succeeded,
                  "p50": _seconds(figures.duration.p50), "p95": _seconds(figures.duration.p95),
                  "max": _seconds(figures.duration.max),
                  "late_p50": _seconds(figures.late_start.p50),
                  "late_p95": _seconds(figures.late_start.p95),
                  "missed": figures.missed, "skipped": figures.skipped,
                  "overlaps": figures.overlaps, "double_launches": figures.double_launches},
        "advice": monitor_advice(m, now),
    }
