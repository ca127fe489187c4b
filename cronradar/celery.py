"""The Celery application.

Production (``REDIS_URL`` set) runs a worker and beat against Redis; beat fires
``monitors.tasks.evaluate`` every ``CRONRADAR_TICK_SECONDS``. The embedded default
runs tasks eagerly and `manage.py serve` drives the evaluator in-process instead.
"""
import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cronradar.settings")

app = Celery("cronradar")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
