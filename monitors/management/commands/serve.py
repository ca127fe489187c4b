"""``manage.py serve [--host H] [--port P]``: the embedded default in one process.

Applies migrations, then runs the WSGI app under waitress (threaded) with the
evaluator loop in a background thread ticking every CRONRADAR_TICK_SECONDS.
In production use gunicorn + ``celery worker`` + ``celery beat`` instead.
"""
import threading
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import close_old_connections
from django.utils import timezone

from monitors import evaluator


def evaluator_loop(stop: threading.Event, interval: float) -> None:
    """Run :func:`monitors.evaluator.tick` every ``interval`` seconds until ``stop``."""
    while not stop.is_set():
        started = time.monotonic()
        try:
            evaluator.tick(timezone.now())
        except Exception:  # keep ticking: one bad tick must not stop monitoring
            evaluator.log.exception("evaluator tick failed")
        finally:
            close_old_connections()
        stop.wait(max(0.0, interval - (time.monotonic() - started)))


class Command(BaseCommand):
    help = "Run the web server and the in-process evaluator (embedded default)."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--threads", type=int, default=16)
        parser.add_argument("--no-evaluator", action="store_true",
                            help="serve HTTP only (when Celery beat runs the evaluator)")

    def handle(self, *args, host, port, threads, no_evaluator, **options):
        from waitress import serve

        from cronradar.wsgi import application

        settings.DATA_DIR.mkdir(parents=True, exist_ok=True)
        call_command("migrate", interactive=False, verbosity=0)
        stop = threading.Event()
        if not no_evaluator:
            interval = settings.CRONRADAR_TICK_SECONDS
            threading.Thread(target=evaluator_loop, args=(stop, interval),
                             name="cronradar-evaluator", daemon=True).start()
            self.stdout.write(f"evaluator: ticking every {interval}s in-process")
        self.stdout.write(f"CronRadar listening on http://{host}:{port}/")
        self.stdout.flush()
        try:
            serve(application, host=host, port=port, threads=threads, connection_limit=2000,
                  backlog=2048, channel_timeout=60, ident="CronRadar", _quiet=True)
        finally:
            stop.set()
