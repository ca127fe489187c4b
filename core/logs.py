"""Log lines an operator can use: ids where known, escaped client text, one line
per database outage and minute.

- Context ids: ``request_id``, ``monitor``, ``incident``, ``delivery``, held in a
  context variable for the code that runs under :class:`bound` (a request, one
  monitor's evaluation, one delivery attempt). :class:`ContextFilter` (on the
  handler, so propagated records get it too) puts the known ones on every record.
- :class:`JsonFormatter` (``CRONRADAR_LOG_FORMAT=json``): one JSON object a line,
  ``time`` (ISO 8601 UTC), ``level``, ``logger``, ``message``, the known ids, any
  ``extra`` fields, and ``exc_info`` (the traceback as text) when there is one.
- :class:`PlainFormatter` (the default): ``<time> <level> <logger> [<ids>] <message>``
  with every control character of the message (``\\n``, ``\\r``, ``\\x1b``, …)
  escaped, so no value a client controls can start a line of its own; a traceback
  keeps its newlines (it follows the line, it is not client text).
- :class:`DatabaseDown` / :func:`report` / :func:`recovered`: what the background
  loops and Celery tasks call when a step fails, so that a database outage logs
  one line per process per minute (and one when it is over), not a traceback per
  tick; any other exception is logged with its traceback.
"""
from __future__ import annotations

import functools
import itertools
import logging
import threading
import types
from collections.abc import Mapping
from contextvars import ContextVar
from datetime import UTC, datetime, timedelta

from django.db import InterfaceError, OperationalError
from django.utils import timezone
from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter as _BaseJsonFormatter

IDS = ("request_id", "monitor", "incident", "delivery")

# No line format here shows the source file, line, function, thread or process of a
# record: don't compute them for every record (the frame walk alone is a fifth of
# the access line's cost on the ping path; bench/README.md).
logging._srcfile = None
logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
_NONE = types.MappingProxyType({})
_ids: ContextVar[Mapping] = ContextVar("cronradar_log_ids", default=_NONE)  # never mutated
DATABASE_ERRORS = (OperationalError, InterfaceError)
# How many attributes LogRecord.__init__ sets, all of them reserved (not a field of
# a JSON line): a record's extra fields, and any a filter adds, come after them.
_RECORD_FIELDS = len(logging.LogRecord("", 0, None, None, "", (), None).__dict__)


class bound:  # noqa: N801  (used as a function: ``with logs.bound(monitor=7):``)
    """Context manager: the log lines written inside carry these ids (``request_id``,
    ``monitor``, ``incident``, ``delivery``; None values are left out) on top of
    the ids already bound. Raises TypeError for any other name (a typo would
    silently log nothing)."""

    __slots__ = ("ids", "token")

    def __init__(self, **ids):
        for name in ids:
            if name not in IDS:
                raise TypeError(f"unknown log id {name!r}: use one of {', '.join(IDS)}")
        self.ids = ids

    def __enter__(self):
        self.token = _ids.set({**_ids.get(),
                               **{k: v for k, v in self.ids.items() if v is not None}})
        return self

    def __exit__(self, *exc):
        _ids.reset(self.token)


def current() -> dict:
    """The ids bound here now, as ``{name: value}`` (a copy)."""
    return dict(_ids.get())


class ContextFilter(logging.Filter):
    """Puts the bound ids on each record as attributes (``record.monitor``…),
    leaving alone any a caller passed in ``extra``. Never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in _ids.get().items():
            record.__dict__.setdefault(name, value)
        return True


class NoTraceback(logging.Filter):
    """Drops a record's traceback, keeping its line: for loggers whose records any
    client can cause (``django.security.DisallowedHost``: a request with a Host
    ALLOWED_HOSTS does not list), so that a flood of them is a line each, not a
    traceback each."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info = record.exc_text = None
        return True


_second = (None, "")  # (a whole second, its "YYYY-MM-DDTHH:MM:SS"), replaced whole


