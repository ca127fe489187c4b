"""What every dashboard page shares: the signed-in person's current project (the
organisation and project switcher), their role there, their time zone, and how
times, durations and schedules are shown.

Pages are server-rendered and work without JavaScript; who may see and do what is
:mod:`accounts.tenancy`, as for the API (another tenant's object is a 404).
"""
from __future__ import annotations

import functools
import logging
import zoneinfo
from datetime import datetime, timedelta

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.shortcuts import render
from django.utils import timezone
from rest_framework import exceptions

from accounts import tenancy
from accounts.models import Membership, Organisation, Profile, Project
from monitors import preview

ROLE = Membership.Role
log = logging.getLogger(__name__)


def person_zone(request) -> zoneinfo.ZoneInfo:
    """The person's chosen zone (their profile; UTC until they choose)."""
    if not hasattr(request, "_zone"):
        name = (Profile.objects.filter(user=request.user).values_list("timezone", flat=True)
                .first() or "UTC")  # "" (not chosen yet) is UTC too
        try:
            request._zone = zoneinfo.ZoneInfo(name)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            request._zone = zoneinfo.ZoneInfo("UTC")
    return request._zone


def current_project(request) -> Project | None:
    """The project the person is looking at: the one chosen with the switcher (kept
    in the session) if they can still see it, else their first."""
    visible = tenancy.visible(request, Project.objects, "pk").select_related(
        "organisation").order_by("organisation__name", "name")
    chosen = request.session.get("project_id")
    project = visible.filter(pk=chosen).first() if chosen else None
    return project or visible.first()


def page(view):
    """Decorator for dashboard views: signed in, with ``request.project``,
    ``request.role`` there and ``request.zone`` set. A person without a project sees
    a page saying why (and, as an admin, a form to create one); a refusal is a 403
    page, not an exception (Django would log an exception with its traceback)."""

    @functools.wraps(view)
    @login_required
    def wrapped(request, *args, **kwargs):
        request.project = current_project(request)
        request.zone = person_zone(request)
        if request.project is None:
            return no_project(request)
        request.role = tenancy.caller(request).role(request.project)
        try:
            return view(request, *args, **kwargs)
        except (exceptions.PermissionDenied, DjangoPermissionDenied) as e:
            return forbidden(request, str(getattr(e, "detail", e)))

    return wrapped


def no_project(request):
    """Why there is nothing to show: no organisation yet (say who can add them), or
    organisations without a project (admins get the form that creates one). 200 on
    ``/``, 404 on any other page."""
    organisations = list(tenancy.caller(request).organisations().order_by("name"))
    return render(request, "dashboard/no_project.html", {
        "organisations": organisations, "creatable": creatable_organisations(request),
        "values": {}, "errors": {}}, status=200 if request.path == "/" else 404)


def creatable_organisations(request) -> list[Organisation]:
    """The person's organisations where they may create a project (admin or owner)."""
    return list(Organisation.live.filter(
        memberships__user=request.user,
        memberships__role__in=[ROLE.ADMIN, ROLE.OWNER]).order_by("name"))


def forbidden(request, reason: str):
    """The 403 page. Django's request log gets its one warning line for the 4xx."""
    return render(request, "dashboard/error.html", {
        "title": "Not allowed", "text": f"You cannot do that here: {reason}."},
        status=403)


def not_found(request):
    """The dashboard's 404 page, with the navigation of a signed-in person."""
    if getattr(request, "user", None) is not None and request.user.is_authenticated:
        request.project = getattr(request, "project", None) or current_project(request)
    return render(request, "dashboard/error.html", {
        "title": "Not found", "text": "There is nothing here: it never existed, was "
                                      "deleted, or belongs to another project."}, status=404)


MAX_ID = 2**63 - 1


def form_id(value) -> int | None:
    """A database id given in a form or URL: ASCII digits only (``str.isdigit``
    takes "²" and "١", which ``int`` or the database then refuse), else None."""
    value = str(value).strip()
    if not (value.isascii() and value.isdigit()) or len(value) > 19:
        return None
    number = int(value)
    return number if 0 < number <= MAX_ID else None


def form_ids(values) -> tuple[list[int], list[str]]:
    """Ids given in a form (a multiple choice): (the ids, the values that are not)."""
    ids, bad = [], []
    for value in values:
        number = form_id(value)
        if number is None:
            bad.append(str(value)[:20])
        else:
            ids.append(number)
    return ids, bad


