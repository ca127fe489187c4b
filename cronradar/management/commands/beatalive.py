"""Celery beat's liveness: a file beat's loop touches, and the check that reads it.

Beat itself leaves no trace a health check can read cheaply (its schedule file is
written every few minutes at most). Run it with the scheduler of this module::

    celery -A cronradar beat --scheduler \
        cronradar.management.commands.beatalive:LivenessScheduler \
        --schedule /app/data/celerybeat-schedule

and it touches ``<schedule>.alive`` on every pass of its loop (once a second at
most; beat passes at least every ``CRONRADAR_TICK_SECONDS``, the evaluator's
interval). ``manage.py beatalive --schedule <schedule> --max-age 30`` then exits 0
while that file is at most 30 s old and 1 when it is older or missing: the
health check of the beat service (docker/compose.yaml). It checks beat alone, not
the broker or the workers (their own checks do): restarting beat is the remedy
only for beat being stuck or dead.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from celery.beat import PersistentScheduler
from django.core.management.base import BaseCommand, CommandError

TOUCH_EVERY = 1.0  # seconds: the most often the liveness file is touched


def liveness_path(schedule: str | os.PathLike) -> Path:
    """The liveness file of beat's schedule file ``schedule``: ``<schedule>.alive``."""
    return Path(f"{os.fspath(schedule)}.alive")


class LivenessScheduler(PersistentScheduler):
    """Celery's default scheduler (the schedule kept in ``--schedule``) that also
    touches :func:`liveness_path` of it on each pass of beat's loop, at most every
    :data:`TOUCH_EVERY` seconds. A file it cannot write is an error at start
    (beat exits), never a silent check that always fails."""

    def setup_schedule(self):
        super().setup_schedule()
        self._touched = None
        self._touch(time.monotonic())

    def tick(self, *args, **kwargs):
        now = time.monotonic()
        if self._touched is None or now - self._touched >= TOUCH_EVERY:
            self._touch(now)
        return super().tick(*args, **kwargs)

    def _touch(self, now: float) -> None:
        liveness_path(self.schedule_filename).touch()
        self._touched = now


def age(schedule: str | os.PathLike, now: float) -> float | None:
    """Seconds since beat last touched the liveness file of ``schedule`` at the
    wall-clock time ``now`` (``time.time()``); None when there is no such file."""
    try:
        return now - liveness_path(schedule).stat().st_mtime
    except FileNotFoundError:
        return None


class Command(BaseCommand):
    help = ("Exit 0 while Celery beat (run with LivenessScheduler) touched its "
            "liveness file at most --max-age seconds ago, else 1.")
    requires_system_checks = []  # a health check every 30 s: read one file, nothing else

    def add_arguments(self, parser):
        parser.add_argument("--schedule", required=True,
                            help="beat's --schedule file; the liveness file is <schedule>.alive")
        parser.add_argument("--max-age", type=float, default=30.0,
                            help="seconds (default 30)")

    def handle(self, *args, schedule, max_age, **options):
        seconds = age(schedule, time.time())
        if seconds is None:
            raise CommandError(f"stale: no {liveness_path(schedule)} (beat not started, or "
                               "not run with --scheduler "
                               "cronradar.management.commands.beatalive:LivenessScheduler)")
        if seconds > max_age:
            raise CommandError(f"stale: beat last passed {seconds:.0f} s ago (max {max_age:g})")
        self.stdout.write(f"alive: beat passed {seconds:.1f} s ago")
