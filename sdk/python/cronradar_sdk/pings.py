"""Sending one ping: the primitive the decorator, the context manager and the
scheduler integrations share.

:func:`send` builds the ping URL from the settings (CronRadar's docs/pinging.md),
POSTs it with bounded retries (``cronradar_exec``'s: network errors, 429 and 5xx
retried with backoff within ``settings.timeout`` seconds) and never raises: a ping
CronRadar refuses or cannot be sent is a warning on the ``cronradar_sdk`` logger.
"""
from __future__ import annotations

import datetime
import logging
from typing import Mapping

from cronradar_sdk import __version__, cronradar_exec
from cronradar_sdk.config import Settings

log = logging.getLogger("cronradar_sdk")
STATES = ("start", "success", "fail", "log")
HEADERS = {"User-Agent": f"cronradar-sdk/{__version__}"}


def action(state: str | int) -> str:
    """The ping URL's action for ``state``: ``start``, ``success`` (the bare URL),
    ``fail``, ``log``, or an exit status 0-255 (an int or its digits). Raises
    ValueError for anything else."""
    if isinstance(state, bool):
        raise ValueError(f"not a ping state: {state!r}")
    if isinstance(state, int) or (isinstance(state, str) and state.isascii()
                                  and state.isdigit()):
        if not 0 <= int(state) <= 255:
            raise ValueError(f"an exit status is 0-255, not {state!r}")
        return str(int(state))
    if state not in STATES:
        raise ValueError(f"not a ping state: {state!r} (start, success, fail, log or an "
                         "exit status)")
    return "" if state == "success" else state


def send(settings: Settings, slug: str | None, state: str | int,
         rid: str | None = None, slot: str | datetime.datetime | None = None,
         body: bytes = b"",
         params: Mapping[str, str] | None = None) -> bool:
    """Ping monitor ``slug`` (by the project's ping key; None: ``settings.ping_url``).

    state: ``"start"``, ``"success"``, ``"fail"``, ``"log"`` or an exit status
    (0-255, 0 a success); rid: the run id pairing a start with its end (a UUID
    string); slot: the scheduled time the run is for (RFC 3339 or Unix seconds, or
    a timezone-aware datetime);
    body: stored with the ping (the first 100 KB); params: more query parameters
    (:func:`cronradar_exec.create_params` for create-on-ping).

    Returns whether CronRadar stored the ping. Never raises (a bad ``state`` or a
    naive datetime ``slot`` is a programming error and does raise ValueError):
    settings that cannot name the monitor (none, or a URL that is not
    ``http(s)://host/...``), a refusal (4xx) or CronRadar unreachable for
    ``settings.timeout`` seconds are logged as a warning and answer False. A
    ``slot`` CronRadar refuses (a 400 whose text starts with ``slot``) is warned
    about and the ping sent again without it, so it is stored all the same (filed
    by its arrival time).
    """
    name = action(state)
    if isinstance(slot, datetime.datetime):
        if slot.utcoffset() is None:
            raise ValueError(f"a slot must be timezone-aware, not {slot!r}")
        slot = slot.isoformat()
    base = settings.ping_base(slug)
    if not base:
        log.warning("cronradar: not pinging %s: %s", slug or "(no slug)",
                    "set CRONRADAR_URL and CRONRADAR_PING_KEY (or url=, ping_key=)"
                    if slug is not None else "set CRONRADAR_PING_URL (or ping_url=)")
        return False
    problem = cronradar_exec.bad_url(base)
    if problem:  # CRONRADAR_URL=notaurl, say: the job runs all the same
        warn(f"not pinging {slug or '(no slug)'}, {problem}: {cronradar_exec.shown(base)!r}")
        return False
    url = cronradar_exec.action_url(base, name, rid, slot, dict(params or {}))
    if slot is None:
        return cronradar_exec.ping(url, settings.timeout, body, warn=warn, headers=HEADERS)
    answer = cronradar_exec.request(url, settings.timeout, body, headers=HEADERS, warn=warn)
    if answer is not None and answer[0] == 400 and answer[1].startswith(b"slot"):
        # CronRadar refused the slot (not a fire time of its schedule: a scheduler's
        # DST rule that differs from the monitor's, say): the ping goes without it,
        # filed by arrival time, rather than being lost
        warn(f"slot {slot} refused ({answer[1][:200].decode('utf-8', 'replace').strip()}); "
             f"pinged without it: {cronradar_exec.shown(url)}")
        url = cronradar_exec.action_url(base, name, rid, None, dict(params or {}))
        return cronradar_exec.ping(url, settings.timeout, body, warn=warn, headers=HEADERS)
    return cronradar_exec.stored(answer, url, warn)


def warn(message: str) -> None:
    """Log ``message`` as a warning of the ``cronradar_sdk`` logger."""
    log.warning("cronradar: %s", message)

