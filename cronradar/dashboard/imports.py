"""``/import/healthchecks/``: a Healthchecks project's checks imported as monitors of
the current project, from the answer of its ``GET /api/v3/checks/`` pasted or
uploaded (the dashboard fetches nothing from another server). The same import as
``manage.py importhealthchecks --from-json`` (:mod:`monitors.imports.healthchecks`):
"Preview" shows what would change, "Import" does it; both show the report."""
from __future__ import annotations

from django.shortcuts import render
from django.utils import timezone

from cronradar.dashboard.common import ROLE, can, page, require
from monitors.imports import healthchecks
from monitors.imports.spec import ImportFailed


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
        if upload is not None:
            try:
                text = upload.read(healthchecks.MAX_ANSWER + 1).decode("utf-8")
            except UnicodeDecodeError:
                raise ImportFailed("the file is not UTF-8 text") from None
        else:
            text = context["text"] = request.POST.get("text", "")
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