def flat_errors(errors) -> dict[str, str]:
    """A serializer's errors as one readable line per field: nested ones (a list
    field's ``{0: [...]}``, a nested object's ``{"url": [...]}``) become "item 1:
    …" and "url: …" rather than their Python repr."""
    def flat(value) -> str:
        if isinstance(value, dict):
            return "; ".join(f"{f'item {k + 1}' if isinstance(k, int) else k}: {flat(v)}"
                             for k, v in value.items())
        if isinstance(value, (list, tuple)):
            return " ".join(flat(v) for v in value if v)
        return str(value)

    if not isinstance(errors, dict):
        return {"non_field_errors": flat(errors)}
    return {k: flat(v) for k, v in errors.items()}


def can(request, role: str) -> bool:
    """Whether the person has ``role`` in the current project."""
    return tenancy.at_least(request.role, role)


def require(request, role: str) -> None:
    """PermissionDenied (403) unless the person has ``role`` in the current project."""
    tenancy.require(request, request.project, role)


def ago(moment: datetime | None, now: datetime) -> str:
    """"3 min ago", "in 2 h", "never"."""
    if moment is None:
        return "never"
    seconds = (now - moment).total_seconds()
    text = duration(timedelta(seconds=abs(seconds)))
    return "just now" if abs(seconds) < 5 else (f"{text} ago" if seconds > 0 else f"in {text}")


def duration(value: timedelta | None) -> str:
    """A duration in human units: "45 s", "3 min", "2 h 5 min", "3 d 4 h"."""
    if value is None:
        return "–"
    s = int(value.total_seconds())
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min" + (f" {s % 60} s" if s < 600 and s % 60 else "")
    if s < 86400:
        return f"{s // 3600} h" + (f" {s % 3600 // 60} min" if s % 3600 >= 60 else "")
    return f"{s // 86400} d" + (f" {s % 86400 // 3600} h" if s % 86400 >= 3600 else "")


def local(moment: datetime | None, zone) -> str:
    """``2026-01-05 13:00:00 CET`` in ``zone`` ("–" for None)."""
    if moment is None:
        return "–"
    return moment.astimezone(zone).strftime("%Y-%m-%d %H:%M:%S %Z")


@functools.lru_cache(maxsize=4096)
def schedule_words(kind: str, schedule: str, period_seconds: int | None, zone: str) -> str:
    """A monitor's schedule in words, with its zone ("At 03:00, Monday through
    Friday (Europe/Berlin)"; "every 5 min"), via cron-descriptor."""
    if kind != "cron":
        return f"every {duration(timedelta(seconds=period_seconds or 0))}"
    return f"{preview.words(schedule)} ({zone})"


def now() -> datetime:
    return timezone.now()


SECTIONS = {"monitors": "monitors", "import": "monitors", "incidents": "incidents",
            "channels": "channels", "policies": "policies", "maintenance": "windows",
            "keys": "keys", "members": "members", "audit-log": "audit", "usage": "usage",
            "docs": "docs"}


def navigation(request) -> dict:
    """Template context processor: the projects of the switcher, the section of the
    page (``nav``), which of the sections that need a role the person may open
    (``nav_new_project``, ``nav_audit``, ``nav_usage``), the person's colour theme
    (``nav_theme``: auto, light or dark, for ``<html data-theme>``) and whether the
    person has not chosen a time zone yet."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    first = request.path.strip("/").split("/")[0]
    roles = set(Membership.objects.filter(user=user, **tenancy.LIVE)
                .values_list("role", flat=True))
    admin_somewhere = bool(roles & {ROLE.ADMIN, ROLE.OWNER})
    chosen = Profile.objects.filter(user=user).values_list("timezone", "theme").first()
    return {"nav_projects": tenancy.visible(request, Project.objects, "pk")
            .select_related("organisation").order_by("organisation__name", "name"),
            "nav_new_project": admin_somewhere, "nav_audit": admin_somewhere,
            "nav_usage": bool(roles - {ROLE.VIEWER}),  # GET /usage/ is for members and up
            "nav": SECTIONS.get(first, "monitors" if first == "" else ""),
            "nav_zone": person_zone(request).key,
            "nav_theme": chosen[1] if chosen else Profile.Theme.AUTO,
            "zone_unset": not (chosen and chosen[0])}
