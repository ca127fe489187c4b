"""What the scheduler integrations (:mod:`cronradar_sdk.celery`,
:mod:`cronradar_sdk.apscheduler`) share: a job's name as a slug, a schedule's
sets of values as a 5-field cron expression, times as RFC 3339, and the run id of
one attempt. Standard library only."""
from __future__ import annotations

import re
import uuid
from datetime import datetime, timezone

# rid = uuid5(RID_NAMESPACE, "<what names the attempt>"): the same in every handler of
# one attempt (its start and its end), without keeping state between them
RID_NAMESPACE = uuid.UUID("5d1b7c8e-2f0a-4e55-9c8b-0c1c4f3e7a61")
DEFAULT_GRACE = 60  # seconds


class Unsupported(ValueError):
    """A scheduled job CronRadar cannot monitor as it stands; str(e) says why."""


def slugify(name: str) -> str:
    """``name`` as a CronRadar slug: lower case, runs of anything but letters,
    digits, ``_`` and ``-`` made one ``-``, at most 100 characters. Raises
    :class:`Unsupported` when nothing is left."""
    slug = re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-")[:100].strip("-")
    if not slug:
        raise Unsupported(f"{name!r}: no slug can be made from its name")
    return slug


def cron_field(values, lo: int, hi: int) -> str:
    """A set of values of one field (``lo``-``hi``) as a cron field: ``*``,
    ``*/n``, or a comma list of values and ranges."""
    values = sorted(values)
    if values == list(range(lo, hi + 1)):
        return "*"
    if len(values) > 2 and values[0] == lo:
        step = values[1] - values[0]
        if values == list(range(lo, hi + 1, step)):
            return f"*/{step}"
    runs = [[values[0], values[0]]]
    for v in values[1:]:
        if v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def cron_expression(minute, hour, day_of_month, month, day_of_week) -> str:
    """The 5-field cron expression (Vixie/Debian) of these sets of values
    (day_of_week 0 = Sunday), for a scheduler that runs on the days matching both
    day fields (Celery, APScheduler). Raises :class:`Unsupported` when both are
    restricted: cron runs on the days matching either."""
    dom, dow = cron_field(day_of_month, 1, 31), cron_field(day_of_week, 0, 6)
    if dom != "*" and dow != "*":
        raise Unsupported(f"day of month {dom} and day of week {dow}: the scheduler runs "
                          "on days matching both, cron on days matching either")
    return " ".join((cron_field(minute, 0, 59), cron_field(hour, 0, 23), dom,
                     cron_field(month, 1, 12), dow))


def rfc3339(at: datetime) -> str:
    """``at`` (aware) as RFC 3339 in UTC with ``Z``."""
    return at.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def rid(*attempt) -> str:
    """The run id of one attempt, named by ``attempt`` (e.g. a task id and its
    retry count): the same for the same parts."""
    return str(uuid.uuid5(RID_NAMESPACE, "/".join(str(part) for part in attempt)))
