"""``monitor``: report a job's runs to CronRadar, as a decorator or a context
manager (sync or async).

    @monitor("nightly-report", schedule="0 3 * * *", tz="Europe/Berlin")
    def nightly_report(): ...

    with monitor("nightly-report"):
        ...

Each run pings ``start`` with a fresh run id (``rid``), then ``success`` (the body:
``duration: 1.234 s``) or, when the job raises, ``fail`` with the exception's type
and message and the duration (``ValueError: no rows\\nduration: 0.120 s``), both
with the same ``rid``; the exception is raised again. ``SystemExit`` with status 0
or None is a success. CronRadar unreachable or refusing never fails the job: each
request is retried for at most ``timeout`` seconds, then given up with a warning on
the ``cronradar_sdk`` logger.

Which monitor (settings: :mod:`cronradar_sdk.config`):

- a slug and a ping key: pings ``<url>/ping/<ping key>/<slug>``; with ``schedule``
  they carry create-on-ping's parameters, so the first one creates the monitor;
- a slug and an API key (and no ping key, or a ``schedule``): on first use in the
  process, reads the monitor (``GET /api/v1/monitors/by-slug/<slug>/``), with
  ``schedule`` creates it or brings its schedule, time zone and grace up to date
  (``PUT``), then pings its ``ping_url``;
- no slug: pings ``ping_url`` (``CRONRADAR_PING_URL``).
"""
from __future__ import annotations

import asyncio
import contextvars
import datetime
import functools
import inspect
import threading
import time
import uuid

from cronradar_sdk import api, config, cronradar_exec, pings

_clock = time.monotonic  # the durations' clock (tests replace it)
# the runs open in this thread or task, innermost last: (monitor, Run) pairs
_open: contextvars.ContextVar[tuple] = contextvars.ContextVar("cronradar_sdk_open", default=())
# (url, api key, slug, fields) -> the monitor's ping URL, learned from the API once per
# process
_ping_urls: dict = {}
_ping_urls_lock = threading.Lock()


class Run:
    """One run of a monitored job: ``rid`` (the run id sent with its pings) and
    ``started`` (the clock's reading at its start, seconds)."""

    def __init__(self, rid: str, started: float):
        self.rid, self.started = rid, started

    def __repr__(self) -> str:
        return f"Run(rid={self.rid!r})"


