"""An organisation's usage against its plan: the usage page and ``GET /api/v1/usage/``.

It reads every floor (accounts' members and keys, monitors' monitors and ping
counts, alerts' channels), so it lives in the site. The plan's limits are read
from ``organisation.plan`` (None: no plan, every limit null).
"""
from __future__ import annotations

from datetime import datetime

from accounts.models import ApiKey, Membership, Organisation
from alerts.models import Channel
from monitors import usage as ping_usage
from monitors.models import Monitor

# what is counted: (key in the answer, the plan's limit field)
COUNTED = (("monitors", "max_monitors"), ("channels", "max_channels"),
           ("members", "max_members"), ("api_keys", "max_api_keys"))


def usage(organisation: Organisation, now: datetime) -> dict:
    """``organisation``'s usage at ``now``::

        {"organisation": id, "plan": name | None, "month": "YYYY-MM",
         "monitors": {"used": n, "limit": n | None}, "channels": {...},
         "members": {...}, "api_keys": {...},
         "pings_this_month": n, "pings_refused_this_month": n}

    Monitors and channels not deleted, API keys not revoked; the pings of the UTC
    month (accepted and refused by a rate limit) as flushed each minute
    (:func:`monitors.usage.flush`). Six queries."""
    plan = organisation.plan
    projects = organisation.projects.all()
    used = {
        "monitors": Monitor.objects.filter(project__in=projects, deleted_at__isnull=True).count(),
        "channels": Channel.objects.filter(project__in=projects, deleted_at__isnull=True).count(),
        "members": Membership.objects.filter(organisation=organisation).count(),
        "api_keys": ApiKey.objects.filter(project__in=projects, revoked_at__isnull=True).count(),
    }
    pings = ping_usage.totals(Monitor.objects.filter(project__in=projects),
                              ping_usage.month_of(now))
    return {
        "organisation": organisation.pk,
        "plan": plan.name if plan is not None else None,
        "month": f"{now.year:04d}-{now.month:02d}",
        **{name: {"used": used[name], "limit": getattr(plan, field) if plan else None}
           for name, field in COUNTED},
        "pings_this_month": pings["pings"],
        "pings_refused_this_month": pings["refused"],
    }
