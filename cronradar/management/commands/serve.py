"""``manage.py serve [--host H] [--port P]``: the embedded default in one process.

Binds the port, applies migrations (under production, while nobody has an
account, it prints the first account's setup token), then runs the WSGI app under waitress
(threaded) with the evaluator loop in a background thread ticking every
CRONRADAR_TICK_SECONDS, and the web liveness heartbeat (monitors.liveness).

Waitress reads each request completely before a worker thread sees it, so slow
clients never hold a thread; what they can hold is connections. One client
address gets at most half of the connections the server accepts (more are
closed at once), and a connection that sends nothing for
IDLE_TIMEOUT seconds is closed, so a flood of half-sent requests from one host
cannot block everyone else's pings (in production nginx buffers requests in
front of the web server, see docker/compose.yaml). Proxy headers
(``X-Forwarded-For``, ``Forwarded``) reach the application untouched: it decides
whether to trust them (``CRONRADAR_TRUST_X_FORWARDED_FOR``), as under granian.
Unless the CRONRADAR_BASE_URL
environment variable is set, ping URLs point at the address served (see
:func:`base_url`).
In production use granian + ``celery worker`` + ``celery beat`` instead (docs/production.md).
"""
import argparse
import contextlib
import errno
import logging
import os
import resource
import threading
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import close_old_connections
from django.utils import timezone

from accounts import firstrun
from alerts.senders import delivery_loop
from core import logs
from cronradar.probes import Probes
from monitors import evaluator, liveness, ratelimit, tasks, usage
from monitors.views import PingRoute

CONNECTIONS = 4000  # at most, and never more than the open-file limit allows
IDLE_TIMEOUT = 10  # seconds without a byte from a client with no request pending
log = logging.getLogger(__name__)