def iso_time(record: logging.LogRecord) -> str:
    """The record's time as ISO 8601 UTC with milliseconds: ``2026-12-01T18:31:11.123Z``
    (what ``datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds")``
    gives: the microseconds rounded half to even, then cut to milliseconds; the date
    and time of day formatted once a second, not once a line)."""
    global _second
    created = record.created
    second = int(created)
    micros = round((created - second) * 1e6)
    if micros >= 1_000_000:
        second, micros = second + 1, micros - 1_000_000
    cached, text = _second
    if cached != second:
        text = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        _second = (second, text)
    return f"{text}.{micros // 1000:03d}Z"


def _escaped_char(c: str) -> str:
    return c if c.isprintable() else c.encode("unicode_escape").decode("ascii")


def escape(text: str) -> str:
    """``text`` with every non-printable character (control characters, line and
    paragraph separators) written as its Python escape (``\\n``, ``\\x1b``,
    ``\\u2028``): one line whatever a client sent. Costs one C-level scan when
    there is nothing to escape."""
    if text.isprintable():
        return text
    return "".join(map(_escaped_char, text))


class PlainFormatter(logging.Formatter):
    """``<ISO time> <LEVEL> <logger> [<id>=<value> …] <message>``, the message
    escaped (:func:`escape`); the traceback, if any, on the lines after it."""

    def formatTime(self, record, datefmt=None):  # noqa: N802  (logging's name)
        return iso_time(record)

    def usesTime(self) -> bool:  # noqa: N802
        return True

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802
        ids = " ".join(f"{name}={escape(str(record.__dict__[name]))}"
                       for name in IDS if record.__dict__.get(name) is not None)
        return (f"{record.asctime} {record.levelname} {record.name} "
                f"{'[' + ids + '] ' if ids else ''}{escape(record.message)}")


class JsonFormatter(_BaseJsonFormatter):
    """One JSON object a line (see the module docstring); values are escaped by
    the json module, ASCII only, so a newline a client sent stays ``\\n`` inside a
    string and no line separator of any kind gets through."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("reserved_attrs", [*RESERVED_ATTRS, *IDS])
        super().__init__(*args, **kwargs)
        # one encoder for every line (json.dumps with options builds one per call)
        self._encode = self.json_encoder(ensure_ascii=True).encode

    def jsonify_log_record(self, log_data: dict) -> str:
        return self._encode(log_data)

    def format(self, record: logging.LogRecord) -> str:
        """The line of ``record``: what the base class's ``format`` writes (the
        fields of :meth:`add_fields`), without its general steps for the common
        record (a text message, no traceback); any other goes the base class's way."""
        if (record.exc_info or record.exc_text or record.stack_info
                or isinstance(record.msg, dict)):
            return super().format(record)
        record.message = message = record.getMessage()
        fields = record.__dict__
        line = {"time": iso_time(record), "level": record.levelname, "logger": record.name,
                "message": message}
        for name in IDS:
            if (value := fields.get(name)) is not None:
                line[name] = value
        if len(fields) > _RECORD_FIELDS:  # extra={...} fields, in order
            skip = self._skip_fields
            for name, value in itertools.islice(fields.items(), _RECORD_FIELDS, None):
                if name not in skip and name[0] != "_":
                    line[name] = value
        return self.prefix + self._encode(line)

    def add_fields(self, log_record: dict, record: logging.LogRecord, message_dict: dict) -> None:
        fields, skip = record.__dict__, self._skip_fields
        log_record["time"] = iso_time(record)
        log_record["level"] = record.levelname
        log_record["logger"] = record.name
        log_record["message"] = record.message
        for name in IDS:
            if (value := fields.get(name)) is not None:
                log_record[name] = value
        for name, value in fields.items():  # extra={...} fields, in order
            if name not in skip and name[0] != "_":
                log_record[name] = value
        log_record.update(message_dict)  # exc_info, stack_info


