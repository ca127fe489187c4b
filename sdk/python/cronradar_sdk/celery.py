"""Celery beat instrumentation: one CronRadar monitor per ``beat_schedule`` entry.

    from cronradar_sdk.celery import instrument
    app.conf.beat_schedule = {...}
    instrument(app)           # CRONRADAR_URL, CRONRADAR_PING_KEY, CRONRADAR_API_KEY

:func:`instrument` reads the app's ``beat_schedule`` (``crontab`` entries become
``cron`` monitors in the app's ``timezone``; ``timedelta``, number and
``schedule(run_every=...)`` entries ``interval`` monitors), puts a header naming
the entry into each entry's ``options``, and connects Celery's signals:

- ``beat_init`` (the beat process): each entry's monitor is created or updated
  (``PUT /api/v1/monitors/by-slug/<slug>/`` with the API key; slug: the entry's
  name made a slug), with ``max_attempts`` = the task's ``max_retries`` + 1;
- ``before_task_publish`` (the beat process): a crontab entry's message gets the
  fire time it is for (RFC 3339, header ``cronradar_slot``), sent as ``?slot=``
  with every ping of that run and kept by Celery on a retry;
- ``task_prerun`` → ``start``, ``task_success`` → success, ``task_failure`` →
  ``fail`` (body: the exception's type and message), ``task_retry`` → ``fail``
  (a failed attempt of the same slot; the retry pings ``start`` again), each with
  a run id (``rid``) made from the task id and the attempt number, so each
  attempt's start and end pair up.

Only messages beat published carry the entry header, so an ad-hoc ``.delay()``
of the same task pings nothing. CronRadar being unreachable never fails a task:
pings are retried within ``timeout`` seconds, then given up with a warning.
Celery is imported only here, so the rest of the SDK stays standard library only.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from cronradar_sdk import api, config, pings, schedulers
from cronradar_sdk.schedulers import DEFAULT_GRACE, Unsupported, rfc3339, slugify

log = logging.getLogger("cronradar_sdk.celery")

ENTRY_HEADER = "cronradar_entry"  # the beat entry's name, from its options
SLOT_HEADER = "cronradar_slot"  # the fire time a crontab entry's message is for
MAX_ATTEMPTS = 100  # CronRadar's upper bound; a task with max_retries=None retries forever
# (entry name, reason) of the entries warned about as not monitored: once per process,
# though the app's module may be imported (and instrument() called) more than once
_warned: set = set()
_warned_lock = threading.Lock()


@dataclass
class Entry:
    """One beat entry as CronRadar sees it.

    name: the entry's name; slug: its monitor's slug; task: the task name;
    fields: the monitor's fields for the upsert (durations in whole seconds; see
    :func:`monitor_fields`);
    crontab: the entry's ``celery.schedules.crontab`` (None for interval entries),
    for :func:`slot`."""

    name: str
    slug: str
    task: str
    fields: dict
    crontab: object = None


def cron_expression(crontab) -> str:
    """The 5-field cron expression (Vixie/Debian) that fires when ``crontab``
    does. Raises :class:`Unsupported` when both day fields are restricted."""
    return schedulers.cron_expression(crontab.minute, crontab.hour, crontab.day_of_month,
                                      crontab.month_of_year, crontab.day_of_week)


def _zone_name(app) -> str:
    """The IANA name of the app's time zone (``timezone``; UTC when unset and
    ``enable_utc``)."""
    name = app.conf.timezone
    if name:
        return str(name)
    if app.conf.enable_utc:
        return "UTC"
    raise Unsupported("enable_utc is off and timezone is unset: set the app's timezone")


def slot(crontab, tz, now: datetime) -> datetime:
    """The latest fire time of ``crontab`` at or before ``now`` (aware), read in
    the time zone ``tz`` (a tzinfo), as an aware UTC datetime: the run beat sends
    at ``now`` is for it. A wall time the clock skips (a DST gap) is no fire time
    and a repeated one is its first instant. Raises :class:`Unsupported` when
    none is found within 8 years (``0 0 30 2 *``)."""
    local = now.astimezone(tz).replace(tzinfo=None, second=0, microsecond=0)
    hours, minutes = sorted(crontab.hour, reverse=True), sorted(crontab.minute, reverse=True)
    day = local.date()
    for _ in range(8 * 366):
        if (day.month in crontab.month_of_year and day.day in crontab.day_of_month
                and day.isoweekday() % 7 in crontab.day_of_week):
            for h in hours:
                for m in minutes:
                    wall = datetime(day.year, day.month, day.day, h, m)
                    if wall > local:
                        continue
                    at = wall.replace(tzinfo=tz)
                    if at.astimezone(timezone.utc).astimezone(tz).replace(tzinfo=None) == wall:
                        return at.astimezone(timezone.utc)
        day -= timedelta(days=1)
    raise Unsupported("no fire time in the last 8 years")


def entries(app, grace: int = DEFAULT_GRACE, exclude=()) -> list[Entry]:
    """The monitors ``app.conf.beat_schedule`` describes, in its order, without
    ``exclude`` (entry names). A monitor's fields: ``name`` (the entry's),
    ``kind``, ``schedule`` + ``timezone`` (crontab) or ``period`` (seconds,
    rounded up; at least 1) and ``grace`` (seconds); :func:`monitor_fields` adds
    ``max_attempts``. An entry that cannot be
    monitored (a solar schedule, both day fields restricted) is left out with a
    warning in the log, once per process for each entry and reason."""
    from celery.schedules import crontab, schedule

    found = []
    for name, spec in (app.conf.beat_schedule or {}).items():
        if name in exclude:
            continue
        try:
            found.append(_entry(app, name, spec, grace, crontab, schedule))
        except Unsupported as exc:
            with _warned_lock:
                first = (name, str(exc)) not in _warned
                _warned.add((name, str(exc)))
            if first:
                log.warning("cronradar: beat entry %r is not monitored: %s", name, exc)
    return found


def _entry(app, name: str, spec: dict, grace: int, crontab, schedule) -> Entry:
    every = spec["schedule"]
    fields = {"name": name, "grace": grace}
    cron = None
    if isinstance(every, crontab):
        cron = every
        fields.update(kind="cron", schedule=cron_expression(every), timezone=_zone_name(app))
    else:
        if isinstance(every, schedule) and type(every) is schedule:
            every = every.run_every
        if isinstance(every, (int, float)):
            every = timedelta(seconds=every)
        if not isinstance(every, timedelta):
            raise Unsupported(f"schedule {every!r}: only crontab and interval schedules")
        seconds = every.total_seconds()
        fields.update(kind="interval", period=max(1, int(-(-seconds // 1))))
    return Entry(name, slugify(name), spec["task"], fields, cron)


def monitor_fields(app, entry: Entry) -> dict:
    """``entry.fields`` with ``max_attempts``: the task's ``max_retries`` + 1 (at
    most 100, CronRadar's bound, also for ``max_retries=None``, retrying forever),
    when the app has the task. Read when beat starts: the app's task modules are
    imported by then (looking earlier would finalize the app while it is set up)."""
    task = app.tasks.get(entry.task)
    if task is None:
        return dict(entry.fields)
    retries = task.max_retries
    attempts = MAX_ATTEMPTS if retries is None else min(MAX_ATTEMPTS, retries + 1)
    return {**entry.fields, "max_attempts": attempts}


def _tag(app, wanted: list[Entry]) -> None:
    """Put the entry header into each wanted entry's ``options`` (beat passes
    them to ``apply_async``; Celery keeps custom headers on a retry)."""
    for e in wanted:
        spec = app.conf.beat_schedule[e.name]
        options = spec.setdefault("options", {})
        options["headers"] = {**(options.get("headers") or {}), ENTRY_HEADER: e.name}


def instrument(app, *, grace: int = DEFAULT_GRACE, exclude=(), timeout: float = 10.0,
               **settings) -> Instrumentation:
    """Monitor every entry of ``app.conf.beat_schedule`` (call it after the
    schedule is set, in the module beat and the workers import). ``grace``:
    seconds a run may start after its scheduled time (default 60; it must cover
    the queue's latency); ``exclude``: entry names to leave alone; ``timeout``:
    seconds each ping may take, retries included; ``settings``: ``url=``,
    ``ping_key=``, ``api_key=`` (else ``CRONRADAR_URL``, ``CRONRADAR_PING_KEY``,
    ``CRONRADAR_API_KEY``; :func:`cronradar_sdk.config.resolve`): beat needs the
    API key (the upserts), the workers the ping key. Returns the
    :class:`Instrumentation` (its ``entries``; ``close()`` disconnects it). Never
    raises because CronRadar is unreachable."""
    wanted = entries(app, grace, exclude)
    _tag(app, wanted)
    return Instrumentation(app, wanted, config.resolve(timeout=timeout, **settings))


class Instrumentation:
    """The signal handlers of one instrumented app (see the module docstring).

    entries: entry name -> :class:`Entry`; settings: :class:`cronradar_sdk.config.Settings`."""

    def __init__(self, app, wanted: list[Entry], settings: config.Settings):
        from celery import signals

        self.app, self.settings = app, settings
        self.entries = {e.name: e for e in wanted}
        self._connected = [(signals.beat_init, self.on_beat_init),
                           (signals.before_task_publish, self.on_publish),
                           (signals.task_prerun, self.on_prerun),
                           (signals.task_success, self.on_success),
                           (signals.task_failure, self.on_failure),
                           (signals.task_retry, self.on_retry)]
        for signal, handler in self._connected:
            signal.connect(handler, weak=False)

    def close(self) -> None:
        """Disconnect the handlers."""
        for signal, handler in self._connected:
            signal.disconnect(handler)

    def on_beat_init(self, sender=None, **_):
        sync(self.app, self.entries.values(), self.settings)

    def on_publish(self, headers=None, now: datetime | None = None, **_):
        """Stamp a crontab entry's message with its fire time (beat publishes it
        at ``now``); a retry's message has it already."""
        e = self.entries.get((headers or {}).get(ENTRY_HEADER))
        if e is not None and e.crontab is not None and SLOT_HEADER not in headers:
            at = now or datetime.now(timezone.utc)
            headers[SLOT_HEADER] = rfc3339(slot(e.crontab, self.app.timezone, at))

    def on_prerun(self, sender=None, **_):
        self._report(sender, "start", task_request(sender))

    def on_success(self, sender=None, **_):
        self._report(sender, "success", task_request(sender))

    def on_failure(self, sender=None, exception=None, **_):
        self._report(sender, "fail", task_request(sender), _describe(exception))

    def on_retry(self, sender=None, request=None, reason=None, **_):
        # reason: the Retry, whose exc is what the attempt failed with
        self._report(sender, "fail", request,
                     f"retrying: {_describe(getattr(reason, 'exc', None) or reason)}")

    def _report(self, task, state: str, request, body: str = "") -> None:
        """Ping ``state`` for the attempt ``request`` is, when beat published it
        for one of this app's monitored entries (never raises)."""
        e = self.entries.get(_header(request, ENTRY_HEADER))
        if e is None or getattr(task, "app", None) is not self.app or request.id is None:
            return
        try:
            pings.send(self.settings, e.slug, state, rid(request.id, request.retries),
                       _header(request, SLOT_HEADER), body.encode())
        except Exception:  # instrumentation must never fail the task
            log.warning("cronradar: could not report %s of %s", state, e.name, exc_info=True)


def task_request(task):
    """The request (``celery.app.task.Context``) ``task`` is running."""
    return getattr(task, "request", None)


def _header(request, name: str):
    if request is None:
        return None
    return (getattr(request, "headers", None) or {}).get(name) or getattr(request, name, None)


def rid(task_id: str, retries: int) -> str:
    """The run id of attempt ``retries`` + 1 of task ``task_id``."""
    return schedulers.rid(task_id, retries or 0)


def _describe(exc) -> str:
    return f"{type(exc).__name__}: {exc}" if isinstance(exc, BaseException) else str(exc)


def sync(app, wanted, settings: config.Settings) -> None:
    """Create or update the monitors of ``wanted`` (:class:`Entry` of ``app``) with
    :func:`monitor_fields` through the API (:func:`cronradar_sdk.api.ensure_monitor`:
    only what differs is written);
    no API key, a refusal or an unreachable CronRadar is a warning in the log."""
    if not (settings.url and settings.api_key):
        log.warning("cronradar: monitors of the beat schedule not created or updated: set "
                    "CRONRADAR_URL and CRONRADAR_API_KEY (or url=, api_key=)")
        return
    for e in wanted:
        api.ensure_monitor(settings, e.slug, monitor_fields(app, e))
