#!/usr/bin/env python3
"""cronradar exec: run a job and report it to CronRadar.

    cronradar exec [--url PING_URL] [--timeout S] [--slot TIME] [--no-output] -- command args...
    cronradar exec [--key PING_KEY] --slug SLUG [--create [--schedule CRON] [--tz TZ]
                   [--grace S]] -- command args...                (CRONRADAR_URL set)

``--url`` defaults to ``CRONRADAR_PING_URL``, ``--key`` to ``CRONRADAR_PING_KEY``.

Pings ``start`` with a fresh run id (``rid``), runs the command with its stdin,
stdout and stderr passed through, then sends its exit status (``/<status>``) with
the tail of its output (at most 100 KB, CronRadar's ping body limit) and the same
``rid`` (``--no-output``: no output at all), and exits with the command's status.
``--create`` adds create-on-ping's parameters to both pings, so CronRadar makes the
monitor when the slug is new (a cron monitor given ``--schedule``). ``--slot`` (the
scheduled time this run is for: RFC 3339 or Unix seconds, as the scheduler knows
it) goes with both pings as ``slot``; CronRadar checks it (a fire time of the
monitor's schedule) and refuses a wrong one with a 4xx, reported on stderr while
the job runs all the same.
A command killed by a signal is reported as exit status 128 + the signal number (a
failure) and the wrapper exits with that status, as a shell does; a command that
cannot be started is 127 (not found) or 126 (not executable). SIGTERM, SIGINT and
SIGHUP sent to the wrapper are passed on to the command.

CronRadar being unreachable never fails the job: each ping is retried with
backoff (0.5 s, 1 s, 2 s, ...) on network errors, 429 and 5xx for at most
``--timeout`` seconds (default 10), then given up with a warning on stderr. A 4xx
(an unknown monitor, say) is reported on stderr and not retried.

Only the Python standard library is used, so this file also runs on its own on
hosts without CronRadar installed (the service serves it at
``/cli/cronradar_exec.py``): ``python3 cronradar_exec.py exec --url ... -- cmd``.
Ping URL forms: CronRadar's docs/pinging.md.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import http.client
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

BODY_LIMIT = 100 * 1024
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
USER_AGENT = "cronradar-exec/1"


class Tail:
    """The last ``limit`` bytes written to it (thread-safe)."""

    def __init__(self, limit: int = BODY_LIMIT):
        self.limit, self.size = limit, 0
        self.chunks: collections.deque[bytes] = collections.deque()
        self.lock = threading.Lock()

    def write(self, data: bytes) -> None:
        if not self.limit:  # keeping nothing (--no-output)
            return
        with self.lock:
            self.chunks.append(data)
            self.size += len(data)
            while self.size - len(self.chunks[0]) >= self.limit:
                self.size -= len(self.chunks.popleft())

    def value(self) -> bytes:
        with self.lock:
            return b"".join(self.chunks)[-self.limit:] if self.limit else b""


def _stderr(message: str) -> None:
    print(f"cronradar exec: {message}", file=sys.stderr)


def request(url: str, timeout: float, body: bytes | None = b"", method: str = "POST",
            headers: dict | None = None, warn=_stderr, doing: str = "pinging"):
    """Send one HTTP request to CronRadar, retrying network errors, 429 and 5xx with
    backoff (0.5 s, 1 s, 2 s, ...) within ``timeout`` seconds in all.

    Returns ``(status, body bytes)`` for a final answer (any but 429 and 5xx:
    retrying cannot change it), or None when CronRadar could not be reached in
    time or the URL is unusable; then ``warn(message)`` was called with the reason
    (the URL without its query; ``doing`` names the attempt in it: "gave up pinging
    after 10s (...)"). Never raises, whatever ``url`` is (not http(s), malformed, not
    ASCII: warned at once, not retried). ``body`` None sends no body (a GET).
    """
    problem = bad_url(url)
    if problem:
        warn(f"not {doing}, {problem}: {shown(url)!r}")
        return None
    deadline = time.monotonic() + timeout
    delay, problem = 0.5, ""
    sent = {"User-Agent": USER_AGENT, **({"Content-Type": "text/plain"} if body is not None
                                        else {}), **(headers or {})}
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        try:
            req = urllib.request.Request(url, data=body, method=method, headers=sent)
            with urllib.request.urlopen(req, timeout=max(0.1, min(left, 5))) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            try:
                answer = exc.read()
            except OSError:  # the connection broke while the error's body was read
                answer = b""
            problem = f"HTTP {exc.code}: {answer[:200].decode('utf-8', 'replace').strip()}"
            if exc.code != 429 and exc.code < 500:
                return exc.code, answer
        except ValueError as exc:  # a URL urllib cannot use: retrying cannot help
            warn(f"cannot use {shown(url)}: {exc}")
            return None
        except (OSError, http.client.HTTPException) as exc:  # refused, timed out, DNS, a
            problem = str(getattr(exc, "reason", exc)) or type(exc).__name__  # non-HTTP server
        pause = min(delay, deadline - time.monotonic())
        if pause <= 0:
            break
        time.sleep(pause)
        delay *= 2
    warn(f"gave up {doing} after {timeout:g}s ({problem}): {shown(url)}")
    return None


def ping(url: str, timeout: float, body: bytes = b"", warn=_stderr,
         headers: dict | None = None) -> bool:
    """POST ``body`` to the ping URL ``url`` (:func:`request`'s retries and time
    bound; ``headers`` added to its own). Returns whether CronRadar took it; a
    refusal (4xx) or giving up is passed to ``warn(message)``. Never raises."""
    return stored(request(url, timeout, body, headers=headers, warn=warn), url, warn)


def stored(answer, url: str, warn=_stderr) -> bool:
    """Whether :func:`request`'s ``answer`` to the ping URL ``url`` says the ping
    was stored (a 2xx); a refusal is passed to ``warn(message)`` (None, CronRadar
    not reached, was warned about by :func:`request`)."""
    if answer is None:
        return False
    status, text = answer
    if not 200 <= status < 300:  # a redirect urllib did not follow is not stored either
        problem = f"HTTP {status}: {text[:200].decode('utf-8', 'replace').strip()}"
        warn(f"ping refused ({problem}): {shown(url)}")
        return False
    return True


def shown(url: str, limit: int = 300) -> str:
    """``url`` without its query (the rid), for messages: at most ``limit``
    characters (a longer one cut, ``…`` at its end)."""
    url = str(url).split("?", 1)[0]
    return url if len(url) <= limit else url[:limit - 1] + "…"


def action_url(base: str, action: str = "", rid: str | None = None, slot: str | None = None,
               params: dict | None = None) -> str:
    """The ping URL ``base`` for ``action`` (``start``, ``fail``, ``log``, an exit
    status; "" for success) with ``rid``, ``slot`` and other query ``params``
    (``create=1``, ...), percent-encoded: a ``+`` in a slot's offset stays a ``+``."""
    parts = urllib.parse.urlsplit(base.rstrip("/"))
    query = {**({"rid": rid} if rid else {}), **({"slot": slot} if slot else {}),
             **(params or {})}
    path = f"{parts.path}/{action}" if action else parts.path
    return urllib.parse.urlunsplit(parts._replace(path=path,
                                                  query=urllib.parse.urlencode(query)))


