"""Imports into the current project, pasted or uploaded (the dashboard fetches
nothing from another server); "Preview" shows the diff (created / changed field
by field / unchanged), "Import" does it; both show the report. The crontab and
Kubernetes form offers only "Preview": "Import" is offered under a preview that
would change something, a form re-submitting the same input (no script needed).

- ``/import/healthchecks/``: a Healthchecks project's checks, from the answer of
  its ``GET /api/v3/checks/``; the same import as ``manage.py importhealthchecks
  --from-json`` (:mod:`monitors.imports.healthchecks`).
- ``/import/crontab/`` and ``/import/k8s/``: one monitor per job of a crontab or
  per Kubernetes CronJob of manifests; the same imports as ``POST
  /api/v1/import/crontab/`` and ``/import/k8s/`` (:mod:`monitors.imports.apply`:
  every monitor made by :mod:`monitors.creation`, the plan's limit checked for
  the whole import first)."""
from __future__ import annotations

from django.shortcuts import render
from django.utils import timezone

from accounts import plans
from cronradar.dashboard import forms
from cronradar.dashboard.common import ROLE, can, page, require
from monitors import schedule
from monitors.imports import apply, crontab, healthchecks, k8s
from monitors.imports.spec import Conflict, ImportFailed


@page
def import_healthchecks(request):
    """GET: the form; POST (``member``): the report, or the error (400)."""
    context = {"can_edit": can(request, ROLE.MEMBER), "report": None, "error": None,
               "text": "", "can_apply": False}
    if request.method != "POST":
        return render(request, "dashboard/import_healthchecks.html", context)
    require(request, ROLE.MEMBER)
    upload = request.FILES.get("file")
    try:
        text = context["text"] = _given_text(request)
        checks = healthchecks.read_checks(text, "the file" if upload else "the pasted text")
        parsed, outcome = healthchecks.import_checks(
            request.project, checks, proven=False, dry_run=request.POST.get("apply") != "1",
            now=timezone.now())
    except ImportFailed as e:
        context["error"] = str(e)
        return render(request, "dashboard/import_healthchecks.html", context, status=400)
    report = context["report"] = outcome.as_dict(parsed)
    context["can_apply"] = report["dry_run"] and bool(report["created"] or report["updated"])
    if context["can_apply"]:  # kept for the "Import" button under the preview
        context["text"] = text
    return render(request, "dashboard/import_healthchecks.html", context)


def _given_text(request) -> str:
    """The uploaded file's text if a file was sent, else the pasted ``text``;
    raises ImportFailed for a file that is not UTF-8 (its size: the request bound,
    ``DATA_UPLOAD_MAX_MEMORY_SIZE``, and the file's, ``healthchecks.MAX_ANSWER``)."""
    upload = request.FILES.get("file")
    if upload is None:
        return request.POST.get("text", "")
    try:
        return upload.read(healthchecks.MAX_ANSWER + 1).decode("utf-8")
    except UnicodeDecodeError:
        raise ImportFailed("the file is not UTF-8 text") from None


MANIFESTS = {"crontab": "a crontab", "k8s": "Kubernetes CronJob manifests"}


def _crontab_options(post, default_zone: str) -> dict:
    """The crontab's options from the form; its zone ``default_zone`` when left empty."""
    zone = post.get("timezone", "").strip() or default_zone
    try:
        schedule.validate_timezone(zone)
    except schedule.ScheduleError as e:
        raise ImportFailed(f"time zone: {e}") from None
    wrap = post.get("wrap", "curl")
    if wrap not in ("curl", "exec"):
        raise ImportFailed(f"wrap must be curl or exec, not '{wrap[:20]}'")
    return {"system": post.get("system") == "1", "timezone": zone, "wrap": wrap}


@page
def import_manifest(request, kind: str):
    """``/import/crontab/`` and ``/import/k8s/``: GET the form (its one button a dry
    run); POST (``member``) ``text`` or ``file``, ``apply`` (``1``: import, as the
    button under a preview sends it; else a dry run) and, for a
    crontab, ``timezone``, ``system``, ``wrap``: the report (after an import of a
    crontab, the crontab with each job wrapped), or the message: 400 for input
    that cannot be read, 403 over the plan's limit (nothing is made), 409 when a
    monitor of the import was made or deleted meanwhile. The crontab's zone is the
    person's (``request.zone``) until chosen, from
    the same searchable list as the monitor form's."""
    options = {"system": False, "timezone": request.zone.key, "wrap": "curl"}
    context = {"can_edit": can(request, ROLE.MEMBER), "report": None, "error": None,
               "text": "", "can_apply": False, "kind": kind, "what": MANIFESTS[kind],
               "options": options, "wrapped": "", "zones": forms.zone_names()}
    if request.method != "POST":
        return render(request, "dashboard/import_manifest.html", context)
    require(request, ROLE.MEMBER)
    dry_run = request.POST.get("apply") != "1"
    try:
        text = context["text"] = _given_text(request)
        if kind == "crontab":
            options.update(_crontab_options(request.POST, request.zone.key))
            parsed = crontab.parse_crontab(text, options["system"], options["timezone"],
                                           options["wrap"])
        else:
            parsed = k8s.parse_k8s(text)
        outcome = apply.apply(request.project, parsed.specs, dry_run, timezone.now())
    except (ImportFailed, plans.PlanLimit) as e:
        context["error"] = str(getattr(e, "detail", e))
        status = 409 if isinstance(e, Conflict) else 403 if isinstance(e, plans.PlanLimit) \
            else 400
        return render(request, "dashboard/import_manifest.html", context, status=status)
    report = context["report"] = outcome.as_dict(parsed)
    context["can_apply"] = dry_run and bool(report["created"] or report["updated"])
    if kind == "crontab" and not dry_run:
        urls = {slug: m.ping_url for slug, m in outcome.monitors.items()}
        context["wrapped"] = crontab.wrap_crontab(parsed, urls, options["wrap"])
    return render(request, "dashboard/import_manifest.html", context)
