"""The audit log page (``/audit-log/``): the current organisation's entries,
newest first, for its admins and owners, with the API's filters
(:func:`accounts.audit.search`) in a GET form and ``?cursor=`` paging."""
from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.shortcuts import render
from django.utils.dateparse import parse_datetime

from accounts import audit, tenancy
from accounts.models import AuditEntry
from cronradar.dashboard.common import ROLE, local, page

PER_PAGE = 50
FILTERS = ("object", "actor", "action", "since", "until")


@page
def audit_log(request):
    """``/audit-log/``: a filter form (object ``<type>:<id>``, actor, action, since,
    until: ISO 8601, without an offset in the person's zone) and a page of entries;
    "Older" carries the filters and the cursor. 403 below admin."""
    org = request.project.organisation
    if not tenancy.at_least(tenancy.caller(request).org_role(org.pk), ROLE.ADMIN):
        raise PermissionDenied("the audit log needs the admin role in the organisation")
    errors, found = {}, AuditEntry.objects.filter(organisation=org)
    try:
        found = audit.search(found, request.GET)
    except audit.BadFilter as e:
        errors[e.field] = str(e)
    for name, lookup in (("since", "at__gte"), ("until", "at__lt")):
        if raw := request.GET.get(name, "").strip():
            moment = _moment(raw, request.zone)
            if moment is None:
                errors[name] = "an ISO 8601 time, e.g. 2026-01-05T12:00"
            else:
                found = found.filter(**{lookup: moment})
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
        "values": {f: request.GET.get(f, "") for f in FILTERS},
        "actions": AuditEntry.Action.values,
        "rows": [{"e": e, "at": local(e.at, request.zone),
                  "changes": [(f, *pair) if isinstance(pair, list) and len(pair) == 2
                              else (f, "", pair) for f, pair in e.changes.items()]}
                 for e in rows[:PER_PAGE]]}, status=400 if errors else 200)


def _moment(raw: str, zone):
    moment = parse_datetime(raw) if "T" in raw or " " in raw else parse_datetime(raw + "T00:00")
    if moment is not None and moment.tzinfo is None:
        moment = moment.replace(tzinfo=zone)
    return moment
