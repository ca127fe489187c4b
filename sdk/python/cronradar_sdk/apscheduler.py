"""APScheduler 3.x instrumentation: one CronRadar monitor per cron or interval job.

    from cronradar_sdk.apscheduler import instrument
    scheduler.add_job(report, "cron", hour=3, id="nightly-report")
    instrument(scheduler)     # CRONRADAR_URL, CRONRADAR_PING_KEY, CRONRADAR_API_KEY

:func:`instrument` creates or updates a monitor for each job of the scheduler
(and for each job added or changed later): a ``CronTrigger`` becomes a ``cron``
monitor in the trigger's time zone, an ``IntervalTrigger`` an ``interval`` monitor
(``period``: its interval in seconds); the slug is the job's ``id`` made a slug
(give jobs an ``id=``: APScheduler's own is random, a new monitor each start, so
such jobs are left out). Then it listens:

- ``EVENT_JOB_SUBMITTED`` → ``start``; ``EVENT_JOB_EXECUTED`` → success;
  ``EVENT_JOB_ERROR`` → ``fail`` (body: the exception's type and message);
  ``EVENT_JOB_MISSED`` → ``fail`` (body ``missed``: APScheduler submitted the run
  but did not start it, past its ``misfire_grace_time``);
- each with a run id (``rid``) made from the job's id and the scheduled run
  time, and for cron jobs that time as ``?slot=``.

Date-triggered jobs and cron triggers cron cannot express (seconds, years, weeks,
``last`` days, both day fields restricted) are left out with a warning in the
log. CronRadar being unreachable never fails a job. APScheduler is imported only
here.
"""
from __future__ import annotations

import logging
import re
import threading
from datetime import datetime

from cronradar_sdk import api, config, pings, schedulers
from cronradar_sdk.schedulers import DEFAULT_GRACE, Unsupported, rfc3339, slugify

log = logging.getLogger("cronradar_sdk.apscheduler")
RANDOM_ID = re.compile(r"[0-9a-f]{32}")  # APScheduler's id for a job given none: uuid4().hex


