"""The person's own pages: the organisation and project switcher, creating a
project, and their profile (the time zone the dashboard shows times in, its colours). Sign in,
sign out and password reset are Django's auth views (see
:mod:`cronradar.dashboard.urls`)."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST
from rest_framework import exceptions

from accounts import tenancy
from accounts.api import ProjectSerializer
from accounts.models import Profile, Project
from cronradar.dashboard import forms
from cronradar.dashboard.common import creatable_organisations, flat_errors, form_id, person_zone

# The list page of each section: where an object page of one project leads after
# switching to another (its object is not there).
SECTION_LISTS = {"monitors": "/", "incidents": "/incidents/", "channels": "/channels/",
                 "policies": "/policies/", "maintenance": "/maintenance/", "keys": "/keys/",
                 "members": "/members/"}


def after_switch(back: str) -> str:
    """Where to go after switching project: ``back`` itself, unless it is one
    object's page (``/monitors/3/``, ``/incidents/5/``, …): then its section's list."""
    if not url_has_allowed_host_and_scheme(back, None) or not back.startswith("/"):
        return "/"
    parts = back.split("?")[0].strip("/").split("/")
    if len(parts) > 1 and parts[0] in SECTION_LISTS and form_id(parts[1]) is not None:
        return SECTION_LISTS[parts[0]]
    return back


@login_required
@require_POST
def switch(request):
    """POST ``/switch/`` with ``project``: look at that project from now on (one
    of the person's; anything else is a 404)."""
    pk = form_id(request.POST.get("project", ""))
    project = tenancy.visible(request, Project.objects, "pk").filter(pk=pk).first() \
        if pk is not None else None
    if project is None:
        raise Http404
    request.session["project_id"] = project.pk
    return redirect(after_switch(request.POST.get("next", "/")))


@login_required
def project_new(request):
    """``/projects/new/``: an admin or owner creates a project in one of their
    organisations (the API's rules) and looks at it from then on."""
    request.zone = person_zone(request)
    choices = creatable_organisations(request)
    errors, values = {}, {}
    if request.method == "POST" and not choices:  # an admin of no organisation
        raise PermissionDenied("only an organisation's admins and owners create projects")
    if request.method == "POST":
        values = request.POST
        data = {"name": request.POST.get("name", "").strip()}
        org = form_id(request.POST.get("organisation", ""))
        if org is not None:
            data["organisation"] = org
        elif len(choices) != 1:
            errors["organisation"] = "choose the organisation"
        else:
            data["organisation"] = choices[0].pk
        if not errors:
            serializer = ProjectSerializer(data=data, context={"request": request})
            try:
                valid = serializer.is_valid()
            except exceptions.PermissionDenied as e:  # not an admin there
                valid, errors = False, {"organisation": str(e.detail)}
            if valid:
                project = serializer.save()
                request.session["project_id"] = project.pk
                return redirect("dashboard:monitors")
            errors = errors or flat_errors(serializer.errors)
    return render(request, "dashboard/project_new.html", {
        "creatable": choices, "values": values, "errors": errors},
        status=400 if errors else (200 if choices else 403))


@login_required
def profile(request):
    """``/account/``: choose the time zone times are shown in and the colour theme
    (``theme``: auto follows the browser's ``prefers-color-scheme``, light, dark).
    A POST changes the fields it carries (the first visit's script sends only
    ``timezone``); an unknown value is a 400 with the message and changes nothing."""
    profile, _ = Profile.objects.get_or_create(user=request.user)
    errors = {}
    if request.method == "POST":
        changed = []
        if "timezone" in request.POST:
            zone = request.POST["timezone"]
            if zone in forms.zone_names():
                profile.timezone = zone
                changed.append("timezone")
            else:
                errors["timezone"] = f"unknown time zone {zone[:60]!r}: pick one from the list"
        if "theme" in request.POST:
            theme = request.POST["theme"]
            if theme in Profile.Theme.values:
                profile.theme = theme
                changed.append("theme")
            else:
                errors["theme"] = f"unknown theme {theme[:20]!r}: auto, light or dark"
        if not errors:
            profile.save(update_fields=changed)
            return redirect("dashboard:profile")
        profile.refresh_from_db()
    return render(request, "dashboard/profile.html", {
        "zones": forms.zone_names(), "profile": profile, "errors": errors,
        "themes": Profile.Theme.choices}, status=400 if errors else 200)
