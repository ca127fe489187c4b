"""The organisation's owner pages: exporting it (the API's archive,
:func:`cronradar.orgdata.export`) and deleting it after typing its name
(:func:`accounts.deletion.delete_organisation`); and a person deleting their own
account (:func:`accounts.deletion.delete_account`). The links are on the members
page (the organisation's page) and the profile page."""
from __future__ import annotations

from django.contrib.auth import logout
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.utils import timezone

from accounts import deletion
from accounts.models import Membership
from cronradar import orgdata
from cronradar.dashboard.common import page, require

OWNER = Membership.Role.OWNER


@page
def export(request):
    """``/organisation/export/``: the current project's organisation as the JSON
    archive (owners), an attachment."""
    require(request, OWNER)
    return orgdata.download(request.project.organisation, request)


@page
def delete(request):
    """``/organisation/delete/``: owners delete the current project's organisation
    by typing its name (a wrong name: 400, nothing deleted)."""
    require(request, OWNER)
    org, error = request.project.organisation, ""
    if request.method == "POST":
        try:
            deletion.delete_organisation(org, request.user, request.POST.get("confirm", ""),
                                         timezone.now())
        except deletion.Refused as e:
            error = e.message
        else:
            request.session.pop("project_id", None)
            return render(request, "dashboard/organisation_deleted.html", {"org": org},
                          status=202)
    return render(request, "dashboard/organisation_delete.html", {"org": org, "error": error},
                  status=400 if error else 200)


@login_required
def delete_account(request):
    """``/account/delete/``: a person deletes their own account (refused, with the
    reason, for the last owner of an organisation that others or monitors are in);
    they are signed out."""
    error = ""
    if request.method == "POST":
        user = request.user
        try:
            deletion.delete_account(user, timezone.now())
        except deletion.Refused as e:
            error = e.message
        else:
            logout(request)
            return redirect("dashboard:login")
    return render(request, "dashboard/account_delete.html", {"error": error},
                  status=409 if error else 200)
