"""cronradar.celery: a worker's metrics directory and port."""
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
