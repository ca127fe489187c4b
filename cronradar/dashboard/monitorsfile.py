"""``/monitors/file/``: monitors as one file in the dashboard. The file
``cronradar apply`` reads, pasted or uploaded: checked against the shipped JSON
Schema, its diff shown, applied on confirmation (in one transaction: a refusal
changes nothing); and the project exported as that file. The SDK's diff and apply
(:mod:`cronradar_sdk.declarative`) run over the API's serializers
(:class:`cronradar.monitorsfile.ServerBackend`), not over HTTP.
"""
from __future__ import annotations

from cronradar_sdk import declarative
from django.core.exceptions import ObjectDoesNotExist
from django.db import transaction
from django.http import HttpResponse
from django.shortcuts import render
from django.utils.text import slugify
from rest_framework import exceptions

from cronradar import monitorsfile
from cronradar.dashboard.common import ROLE, can, page, require

MAX_UPLOAD = 2 * 1024 * 1024  # bytes: the edge refuses bodies over 2.5 MB anyway


@page
def monitors_file(request):
    """GET: the form. POST (admins): ``text`` or an uploaded ``file``, ``prune``;
    ``action=apply`` applies, anything else previews the diff."""
    context = {"text": "", "prune": False, "problems": [], "changes": None, "applied": False,
               "can_admin": can(request, ROLE.ADMIN),
               "schema_path": "sdk/python/cronradar_sdk/monitors.schema.json"}
    if request.method == "POST":
        require(request, ROLE.ADMIN)
        context.update(_run(request))
    status = 400 if context["problems"] else 200
    return render(request, "dashboard/monitors_file.html", context, status=status)


def _run(request) -> dict:
    upload = request.FILES.get("file")
    prune, applying = request.POST.get("prune") == "1", request.POST.get("action") == "apply"
    found: dict = {"prune": prune, "applied": False}
    try:
        text = _uploaded(upload) if upload is not None else request.POST.get("text", "")
        found["text"] = text
        doc = declarative.parse(text)
        problems = monitorsfile.problems(doc)
        if problems:
            raise declarative.FileError(problems)
        doc = monitorsfile.placeholders_kept(doc)
        with transaction.atomic():
            changes = declarative.apply(doc, monitorsfile.ServerBackend(request, request.project),
                                        prune=prune, dry_run=not applying)
    except declarative.FileError as e:
        return {**found, "problems": e.problems}
    except (exceptions.APIException, ObjectDoesNotExist) as e:
        return {**found, "problems": [f"refused, nothing was changed: "
                                      f"{monitorsfile.refusal(e)}"]}
    lines = [line for c in changes for line in c.lines()]
    return {**found, "changes": lines, "summary": declarative.summary(changes, not applying),
            "applied": applying}


def _uploaded(upload) -> str:
    if upload.size > MAX_UPLOAD:
        raise declarative.FileError([f"the file is larger than {MAX_UPLOAD // 1024} KB"])
    try:
        return upload.read().decode("utf-8")
    except UnicodeDecodeError:
        raise declarative.FileError(["the file is not UTF-8 text"]) from None


@page
def monitors_file_export(request, fmt: str):
    """``/monitors/file/export.<json|yaml>``: the project as a monitors file (credentials
    as ``${ENV_NAME}`` placeholders), as a download."""
    doc, _ = declarative.export(monitorsfile.ServerBackend(request, request.project))
    name = slugify(request.project.name) or "project"
    response = HttpResponse(declarative.dump(doc, fmt), content_type=(
        "application/json" if fmt == "json" else "application/yaml") + "; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="monitors-{name}.{fmt}"'
    return response
