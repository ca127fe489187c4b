"""The Celery application.

Production (``REDIS_URL`` set) runs a worker and beat against Redis; beat fires
``monitors.tasks.evaluate`` every ``CRONRADAR_TICK_SECONDS``. The embedded default
runs tasks eagerly and `manage.py serve` drives the evaluator in-process instead.
"""
import os

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cronradar.settings")

app = Celery("cronradar")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.setup_logging.connect
def _keep_django_logging(**kwargs) -> None:
    """Celery configures no logging of its own (worker and beat): Django's
    ``LOGGING`` (cronradar/settings.py) is already applied, with its formatter
    (CRONRADAR_LOG_FORMAT) and ids; a receiver here is how Celery is told so
    (``worker_hijack_root_logger`` alone still gives its task logger a handler of
    its own format). The log level is ``LOG_LEVEL``'s, not ``-l``'s."""
