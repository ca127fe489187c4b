"""The Celery application.

Production (``REDIS_URL`` set) runs a worker and beat against Redis; beat fires
``monitors.tasks.evaluate`` every ``CRONRADAR_TICK_SECONDS``. The embedded default
runs tasks eagerly and `manage.py serve` drives the evaluator in-process instead.

With ``CRONRADAR_METRICS_PORT`` set, a worker serves its metrics on that port
(prometheus_client's HTTP server, started in the worker's main process): the
process metrics of every process writing to ``PROMETHEUS_MULTIPROC_DIR``
(docs/operations.md, "Metrics"). A worker started without that directory gets a
fresh temporary one, made here, before anything imports prometheus_client (the
library picks its multi-process mode at import), so its prefork children's
values add up.

Each prefork child moves the objects it inherited (Django, Celery, the apps'
modules) out of the garbage collector's reach once it starts (:func:`settle_heap`):
a full collection then walks only what the child made since, not some 200,000
objects; in the hour-start burst that was a fifth of the evaluator's CPU.
"""
import atexit
import gc
import os
import shutil
import sys
import tempfile

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cronradar.settings")


def _metrics_port() -> int:
    raw = os.environ.get("CRONRADAR_METRICS_PORT", "").strip()
    return int(raw) if raw.isdigit() else 0


def _remove_dir(owner: int, path: str) -> None:
    if os.getpid() == owner:  # the worker's main process, not a forked child
        shutil.rmtree(path, ignore_errors=True)


# "worker" on the command line (celery -A cronradar worker): the web server and beat
# import this module too, and must not get a directory of their own
if (_metrics_port() and "worker" in sys.argv[1:]
        and not os.environ.get("PROMETHEUS_MULTIPROC_DIR")):
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="cronradar-metrics-")
    atexit.register(_remove_dir, os.getpid(), os.environ["PROMETHEUS_MULTIPROC_DIR"])

app = Celery("cronradar")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.worker_init.connect
def serve_metrics(**_) -> None:
    """A worker's main process: prometheus_client's HTTP server on
    ``CRONRADAR_METRICS_PORT`` (when set), serving the process metrics."""
    from django.conf import settings
    from prometheus_client import start_http_server

    if settings.CRONRADAR_METRICS_PORT:
        from cronradar.selfmetrics import process_registry  # needs Django set up

        start_http_server(settings.CRONRADAR_METRICS_PORT, registry=process_registry())


def settle_heap() -> None:
    """Collect once, then freeze every object alive (``gc.freeze``): what a
    process holds once it is set up (modules, settings, the app registry) is never
    walked by a collection again. Objects made later are collected as usual."""
    gc.collect()
    gc.freeze()


@signals.worker_process_init.connect
def _settle_child(**_) -> None:
    """A prefork child, set up and about to take tasks: :func:`settle_heap`."""
    settle_heap()


@signals.worker_process_shutdown.connect
def forget_process(pid=None, **_) -> None:
    """A prefork child that exits: drop its live gauge files (the library's
    bookkeeping for a dead process; no-op without a multi-process directory)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid or os.getpid())


@signals.setup_logging.connect
def _keep_django_logging(**kwargs) -> None:
    """Celery configures no logging of its own (worker and beat): Django's
    ``LOGGING`` (cronradar/settings.py) is already applied, with its formatter
    (CRONRADAR_LOG_FORMAT) and ids; a receiver here is how Celery is told so
    (``worker_hijack_root_logger`` alone still gives its task logger a handler of
    its own format). The log level is ``LOG_LEVEL``'s, not ``-l``'s."""
