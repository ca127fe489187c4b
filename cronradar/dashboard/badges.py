"""Public status badges, for READMEs and wikis: ``/badge/<badge key>/<slug or
tag>.svg`` and ``.json``, no sign-in. The project's ``badge_key`` is unguessable
and a new one (the API keys page) revokes every old URL (404).

A slug names one monitor; otherwise the name is a tag and the badge sums up every
monitor with it (the worst status wins: down, late, then up; paused and new
monitors count as up). The JSON is ``{"name", "status", "total", "down", "late"}``.
"""
from __future__ import annotations

from html import escape
from urllib.parse import quote

from django.conf import settings
from django.db.models import Exists, OuterRef
from django.http import Http404, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.cache import cache_control

from accounts import tenancy
from accounts.models import Project
from alerts.models import Incident
from monitors import slots
from monitors.models import Monitor, Run

COLOURS = {"up": "#2e7d32", "late": "#b35c00", "down": "#c62828"}


def summary(project: Project, name: str, now) -> dict:
    """The badge's facts for ``name`` (a slug, else a tag) in ``project``; Http404
    when neither matches."""
    monitors = (Monitor.objects.filter(project=project, deleted_at__isnull=True)
                .annotate(is_running=Exists(Run.objects.open().filter(monitor=OuterRef("pk"))),
                          incident_open=Exists(Incident.objects.filter(
                              monitor=OuterRef("pk"), resolved_at__isnull=True))))
    chosen = [m for m in monitors if m.slug == name] or [m for m in monitors if name in m.tags]
    if not chosen:
        raise Http404
    statuses = [slots.status(m, now, running=m.is_running, incident_open=m.incident_open)
                for m in chosen]
    down, late = statuses.count("down"), statuses.count("late")
    return {"name": name, "status": "down" if down else ("late" if late else "up"),
            "total": len(chosen), "down": down, "late": late}


def svg(label: str, status: str) -> str:
    """A flat two-part badge (label, status), about 7 px per character."""
    left, right = 8 + 7 * len(label), 8 + 7 * len(status)
    width = left + right
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="20" role="img" '
            f'aria-label="{escape(label)}: {status}"><title>{escape(label)}: {status}</title>'
            f'<rect width="{left}" height="20" fill="#555"/>'
            f'<rect x="{left}" width="{right}" height="20" fill="{COLOURS[status]}"/>'
            '<g fill="#fff" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11">'
            f'<text x="4" y="14">{escape(label)}</text>'
            f'<text x="{left + 4}" y="14">{status}</text></g></svg>')


def url(project: Project, name: str, fmt: str = "svg") -> str:
    """The badge's absolute URL for a slug or tag (quoted: a tag may hold any
    character, spaces, colons and slashes included)."""
    return f"{settings.CRONRADAR_BASE_URL}/badge/{project.badge_key}/{quote(name, safe='')}.{fmt}"


@cache_control(max_age=30, public=True)
def badge(request, key: str, name: str, fmt: str):
    """``GET /badge/<key>/<name>.svg|.json``."""
    project = Project.objects.filter(badge_key=key, **tenancy.LIVE).first()
    if project is None or len(name) > 100:
        raise Http404
    facts = summary(project, name, timezone.now())
    if fmt == "json":
        return JsonResponse(facts)
    return HttpResponse(svg(name, facts["status"]), content_type="image/svg+xml")