def connection_limit() -> int:
    """Raise this process's open-file limit to its hard limit (at most 65536) and
    return how many connections waitress may hold (``CONNECTIONS`` at most, 200
    file descriptors kept for the database, logs and outgoing requests)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 65536 if hard == resource.RLIM_INFINITY else min(hard, 65536)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
    if soft == resource.RLIM_INFINITY:
        return CONNECTIONS
    return max(100, min(CONNECTIONS, soft - 200))


class PerClientCap:
    """Stands in for waitress's channel class: refuses a connection (closes it at
    once) when its client address already holds ``limit`` connections."""

    def __init__(self, channel_class, limit: int):
        self.channel_class = channel_class
        self.limit = limit
        self.refused = 0

    def __call__(self, server, conn, addr, adj, map=None):  # noqa: A002 (waitress' name)
        host = addr[0] if isinstance(addr, tuple) else addr
        held = sum(1 for ch in list(server.active_channels.values())
                   if isinstance(ch.addr, tuple) and ch.addr[0] == host)
        if held >= self.limit:
            self.refused += 1
            if self.refused in (1, 10, 100) or self.refused % 1000 == 0:
                log.warning("refused connection from %s: it holds %d connections "
                            "(%d refused so far)", host, held, self.refused)
            conn.close()
            return None
        return self.channel_class(server, conn, addr, adj, map=map)


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
    """Until ``stop``: :func:`monitors.evaluator.tick` every ``interval`` seconds.

    The web server runs in this process, so each tick first records the web tier
    alive: the tick then knows it was up until now and judges every grace end at
    once (a separate web process is only known up to its last heartbeat).
    """
    while not stop.is_set():
        started = time.monotonic()
        try:
            now = timezone.now()
            if liveness.enabled():
                liveness.beat(liveness.WEB, now)
            evaluator.tick(now)
            logs.recovered(evaluator.log)
        except Exception as exc:  # keep ticking: one bad tick must not stop monitoring
            logs.report(evaluator.log, "evaluator tick failed", exc)
        finally:
            close_old_connections()
        stop.wait(max(0.0, interval - (time.monotonic() - started)))


def prune_loop(stop: threading.Event, interval: float) -> None:
    """Until ``stop``: a retention step (:func:`monitors.tasks.prune`) every
    ``interval`` seconds, in its own thread so it never delays a tick."""
    while not stop.wait(interval):
        try:
            tasks.prune()
        except Exception as exc:  # keep going: retention is housekeeping
            logs.report(log, "retention step failed", exc)
        finally:
            close_old_connections()


def usage_loop(stop: threading.Event, interval: float) -> None:
    """Until ``stop``, and once more then: the ping counters of this process's memory
    into the database (:func:`monitors.usage.flush`) every ``interval`` seconds."""
    while True:
        stopping = stop.wait(interval)
        try:
            usage.flush()
        except Exception as exc:  # keep going: the counts went back to the counters
            logs.report(log, "flushing the ping counters failed", exc)
        finally:
            close_old_connections()
        if stopping:
            return


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
                            help="serve HTTP only (when Celery runs the evaluator and sends "
                                 "notifications)")

    def handle(self, *args, host, port, threads, no_evaluator, **options):
        from django.core.wsgi import get_wsgi_application
        from waitress import create_server

        try:  # call_command(port=...) skips argparse's type check
            port = port_number(str(port))
        except argparse.ArgumentTypeError as exc:
            raise CommandError(str(exc)) from None
        if not os.environ.get("CRONRADAR_BASE_URL"):
            settings.CRONRADAR_BASE_URL = base_url(host, port)

        socket_map = {}
        limit = connection_limit()
        try:  # bind first: a busy port fails here, before anything is printed
            app = Probes(PingRoute(get_wsgi_application()))
            server = create_server(app, map=socket_map, host=host, port=port, threads=threads,
                                   connection_limit=limit, backlog=2048,
                                   channel_timeout=IDLE_TIMEOUT, cleanup_interval=1,
                                   ident="CronRadar",
                                   # hand X-Forwarded-For/Forwarded to the app, which
                                   # decides (CRONRADAR_TRUST_X_FORWARDED_FOR), as under
                                   # granian: waitress would delete them, no trusted_proxy
                                   # being set, and a proxied request would look local.
                                   # Without trusted_proxy waitress leaves REMOTE_ADDR be.
                                   clear_untrusted_proxy_headers=False,
                                   # poll(), not select(): select() breaks (and waitress
                                   # with it) once a file descriptor passes 1023.
                                   asyncore_use_poll=True)
            for listener in [d for d in socket_map.values() if hasattr(d, "channel_class")]:
                listener.channel_class = PerClientCap(listener.channel_class, limit // 2)
        except (OSError, ValueError) as exc:
            for dispatcher in list(socket_map.values()):
                dispatcher.close()
            if isinstance(exc, OSError):
                raise CommandError(_bind_error(exc, host, port)) from None
            raise CommandError(f"cannot listen on {host}:{port}: {exc}") from None

        stop = threading.Event()
        flusher = None
        try:
            settings.DATA_DIR.mkdir(parents=True, exist_ok=True)
            call_command("migrate", interactive=False, verbosity=0)
            for line in firstrun.setup_lines():  # production, while nobody exists
                self.stdout.write(line)
            # The heartbeat keeps the web tier's liveness recorded even while a long
            # tick runs; each tick also records it, so alerts are not held back.
            liveness.start_heartbeat(liveness.WEB)
            if not no_evaluator:
                interval = settings.CRONRADAR_TICK_SECONDS
                threading.Thread(target=evaluator_loop, args=(stop, interval),
                                 name="cronradar-evaluator", daemon=True).start()
                threading.Thread(target=delivery_loop, args=(stop,),
                                 name="cronradar-deliveries", daemon=True).start()
                if settings.CRONRADAR_PRUNE_INTERVAL:
                    threading.Thread(target=prune_loop,
                                     args=(stop, settings.CRONRADAR_PRUNE_INTERVAL),
                                     name="cronradar-retention", daemon=True).start()
                self.stdout.write(f"evaluator: ticking every {interval}s in-process")
            if ratelimit.backend() is ratelimit.MEMORY:  # else beat flushes Redis's
                flusher = threading.Thread(target=usage_loop, args=(stop, usage.FLUSH_SECONDS),
                                           name="cronradar-ping-usage", daemon=True)
                flusher.start()
            shown = f"[{host}]" if ":" in host else host or "0.0.0.0"
            self.stdout.write(f"CronRadar listening on http://{shown}:{port}/")
            self.stdout.flush()
            server.run()
        finally:
            stop.set()
            with contextlib.suppress(OSError):
                server.close()
            if flusher is not None:  # its last flush: the counts since the last minute
                flusher.join(timeout=5)
