"""The monitors list (``/``): a page of the current project's monitors (status,
schedule in words, last ping, next expected, the last 20 runs), filtered by
status, tags and text, sorted, paged, with the count of every status over all the
monitors the search and tags match.

The status is computed in SQL (:func:`status_sql`, the same rules as
:func:`monitors.slots.status`), so the counts, the status filter, the sort and the
paging are each done by the database whatever the number of monitors: five
queries a page (the tags in use, the counts, the page, its runs, and the session's
own).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from html import escape
from typing import NamedTuple

from django.db.models import (
    Case,
    CharField,
    Count,
    DateTimeField,
    Exists,
    ExpressionWrapper,
    F,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Value,
    When,
)
from django.db.models.functions import Lower
from django.db.models.lookups import GreaterThan
from django.shortcuts import render
from django.utils.safestring import mark_safe

from accounts import plans
from alerts.models import Incident
from cronradar.dashboard.common import ROLE, ago, can, local, page, schedule_words
from cronradar.dashboard.monitors import _run_title
from monitors import history
from monitors.api import STATUSES
from monitors.models import Monitor, Run
from monitors.pings import NEVER

STRIP = 20
PER_PAGE, MAX_PER_PAGE = 50, 200
WORST_FIRST = ("down", "late", "running", "new", "up", "paused")
# the run strip's colours, as the legend says them (Run.Outcome's values)
LEGEND = (("succeeded", "succeeded"), ("failed", "failed"), ("running", "running"),
          ("stuck", "stuck (past max runtime)"), ("replaced", "replaced by a newer start"),
          ("missed", "missed (no ping)"), ("skipped", "skipped (the last run was still on)"),
          ("unknown", "unknown (CronRadar was down)"))


class StripRun(NamedTuple):
    """What a run of the strip shows (as :class:`monitors.models.Run`'s fields)."""

    id: int
    monitor_id: int
    outcome: str
    slot_at: datetime | None
    started_at: datetime | None
    ended_at: datetime | None
    exit_status: int | None
    duration = Run.duration  # the model's own: ended_at - started_at, or None


class BadQuery(ValueError):
    """A query parameter of the list that cannot be used (``str(e)``: the message)."""


def status_sql(now: datetime) -> Case:
    """The display status of :func:`monitors.slots.status` as an SQL expression over
    a monitor queryset annotated with ``is_running`` and ``incident_open`` (see
    :func:`project_monitors`); ``now`` is the clock the whole page uses."""
    late_until = ExpressionWrapper(F("next_expected_at") + F("grace"),
                                   output_field=DateTimeField())
    return Case(
        When(paused=True, then=Value("paused")),
        When(last_ping_at__isnull=True, then=Value("new")),
        When(incident_open=True, then=Value("down")),
        When(is_running=True, then=Value("running")),
        When(next_expected_at__lt=now, then=Case(
            When(GreaterThan(late_until, now), then=Value("late")), default=Value("down"))),
        default=Value("up"), output_field=CharField())


def project_monitors(project, now: datetime) -> QuerySet:
    """The project's monitors (not deleted), annotated with ``is_running``,
    ``incident_open``, ``acknowledged`` (its open incident is acknowledged) and
    ``status`` (:func:`status_sql`)."""
    open_incidents = Incident.objects.filter(monitor=OuterRef("pk"), resolved_at__isnull=True)
    return (Monitor.objects.filter(project=project, deleted_at__isnull=True)
            .annotate(is_running=Exists(Run.objects.open().filter(monitor=OuterRef("pk"))),
                      incident_open=Exists(open_incidents),
                      acknowledged=Exists(open_incidents.filter(acknowledged_at__isnull=False)))
            .annotate(status=status_sql(now)))


@dataclass
class Listing:
    """One page of the list. counts: every status of ``STATUSES`` (0 included) over
    the monitors the search and tags match (the status filter chooses among them);
    total: the monitors every filter matches; page: 1-based, ``pages`` at least 1;
    tags: every tag in use in the project, sorted; chosen: the tag filter."""

    rows: list[dict]
    counts: dict[str, int]
    total: int
    page: int
    pages: int
    per_page: int
    tags: list[str]
    chosen: list[str]


def whole_number(query, name: str, default: int, high: int) -> int:
    """Query parameter ``name`` of ``query``: a whole number from 1 to ``high``
    (``default`` when absent or blank). Raises :class:`BadQuery` naming it."""
    raw = query.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= high:
        raise BadQuery(f"{name} must be a whole number from 1 to {high}, not '{raw[:20]}'")
    return int(raw)


def listing(project, query, now: datetime, zone) -> Listing:
    """The list's page for ``query`` (the request's GET: ``status``, ``tag``
    repeatable (monitors having all of them, as the API's filter), ``q`` (text in
    the name or slug), ``sort`` (``name``, ``status`` worst first, ``last_ping``
    newest first), ``page``, ``per_page`` (default 50, at most 200)), times in
    ``zone``. A page past the last shows the last. Raises :class:`BadQuery`."""
    wanted = query.get("status", "")
    if wanted and wanted not in STATUSES:
        raise BadQuery(f"unknown status '{wanted[:20]}': use {', '.join(STATUSES)}")
    per_page = whole_number(query, "per_page", PER_PAGE, MAX_PER_PAGE)
    number = whole_number(query, "page", 1, 10**6)
    chosen = list(dict.fromkeys(t for t in query.getlist("tag") if t))
    qs = project_monitors(project, now)
    # the distinct tag lists, not each monitor's: a few rows to decode, not 5,000
    combos = [ts for (ts,) in Monitor.objects.filter(project=project, deleted_at__isnull=True)
              .values_list("tags").distinct().order_by()]
    tags = sorted({t for ts in combos for t in ts})
    if chosen:  # the lists having every chosen tag, by equality (SQLite has no JSON
        # containment; each list is the text Django wrote, as json.dumps writes it again)
        qs = qs.filter(tags__in=[ts for ts in combos if all(t in ts for t in chosen)])
    if text := query.get("q", "").strip():
        qs = qs.filter(Q(name__icontains=text) | Q(slug__icontains=text))
    counts = dict.fromkeys(STATUSES, 0)
    counts.update(qs.order_by().values_list("status").annotate(n=Count("pk")))
    total = counts[wanted] if wanted else sum(counts.values())
    pages = max(1, -(-total // per_page))
    number = min(number, pages)
    if wanted:
        qs = qs.filter(status=wanted)
    start = (number - 1) * per_page
    monitors = list(qs.order_by(*_order(query.get("sort")))[start:start + per_page])
    return Listing(rows=_rows(monitors, now, zone), counts=counts, total=total, page=number,
                   pages=pages, per_page=per_page, tags=tags, chosen=chosen)


def _order(sort: str | None) -> list:
    if sort == "status":
        rank = Case(*(When(status=s, then=Value(i)) for i, s in enumerate(WORST_FIRST)),
                    output_field=IntegerField())
        return [rank, Lower("name"), "pk"]
    if sort == "last_ping":
        return [F("last_ping_at").desc(nulls_last=True), Lower("name"), "pk"]
    return [Lower("name"), "pk"]


def _rows(monitors: list[Monitor], now: datetime, zone) -> list[dict]:
    strips = defaultdict(list)
    # each monitor's newest runs by index (monitors.history), as tuples, not 1,000
    # model instances: a fifth of the page's time
    width = len(StripRun._fields)
    for row in history.newest_runs_of([m.pk for m in monitors], STRIP,
                                      (*StripRun._fields, "at")):
        strips[row[1]].append((row[width] or NEVER, StripRun._make(row[:width])))
    out = []
    for m in monitors:
        runs = [r for _, r in sorted(strips[m.pk], key=lambda t: (t[0], t[1].id))]
        out.append({"monitor": m, "status": m.status, "acknowledged": m.acknowledged,
                    "schedule": schedule_words(m.kind, m.schedule,
                                               int(m.period.total_seconds()) if m.period
                                               else None, m.timezone),
                    "last_ping": ago(m.last_ping_at, now),
                    "last_ping_exact": local(m.last_ping_at, zone),
                    "next": local(m.next_expected_at, zone) if not m.paused else "–",
                    "href": f"/monitors/{m.pk}/",
                    # built here with one escape a run, not in the template nor with
                    # format_html (each 3x slower): 50 rows x 20 runs (bench/README.md)
                    "strip": mark_safe("".join(  # noqa: S308 (every value escaped)
                        f'<span class="status-{escape(r.outcome)}" '
                        f'title="{escape(_run_title(r, zone))}"></span>' for r in runs)),
                    "strip_label": ", ".join(r.outcome for r in runs) or "none"})
    return out


def link(query, **changes) -> str:
    """``?`` and ``query`` (a QueryDict) with ``changes`` (a name to a value, a list
    of values, or None to drop it); ``page`` and ``fragment`` are dropped unless
    given, so a link to other filters starts at page 1."""
    q = query.copy()
    for name in ("page", "fragment"):
        q.pop(name, None)
    for name, value in changes.items():
        if value is None:
            q.pop(name, None)
        elif isinstance(value, list):
            q.setlist(name, value)
        else:
            q[name] = str(value)
    return f"?{q.urlencode()}" if q else "?"


@page
def monitor_list(request):
    """``/``: a page of the current project's monitors (:func:`listing`);
    ``?fragment=rows`` answers only that page's table body (the page's refresh
    fetches it every 10 s), with the counts (``X-Counts: new=0,up=5,...``) and the
    title (``X-Title``) as headers. A bad parameter is a 400 page with the message."""
    from django.utils import timezone

    now = timezone.now()
    try:
        found = listing(request.project, request.GET, now, request.zone)
    except BadQuery as e:
        return render(request, "dashboard/error.html", {"title": "Monitors: a bad filter",
                                                        "text": str(e)}, status=400)
    as_of = f"{now.astimezone(request.zone):%H:%M:%S} {request.zone.key}"
    query = request.GET
    tag_links = {t: link(query, tag=[*found.chosen, t]) for t in found.tags
                 if t not in found.chosen}
    for row in found.rows:  # a tag already chosen is not a link: it filters already
        row["tags"] = [(t, tag_links.get(t, "")) for t in row["monitor"].tags]
    context = {"rows": found.rows, "query": query, "as_of": as_of,
               "can_edit": can(request, ROLE.MEMBER),
               "filtered": bool(query.get("status") or found.chosen or query.get("q"))}
    title = f"Monitors ({found.counts['down']} down)" if found.counts["down"] else "Monitors"
    if request.GET.get("fragment") == "rows":
        response = render(request, "dashboard/_monitor_rows.html", context)
        response["X-As-Of"] = as_of  # the refresh shows it: the server's clock, their zone
        # and the counts and the title, refreshed with the rows (status=count,...)
        response["X-Counts"] = ",".join(f"{s}={n}" for s, n in found.counts.items())
        response["X-Title"] = title
        return response
    wanted = query.get("status", "")
    context.update({
        "found": found, "statuses": STATUSES, "legend": LEGEND,
        "counts": [(s, n, link(query, status=s), s == wanted)
                   for s, n in found.counts.items()],
        "all_link": link(query, status=None), "all_count": sum(found.counts.values()),
        "tag_links": tag_links,
        "chosen_tags": [(t, link(query, tag=[c for c in found.chosen if c != t]))
                        for t in found.chosen],
        "previous": link(query, page=found.page - 1) if found.page > 1 else "",
        "next": link(query, page=found.page + 1) if found.page < found.pages else "",
        "title": title,
        "plan_limit": plans.refusal(request.project.organisation, "monitors")})
    return render(request, "dashboard/monitors.html", context)
