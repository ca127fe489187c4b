"""The person's own pages: the organisation and project switcher and their profile
(the time zone the dashboard shows times in). Sign in, sign out and password
reset are Django's auth views (see :mod:`cronradar.dashboard.urls`)."""
from __future__ import annotations

import zoneinfo

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from monitors import tenancy
from monitors.models import Profile, Project

ZONES = sorted(zoneinfo.available_timezones() - {"localtime", "Factory"})


@login_required
@require_POST
def switch(request):
    """POST ``/switch/`` with ``project``: look at that project from now on (one
    of the person's; anything else is a 404)."""
    project = tenancy.visible(request, Project.objects, "pk").filter(
        pk=request.POST.get("project") if str(request.POST.get("project", "")).isdigit()
        else 0).first()
    if project is None:
        raise Http404
    request.session["project_id"] = project.pk
    back = request.POST.get("next", "/")
    return redirect(back if url_has_allowed_host_and_scheme(back, None) else "/")


@login_required
def profile(request):
    """``/account/``: choose the time zone times are shown in."""
    profile, _ = Profile.objects.get_or_create(user=request.user)
    error = ""
    if request.method == "POST":
        zone = request.POST.get("timezone", "")
        if zone in ZONES or zone == "UTC":
            profile.timezone = zone
            profile.save(update_fields=["timezone"])
            return redirect("dashboard:profile")
        error = f"unknown time zone {zone[:60]!r}: pick one from the list"
    return render(request, "dashboard/profile.html", {"zones": ZONES, "profile": profile,
                                                      "error": error},
                  status=400 if error else 200)
