"""Dashboard pages about monitors: the list (status, schedule in words, last ping,
next expected, the last 20 runs), one monitor (settings, ping URLs and snippets,
runs with a duration chart, pings with bodies, incidents), create and edit
(validated by the API's serializer, so the rules are the API's), pause/resume
and delete with confirmation."""
from __future__ import annotations

from collections import defaultdict

from django.db.models import Exists, F, OuterRef, Q, Window
from django.db.models.functions import RowNumber
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import format_html_join
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from accounts import plans
from alerts.api import MonitorSerializer
from alerts.models import Channel, EscalationPolicy, Incident
from cronradar.dashboard import badges, charts, events, snippets
from cronradar.dashboard.common import (
    ROLE,
    ago,
    can,
    duration,
    flat_errors,
    form_ids,
    local,
    page,
    require,
    schedule_words,
)
from monitors import evaluator, slots, usage
from monitors.api import STATUSES
from monitors.models import Monitor, Ping, PingUsage, Run
from monitors.runs import REASONS

STRIP = 20
WORST_FIRST = ("down", "late", "running", "new", "up", "paused")
SORTS = {"name": lambda r: r["monitor"].name.lower(),
         "status": lambda r: (WORST_FIRST.index(r["status"]), r["monitor"].name.lower()),
         "last_ping": lambda r: -(r["monitor"].last_ping_at.timestamp()
                                  if r["monitor"].last_ping_at else 0)}


def rows(request, now) -> tuple[list[dict], list[str]]:
    """The current project's monitors as table rows, filtered and sorted by the
    query (``status``, ``tag``, ``q``, ``sort``), and every tag in use. Three
    queries whatever the number of monitors: monitors (with running and open-
    incident flags), the last ``STRIP`` runs of each (one window query), tags."""
    qs = (Monitor.objects.filter(project=request.project, deleted_at__isnull=True)
          .annotate(is_running=Exists(Run.objects.open().filter(monitor=OuterRef("pk"))),
                    incident_open=Exists(Incident.objects.filter(
                        monitor=OuterRef("pk"), resolved_at__isnull=True))))
    if text := request.GET.get("q", "").strip():
        qs = qs.filter(Q(name__icontains=text) | Q(slug__icontains=text))
    monitors = list(qs)
    strips = defaultdict(list)
    recent = (Run.objects.filter(monitor__in=[m.pk for m in monitors])
              .annotate(n=Window(RowNumber(), partition_by=[F("monitor_id")],
                                 order_by=F("id").desc()))
              .filter(n__lte=STRIP).only("monitor_id", "outcome", "slot_at", "started_at",
                                         "ended_at", "exit_status"))
    for run in recent:
        strips[run.monitor_id].append(run)
    tags = sorted({t for m in monitors for t in m.tags})
    wanted_status, wanted_tag = request.GET.get("status", ""), request.GET.get("tag", "")
    out = []
    for m in monitors:
        status = slots.status(m, now, running=m.is_running, incident_open=m.incident_open)
        if (wanted_status and status != wanted_status) or (wanted_tag and wanted_tag not in
                                                           m.tags):
            continue
        runs = sorted(strips[m.pk], key=lambda r: r.pk)
        out.append({"monitor": m, "status": status,
                    "schedule": schedule_words(m.kind, m.schedule,
                                               int(m.period.total_seconds()) if m.period
                                               else None, m.timezone),
                    "last_ping": ago(m.last_ping_at, now),
                    "last_ping_exact": local(m.last_ping_at, request.zone),
                    "next": local(m.next_expected_at, request.zone) if not m.paused else "–",
                    "href": f"/monitors/{m.pk}/",
                    # built here, not in the template: 1,000 rows x 20 runs (bench/README.md)
                    "strip": format_html_join("", '<span class="status-{}" title="{}"></span>',
                                              ((r.outcome, _run_title(r, request.zone))
                                               for r in runs)),
                    "strip_label": ", ".join(r.outcome for r in runs) or "none"})
    out.sort(key=SORTS.get(request.GET.get("sort"), SORTS["name"]))
    return out, tags


def _run_title(run: Run, zone) -> str:
    when = run.slot_at or run.started_at or run.ended_at
    code = f", exit {run.exit_status}" if run.exit_status is not None else ""
    return f"{local(when, zone)}: {run.outcome}{code}, took {duration(run.duration)}"