class monitor:  # noqa: N801 (a decorator: named as a function)
    """Report runs of a job to the CronRadar monitor ``slug`` (None: the monitor of
    ``ping_url``).

    schedule: a cron expression (``"0 3 * * *"``) with ``tz`` its time zone (an IANA
    name; CronRadar's default UTC) and ``grace`` (seconds, an int or a timedelta;
    CronRadar's default 1 hour): the monitor is created on first use when it does
    not exist (module docstring). url, ping_key, api_key, ping_url, timeout:
    settings (:func:`cronradar_sdk.config.resolve`; the environment is read at each
    run). Raises ValueError for a bad ``grace`` or ``timeout``.

    As a context manager it gives the :class:`Run`; one monitor may be used by
    several threads or tasks at once, each run its own.
    """

    def __init__(self, slug: str | None = None, *, schedule: str | None = None,
                 tz: str | None = None, grace: int | datetime.timedelta | None = None,
                 url: str | None = None, ping_key: str | None = None,
                 api_key: str | None = None, ping_url: str | None = None,
                 timeout: float | None = None):
        if isinstance(grace, datetime.timedelta):
            grace = int(grace.total_seconds())
        if grace is not None and (isinstance(grace, bool) or int(grace) < 1):
            raise ValueError(f"grace is a whole number of seconds from 1, not {grace!r}")
        self.slug, self.schedule, self.tz = slug, schedule, tz
        self.grace = None if grace is None else int(grace)
        self._given = {"url": url, "ping_key": ping_key, "api_key": api_key,
                       "ping_url": ping_url, "timeout": timeout}
        config.resolve(**self._given, environ={})  # a bad timeout fails here, not in a run

    def __repr__(self) -> str:
        return f"monitor({self.slug!r})"

    # --- the two ends of a run --------------------------------------------------------
    def start(self) -> Run:
        """Ping ``start`` for a new run and return it. Never raises."""
        rid = str(uuid.uuid4())
        self._ping("start", rid)
        return Run(rid, _clock())  # after the ping: the job's duration, not CronRadar's

    def finish(self, run: Run, error: BaseException | None = None) -> bool:
        """Ping the end of ``run``: ``success``, or ``fail`` when ``error`` is an
        exception (not ``SystemExit`` with status 0 or None). Returns whether
        CronRadar stored it; never raises."""
        took = f"duration: {_clock() - run.started:.3f} s"
        if error is None or (isinstance(error, SystemExit) and error.code in (0, None)):
            return self._ping("success", run.rid, took)
        kind = type(error)
        name = kind.__qualname__ if kind.__module__ == "builtins" else \
            f"{kind.__module__}.{kind.__qualname__}"
        message = str(error)
        return self._ping("fail", run.rid, f"{name}: {message}\n{took}" if message
                          else f"{name}\n{took}")

    def _ping(self, state: str, rid: str, body: str = "") -> bool:
        target = self._target()
        if target is None:
            return False
        settings, slug, params = target
        return pings.send(settings, slug, state, rid=rid, body=body.encode(), params=params)

    def _target(self):
        """(settings, slug or None, query params) to ping with; None when no
        monitor can be named (warned)."""
        settings = config.resolve(**self._given)
        params = cronradar_exec.create_params(self.schedule, self.tz, self.grace) \
            if self.schedule else None
        if self.slug is None:
            return settings, None, None
        if settings.api_key and (self.schedule or not settings.ping_key):
            ping_url = self._ping_url(settings)
            if ping_url:
                return settings.replace(ping_url=ping_url), None, None
            if not settings.ping_key:
                pings.warn(f"not pinging {self.slug}: the API did not give its ping URL")
                return None
        return settings, self.slug, params

    def _ping_url(self, settings: config.Settings) -> str:
        """The monitor's ping URL from the API (created or updated first when a
        schedule is given), once per process and schedule; "" when the API did not
        answer it."""
        fields = {}
        if self.schedule:
            fields = {"kind": "cron", "schedule": self.schedule}
            if self.tz:
                fields["timezone"] = self.tz
            if self.grace is not None:
                fields["grace"] = self.grace
        key = (settings.url, settings.api_key, self.slug, tuple(sorted(fields.items())))
        with _ping_urls_lock:
            if key in _ping_urls:
                return _ping_urls[key]
        found = api.ensure_monitor(settings, self.slug, fields) if fields else \
            api.get_monitor(settings, self.slug)
        ping_url = (found or {}).get("ping_url") or ""
        if ping_url:
            with _ping_urls_lock:
                _ping_urls[key] = ping_url
        return ping_url

    # --- the context managers ---------------------------------------------------------
    def __enter__(self) -> Run:
        run = self.start()
        _open.set((*_open.get(), (self, run)))
        return run

    def __exit__(self, kind, error, traceback) -> bool:
        self.finish(self._close(), error)
        return False  # the job's exception goes on

    async def __aenter__(self) -> Run:
        run = await _in_thread(self.start)
        _open.set((*_open.get(), (self, run)))
        return run

    async def __aexit__(self, kind, error, traceback) -> bool:
        await _in_thread(self.finish, self._close(), error)
        return False

    def _close(self) -> Run:
        """The innermost run of this monitor open in this thread or task, closed."""
        runs = _open.get()
        at = max(i for i, (owner, _) in enumerate(runs) if owner is self)
        _open.set(runs[:at] + runs[at + 1:])
        return runs[at][1]

    # --- the decorator ----------------------------------------------------------------
    def __call__(self, func):
        """``@monitor(...)``: every call of ``func`` is a run (an ``async def`` too).
        Raises TypeError for a generator function (``yield`` in a ``def`` or an
        ``async def``): a call only makes the generator, the work happens later as
        it is iterated, so its run would end at once; put ``with monitor(...)``
        inside it instead."""
        if inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func):
            raise TypeError(
                f"@monitor({self.slug!r}) cannot decorate the generator function "
                f"{func.__qualname__}: calling it only makes the generator, so the run would "
                f"end before any of its work; use `with monitor({self.slug!r}):` inside it "
                "(`async with` in an async generator)")
        if inspect.iscoroutinefunction(func):
            @functools.wraps(func)
            async def monitored_async(*args, **kwargs):
                run = await _in_thread(self.start)
                try:
                    result = await func(*args, **kwargs)
                except BaseException as error:
                    await _in_thread(self.finish, run, error)
                    raise
                await _in_thread(self.finish, run)
                return result
            return monitored_async

        @functools.wraps(func)
        def monitored(*args, **kwargs):
            run = self.start()
            try:
                result = func(*args, **kwargs)
            except BaseException as error:
                self.finish(run, error)
                raise
            self.finish(run)
            return result
        return monitored


async def _in_thread(func, *args):
    """``func(*args)`` in the loop's default executor: pings block (urllib) and may
    take up to the timeout, which must not stall the event loop."""
    return await asyncio.get_running_loop().run_in_executor(None, func, *args)
