"""The signed-link page (:mod:`alerts.links`): GET shows, POST acts. No login."""
from django.core import signing
from django.shortcuts import render
from django.utils import timezone

from accounts import audit
from alerts import incidents, links
from alerts.models import Incident

VERBS = {"ack": "Acknowledge", "resolve": "Resolve"}


def incident_link(request, token: str):
    """``/incident-link/<token>/``: a confirmation page with a button (GET), the
    action itself (POST). 400 for an expired or forged link, 404 for an incident
    that no longer exists."""
    try:
        incident_id, action = links.read(token)
    except signing.SignatureExpired:
        return _page(request, None, "", "This link has expired. Use the API or a newer "
                                        "notification.", status=400)
    except signing.BadSignature:
        return _page(request, None, "", "This link is not valid.", status=400)
    incident = Incident.objects.select_related("monitor").filter(
        pk=incident_id, monitor__deleted_at__isnull=True).first()
    if incident is None:
        return _page(request, None, "", "This incident no longer exists.", status=404)
    done = _done(incident, action)
    if request.method == "POST" and not done:
        act = incidents.acknowledge if action == "ack" else incidents.resolve_by_hand
        try:
            with audit.acting(audit.link_actor(request.META)):
                incident = act(incident.pk, "a signed link", "", timezone.now())
        except incidents.IncidentClosed:
            incident.refresh_from_db()
        return _page(request, incident, action, _done(incident, action))
    return _page(request, incident, action, done)


def _done(incident: Incident, action: str) -> str:
    """What already happened, in words, or "" when the action can still be taken."""
    if incident.resolved_at is not None:
        return f"Resolved at {incident.resolved_at:%Y-%m-%d %H:%M:%S} UTC ({incident.resolution})."
    if action == "ack" and incident.acknowledged_at is not None:
        return (f"Acknowledged at {incident.acknowledged_at:%Y-%m-%d %H:%M:%S} UTC by "
                f"{incident.acknowledged_by}.")
    return ""


def _page(request, incident, action, message, status=200):
    return render(request, "incident_link.html", {
        "incident": incident, "verb": VERBS.get(action, ""), "message": message,
    }, status=status)
