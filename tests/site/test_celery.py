"""cronradar.celery: a worker's metrics directory and port; Django's logging kept."""
import os
import subprocess
import sys

from tests.live import ROOT

PROBE = """
import os, sys
sys.argv = sys.argv[1:]
import cronradar.celery  # noqa: F401  (what `celery -A cronradar ...` imports first)
from prometheus_client import values
print(os.environ.get("PROMETHEUS_MULTIPROC_DIR", "") + "|" + values.ValueClass.__name__)
"""


def _probe(*argv, **env) -> tuple[str, str]:
    clean = {k: v for k, v in os.environ.items()
             if k not in ("PROMETHEUS_MULTIPROC_DIR", "CRONRADAR_METRICS_PORT")}
    out = subprocess.run([sys.executable, "-c", PROBE, *argv], cwd=ROOT, env={**clean, **env},
                         capture_output=True, text=True, timeout=60, check=True).stdout
    directory, value_class = out.strip().splitlines()[-1].split("|")
    return directory, value_class


def test_a_worker_with_a_metrics_port_gets_a_fresh_directory_before_prometheus_loads():
    directory, value_class = _probe("celery", "-A", "cronradar", "worker",
                                    CRONRADAR_METRICS_PORT="9808")
    assert directory.startswith("/") and "cronradar-metrics-" in directory
    assert value_class == "MmapedValue"  # multi-process mode
    assert not os.path.exists(directory)  # removed when the worker exits


def test_beat_and_the_web_server_get_none():
    assert _probe("celery", "-A", "cronradar", "beat", CRONRADAR_METRICS_PORT="9808") == (
        "", "MutexValue")
    assert _probe("granian", "cronradar.wsgi:application", CRONRADAR_METRICS_PORT="9808") == (
        "", "MutexValue")


def test_a_set_directory_is_kept(tmp_path):
    assert _probe("celery", "-A", "cronradar", "worker", CRONRADAR_METRICS_PORT="9808",
                  PROMETHEUS_MULTIPROC_DIR=str(tmp_path)) == (str(tmp_path), "MmapedValue")


LOGGING_PROBE = """
import logging
import django
django.setup()
from cronradar.celery import app
root = logging.getLogger()
before = list(root.handlers)
app.log.setup(loglevel="DEBUG")  # what `celery worker` and `celery beat` call
task_logger = logging.getLogger("celery.task")
own = [h for h in task_logger.handlers if not isinstance(h, logging.NullHandler)]
print(root.handlers == before, type(root.handlers[0].formatter).__name__,
      logging.getLevelName(root.level), own, task_logger.propagate)
"""


def test_celery_leaves_the_root_logger_and_its_format_alone():
    """Worker and beat keep Django's LOGGING (CRONRADAR_LOG_FORMAT, the ids, LOG_LEVEL)."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "cronradar.settings",
           "CRONRADAR_LOG_FORMAT": "json", "LOG_LEVEL": "INFO"}
    done = subprocess.run([sys.executable, "-c", LOGGING_PROBE], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["True", "JsonFormatter", "INFO", "[]", "True"], done.stderr