@page
def monitor_list(request):
    """``/``: every monitor of the current project; ``?fragment=rows`` answers only
    the table body (the page's refresh fetches it every 10 s)."""
    from django.utils import timezone

    now = timezone.now()
    table, tags = rows(request, now)
    as_of = f"{now.astimezone(request.zone):%H:%M:%S} {request.zone.key}"
    context = {"rows": table, "tags": tags, "statuses": STATUSES, "query": request.GET,
               "can_edit": can(request, ROLE.MEMBER), "as_of": as_of}
    if request.GET.get("fragment") == "rows":
        response = render(request, "dashboard/_monitor_rows.html", context)
        response["X-As-Of"] = as_of  # the refresh shows it: the server's clock, their zone
        return response
    context["plan_limit"] = plans.refusal(request.project.organisation, "monitors")
    return render(request, "dashboard/monitors.html", context)


def _monitor(request, pk) -> Monitor:
    monitor = (Monitor.objects.filter(pk=pk, project=request.project, deleted_at__isnull=True)
               .annotate(is_running=Exists(Run.objects.open().filter(monitor=OuterRef("pk"))),
                         incident_open=Exists(Incident.objects.filter(
                             monitor=OuterRef("pk"), resolved_at__isnull=True)))
               .select_related("project").first())
    if monitor is None:
        raise Http404
    return monitor


@page
def monitor_detail(request, pk: int):
    """``/monitors/<id>/``: everything about one monitor."""
    from django.utils import timezone

    now = timezone.now()
    m = _monitor(request, pk)
    runs = list(Run.objects.filter(monitor=m).order_by("-pk")[:50])
    chart = charts.durations_svg(list(reversed(runs)), m.max_runtime, m.min_runtime,
                                 lambda r: _run_title(r, request.zone))
    show_urls = can(request, ROLE.MEMBER)  # a ping changes the monitor: not for viewers
    context = {
        "m": m, "status": slots.status(m, now, running=m.is_running,
                                       incident_open=m.incident_open),
        "schedule": schedule_words(m.kind, m.schedule, int(m.period.total_seconds())
                                   if m.period else None, m.timezone),
        "last_ping": ago(m.last_ping_at, now), "last_ping_exact": local(m.last_ping_at,
                                                                        request.zone),
        "next": local(m.next_expected_at, request.zone),
        "runs": [{"run": r, "slot": local(r.slot_at, request.zone),
                  "start": local(r.started_at, request.zone),
                  "end": local(r.ended_at, request.zone), "took": duration(r.duration),
                  "why": REASONS.get(r.reason, "")}
                 for r in runs],
        "pings_refused": PingUsage.objects.filter(monitor=m, month=usage.month_of(now))
        .values_list("refused", flat=True).first() or 0,
        "chart": mark_safe(chart),  # noqa: S308 (built from numbers and escaped titles)
        "pings": [{"ping": p, "at": local(p.received_at, request.zone),
                   "body": bytes(p.body).decode("utf-8", "replace")}
                  for p in Ping.objects.filter(monitor=m).order_by("-pk")[:50]],
        "incidents": [{"incident": i, "opened": local(i.opened_at, request.zone)}
                      for i in Incident.objects.filter(monitor=m).order_by("-pk")[:20]],
        "settings": _settings_rows(m),
        "snippets": snippets.all_snippets(m, m.ping_url) if show_urls else {},
        "urls": {"uuid": m.ping_url, "slug": f"{m.ping_url.rsplit('/', 1)[0]}/"
                                             f"{m.project.ping_key}/{m.slug}"}
        if show_urls else {},
        "can_edit": can(request, ROLE.MEMBER),
        "badges": [(f"#{t}" if t else m.slug, badges.url(m.project, t or m.slug))
                   for t in ["", *m.tags]],
        **events.sections(m, now, request.zone),  # downtime, run statistics, advice
    }
    return render(request, "dashboard/monitor.html", context)


def _settings_rows(m: Monitor) -> list[tuple[str, str]]:
    return [("Kind", m.kind), ("Schedule", m.schedule or f"every {duration(m.period)}"),
            ("Time zone", m.timezone), ("Cron semantics", m.cron_semantics),
            ("Grace", duration(m.grace)), ("Max runtime", duration(m.max_runtime)),
            ("Min runtime", duration(m.min_runtime)), ("Deadline", duration(m.deadline)),
            ("Concurrency", m.concurrency), ("Max attempts", str(m.max_attempts)),
            ("Tags", ", ".join(m.tags) or "–"), ("Slug", m.slug)]


