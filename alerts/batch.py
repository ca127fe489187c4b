"""Read caches for a batch of monitors whose detections are applied together.

The evaluator hands the detections of up to a hundred monitors over at once
(:func:`monitors.detections.emit_many`); opening an incident reads the
monitor's open incident, maintenance windows, recent incidents (flapping) and
channels. Inside :func:`batch` those are read with one query per kind for the
whole batch and then served from memory; outside it each is one query, as
before. The caller holds every batch monitor's row lock, so nothing read here
can change under it except through this process, which keeps the caches up to
date (:func:`opened`).
"""
from __future__ import annotations

import threading
from collections import defaultdict
from contextlib import contextmanager
from datetime import datetime

from django.db.models import Count

from alerts.models import Alerting, Channel, Incident, MaintenanceWindow

_local = threading.local()


class _Batch:
    def __init__(self, monitors, since: datetime):
        ids = [m.pk for m in monitors]
        projects = {m.project_id for m in monitors}
        self.open = {i.monitor_id: i for i in
                     Incident.objects.filter(monitor_id__in=ids, resolved_at__isnull=True)}
        self.windows = defaultdict(list)
        for w in MaintenanceWindow.objects.filter(project_id__in=projects):
            self.windows[w.project_id].append(w)
        self.since = since
        self.recent = dict(Incident.objects.filter(monitor_id__in=ids, opened_at__gt=since)
                           .values_list("monitor_id").annotate(n=Count("id")))
        self.channels = defaultdict(list)
        for pk, project_id in (Channel.objects.filter(project_id__in=projects,
                                                      deleted_at__isnull=True)
                               .order_by("pk").values_list("pk", "project_id")):
            self.channels[project_id].append(pk)
        self.ids, self.projects = set(ids), projects
        self.chosen = defaultdict(list)  # monitor -> its Alerting's live channels
        for monitor_id, channel_id in (
                Alerting.channels.through.objects
                .filter(alerting__monitor_id__in=ids, channel__deleted_at__isnull=True)
                .order_by("channel_id").values_list("alerting__monitor_id", "channel_id")):
            self.chosen[monitor_id].append(channel_id)


@contextmanager
def batch(monitors, since: datetime):
    """Serve the reads below from one query each for ``monitors`` (a list of
    Monitor); ``since``: the earliest time a flapping count looks back to."""
    _local.batch = _Batch(monitors, since)
    try:
        yield
    finally:
        _local.batch = None


def _active(monitor_id: int) -> _Batch | None:
    b = getattr(_local, "batch", None)
    return b if b is not None and monitor_id in b.ids else None


def open_incident(monitor) -> Incident | None | bool:
    """The monitor's open incident or None when the batch knows; False when it
    does not (the caller queries)."""
    b = _active(monitor.pk)
    return False if b is None else b.open.get(monitor.pk)


def opened(incident: Incident) -> None:
    """Record an incident this process just opened."""
    b = _active(incident.monitor_id)
    if b is not None:
        b.open[incident.monitor_id] = incident
        b.recent[incident.monitor_id] = b.recent.get(incident.monitor_id, 0) + 1


def forget(monitor_ids) -> None:
    """Monitors whose incidents this process opened without building them
    (:func:`alerts.incidents.open_many`): their reads query the database again."""
    b = getattr(_local, "batch", None)
    if b is not None:
        b.ids.difference_update(monitor_ids)


def _projects(project_id: int) -> _Batch | None:
    b = getattr(_local, "batch", None)
    return b if b is not None and project_id in b.projects else None


def windows(project_id: int) -> list[MaintenanceWindow]:
    """The project's maintenance windows."""
    b = _projects(project_id)
    if b is not None:
        return b.windows[project_id]
    return list(MaintenanceWindow.objects.filter(project_id=project_id))


def recent_incidents(monitor, since: datetime) -> int:
    """How many incidents of ``monitor`` opened after ``since``."""
    b = _active(monitor.pk)
    if b is not None and since == b.since:
        return b.recent.get(monitor.pk, 0)
    return Incident.objects.filter(monitor=monitor, opened_at__gt=since).count()


def chosen_channels(monitor) -> list[int] | None:
    """The live channels the monitor's Alerting lists, when the batch has them."""
    b = _active(monitor.pk)
    return None if b is None else b.chosen[monitor.pk]


def project_channels(project_id: int) -> list[int] | None:
    """The project's live channel ids when the batch has them, else None."""
    b = _projects(project_id)
    return None if b is None else b.channels[project_id]
