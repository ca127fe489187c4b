"""A bounded wait for the probes' database reads (docs/operations.md, "Health").

``/readyz`` and ``/metrics`` read the database (and Redis) on a request thread of
the web server. A database that accepts connections but never answers (a stopped
postmaster, a half-open network path) would hold that thread for minutes, and a
few probes would take every thread, ``/healthz`` with them. :func:`within` runs
such a read on one background thread per process and waits for it at most
``CRONRADAR_READY_TIMEOUT`` seconds:

- the read answers in time: ``(True, its value)`` (what it raised is raised);
- it does not: ``(False, None)``; the read goes on in the background (its
  connection is the background thread's own) and its value is dropped;
- an earlier read has been running for longer than the timeout (stuck): ``(False,
  None)`` at once, and no read is started, so stuck reads never pile up: one per
  process at most. Reads asked for while another one runs, not stuck yet, wait
  their turn within their own timeout, and are answered ``(False, None)`` as
  soon as a caller gives up on the one running (it is stuck).

With ``CRONRADAR_READY_TIMEOUT = 0`` the read runs inline, unbounded, on the
caller's thread (the tests do: their database transaction is the caller's).
"""
from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import close_old_connections


@dataclass(eq=False)
class _Read:
    fn: Callable[[], Any]
    done: threading.Event = field(default_factory=threading.Event)
    dropped: bool = False  # its caller stopped waiting before it started
    failed: bool = False  # queued behind a read found stuck: answered (False, None)
    value: Any = None
    error: BaseException | None = None


class _Reader:
    """The background thread and its queue of reads (one per process: a forked
    child starts its own, the parent's thread is not in it)."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.lock = threading.Condition()
        self.queue: deque[_Read] = deque()
        self.running_since: float | None = None  # time.monotonic() the current read began
        self.thread: threading.Thread | None = None
        self.late = False  # a caller stopped waiting for the read now running or queued

    def submit(self, fn: Callable[[], Any], timeout: float) -> tuple[bool, Any]:
        with self.lock:
            if self.late or (self.running_since is not None
                             and time.monotonic() - self.running_since >= timeout):
                return False, None  # stuck: answer now, start nothing
            read = _Read(fn)
            self.queue.append(read)
            if self.thread is None:
                self.thread = threading.Thread(target=self._work, name="cronradar-probe-reads",
                                               daemon=True)
                self.thread.start()
            self.lock.notify()
        if not read.done.wait(timeout):
            with self.lock:
                if not read.done.is_set():
                    read.dropped = self.late = True
                    for queued in self.queue:  # they wait behind a stuck read: answer now
                        queued.dropped = queued.failed = True
                        queued.done.set()
                    self.queue.clear()
                    return False, None
        if read.failed:
            return False, None
        if read.error is not None:
            raise read.error
        return True, read.value

    def _work(self) -> None:
        while True:
            with self.lock:
                while not self.queue:
                    self.lock.wait()
                read = self.queue.popleft()
                if read.dropped:
                    continue
                self.running_since = time.monotonic()
            try:
                close_old_connections()  # as a request does: CONN_MAX_AGE, broken ones
                read.value = read.fn()
            except BaseException as exc:  # noqa: BLE001  (handed to the caller)
                read.error = exc
            finally:
                close_old_connections()
                with self.lock:
                    self.running_since, self.late = None, False
                    read.done.set()


_reader: list[_Reader] = []
_made = threading.Lock()


def within(fn: Callable[[], Any], timeout: float | None = None) -> tuple[bool, Any]:
    """``fn()`` on the probes' background thread, waited for at most ``timeout``
    seconds (``CRONRADAR_READY_TIMEOUT`` when None): ``(True, value)``, or
    ``(False, None)`` when it did not answer in time or an earlier read is stuck
    (see the module docstring). Raises what ``fn`` raised. ``timeout <= 0``: inline."""
    timeout = settings.CRONRADAR_READY_TIMEOUT if timeout is None else timeout
    if timeout <= 0:
        return True, fn()
    with _made:
        if not _reader or _reader[0].pid != os.getpid():
            _reader[:] = [_Reader()]
        reader = _reader[0]
    return reader.submit(fn, timeout)
