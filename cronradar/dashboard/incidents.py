"""Dashboard pages about incidents: the list (open first) and one incident with its
timeline (each event; each notification with its tier, channel and delivery
result) and acknowledge / resolve buttons."""
from __future__ import annotations

import contextlib

from django.db.models import Prefetch
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from alerts import incidents as incident_logic
from alerts.models import Delivery, Incident, IncidentEvent
from cronradar.dashboard.common import ROLE, ago, can, local, page, require
from cronradar.dashboard.monitorlist import BadQuery, whole_number


def _incidents(request):
    return Incident.objects.filter(monitor__project=request.project,
                                   monitor__deleted_at__isnull=True).select_related("monitor")


@page
def incident_list(request):
    """``/incidents/``: open incidents first (newest first), then the last 100
    resolved ones, on one page: ``?page`` is 1 (a page past it shows it, as the
    monitors list); one that is not a whole number from 1 is a 400 page with the
    message."""
    try:
        whole_number(request.GET, "page", 1, 10**6)
    except BadQuery as e:
        return render(request, "dashboard/error.html", {"title": "Incidents: a bad page",
                                                        "text": str(e)}, status=400)
    now = timezone.now()
    open_ = list(_incidents(request).filter(resolved_at__isnull=True).order_by("-opened_at"))
    closed = list(_incidents(request).filter(resolved_at__isnull=False)
                  .order_by("-opened_at")[:100])
    rows = [{"incident": i, "opened": local(i.opened_at, request.zone),
             "ago": ago(i.opened_at, now),
             "state": "resolved" if i.resolved_at else
                      ("acknowledged" if i.acknowledged_at else "open")}
            for i in open_ + closed]
    return render(request, "dashboard/incidents.html", {"rows": rows, "open": len(open_)})


NOTE_MAX = 500


@page
def incident_detail(request, pk: int):
    """``/incidents/<id>/``: the timeline and the buttons."""
    return _detail(request, pk)


def _detail(request, pk: int, note_error: str = "", status: int = 200):
    deliveries = Delivery.objects.select_related("channel").order_by("pk")
    incident = (_incidents(request).filter(pk=pk).prefetch_related(
        Prefetch("events", IncidentEvent.objects.order_by("at", "pk").prefetch_related(
            Prefetch("deliveries", deliveries)))).first())
    if incident is None:
        raise Http404
    timeline = [{"event": e, "at": local(e.at, request.zone),
                 "tier": e.detail.get("tier") if isinstance(e.detail, dict) else None,
                 "deliveries": [{"d": d, "channel": d.channel.name or
                                 f"{d.channel.kind} #{d.channel_id}",
                                 "when": local(d.delivered_at or d.next_attempt_at,
                                               request.zone)}
                                for d in e.deliveries.all()]}
                for e in incident.events.all()]
    return render(request, "dashboard/incident.html", {
        "i": incident, "timeline": timeline, "opened": local(incident.opened_at, request.zone),
        "acknowledged": local(incident.acknowledged_at, request.zone),
        "resolved": local(incident.resolved_at, request.zone),
        "can_act": can(request, ROLE.MEMBER) and incident.resolved_at is None,
        "note_max": NOTE_MAX, "note_error": note_error,
        "note": request.POST.get("note", "") if note_error else ""}, status=status)


@page
@require_POST
def incident_act(request, pk: int, action: str):
    """POST ``/incidents/<id>/ack/`` or ``/resolve/`` (``note`` optional), as the
    person."""
    require(request, ROLE.MEMBER)
    incident = get_object_or_404(_incidents(request), pk=pk)
    act = incident_logic.acknowledge if action == "ack" else incident_logic.resolve_by_hand
    if action not in ("ack", "resolve"):
        raise Http404
    note = request.POST.get("note", "")
    if len(note) > NOTE_MAX:  # never cut silently: say so, keep what was typed
        return _detail(
            request, pk, note_error=f"The note is {len(note)} characters; the limit is "
                                    f"{NOTE_MAX}.", status=400)
    with contextlib.suppress(incident_logic.IncidentClosed):  # resolved meanwhile: shown
        act(incident.pk, request.user.get_username(), note, timezone.now())
    return redirect("dashboard:incident", pk=incident.pk)
