"""The one way a monitor is made: every way in (the API's create and by-slug PUT,
``/api/v3/``, create-on-ping, the importers, the monitors file) ends here, so the
plan's monitor limit (:func:`accounts.plans.check`) and the audit entry of the
creation cover them all. Management commands run by the operator pass
``quota=False``: the operator is above the plan.
"""
from __future__ import annotations

from datetime import datetime

from django.db import transaction

from accounts import audit, plans
from accounts.models import Organisation, Project
from monitors.models import Monitor
from monitors.runs import rearm

# what a monitor's create entry records: the fields the API shows that a caller sets
# (not the ping URL's uuid: the key to ping with)
AUDITED = ("name", "slug", "description", "kind", "schedule", "timezone", "cron_semantics",
           "period", "grace", "max_runtime", "deadline", "min_runtime", "slow_factor",
           "concurrency", "max_attempts", "tags", "paused", "methods")


def audit_values(monitor: Monitor) -> dict:
    """``monitor``'s :data:`AUDITED` values (its ``create`` entry's changes)."""
    return audit.fields_of(monitor, AUDITED)


@plans.counts("monitors")
def count(organisation: Organisation) -> int:
    """What a plan's ``max_monitors`` bounds: ``organisation``'s monitors not
    deleted."""
    return Monitor.objects.filter(project__organisation=organisation,
                                  deleted_at__isnull=True).count()


def check(project: Project, adding: int) -> None:
    """Raise :class:`accounts.plans.PlanLimit` when ``adding`` new monitors would
    take ``project``'s organisation over its plan (a bulk import asks once, before
    it writes anything)."""
    plans.check(project.organisation, "monitors", adding)


def create(project: Project, monitor: Monitor | dict, now: datetime, *,
           quota: bool = True) -> Monitor:
    """Save ``monitor`` (a Monitor not saved yet, or its fields) as a new monitor of
    ``project``, armed at ``now`` (:func:`monitors.runs.rearm`), and record the
    ``create`` audit entry (with its :data:`AUDITED` values); returns it. ``quota``: refuse with
    :class:`accounts.plans.PlanLimit` when the plan allows no more (False: the
    operator's commands, or a caller that checked the whole batch with
    :func:`check`). An IntegrityError (a slug or UUID taken meanwhile) leaves
    nothing written."""
    if isinstance(monitor, dict):
        monitor = Monitor(**monitor)
    monitor.project = project
    rearm(monitor, now)
    with transaction.atomic():
        if quota:
            check(project, 1)
        monitor.save()
        audit.record_create(project.organisation, monitor, audit_values(monitor))
    return monitor


def create_many(project: Project, monitors: list[Monitor], now: datetime, *,
                quota: bool = True, batch_size: int = 500) -> list[Monitor]:
    """:func:`create` for several new monitors of ``project`` at once (inserted
    ``batch_size`` per statement): all of them, or (PlanLimit) none."""
    if not monitors:
        return monitors
    for monitor in monitors:
        monitor.project = project
        rearm(monitor, now)
    with transaction.atomic():
        if quota:
            check(project, len(monitors))
        Monitor.objects.bulk_create(monitors, batch_size=batch_size)
        audit.record_each("create", project.organisation, monitors, audit_values)
    return monitors
