"""The audit log page (``/audit-log/``): the current organisation's entries,
newest first, for its admins and owners, with the API's filters
(:func:`accounts.audit.search`) in a GET form and ``?cursor=`` paging; since and
until are ``datetime-local`` inputs read in the person's time zone."""
from __future__ import annotations

from datetime import UTC, datetime

from django.core.exceptions import PermissionDenied
from django.shortcuts import render

from accounts import audit, tenancy
from accounts.models import AuditEntry
from cronradar.dashboard import forms
from cronradar.dashboard.common import ROLE, local, page

PER_PAGE = 50
FILTERS = ("object", "actor", "action", "since", "until")


@page
def audit_log(request):
    """``/audit-log/``: a filter form (object ``<type>:<id>``, actor, action, since,
    until: ``datetime-local`` values, read in the person's zone by
    :func:`forms.read_local`; ISO 8601 with an offset is taken as it is, and shown
    again in the person's zone) and a page of entries; "Older" carries the filters
    and the cursor. 403 below admin."""
    org = request.project.organisation
    if not tenancy.at_least(tenancy.caller(request).org_role(org.pk), ROLE.ADMIN):
        raise PermissionDenied("the audit log needs the admin role in the organisation")
    errors, found = {}, AuditEntry.objects.filter(organisation=org)
    values = {f: request.GET.get(f, "") for f in FILTERS}
    try:
        found = audit.search(found, request.GET)
    except audit.BadFilter as e:
        errors[e.field] = str(e)
    for name, lookup in (("since", "at__gte"), ("until", "at__lt")):
        if raw := values[name].strip():
            read = _moment(raw, request.zone)
            if read is None:
                errors[name] = "a date and time, e.g. 2026-01-05T12:00"
            else:
                found = found.filter(**{lookup: read[0]})
                values[name] = read[1]
    cursor = request.GET.get("cursor", "")
    if cursor.isascii() and cursor.isdigit():
        found = found.filter(pk__lt=int(cursor))
    rows = [] if errors else list(found.order_by("-pk")[:PER_PAGE + 1])
    query = request.GET.copy()
    older = None
    if len(rows) > PER_PAGE:
        query["cursor"] = str(rows[PER_PAGE - 1].pk)
        older = query.urlencode()
    return render(request, "dashboard/audit_log.html", {
        "org": org, "errors": errors, "older": older,
        "values": values, "zone": request.zone.key,
        "actions": AuditEntry.Action.values,
        "rows": [{"e": e, "at": local(e.at, request.zone),
                  "changes": [(f, *pair) if isinstance(pair, list) and len(pair) == 2
                              else (f, "", pair) for f, pair in e.changes.items()]}
                 for e in rows[:PER_PAGE]]}, status=400 if errors else 200)


def _moment(raw: str, zone) -> tuple[datetime, str] | None:
    """A since or until as typed: (the time, read in ``zone`` without an offset;
    its ``datetime-local`` value in ``zone``), or None when it is no date-time or
    one out of range in UTC or in ``zone`` (year 1 in Berlin is year 0 in UTC)."""
    moment = forms.read_local(raw, zone)
    if moment is None:
        return None
    try:
        moment.astimezone(UTC)  # raises for a time UTC cannot hold
        return moment, forms.local_input(moment, zone)
    except OverflowError:
        return None