class Outage:
    """One process's record of an outage of something it needs (the database, the
    broker, the shared cache), for its log lines.

    :meth:`failed` for each failed step: the first failure of an outage logs one
    line at ``level`` (``<what> unreachable since …: <n> <counted> in this
    process<note> (<error>)``), then at most one a ``every`` (default a minute)
    with how many failures since it began; :meth:`ok` after a step that worked
    logs one INFO line when an outage was on (``<what> reachable again after <s>
    s``). Never a traceback. Thread-safe. ``now``: an aware datetime (default: the
    clock). :meth:`recent` says whether the last failure is that recent (callers
    that would wait on a timeout per step skip the step meanwhile)."""

    def __init__(self, what: str, counted: str = "failed step(s)", note: str = "",
                 level: int = logging.ERROR, every: timedelta = timedelta(minutes=1)):
        self.what, self.counted, self.note, self.level, self.every = (
            what, counted, note, level, every)
        self.since: datetime | None = None  # first failure of the outage going on
        self.failures = 0
        self.said_at: datetime | None = None
        self.last_at: datetime | None = None
        self._lock = threading.Lock()

    def failed(self, logger: logging.Logger, exc: BaseException, now: datetime | None = None
               ) -> None:
        now = now or timezone.now()
        with self._lock:
            if self.since is None:
                self.since, self.failures = now, 0
            self.failures += 1
            self.last_at = now
            if self.said_at is not None and now - self.said_at < self.every:
                return
            self.said_at, since, failures = now, self.since, self.failures
        text = str(exc).strip()
        reason = f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"
        logger.log(self.level, "%s unreachable since %s: %d %s in this process%s (%s)",
                   self.what, since.isoformat(timespec="seconds"), failures, self.counted,
                   self.note, reason)

    def ok(self, logger: logging.Logger, now: datetime | None = None) -> None:
        if self.since is None:  # the common case: no lock, no clock
            return
        now = now or timezone.now()
        with self._lock:
            if self.since is None:
                return
            since, failures, self.since, self.failures, self.said_at = (
                self.since, self.failures, None, 0, None)
        logger.info("%s reachable again after %d s (%d %s in this process)", self.what,
                    int((now - since).total_seconds()), failures, self.counted)

    def recent(self, seconds: float, now: datetime | None = None) -> bool:
        """Whether an outage is on and its last failure is under ``seconds`` old."""
        last = self.last_at
        return (self.since is not None and last is not None
                and (now or timezone.now()) - last < timedelta(seconds=seconds))


class DatabaseDown(Outage):
    """:class:`Outage` of the database (what :func:`report` and the loops use)."""

    def __init__(self, every: timedelta = timedelta(minutes=1)):
        super().__init__("database", every=every)


database = DatabaseDown()


def report(logger: logging.Logger, message: str, exc: BaseException,
           now: datetime | None = None) -> None:
    """What a loop's ``except`` calls: a database outage (Django's
    ``OperationalError`` / ``InterfaceError``) goes to :data:`database` (one line
    a minute); anything else is logged as ``message`` at ERROR with its traceback."""
    if isinstance(exc, DATABASE_ERRORS):
        database.failed(logger, exc, now)
    else:
        logger.error(message, exc_info=exc)


def recovered(logger: logging.Logger, now: datetime | None = None) -> None:
    """What a loop calls after a step that worked: one line if an outage was on."""
    database.ok(logger, now)


def quiet_outage(logger: logging.Logger):
    """Decorator for a Celery task body: a database outage inside it is
    :func:`report`-ed and the task returns None (Celery would log a traceback per
    tick); any other exception is raised as before. Put it under ``@shared_task``."""
    def wrap(fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            try:
                result = fn(*args, **kwargs)
            except DATABASE_ERRORS as exc:
                database.failed(logger, exc)
                return None
            database.ok(logger)
            return result
        return run
    return wrap