FORM_FIELDS = ["name", "slug", "kind", "schedule", "timezone", "cron_semantics", "period",
               "grace", "max_runtime", "deadline", "min_runtime", "concurrency",
               "max_attempts", "tags", "severity", "urgency", "escalation_policy", "channels"]
OPTIONAL = {"period", "max_runtime", "deadline", "min_runtime", "severity",
            "escalation_policy"}


def _form_data(post) -> tuple[dict, dict]:
    """The edit form's fields as the API takes them (empty optional fields: null),
    and the errors of values that are not even of the right shape (a channel that
    is not an id)."""
    data, errors = {}, {}
    for name in FORM_FIELDS:
        if name == "channels":
            ids, bad = form_ids(post.getlist("channels"))
            if bad:
                errors["channels"] = f"not a channel id: {', '.join(map(repr, bad))}"
            data["channels"] = "all" if post.get("all_channels") else ids
        elif name == "tags":
            data["tags"] = [t.strip() for t in post.get("tags", "").split(",") if t.strip()]
        elif name in post:
            value = post.get(name, "").strip()
            data[name] = None if (value == "" and name in OPTIONAL) else value
    if data.get("kind") == "interval":
        data.pop("schedule", None)
    return data, errors


@page
def monitor_edit(request, pk: int | None = None):
    """``/monitors/new/`` and ``/monitors/<id>/edit/``: the form; the POST is checked
    by the API's serializer and its messages are shown by each field."""
    require(request, ROLE.MEMBER)
    instance = _monitor(request, pk) if pk else None
    errors, values, refused = {}, {}, ""
    if request.method == "POST":
        data, errors = _form_data(request.POST)
        serializer = MonitorSerializer(instance, data={**data, "project": request.project.pk},
                                       partial=instance is not None,
                                       context={"request": request})
        if not errors and serializer.is_valid():
            try:
                saved = serializer.save()
                return redirect("dashboard:monitor", pk=saved.pk)
            except plans.PlanLimit as e:
                refused = errors["detail"] = str(e.detail)
        if not errors:
            errors = flat_errors(serializer.errors)
        values = request.POST
    elif instance is not None:
        values = MonitorSerializer(instance, context={"request": request}).data
    channels = Channel.objects.filter(project=request.project, deleted_at__isnull=True)
    chosen = values.get("channels", "all") if not hasattr(values, "getlist") else (
        "all" if values.get("all_channels") else form_ids(values.getlist("channels"))[0])
    labels = {"non_field_errors": "Monitor", "detail": "Monitor", "max_attempts": "Attempts",
              "cron_semantics": "Cron semantics", "escalation_policy": "Escalation policy",
              "max_runtime": "Max runtime", "min_runtime": "Min runtime",
              "concurrency": "Overlapping runs"}
    error_list = [(labels.get(k, k.replace("_", " ").capitalize()), v)
                  for k, v in errors.items()]
    return render(request, "dashboard/monitor_form.html", {
        "m": instance, "values": values, "errors": errors, "error_list": error_list,
        "channels": channels,
        "chosen": chosen, "policies": EscalationPolicy.objects.filter(project=request.project),
        "tags_text": ", ".join(values.get("tags", [])) if isinstance(values.get("tags"), list)
        else values.get("tags", ""),
        "plan_limit": "" if instance is not None or refused
        else plans.refusal(request.project.organisation, "monitors"),
    }, status=403 if refused else 400 if errors else 200)


@page
@require_POST
def monitor_pause(request, pk: int):
    """POST ``/monitors/<id>/pause/`` (``paused=0`` resumes)."""
    from django.utils import timezone

    require(request, ROLE.MEMBER)
    m = _monitor(request, pk)
    evaluator.edit(m.pk, {"paused": request.POST.get("paused") != "0"}, timezone.now())
    return redirect("dashboard:monitor", pk=m.pk)


@page
def monitor_delete(request, pk: int):
    """``/monitors/<id>/delete/``: a confirmation page (GET), the deletion (POST)."""
    from django.utils import timezone

    require(request, ROLE.MEMBER)
    m = _monitor(request, pk)
    if request.method == "POST":
        evaluator.delete(m.pk, timezone.now())
        return redirect("dashboard:monitors")
    return render(request, "dashboard/confirm.html", {
        "title": f"Delete monitor {m.name}?", "action": "Delete monitor",
        "text": "Its pings and runs go with it; an open incident is resolved and every "
                "channel it notified gets the resolve.",
        "back": reverse("dashboard:monitor", args=[m.pk])})
