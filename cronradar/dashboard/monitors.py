"""Dashboard pages about monitors (the list: :mod:`cronradar.dashboard.monitorlist`):
one monitor (settings, ping URLs and snippets, runs with a duration chart, pings
with bodies, incidents), create and edit (validated by the API's serializer, so
the rules are the API's), pause/resume and delete with confirmation."""
from __future__ import annotations

from django.db.models import Exists, OuterRef
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from accounts import plans
from alerts.api import MonitorSerializer
from alerts.models import Channel, EscalationPolicy, Incident
from alerts.timeline import alerting_of
from cronradar.dashboard import badges, charts, events, forms, snippets
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
from monitors import evaluator, history, preview, slots, usage
from monitors.models import Monitor, PingUsage, Run
from monitors.runs import REASONS
from monitors.schedule import ScheduleError


def _run_title(run: Run, zone) -> str:
    when = run.slot_at or run.started_at or run.ended_at
    code = f", exit {run.exit_status}" if run.exit_status is not None else ""
    return f"{local(when, zone)}: {run.outcome}{code}, took {duration(run.duration)}"


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
    runs = list(history.runs_newest_first(m)[:50])
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
                  for p in history.newest_pings(m, 50)],
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
    a = alerting_of(m)
    return [("Kind", m.kind), ("Schedule", m.schedule or f"every {duration(m.period)}"),
            ("Time zone", m.timezone), ("Cron semantics", m.cron_semantics),
            ("Grace", duration(m.grace)), ("Max runtime", duration(m.max_runtime)),
            ("Min runtime", duration(m.min_runtime)), ("Deadline", duration(m.deadline)),
            ("Slow factor", str(m.slow_factor) if m.slow_factor is not None else "off"),
            ("Concurrency", m.concurrency), ("Max attempts", str(m.max_attempts)),
            ("Ping methods", m.methods or "any"),
            ("Failure threshold", str(a.failure_threshold)),
            ("Recovery threshold", str(a.recovery_threshold)),
            ("Renotify", duration(a.renotify) if a.renotify else "never"),
            ("Urgency", a.urgency), ("Severity", a.severity or "from the cause"),
            ("Tags", ", ".join(m.tags) or "–"), ("Slug", m.slug),
            ("Description", forms.linked_text(m.description) if m.description else "–")]


FORM_FIELDS = ["name", "slug", "description", "kind", "schedule", "timezone", "cron_semantics",
               "period", "grace", "max_runtime", "deadline", "min_runtime", "slow_factor",
               "concurrency", "max_attempts", "methods", "paused", "tags", "severity",
               "urgency", "escalation_policy", "renotify", "failure_threshold",
               "recovery_threshold", "channels"]
DURATIONS = ("period", "grace", "max_runtime", "deadline", "min_runtime", "renotify")
OPTIONAL = {"period", "max_runtime", "deadline", "min_runtime", "severity",
            "escalation_policy", "slow_factor", "renotify"}


def _form_data(post) -> tuple[dict, dict]:
    """The edit form's fields as the API takes them (empty optional fields: null;
    durations from a number and its ``<name>_unit``, in seconds), and the errors of
    values that are not even of the right shape (a channel that is not an id, a
    duration that is not whole seconds)."""
    data, errors = {}, {}
    for name in FORM_FIELDS:
        if name == "channels":
            ids, bad = form_ids(post.getlist("channels"))
            if bad:
                errors["channels"] = f"not a channel id: {', '.join(map(repr, bad))}"
            data["channels"] = "all" if post.get("all_channels") else ids
        elif name == "tags":
            data["tags"] = [t.strip() for t in post.get("tags", "").split(",") if t.strip()]
        elif name in DURATIONS and name in post:
            data[name], problem = forms.join_seconds(post.get(name, ""),
                                                     post.get(f"{name}_unit", "seconds"))
            if problem:
                errors[name] = problem
        elif name == "description" and name in post:
            data[name] = post.get(name, "").replace("\r\n", "\n")
        elif name in post:
            value = post.get(name, "").strip()
            data[name] = None if (value == "" and name in OPTIONAL) else value
    if data.get("kind") == "interval":
        data.pop("schedule", None)
    return data, errors


def _durations(values) -> dict[str, tuple[str, str]]:
    """Each duration field as (number, unit) for the form: as typed on a redisplay
    (a POST), else from the stored seconds."""
    if hasattr(values, "getlist"):
        return {n: (values.get(n, ""), values.get(f"{n}_unit", "seconds")) for n in DURATIONS}
    return {n: forms.split_seconds(values.get(n)) for n in DURATIONS}


def _preview(request, values) -> dict | None:
    """The schedule preview of the form's values (None for an interval monitor or an
    empty schedule): {"preview": Preview} or {"error": the engine's message}."""
    from django.utils import timezone

    expr = (values.get("schedule") or "").strip()
    if values.get("kind", "cron") != "cron" or not expr:
        return None
    try:
        return {"preview": preview.preview(
            expr, values.get("timezone") or "UTC", values.get("cron_semantics") or "debian",
            request.zone.key, timezone.now())}
    except ScheduleError as e:
        return {"error": str(e)}


@page
def monitor_edit(request, pk: int | None = None):
    """``/monitors/new/`` and ``/monitors/<id>/edit/``: the form; the POST is checked
    by the API's serializer and its messages are shown by each field. A POST with
    ``preview`` saves nothing: it shows the form again with the schedule preview."""
    require(request, ROLE.MEMBER)
    instance = _monitor(request, pk) if pk else None
    errors, values, refused = {}, {}, ""
    if request.method == "POST" and "preview" in request.POST:
        values = request.POST
    elif request.method == "POST":
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
    else:
        values = {"timezone": request.zone.key, "failure_threshold": 1,
                  "recovery_threshold": 1, "max_attempts": 1}
    channels = Channel.objects.filter(project=request.project, deleted_at__isnull=True)
    chosen = values.get("channels", "all") if not hasattr(values, "getlist") else (
        "all" if values.get("all_channels") else form_ids(values.getlist("channels"))[0])
    labels = {"non_field_errors": "Monitor", "detail": "Monitor", "max_attempts": "Attempts",
              "cron_semantics": "Cron semantics", "escalation_policy": "Escalation policy",
              "max_runtime": "Max runtime", "min_runtime": "Min runtime",
              "concurrency": "Overlapping runs", "slow_factor": "Slow factor",
              "failure_threshold": "Failure threshold",
              "recovery_threshold": "Recovery threshold", "methods": "Ping methods"}
    error_list = [(labels.get(k, k.replace("_", " ").capitalize()), v)
                  for k, v in errors.items()]
    return render(request, "dashboard/monitor_form.html", {
        "m": instance, "values": values, "errors": errors, "error_list": error_list,
        "channels": channels, "durations": _durations(values), "units": list(forms.UNITS),
        "zones": forms.zone_names(), "preview": _preview(request, values),
        "chosen": chosen, "policies": EscalationPolicy.objects.filter(project=request.project),
        "tags_text": ", ".join(values.get("tags", [])) if isinstance(values.get("tags"), list)
        else values.get("tags", ""),
        "paused": str(values.get("paused", False)).lower() in ("true", "1", "on"),
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