def _pump(source, sink, tail: Tail) -> None:
    """Copy ``source`` to ``sink`` (our stdout/stderr) as it comes, keeping a tail."""
    for chunk in iter(lambda: source.read1(65536), b""):
        tail.write(chunk)
        try:
            sink.write(chunk)
            sink.flush()
        except (BrokenPipeError, ValueError):
            pass


def run(command: list[str], tail: Tail) -> int:
    """Run ``command`` in a process group of its own, passing signals on to the
    whole group (a shell's children get them too, as they would from cron or a
    terminal); its exit status (128 + n after signal n; 127/126 when it cannot be
    started)."""
    try:
        child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 start_new_session=True)
    except FileNotFoundError:
        message = f"cronradar exec: {command[0]}: command not found\n".encode()
        tail.write(message)
        sys.stderr.buffer.write(message)
        return 127
    except PermissionError:
        message = f"cronradar exec: {command[0]}: permission denied\n".encode()
        tail.write(message)
        sys.stderr.buffer.write(message)
        return 126

    def forward(signum, _frame):
        with contextlib.suppress(ProcessLookupError):  # the group is gone already
            os.killpg(child.pid, signum)

    previous = {s: signal.signal(s, forward) for s in FORWARDED}
    pumps = [threading.Thread(target=_pump, args=(pipe, sink, tail), daemon=True)
             for pipe, sink in ((child.stdout, sys.stdout.buffer),
                                (child.stderr, sys.stderr.buffer))]
    for p in pumps:
        p.start()
    try:
        code = child.wait()
        for p in pumps:  # a process the job left behind may keep the pipes open:
            p.join(timeout=2)  # take what is there, do not wait for it
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    return 128 - code if code < 0 else code


