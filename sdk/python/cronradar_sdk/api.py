"""CronRadar's management API (``/api/v1/``) as far as the SDK's instrumentation
needs it: reading and upserting a monitor by slug, with the API key of
``settings.api_key`` (``Authorization: Bearer``).

Like the pings, these calls never raise because CronRadar is unreachable or
refuses: they retry with backoff within ``settings.timeout`` seconds (network
errors, 429, 5xx), log a warning on the ``cronradar_sdk`` logger and answer None.
"""
from __future__ import annotations

import json
import logging
import urllib.parse

from cronradar_sdk import cronradar_exec, pings
from cronradar_sdk.config import Settings

log = logging.getLogger("cronradar_sdk")
CREATE_GRACE = 3600  # seconds: a new monitor's grace unless given (create-on-ping's too)


class Answer:
    """A final HTTP answer: ``status`` (int) and ``data`` (the decoded JSON body;
    None when the body is empty or not JSON)."""

    def __init__(self, status: int, data):
        self.status, self.data = status, data

    def __repr__(self) -> str:
        return f"Answer({self.status}, {self.data!r})"


def call(settings: Settings, method: str, path: str, payload=None) -> Answer | None:
    """``method`` the API ``path`` (``/monitors/by-slug/x/``) with JSON ``payload``
    (None: no body). Returns the answer, 4xx included (the caller judges those), or
    None when it cannot be made: no ``url`` or ``api_key`` in the settings, or
    CronRadar unreachable within ``settings.timeout`` seconds (both logged as a
    warning). Never raises."""
    url = settings.api_url(path)
    if not (url and settings.api_key):
        log.warning("cronradar: not calling the API (%s %s): set CRONRADAR_URL and "
                    "CRONRADAR_API_KEY (or url=, api_key=)", method, path)
        return None
    body = None if payload is None else json.dumps(payload).encode()
    headers = {**pings.HEADERS, "Authorization": f"Bearer {settings.api_key}",
               "Accept": "application/json",
               **({"Content-Type": "application/json"} if body is not None else {})}
    got = cronradar_exec.request(url, settings.timeout, body, method=method, headers=headers,
                                 warn=pings.warn, doing="calling the API")
    if got is None:
        return None
    status, text = got
    try:
        data = json.loads(text) if text else None
    except ValueError:
        data = None
    return Answer(status, data)


def get_monitor(settings: Settings, slug: str) -> dict | None:
    """The monitor ``slug`` of the API key's project (the API's monitor object,
    with its ``ping_url``), or None when there is none or it cannot be read (the
    reason logged as a warning)."""
    answer = call(settings, "GET", _by_slug(slug))
    if answer is None:
        return None
    if answer.status != 200 or not isinstance(answer.data, dict):
        _refused("GET", slug, answer)
        return None
    return answer.data


def ensure_monitor(settings: Settings, slug: str, fields: dict) -> dict | None:
    """The monitor ``slug`` with ``fields`` (the API's monitor fields: ``kind``,
    ``schedule``, ``timezone``, ``period`` and ``grace`` in seconds, ...): created
    when new (named ``fields["name"]``, else the slug; grace 3600 s unless given, as
    create-on-ping), changed when one of ``fields`` differs, left alone otherwise
    (``PUT /api/v1/monitors/by-slug/``).

    Returns the monitor as the API answers it, or None when it could not be read or
    written (the reason logged as a warning). Never raises."""
    answer = call(settings, "GET", _by_slug(slug))
    if answer is None:
        return None
    if answer.status == 200 and isinstance(answer.data, dict):
        if all(answer.data.get(name) == value for name, value in fields.items()):
            return answer.data
        payload = fields
    elif answer.status == 404:
        payload = {"name": slug, "grace": CREATE_GRACE, **fields}
    else:
        _refused("GET", slug, answer)
        return None
    answer = call(settings, "PUT", _by_slug(slug), payload)
    if answer is None:
        return None
    if answer.status not in (200, 201) or not isinstance(answer.data, dict):
        _refused("PUT", slug, answer)
        return None
    return answer.data


def _by_slug(slug: str) -> str:
    return f"/monitors/by-slug/{urllib.parse.quote(slug, safe='')}/"


def _refused(method: str, slug: str, answer: Answer) -> None:
    """Warn of an answer that is not the monitor (a 4xx, or not an object)."""
    log.warning("cronradar: the API answered %s of monitor %s with HTTP %s, not the monitor: "
                "%s", method, slug, answer.status, json.dumps(answer.data)[:300])