def monitor_fields(job, grace: int = DEFAULT_GRACE) -> dict:
    """The monitor fields of ``job`` (``name``, ``kind``, ``schedule`` + ``timezone``
    or ``period`` in seconds, ``grace`` in seconds). Raises :class:`Unsupported`
    for a job CronRadar cannot monitor as it stands."""
    from apscheduler.triggers.cron import CronTrigger
    from apscheduler.triggers.interval import IntervalTrigger

    trigger = job.trigger
    fields = {"name": job.name, "grace": grace}
    if isinstance(trigger, CronTrigger):
        fields.update(kind="cron", schedule=cron_expression(trigger),
                      timezone=_zone_name(trigger.timezone))
    elif isinstance(trigger, IntervalTrigger):
        fields.update(kind="interval", period=max(1, int(-(-trigger.interval_length // 1))))
    else:
        raise Unsupported(f"trigger {trigger}: only cron and interval triggers")
    return fields


def cron_expression(trigger) -> str:
    """The 5-field cron expression of a ``CronTrigger`` (its seconds 0, any year
    and week). Raises :class:`Unsupported` otherwise."""
    fields = {f.name: f for f in trigger.fields}
    for name, wanted in (("second", "0"), ("year", "*"), ("week", "*")):
        if str(fields[name]) != wanted:
            raise Unsupported(f"{name} {fields[name]}: cron has none")
    # APScheduler's weekdays count from Monday = 0, cron's from Sunday = 0
    dow = {(v + 1) % 7 for v in _values(fields["day_of_week"], 0, 6)}
    return schedulers.cron_expression(
        _values(fields["minute"], 0, 59), _values(fields["hour"], 0, 23),
        _values(fields["day"], 1, 31), _values(fields["month"], 1, 12), dow)


def _values(field, lo: int, hi: int) -> set:
    """The values (``lo``-``hi``) one field of a ``CronTrigger`` matches."""
    from apscheduler.triggers.cron.expressions import AllExpression, RangeExpression

    values = set()
    for expr in field.expressions:
        if isinstance(expr, RangeExpression):
            last = hi if expr.last is None else expr.last
            values.update(range(expr.first, last + 1, expr.step or 1))
        elif type(expr) is AllExpression:
            values.update(range(lo, hi + 1, expr.step or 1))
        else:
            raise Unsupported(f"{field.name} {field}: cron has no such term")
    return values


def _zone_name(tz) -> str:
    """The IANA name of a trigger's time zone (zoneinfo's ``key``, pytz's ``zone``)."""
    return str(getattr(tz, "key", None) or getattr(tz, "zone", None) or tz)


def instrument(scheduler, *, grace: int = DEFAULT_GRACE, exclude=(), timeout: float = 10.0,
               **settings) -> Listener:
    """Monitor every cron and interval job of ``scheduler`` (an APScheduler 3.x
    scheduler, started or not), and those added later. ``grace``: seconds a run
    may start after its scheduled time (default 60); ``exclude``: job ids to
    leave alone; ``timeout``: seconds each request may take, retries included;
    ``settings``: ``url=``, ``ping_key=``, ``api_key=`` (else ``CRONRADAR_URL``,
    ``CRONRADAR_PING_KEY``, ``CRONRADAR_API_KEY``): the upserts need the API key,
    the pings the ping key. Returns the :class:`Listener` (``close()`` removes
    it). Never raises because CronRadar is unreachable."""
    listener = Listener(scheduler, config.resolve(timeout=timeout, **settings), grace,
                        frozenset(exclude))
    for job in scheduler.get_jobs():
        listener.add(job)
    from apscheduler import events

    scheduler.add_listener(listener, events.EVENT_JOB_ADDED | events.EVENT_JOB_MODIFIED
                           | events.EVENT_JOB_SUBMITTED | events.EVENT_JOB_EXECUTED
                           | events.EVENT_JOB_ERROR | events.EVENT_JOB_MISSED)
    return listener


class Listener:
    """The scheduler listener :func:`instrument` adds (call it with an event).

    monitored: job id -> (slug, fields) of the jobs it reports; settings:
    :class:`cronradar_sdk.config.Settings`."""

    def __init__(self, scheduler, settings: config.Settings, grace: int, exclude: frozenset):
        self.scheduler, self.settings = scheduler, settings
        self.grace, self.exclude = grace, exclude
        self.monitored: dict = {}
        # (job id, scheduled time) of runs whose start is sent and end is not; the
        # ends that came before their start: (job id, scheduled time) -> (state, body)
        self._started: set = set()
        self._early: dict = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        """Remove the listener from the scheduler."""
        self.scheduler.remove_listener(self)

    def add(self, job) -> None:
        """Monitor ``job``: create or update its monitor (left out, with a warning
        in the log, when it cannot be monitored)."""
        if job.id in self.exclude:
            return
        try:
            if RANDOM_ID.fullmatch(job.id):
                raise Unsupported("it has APScheduler's random id: give it an id=")
            slug, fields = slugify(job.id), monitor_fields(job, self.grace)
        except Unsupported as exc:
            log.warning("cronradar: job %r is not monitored: %s", job.id, exc)
            self.monitored.pop(job.id, None)
            return
        self.monitored[job.id] = (slug, fields)
        if self.settings.url and self.settings.api_key:
            api.ensure_monitor(self.settings, slug, fields)
        else:
            log.warning("cronradar: monitor %s not created or updated: set CRONRADAR_URL and "
                        "CRONRADAR_API_KEY (or url=, api_key=)", slug)

    def __call__(self, event) -> None:
        from apscheduler import events

        try:
            if event.code in (events.EVENT_JOB_ADDED, events.EVENT_JOB_MODIFIED):
                job = self.scheduler.get_job(event.job_id, event.jobstore)
                if job is not None:
                    self.add(job)
            elif event.code == events.EVENT_JOB_SUBMITTED:
                for at in event.scheduled_run_times:
                    self._start(event.job_id, at)
            elif event.code == events.EVENT_JOB_EXECUTED:
                self._end(event.job_id, event.scheduled_run_time, "success", "")
            elif event.code == events.EVENT_JOB_ERROR:
                self._end(event.job_id, event.scheduled_run_time, "fail",
                          f"{type(event.exception).__name__}: {event.exception}")
            elif event.code == events.EVENT_JOB_MISSED:  # submitted, then not run
                self._end(event.job_id, event.scheduled_run_time, "fail", "missed")
        except Exception:  # instrumentation must never break the scheduler
            log.warning("cronradar: could not report event %s of job %r", event.code,
                        getattr(event, "job_id", None), exc_info=True)

    def _start(self, job_id: str, at: datetime) -> None:
        if job_id not in self.monitored:
            return
        self._ping(job_id, at, "start", "")
        key = (job_id, at)
        with self._lock:
            early = self._early.pop(key, None)
            if early is None:
                self._started.add(key)
        if early is not None:
            self._ping(job_id, at, *early)

    def _end(self, job_id: str, at: datetime, state: str, body: str) -> None:
        """Ping the end of a run once its start is sent: the executor may end a run
        (a missed one at once, and in the scheduler's thread) before the scheduler
        thread has sent its start; such an end waits, at most ``timeout`` + 1 s."""
        if job_id not in self.monitored:
            return
        key = (job_id, at)
        with self._lock:
            started = key in self._started
            self._started.discard(key)
            if not started:
                self._early[key] = (state, body)
        if started:
            self._ping(job_id, at, state, body)
            return
        timer = threading.Timer(self.settings.timeout + 1, self._unstarted, (key,))
        timer.daemon = True
        timer.start()

    def _unstarted(self, key) -> None:
        """Send an end whose start never came (a run submitted before
        :func:`instrument`)."""
        with self._lock:
            early = self._early.pop(key, None)
        if early is not None:
            self._ping(*key, *early)

    def _ping(self, job_id: str, at: datetime, state: str, body: str) -> None:
        """Ping ``state`` for the run of ``job_id`` scheduled ``at`` (aware)."""
        if job_id not in self.monitored:
            return
        slug, fields = self.monitored[job_id]
        slot = rfc3339(at) if fields["kind"] == "cron" else None
        pings.send(self.settings, slug, state, schedulers.rid(job_id, at.isoformat()), slot,
                   body.encode())
