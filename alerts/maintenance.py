"""Maintenance windows: when a monitor's notifications are held back.

During a window that covers a monitor (its own, or one for a tag it has) pings,
runs and incidents are recorded as always, but an incident that opens is not
notified: its ``opened`` event says it was suppressed and by which window, and
its first notification goes out when the window ends, if it is still open then.
Escalation steps and re-notifications due inside a window wait for its end.
Acknowledgements and resolves of incidents that were already notified still go
out (a page is never left open). Windows that overlap or follow each other
without a gap count as one.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from alerts import batch
from alerts.models import MaintenanceWindow
from monitors import schedule


def covering(monitor, at: datetime) -> tuple[MaintenanceWindow, datetime] | None:
    """The window covering ``monitor`` at ``at`` and when the maintenance ends
    (the latest end of windows that chain), or None."""
    windows = batch.windows(monitor.project_id)
    mine = [w for w in windows if w.monitor_id == monitor.pk or (w.tag and w.tag in monitor.tags)]
    found, end = None, at
    while True:
        hits = [(w, e) for w in mine if (e := end_if_open(w, end)) is not None and e > end]
        if not hits:
            break
        window, end = max(hits, key=lambda hit: hit[1])
        found = found or window
    return (found, end) if found else None


def end_if_open(window: MaintenanceWindow, at: datetime) -> datetime | None:
    """When ``window`` ends if it is open at ``at``, else None."""
    if window.schedule:
        start = schedule.previous_fire(window.schedule, window.timezone, at)
        if start is not None and at < start + window.duration:
            return start + window.duration
        return None
    if window.starts_at <= at < window.ends_at:
        return window.ends_at
    return None


def validate(data: dict) -> dict:
    """Check a window's fields (one-off or recurring, and what it covers); returns
    errors by field ({} when fine)."""
    errors = {}
    if bool(data.get("monitor")) == bool(data.get("tag")):
        errors["monitor"] = ["give exactly one of monitor and tag"]
    try:
        schedule.validate_timezone(data.get("timezone") or "UTC")
    except schedule.ScheduleError as exc:
        errors["timezone"] = [str(exc)]
    if data.get("schedule"):
        if "timezone" not in errors:
            try:
                schedule.validate_cron(data["schedule"], data.get("timezone") or "UTC")
            except schedule.ScheduleError as exc:
                errors["schedule"] = [str(exc)]
        if not data.get("duration") or data["duration"] <= timedelta(0):
            errors["duration"] = ["required with a schedule: seconds each window lasts"]
        if data.get("starts_at") or data.get("ends_at"):
            errors["starts_at"] = ["a recurring window (schedule) has no starts_at or ends_at: "
                                   "give one or the other"]
    elif not data.get("starts_at") or not data.get("ends_at"):
        errors["starts_at"] = ["give starts_at and ends_at, or a schedule and a duration"]
    elif data["ends_at"] <= data["starts_at"]:
        errors["ends_at"] = ["must be after starts_at"]
    return errors