def exec_command(args) -> int:
    """The ``exec`` subcommand: returns the job's exit status."""
    if args.slug:
        root = os.environ.get("CRONRADAR_URL", "").rstrip("/")
        if not root:
            print("cronradar exec: --slug needs CRONRADAR_URL (e.g. https://cronradar.example)",
                  file=sys.stderr)
            return 2
        base = f"{root}/ping/{urllib.parse.quote(args.key)}/{urllib.parse.quote(args.slug)}"
    else:
        base = args.url
    problem = bad_url(base)
    if problem:  # the job runs all the same: a typo must not cost the job
        print(f"cronradar exec: not pinging, {problem}: {shown(base)!r}", file=sys.stderr)
        return run(args.command, Tail())
    params = create_params(args.schedule, args.tz, args.grace) if args.create else None
    rid = str(uuid.uuid4())
    ping(action_url(base, "start", rid, args.slot, params), args.timeout)
    tail = Tail(0 if args.no_output else BODY_LIMIT)
    code = run(args.command, tail)
    ping(action_url(base, str(code), rid, args.slot, params), args.timeout, tail.value())
    return code


def create_params(schedule: str | None = None, tz: str | None = None,
                  grace: int | None = None) -> dict:
    """The query parameters of a ping that creates its monitor when the slug is new
    (``?create=1``, docs/api.md "Create on ping"): a cron monitor with ``schedule``
    in time zone ``tz``, else an interval one of 1 day; ``grace`` in seconds
    (CronRadar's default 1 hour when None)."""
    params = {"create": "1"}
    if schedule:
        params["schedule"] = schedule
    if tz:
        params["timezone"] = tz
    if grace is not None:
        params["grace"] = str(grace)
    return params


def bad_url(url: str) -> str:
    """Why ``url`` cannot be a URL of CronRadar's ("" when it can): not a string,
    with spaces or control characters, malformed (a bad port or IPv6 address), not
    ``http(s)://host/...``, or with characters that are not ASCII outside the host
    name (percent-encode them)."""
    if not isinstance(url, str):
        return f"the URL must be a string, not {type(url).__name__}"
    if any(c <= " " or c == "\x7f" for c in url):
        return "the URL has spaces or control characters"
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError for a bad port)
    except ValueError as exc:
        return f"the URL is not valid ({exc})"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "the URL must be http(s)://host/..."
    if not (parts.path + parts.query + parts.fragment).isascii():
        return "the URL has characters that are not ASCII (percent-encode them)"
    return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cronradar", description="Report jobs to CronRadar.")
    sub = parser.add_subparsers(dest="verb", required=True)
    ex = sub.add_parser("exec", help="run a command and report its start, exit status and "
                                     "output tail")
    ex.add_argument("--url", default=os.environ.get("CRONRADAR_PING_URL") or None,
                    help="the monitor's ping URL (https://host/ping/<uuid>; default "
                         "$CRONRADAR_PING_URL)")
    ex.add_argument("--key", help="the project's ping key (with --slug and CRONRADAR_URL; "
                                  "default $CRONRADAR_PING_KEY)")
    ex.add_argument("--slug", help="the monitor's slug (with --key)")
    ex.add_argument("--timeout", type=float, default=10.0,
                    help="seconds to spend on each ping, retries included (default 10)")
    ex.add_argument("--slot", help="the scheduled time this run is for, RFC 3339 "
                                   "(2026-01-05T10:00:00Z) or Unix seconds (docs/slots.md)")
    ex.add_argument("--no-output", action="store_true",
                    help="send none of the command's output (it is still passed through)")
    ex.add_argument("--create", action="store_true",
                    help="create the monitor if its slug is new (with --key/--slug only)")
    ex.add_argument("--schedule", help="with --create: a cron expression (a cron monitor; "
                                       "default an interval monitor of 1 day)")
    ex.add_argument("--tz", help="with --create: the schedule's time zone (default UTC)")
    ex.add_argument("--grace", type=int, help="with --create: grace in seconds (default 3600)")
    ex.add_argument("command", nargs=argparse.REMAINDER, help="-- command args...")
    args = parser.parse_args(argv)
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    if not args.command:
        parser.error("give the command after --")
    if args.slug:
        args.key = args.key or os.environ.get("CRONRADAR_PING_KEY")
        if not args.key:
            parser.error("--slug needs --key or CRONRADAR_PING_KEY")
    elif args.key:
        parser.error("--key needs --slug")
    elif args.create:  # create-on-ping names a new monitor by its slug: a UUID names none
        parser.error("--create goes with --key/--slug (a --url's monitor exists already)")
    elif not args.url:
        parser.error("give --url, --key with --slug, or set CRONRADAR_PING_URL")
    if args.timeout <= 0:
        parser.error("--timeout must be more than 0")
    if not args.create and (args.schedule or args.tz or args.grace is not None):
        parser.error("--schedule, --tz and --grace go with --create")
    if args.grace is not None and args.grace < 1:
        parser.error("--grace must be at least 1 (seconds)")
    return exec_command(args)


if __name__ == "__main__":
    sys.exit(main())
