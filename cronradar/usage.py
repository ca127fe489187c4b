"""An organisation's usage against its plan: the usage page and ``GET /api/v1/usage/``.

It reads every floor (accounts' members and keys, monitors' monitors and ping
counts, alerts' channels), so it lives in the site. The counts and limits are
:mod:`accounts.plans`' own, so the page shows what a creation is checked against.
"""
from __future__ import annotations

from datetime import datetime

from accounts import plans
from accounts.models import Organisation
from monitors import usage as ping_usage
from monitors.models import Monitor


def usage(organisation: Organisation, now: datetime) -> dict:
    """``organisation``'s usage at ``now``::

        {"organisation": id, "plan": name | None, "month": "YYYY-MM",
         "monitors": {"used": n, "limit": n | None}, "channels": {...},
         "members": {...}, "api_keys": {...},
         "pings_this_month": n, "pings_refused_this_month": n}

    ``used`` is what the plan's check compares (:func:`accounts.plans.usage`:
    monitors and channels not deleted, API keys not revoked, members with the
    invitations still waiting); the pings of the UTC month (accepted and refused by
    a rate limit) as flushed each minute (:func:`monitors.usage.flush`)."""
    plan, limit = organisation.plan, plans.limits(organisation)
    pings = ping_usage.totals(Monitor.objects.filter(project__organisation=organisation),
                              ping_usage.month_of(now))
    return {
        "organisation": organisation.pk,
        "plan": plan.name if plan is not None else None,
        "month": f"{now.year:04d}-{now.month:02d}",
        **{what: {"used": plans.usage(organisation, what), "limit": limit[field]}
           for what, (field, _) in plans.COUNTED.items()},
        "pings_this_month": pings["pings"],
        "pings_refused_this_month": pings["refused"],
    }
