"""Read caches for a batch of monitors whose detections are applied together.

The evaluator hands the detections of up to a hundred monitors over at once
(:func:`monitors.detections.emit_many`); opening an incident reads the
monitor's open incident, maintenance windows, recent incidents (flapping),
alerting settings, channels and escalation tiers. Inside :func:`batch` those
are read with one query per kind for the whole batch (the channels only if some
monitor needs them: its project's, or the ones its Alerting lists; the tiers
once per policy) and then served from memory; outside it each is one query,
as before. The caller holds every batch
monitor's row lock, so nothing read here can change under it except through
this process, which keeps the caches up to date (:func:`opened`, :func:`forget`).
"""
from __future__ import annotations

import threading
from collections import defaultdict
from contextlib import contextmanager
from datetime import datetime
from functools import cached_property

from django.db import connection

from alerts.models import Alerting, Channel, Incident, MaintenanceWindow
from core import sql

_local = threading.local()
_MONITOR = Alerting._meta.get_field("monitor")  # Alerting.monitor: caches both ways


class _Batch:
    def __init__(self, monitors, since: datetime):
        ids = [m.pk for m in monitors]
        self.monitor_ids, self.ids = ids, set(ids)  # ids: those whose reads are served
        self.projects = {m.project_id for m in monitors}
        self.since = since
        self.tiers: dict[int, list] = {}  # escalation policy -> its tiers, once asked for
        where, params = sql.where_in(Incident, "monitor_id", ids)
        self.open = {i.monitor_id: i for i in
                     sql.select(Incident, f"{where} AND resolved_at IS NULL", params)}
        self.windows = defaultdict(list)
        for w in sql.select(MaintenanceWindow,
                            *sql.where_in(MaintenanceWindow, "project_id", sorted(self.projects))):
            self.windows[w.project_id].append(w)
        with connection.cursor() as cur:
            cur.execute(f"SELECT monitor_id, COUNT(*) FROM {Incident._meta.db_table} WHERE "
                        f"{where} AND opened_at > %s GROUP BY monitor_id",
                        [*params, sql.prep(Incident, "opened_at", since)])
            self.recent = dict(cur.fetchall())
        # each monitor's Alerting (None: it has none; alerting_of makes a default)
        unread = [m for m in monitors if not _MONITOR.remote_field.is_cached(m)]
        if unread:
            found = {a.monitor_id: a for a in sql.select(
                Alerting, *sql.where_in(Alerting, "monitor_id", [m.pk for m in unread]))}
            for m in unread:
                alerting = found.get(m.pk)
                _MONITOR.remote_field.set_cached_value(m, alerting)
                if alerting is not None:
                    _MONITOR.set_cached_value(alerting, m)

    @cached_property
    def channels(self) -> dict[int, list[int]]:
        """project -> its live channels, by id (read when first asked for)."""
        out = defaultdict(list)
        where, params = sql.where_in(Channel, "project_id", sorted(self.projects))
        with connection.cursor() as cur:
            cur.execute(f"SELECT id, project_id FROM {Channel._meta.db_table} WHERE {where} "
                        "AND deleted_at IS NULL ORDER BY id", params)
            for pk, project_id in cur.fetchall():
                out[project_id].append(pk)
        return out

    @cached_property
    def chosen(self) -> dict[int, list[int]]:
        """monitor -> the live channels its Alerting lists, by id (read when first
        asked for)."""
        out = defaultdict(list)
        through = Alerting.channels.through
        where, params = sql.where_in(through, "alerting_id", self.monitor_ids, "t")
        with connection.cursor() as cur:
            cur.execute(f"SELECT t.alerting_id, t.channel_id FROM {through._meta.db_table} t "
                        f"JOIN {Channel._meta.db_table} c ON c.id = t.channel_id "
                        f"WHERE {where} AND c.deleted_at IS NULL ORDER BY t.channel_id", params)
            for monitor_id, channel_id in cur.fetchall():
                out[monitor_id].append(channel_id)
        return out


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


def policy_tiers(policy_id: int, read) -> list:
    """The tiers of escalation policy ``policy_id``: ``read()`` (a list), once per
    batch inside one."""
    b = getattr(_local, "batch", None)
    if b is None:
        return read()
    if policy_id not in b.tiers:
        b.tiers[policy_id] = read()
    return b.tiers[policy_id]


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
