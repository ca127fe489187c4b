"""The outbound dead-man's switch: CronRadar pings another service about itself.

While the evaluator keeps up, one process pings ``CRONRADAR_WATCHDOG_URL`` every
``CRONRADAR_WATCHDOG_INTERVAL`` seconds; when readiness' evaluator part fails (a
monitor due for more than ``CRONRADAR_READY_EVALUATOR_LAG`` seconds) or its
deliveries part does (the oldest claimable delivery older than
``CRONRADAR_READY_DELIVERY_LAG``: :func:`cronradar.health.check`) it posts to
``<url>/fail`` with the reason as a plain-text body. If the evaluator stops, the
pings stop and the other service (another CronRadar, Healthchecks, Cronitor)
pages. docs/operations.md#the-watchdog.

It runs on the evaluator's ``monitors.signals.tick`` (connected in
``CronRadarConfig.ready``), so every process that runs the evaluator may do it:
the ``watchdog`` :class:`~monitors.models.Chore` row, claimed with a
compare-and-set (:func:`monitors.chores.claim`), makes it once per interval in
all. Each process remembers when the chore is next due, so most ticks make no
query. The request goes out on a daemon thread (``TIMEOUT`` seconds an attempt,
``ATTEMPTS`` attempts): the tick never waits for it, and a watchdog that cannot
be reached is logged once per streak, never anything more.
"""
from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timedelta
from enum import StrEnum
from typing import NamedTuple
from urllib.parse import urlsplit, urlunsplit

import httpx
from django.conf import settings

from cronradar import health
from monitors import chores, signals

log = logging.getLogger(__name__)
CHORE = "watchdog"
TIMEOUT = 5.0  # seconds an attempt may take (connect, send, answer)
ATTEMPTS = 3  # per ping, BACKOFF seconds apart, doubling: all well inside an interval
BACKOFF = 1.0


class Reason(StrEnum):
    """What the watchdog found (``Chore.last_result``; the first word of a body)."""

    OK = "ok"
    """The evaluator keeps up and deliveries flow: the plain ping."""
    EVALUATOR_LAG = "evaluator_lag"
    """A monitor has been due longer than ``CRONRADAR_READY_EVALUATOR_LAG``."""
    DELIVERY_BACKLOG = "delivery_backlog"
    """A claimable delivery has waited longer than ``CRONRADAR_READY_DELIVERY_LAG``."""


class Judgement(NamedTuple):
    """:func:`judge`'s answer: ``code`` (the first failing :class:`Reason`, or
    ``ok``) and ``reason``, the body sent: ``ok``, or one line a failing reason,
    ``<code>: <figures>``."""

    code: Reason
    reason: str

    @property
    def ok(self) -> bool:
        return self.code is Reason.OK


def judge(now: datetime) -> Judgement:
    """Whether CronRadar keeps up at ``now``: the evaluator and deliveries parts of
    readiness (:func:`cronradar.health.check`, a few indexed reads), so the
    watchdog and ``/readyz`` never disagree. A failing evaluator part is
    ``evaluator_lag``, a failing deliveries part ``delivery_backlog``; the body has
    one line for each, ``<code>: <the part's detail>``."""
    parts = health.check(now, parts=[health.EVALUATOR, health.DELIVERIES])
    failing = [(code, parts[name]) for name, code in ((health.EVALUATOR, Reason.EVALUATOR_LAG),
                                                      (health.DELIVERIES, Reason.DELIVERY_BACKLOG))
               if parts[name].failing]
    if not failing:
        return Judgement(Reason.OK, "ok")
    return Judgement(failing[0][0], "\n".join(f"{code}: {part.detail or part.status}"
                                               for code, part in failing))


def fail_url(url: str) -> str:
    """``url`` with ``/fail`` appended to its path, query string kept
    (``https://hc-ping.com/<uuid>?rid=1`` -> ``https://hc-ping.com/<uuid>/fail?rid=1``)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/fail", fragment=""))


class Streak:
    """Logs a failure once until it ends: ``failed`` warns on the first of a
    streak only, ``ended`` says so once when one was going on."""

    def __init__(self, what: str):
        self.what = what
        self.failing = False

    def failed(self, detail: str) -> None:
        if not self.failing:
            self.failing = True
            log.warning("%s: %s (logged once until it works again)", self.what, detail)

    def ended(self) -> None:
        if self.failing:
            self.failing = False
            log.info("%s: works again", self.what)


class Watchdog:
    """One process's watchdog: when the chore is next due as this process last
    saw it (``not_before``: no query before then), and its failure streaks."""

    def __init__(self):
        self.not_before: datetime | None = None
        self.unreachable = Streak("the watchdog URL cannot be reached")
        self.broken = Streak("the watchdog could not judge")

    def tick(self, now: datetime) -> threading.Thread | None:
        """On an evaluator tick at ``now``: when the chore is due and this process
        claims it, judge and start the request on a daemon thread (returned, so
        tests can join it); else None. Never raises; no query when the watchdog
        is off or this process knows the chore is not due yet."""
        url = settings.CRONRADAR_WATCHDOG_URL
        if not url or (self.not_before is not None and now < self.not_before):
            return None
        try:
            every = timedelta(seconds=settings.CRONRADAR_WATCHDOG_INTERVAL)
            claimed, self.not_before = chores.claim(CHORE, now, every)
            if not claimed:
                return None
            judgement = judge(now)
            chores.done(CHORE, now, judgement.code)
        except Exception as exc:  # the database is down: the tick has its own troubles
            self.broken.failed(f"{type(exc).__name__}: {exc}")
            return None
        self.broken.ended()
        thread = threading.Thread(target=self.send, args=(url, judgement), daemon=True,
                                  name="cronradar-watchdog")
        thread.start()
        return thread

    def send(self, url: str, judgement: Judgement) -> bool:
        """POST ``judgement.reason`` (text/plain) to ``url``, or to its
        :func:`fail_url` when the judgement is not ok; up to ``ATTEMPTS`` tries
        on a transport error, a 5xx or a 429. Returns whether it was accepted
        (any 2xx/3xx); logs the first failure of a streak."""
        target = url if judgement.ok else fail_url(url)
        for attempt in range(ATTEMPTS):
            if attempt:
                time.sleep(BACKOFF * 2 ** (attempt - 1))
            try:
                answer = httpx.post(target, content=judgement.reason.encode(),
                                    headers={"Content-Type": "text/plain; charset=utf-8"},
                                    timeout=TIMEOUT)
            except Exception as exc:  # any failure to reach it (a bad URL too) is only logged
                error = f"{type(exc).__name__}: {exc}"
                continue
            if answer.status_code < 400:
                self.unreachable.ended()
                return True
            error = f"HTTP {answer.status_code}"
            if answer.status_code < 500 and answer.status_code != 429:
                break  # the URL is wrong: asking again will not help
        self.unreachable.failed(f"{_redact(target)}: {error}")
        return False


def _redact(url: str) -> str:
    """``url``'s scheme and host only, for the log: its path and query are the
    check's secret (a Healthchecks UUID, a Cronitor key)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}/…"


PROCESS = Watchdog()


def on_tick(sender, now: datetime, **kwargs) -> None:
    """``monitors.signals.tick`` receiver: this process's :class:`Watchdog`."""
    PROCESS.tick(now)


def connect() -> None:
    """Connect :func:`on_tick` to the evaluator's tick (``CronRadarConfig.ready``)."""
    signals.tick.connect(on_tick, dispatch_uid="cronradar-watchdog")
