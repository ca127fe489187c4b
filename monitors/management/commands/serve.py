"""``manage.py serve [--host H] [--port P]``: the embedded default in one process.

Binds the port, applies migrations, then runs the WSGI app under waitress
(threaded) with the evaluator loop in a background thread ticking every
CRONRADAR_TICK_SECONDS. Unless the CRONRADAR_BASE_URL environment variable is
set, ping URLs point at the address served (see :func:`base_url`).
In production use gunicorn + ``celery worker`` + ``celery beat`` instead.
"""
import argparse
import contextlib
import errno
import os
import threading
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import close_old_connections
from django.utils import timezone

from alerts.tasks import redispatch_stale
from monitors import evaluator

REDISPATCH_EVERY = 60.0  # seconds, as the Celery beat entry in settings


def port_number(value: str) -> int:
    """argparse type for ``--port``: an integer from 1 to 65535."""
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {value!r}") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be 1-65535, got {port}")
    return port


def base_url(host: str, port: int) -> str:
    """The URL clients reach ``serve --host host --port port`` at.

    A wildcard host (``0.0.0.0``, ``''``) becomes 127.0.0.1 (``::`` becomes
    ``[::1]``); IPv6 addresses are bracketed.
    """
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


def evaluator_loop(stop: threading.Event, interval: float) -> None:
    """Until ``stop``: :func:`monitors.evaluator.tick` every ``interval`` seconds, and
    what Celery beat would also run in production: re-sending lost deliveries
    (all pending ones at start-up, when no retry timer of an earlier process
    survives, then stale ones every ``REDISPATCH_EVERY`` seconds)."""
    next_redispatch = 0.0
    everything = True
    while not stop.is_set():
        started = time.monotonic()
        try:
            evaluator.tick(timezone.now())
            if started >= next_redispatch:
                redispatch_stale(timezone.now(), everything=everything)
                everything, next_redispatch = False, started + REDISPATCH_EVERY
        except Exception:  # keep ticking: one bad tick must not stop monitoring
            evaluator.log.exception("evaluator tick failed")
        finally:
            close_old_connections()
        stop.wait(max(0.0, interval - (time.monotonic() - started)))


def _bind_error(exc: OSError, host: str, port: int) -> str:
    if exc.errno == errno.EADDRINUSE:
        return f"port {port} on {host} is already in use"
    if exc.errno == errno.EACCES:
        return f"permission denied to listen on port {port} on {host}"
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"address {host} is not available on this machine"
    return f"cannot listen on {host}:{port}: {exc.strerror or exc}"


class Command(BaseCommand):
    help = "Run the web server and the in-process evaluator (embedded default)."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=port_number, default=8000, help="1-65535")
        parser.add_argument("--threads", type=int, default=16)
        parser.add_argument("--no-evaluator", action="store_true",
                            help="serve HTTP only (when Celery beat runs the evaluator)")

    def handle(self, *args, host, port, threads, no_evaluator, **options):
        from waitress import create_server

        from cronradar.wsgi import application

        try:  # call_command(port=...) skips argparse's type check
            port = port_number(str(port))
        except argparse.ArgumentTypeError as exc:
            raise CommandError(str(exc)) from None
        if not os.environ.get("CRONRADAR_BASE_URL"):
            settings.CRONRADAR_BASE_URL = base_url(host, port)

        socket_map = {}
        try:  # bind first: a busy port fails here, before anything is printed
            server = create_server(application, map=socket_map, host=host, port=port,
                                   threads=threads, connection_limit=1000, backlog=2048,
                                   channel_timeout=60, ident="CronRadar",
                                   # poll(), not select(): select() breaks (and waitress
                                   # with it) once a file descriptor passes 1023.
                                   asyncore_use_poll=True)
        except (OSError, ValueError) as exc:
            for dispatcher in list(socket_map.values()):
                dispatcher.close()
            if isinstance(exc, OSError):
                raise CommandError(_bind_error(exc, host, port)) from None
            raise CommandError(f"cannot listen on {host}:{port}: {exc}") from None

        stop = threading.Event()
        try:
            settings.DATA_DIR.mkdir(parents=True, exist_ok=True)
            call_command("migrate", interactive=False, verbosity=0)
            if not no_evaluator:
                interval = settings.CRONRADAR_TICK_SECONDS
                threading.Thread(target=evaluator_loop, args=(stop, interval),
                                 name="cronradar-evaluator", daemon=True).start()
                self.stdout.write(f"evaluator: ticking every {interval}s in-process")
            shown = f"[{host}]" if ":" in host else host or "0.0.0.0"
            self.stdout.write(f"CronRadar listening on http://{shown}:{port}/")
            self.stdout.flush()
            server.run()
        finally:
            stop.set()
            with contextlib.suppress(OSError):
                server.close()
