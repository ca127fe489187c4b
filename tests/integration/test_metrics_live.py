"""GET /metrics on the production shape (the PostgreSQL + Redis run of
scripts/test): granian with two workers, a Celery worker (prefork, its metrics
port on) and beat on Redis, all sharing one PROMETHEUS_MULTIPROC_DIR. Every
scrape, whichever process answers it, shows the same totals."""
import re
import subprocess
import sys
import time
from datetime import timedelta

import httpx
import pytest

from monitors.models import Monitor
from tests.integration.test_production_shape import _child_env, _until_up, _web, needs_redis
from tests.live import ROOT, free_port

pytestmark = pytest.mark.live


def _sample(text: str, name: str, labels: str = "(?:{[^}]*})?") -> list[float]:
    """The values of the samples ``name`` whose label part matches ``labels`` (a
    regular expression; default: any labels or none) in ``text``."""
    return [float(v) for v in re.findall(rf"^{name}{labels} (\S+)$", text, re.M)]


def _process_totals(text: str) -> tuple[float, float, float]:
    """(pings stored, success pings, evaluator ticks) in a scrape."""
    return (sum(_sample(text, "cronradar_pings_total")),
            sum(_sample(text, "cronradar_pings_total", '{kind="success"}')),
            sum(_sample(text, "cronradar_evaluator_tick_duration_seconds_count")))


@needs_redis
@pytest.mark.django_db(transaction=True)
def test_every_scrape_sees_all_processes(project, tmp_path):
    shared = tmp_path / "prometheus"
    shared.mkdir()
    web_port, worker_port = free_port(), free_port()
    env = _child_env(PROMETHEUS_MULTIPROC_DIR=str(shared), CRONRADAR_DATA_DIR=str(tmp_path),
                     CRONRADAR_TICK_SECONDS="0.5")
    m = Monitor.objects.create(project=project, name="live", slug="live",
                               period=timedelta(hours=1), grace=timedelta(minutes=5))
    procs = [
        subprocess.Popen(_web("granian", web_port), cwd=ROOT, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
        subprocess.Popen([sys.executable, "-m", "celery", "-A", "cronradar", "worker",
                          "--pool=prefork", "--concurrency=2", "--loglevel=WARNING",
                          "--without-gossip", "--without-mingle"], cwd=ROOT,
                         env={**env, "CRONRADAR_METRICS_PORT": str(worker_port)},
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
        subprocess.Popen([sys.executable, "-m", "celery", "-A", "cronradar", "beat",
                          "--loglevel=WARNING", "-s", str(tmp_path / "beat-schedule")],
                         cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
    ]
    web = procs[0]
    metrics = f"http://127.0.0.1:{web_port}/metrics"
    try:
        assert _until_up(metrics, web).status_code == 200
        n = 0
        with httpx.Client(timeout=10) as client:  # new connections: any worker may answer
            for action in ["", "", "/start", "", "/log", "", "/fail"] * 3:
                r = httpx.get(f"http://127.0.0.1:{web_port}/ping/{m.uuid}{action}", timeout=10)
                assert r.status_code == 200
                n += 1
            deadline = time.time() + 30
            while _process_totals(client.get(metrics).text)[2] == 0:  # the first tick
                assert time.time() < deadline, "no evaluator tick seen in 30 s"
                time.sleep(0.2)
        scrapes = []
        for _ in range(12):  # each on a connection of its own
            r = httpx.get(metrics, timeout=10, headers={"Connection": "close"})
            assert (r.status_code, r.headers["Content-Type"]) == (
                200, "text/plain; version=0.0.4; charset=utf-8")
            scrapes.append(r.text)
        totals = [_process_totals(t) for t in scrapes]
        assert {(pings, success) for pings, success, _ in totals} == {(float(n), 12.0)}
        ticks = [t for _, _, t in totals]
        assert ticks[0] > 0 and ticks == sorted(ticks)  # never goes back, whoever answers
        time.sleep(2.5)  # beat fires a tick every 0.5 s
        later = _process_totals(httpx.get(metrics, timeout=10).text)
        assert later[:2] == (float(n), 12.0) and later[2] > ticks[-1]
        # the Celery worker's own port: the same shared directory, the same totals
        deadline = time.time() + 30
        while True:
            try:
                own = httpx.get(f"http://127.0.0.1:{worker_port}/metrics", timeout=10)
                break
            except httpx.TransportError:
                assert time.time() < deadline and procs[1].poll() is None
                time.sleep(0.2)
        assert _process_totals(own.text)[:2] == (float(n), 12.0)
        assert _process_totals(own.text)[2] >= later[2]
        for text in scrapes:  # the database's readings, on every scrape of the web tier
            assert _sample(text, "cronradar_metrics_database_up") == [1.0]
            assert len(_sample(text, "cronradar_evaluator_last_tick_timestamp_seconds")) == 1
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
