"""Bounded storage for pings and runs: old rows deleted in small batches, off the
ping path and off the evaluator's tick.

What is kept (settings; docs/configuration.md, "Retention"):

- pings: each monitor's newest ``CRONRADAR_KEEP_PINGS`` (default 100, as
  Healthchecks), by arrival time;
- runs: each monitor's newest ``CRONRADAR_KEEP_RUNS`` (by time, as
  :mod:`monitors.history` orders them; default 100: run statistics, the advisor
  and the slow-run baseline read them), and any run younger than
  ``CRONRADAR_RUN_RETENTION_DAYS`` (default 90; a run's time is its end, else its
  start, else its slot). Runs the evaluator still watches (open, or a deadline not
  checked yet) are never deleted. A deleted run's pings keep their row with no run;
  a heartbeat's ping kept in its run (PostgreSQL, :func:`monitors.pings._kept_in_run`)
  lives as long as its run (the pings lists show it while it is among the
  monitor's newest pings kept);
- audit log entries: ``CRONRADAR_AUDIT_RETENTION_DAYS`` (default 90), the
  installation-level ones too (:func:`accounts.audit.prune`: accounts cannot
  import this floor, so it is called from here).

An organisation's plan overrides the two settings for its monitors (``pings_kept``,
``run_retention_days``; docs/multi-tenant.md): the monitors of a step are grouped
by those values (:func:`by_plan`, one query), not read one by one.

Which monitors are looked at: the ones that wrote pings (runs) since the last
step. A cursor over each table's primary key, kept in :class:`PruneCursor` so it
survives restarts and is shared by every process, marks how far the rows were
looked at; a step claims the next range with compare-and-set, so two processes
never prune the same range. A monitor that stops writing keeps what it has, which
the rules above already bound. ``manage.py prune --all`` looks at every monitor
(after an upgrade, or with the settings lowered).

:func:`prune` runs every ``CRONRADAR_PRUNE_INTERVAL`` seconds (Celery beat in
production, a thread of ``manage.py serve``); each statement deletes at most
``CRONRADAR_PRUNE_BATCH`` rows, so it holds locks briefly (PostgreSQL locks only
the rows it deletes; SQLite's write lock is held for one batch).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce

from accounts import audit
from monitors import history
from monitors.models import Monitor, Ping, PruneCursor, Run

log = logging.getLogger(__name__)
SCAN = 20_000  # primary-key values a step claims per table
CHUNK = 100  # monitors per statement
MAX_BATCHES = 20  # delete statements per monitor chunk and step (the rest: next step)


@dataclass
class Pruned:
    """Rows deleted by one :func:`prune` call, and how many monitors were looked at."""

    pings: int = 0
    runs: int = 0
    monitors: int = 0
    audit: int = 0


def prune(now: datetime, everything: bool = False) -> Pruned:
    """One step: claim the next range of new pings and of new runs, and prune the
    monitors that wrote them. ``everything``: every monitor instead (``prune --all``,
    until done). Returns what was deleted."""
    done = Pruned(audit=audit.prune(now, settings.CRONRADAR_PRUNE_BATCH, MAX_BATCHES))
    if everything:
        ids = list(Monitor.objects.order_by("pk").values_list("pk", flat=True))
        _prune_pings(ids, done)
        _prune_runs(ids, now, done)
        return done
    ids = _claim("pings", Ping)
    if ids is not None:
        _prune_pings(ids, done)
    ids = _claim("runs", Run)
    if ids is not None:
        _prune_runs(ids, now, done)
    return done


def _claim(name: str, model) -> list[int] | None:
    """The monitors that wrote rows of ``model`` in the next unclaimed range of its
    primary key (None if another process claimed it first)."""
    cursor, _ = PruneCursor.objects.get_or_create(name=name)
    start = cursor.position
    last = model.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    end = min(start + SCAN, last + 1)
    if end <= start:
        return []
    if not PruneCursor.objects.filter(name=name, position=start).update(position=end):
        return None  # another process took this range
    return sorted(set(model.objects.filter(pk__gte=start, pk__lt=end)
                      .values_list("monitor_id", flat=True)))


def _chunks(ids: list[int]):
    for i in range(0, len(ids), CHUNK):
        yield ids[i:i + CHUNK]


def by_plan(monitor_ids: list[int], limit: str, default: int) -> dict[int, list[int]]:
    """``monitor_ids`` grouped by what their organisation's plan says for ``limit``
    (a :attr:`accounts.models.Plan.LIMITS` name), ``default`` (the setting) where
    the plan says nothing or there is no plan: ``{value: [monitor id, ...]}``. One
    query, whatever the number of plans."""
    groups: dict[int, list[int]] = {}
    for pk, value in Monitor.objects.filter(pk__in=monitor_ids).values_list(
            "pk", f"project__organisation__plan__{limit}"):
        groups.setdefault(default if value is None else value, []).append(pk)
    return groups


def _prune_pings(monitor_ids: list[int], done: Pruned) -> None:
    for chunk in _chunks(monitor_ids):
        done.monitors += len(chunk)
        old = Q(pk__in=[])
        for keep, ids in by_plan(chunk, "pings_kept", settings.CRONRADAR_KEEP_PINGS).items():
            # the arrival time of each monitor's (keep+1)-th newest ping: older ones go
            cut = (Monitor.objects.filter(pk__in=ids).annotate(cut=Subquery(
                Ping.objects.filter(monitor=OuterRef("pk")).order_by("-received_at", "-pk")
                .values("received_at")[keep:keep + 1])).filter(cut__isnull=False)
                .values_list("pk", "cut"))
            for monitor_id, at in cut:
                old |= Q(monitor_id=monitor_id, received_at__lte=at)
        for _ in range(MAX_BATCHES):
            batch = list(Ping.objects.filter(old).values_list("pk", flat=True)
                         [:settings.CRONRADAR_PRUNE_BATCH])
            if not batch:
                break
            done.pings += Ping.objects.filter(pk__in=batch)._raw_delete(Ping.objects.db)
            if len(batch) < settings.CRONRADAR_PRUNE_BATCH:
                break


def _prune_runs(monitor_ids: list[int], now: datetime, done: Pruned) -> None:
    keep = settings.CRONRADAR_KEEP_RUNS
    for chunk in _chunks(monitor_ids):
        # each monitor's (keep+1)-th newest run by time (monitors.history): it and
        # older ones may go
        cut_of = history.runs_newest_first(OuterRef("pk"))[keep:keep + 1]
        cut = {pk: (at, run) for pk, at, run in Monitor.objects.filter(pk__in=chunk).annotate(
            cut=Subquery(cut_of.values("pk")), cut_at=Subquery(cut_of.values("at")))
            .filter(cut__isnull=False).values_list("pk", "cut_at", "cut")}
        beyond = Q(pk__in=[])
        for days, ids in by_plan(list(cut), "run_retention_days",
                                 settings.CRONRADAR_RUN_RETENTION_DAYS).items():
            older = now - timedelta(days=days)
            for monitor_id in ids:  # older than the plan's retention, beyond the newest
                at, run = cut[monitor_id]
                # ended before ``older``: started (its time, by which the index is
                # read) before it too
                beyond |= (Q(monitor_id=monitor_id, age__lt=older)
                           & (Q(at__lt=at) | Q(at=at, pk__lte=run))
                           & history.not_after(min(at, older)))
        old = (history.runs(None).alias(age=_age()).filter(beyond)
               .exclude(outcome__in=Run.OPEN_OUTCOMES)
               .exclude(deadline_at__isnull=False, deadline_checked=False))
        for _ in range(MAX_BATCHES):
            batch = list(old.values_list("pk", flat=True)[:settings.CRONRADAR_PRUNE_BATCH])
            if not batch:
                break
            with transaction.atomic():
                Ping.objects.filter(run_id__in=batch).update(run=None)
                done.runs += Run.objects.filter(pk__in=batch)._raw_delete(Run.objects.db)
            if len(batch) < settings.CRONRADAR_PRUNE_BATCH:
                break


def _age():
    """A run's age for retention: from its end, else its start, else its slot."""
    return Coalesce(F("ended_at"), F("started_at"), F("slot_at"))
