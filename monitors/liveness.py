"""CronRadar's own liveness, and the outages it implies.

A dead-man's switch must know when it was dead itself: a slot whose grace ended
while no CronRadar web process could receive pings is no evidence that the job
did not run, so it is recorded ``unknown``, not ``missed`` (Sentry Crons does the
like for ingestion outages).

- :func:`beat` records that a component (``web`` or ``evaluator``) is alive now,
  as :class:`~monitors.models.LivenessSpan` rows: the latest span is extended, or
  a new one starts after a silence longer than ``CRONRADAR_OUTAGE_THRESHOLD``.
- :func:`start_heartbeat` calls it every ``CRONRADAR_LIVENESS_INTERVAL`` seconds on
  a daemon thread; every web process runs one (``cronradar/wsgi.py``, ``serve``).
- :class:`Liveness` is the pure reading of the web spans at a time ``now``: the
  windows of grace-end times to record as unknown, and how far the web tier's
  state is known yet. :func:`load` builds it from the database.

A gap between two web spans is an outage. Unknown are the slots whose grace
ended in the gap or within the threshold after it (clients retrying their pings
once CronRadar is back). While the web tier has been silent for longer than the
threshold the outage is ongoing and every grace end since its last beat is
unknown. Grace ends after the web tier's last beat are not judged until the next
beat shows it was alive then (at most one interval later). A stopped evaluator
with live web processes leaves no gap: its late misses are real and reported.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from itertools import pairwise

from django.conf import settings
from django.db import close_old_connections, connections
from django.utils import timezone

from core import logs
from monitors.models import LivenessSpan

log = logging.getLogger(__name__)
WEB, EVALUATOR = "web", "evaluator"
SPANS_READ = 50  # the latest spans read per tick: one per outage, so 49 outages back
FOREVER = datetime.max.replace(tzinfo=UTC)


def threshold() -> timedelta:
    """``CRONRADAR_OUTAGE_THRESHOLD``: the shortest silence that counts as an outage."""
    return timedelta(seconds=settings.CRONRADAR_OUTAGE_THRESHOLD)


def enabled() -> bool:
    """Liveness is recorded and used unless ``CRONRADAR_LIVENESS_INTERVAL`` is 0."""
    return settings.CRONRADAR_LIVENESS_INTERVAL > 0


def beat(component: str, now: datetime) -> None:
    """Record ``component`` alive at ``now`` (two small queries).

    Extends the component's latest span when it was seen within the threshold,
    else starts a new span (the time in between becomes an outage). Processes
    racing to start one may create two overlapping spans; :class:`Liveness`
    merges them.
    """
    latest = (LivenessSpan.objects.filter(component=component)
              .order_by("-last_seen_at").values_list("pk", "last_seen_at").first())
    if latest is not None and latest[1] >= now - threshold():
        LivenessSpan.objects.filter(pk=latest[0], last_seen_at__lt=now).update(last_seen_at=now)
    else:
        LivenessSpan.objects.create(component=component, started_at=now, last_seen_at=now)


def last_beat(component: str) -> datetime | None:
    """When ``component`` (``web`` or ``evaluator``) was last recorded alive, by any
    process; None before the first beat (one read of the ``liveness_latest``
    index). The evaluator records a beat at most every
    ``CRONRADAR_LIVENESS_INTERVAL`` seconds of its ticks, so this is its last tick
    to within that interval."""
    return (LivenessSpan.objects.filter(component=component).order_by("-last_seen_at")
            .values_list("last_seen_at", flat=True).first())


@dataclass(frozen=True)
class Window:
    """Grace-end times ``start`` .. ``end`` (inclusive; ``end`` None: still going)
    are unknown because of the outage that began at ``outage_start`` and ended at
    ``outage_end`` (None while it goes on)."""

    outage_start: datetime
    outage_end: datetime | None
    start: datetime
    end: datetime | None

    def covers(self, at: datetime) -> bool:
        return self.start <= at and (self.end is None or at <= self.end)


@dataclass(frozen=True)
class Liveness:
    """What the web tier's liveness says at one moment.

    windows: the outages' unknown windows, oldest first. known_until: grace ends
    up to this time can be judged; later ones wait for the next web beat.
    """

    windows: tuple[Window, ...] = ()
    known_until: datetime = FOREVER

    @classmethod
    def from_spans(cls, spans: Iterable[tuple[datetime, datetime]], now: datetime,
                   gap: timedelta, settle: timedelta) -> Liveness:
        """Read ``(started_at, last_seen_at)`` web spans at ``now``.

        gap: the shortest silence that is an outage; settle: how long after an
        outage grace ends are still unknown. No spans at all (liveness never
        recorded) means always up: nothing is unknown and everything is known.
        """
        merged: list[list[datetime]] = []
        for start, seen in sorted(spans):
            if merged and start <= merged[-1][1] + gap:
                merged[-1][1] = max(merged[-1][1], seen)
            else:
                merged.append([start, seen])
        if not merged:
            return cls()
        windows = [Window(a[1], b[0], a[1], b[0] + settle) for a, b in pairwise(merged)]
        last_seen = merged[-1][1]
        ongoing = now - last_seen > gap  # silent for longer than the threshold: an outage now
        if ongoing:
            windows.append(Window(last_seen, None, last_seen, None))
        for i, (w, following) in enumerate(pairwise(list(windows))):
            if w.end >= following.start:  # each grace end belongs to one outage
                windows[i] = replace(w, end=following.start - timedelta(microseconds=1))
        return cls(tuple(windows), now if ongoing else last_seen)

    def window_at(self, at: datetime) -> Window | None:
        """The unknown window holding grace end ``at``, or None."""
        return next((w for w in self.windows if w.covers(at)), None)


def load(now: datetime) -> Liveness:
    """The web tier's :class:`Liveness` at ``now`` from the latest spans (one query)."""
    if not enabled():
        return Liveness()
    spans = list(LivenessSpan.objects.filter(component=WEB).order_by("-last_seen_at")
                 .values_list("started_at", "last_seen_at")[:SPANS_READ])
    return Liveness.from_spans(spans, now, threshold(), threshold())


_started: dict[str, int] = {}  # component -> pid whose heartbeat thread runs
_lock = threading.Lock()


def start_heartbeat(component: str) -> bool:
    """Start a daemon thread that calls :func:`beat` every ``CRONRADAR_LIVENESS_INTERVAL``
    seconds in this process (once per component and process; again in a forked child).
    Returns False when liveness is disabled or the thread already runs."""
    if not enabled():
        return False
    with _lock:
        if _started.get(component) == os.getpid():
            return False
        _started[component] = os.getpid()
    threading.Thread(target=_heartbeat_loop, args=(component,), daemon=True,
                     name=f"cronradar-liveness-{component}").start()
    return True


def _heartbeat_loop(component: str) -> None:
    """Beat at once, then every interval, for the life of the process."""
    while True:
        try:
            close_old_connections()
            beat(component, timezone.now())
            logs.recovered(log)
        except Exception as exc:  # the database may be down: that is what the gap records
            logs.report(log, f"liveness beat for {component} failed", exc)
            connections.close_all()
        time.sleep(settings.CRONRADAR_LIVENESS_INTERVAL)
