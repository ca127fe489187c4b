"""The production shape, on the PostgreSQL + Redis run of scripts/test:
two evaluator processes on one database, and a real Celery worker on Redis."""
import os
import subprocess
import sys
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from alerts.models import Channel, Delivery, Incident, IncidentEvent
from monitors.models import Monitor
from monitors.pings import PingInput, ingest
from tests.live import ROOT, Receiver

needs_pg = pytest.mark.skipif(not os.environ.get("DATABASE_URL"),
                              reason="needs PostgreSQL (DATABASE_URL), see scripts/test")
needs_redis = pytest.mark.skipif(not (os.environ.get("DATABASE_URL")
                                      and os.environ.get("REDIS_URL")),
                                 reason="needs PostgreSQL and Redis, see scripts/test")


def _child_env(**extra):
    """Environment for a child process that uses this test run's database."""
    s = connection.settings_dict
    url = f"postgres://{s['USER']}@{s['HOST']}:{s['PORT']}/{s['NAME']}"
    return {**os.environ, "DATABASE_URL": url, **extra}


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


EVALUATOR = """
import sys, time, django
django.setup()
from datetime import datetime
from monitors.evaluator import tick
now, start = datetime.fromisoformat(sys.argv[1]), float(sys.argv[2])
time.sleep(max(0, start - time.time()))
total = 0
while (n := tick(now)):
    total += n
print(total)
"""


@needs_pg
@pytest.mark.django_db(transaction=True)
def test_two_evaluator_processes_never_notify_twice(project, receiver):
    hook = Channel.objects.create(project=project, kind="webhook", name="r",
                                  config={"url": receiver.url, "secret": "s"})
    t0 = timezone.now() - timedelta(hours=1)
    n = 60
    for i in range(n):
        m = Monitor.objects.create(project=project, name=f"m{i}", slug=f"m{i}",
                                   period=timedelta(seconds=10), grace=timedelta(seconds=1),
                                   next_slot_at=t0)
        m.channels.set([hook])
        ingest(m.pk, PingInput("success"), t0)  # armed: next slot t0+10s, long overdue
    now = timezone.now().isoformat()
    start = str(time.time() + 1.5)
    env = _child_env(CRONRADAR_DELIVERY_INLINE="1", CRONRADAR_DELIVERY_BACKOFF="0.01")
    procs = [subprocess.Popen([sys.executable, "-c", EVALUATOR, now, start], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    counts = [int(p.communicate(timeout=120)[0].strip().splitlines()[-1]) for p in procs]
    assert sum(counts) == n  # each monitor evaluated by exactly one process
    assert Incident.objects.filter(cause="missed").count() == n
    assert IncidentEvent.objects.filter(kind="opened").count() == n
    assert Delivery.objects.count() == n
    receiver.wait_for(lambda r: len(receiver.requests) >= n, timeout=30)
    time.sleep(0.5)
    monitors = sorted(r.json()["monitor"]["slug"] for r in receiver.requests)
    assert monitors == sorted(f"m{i}" for i in range(n))  # n notifications, none twice


@needs_redis
@pytest.mark.django_db(transaction=True)
def test_celery_worker_on_redis_evaluates_and_delivers(project, receiver, settings):
    settings.CRONRADAR_DELIVERY_INLINE = False
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "cronradar", "worker", "--pool=solo",
         "--loglevel=WARNING", "--without-gossip", "--without-mingle"],
        cwd=ROOT, env=_child_env())
    try:
        hook = Channel.objects.create(project=project, kind="webhook", name="r",
                                      config={"url": receiver.url, "secret": "s"})
        m = Monitor.objects.create(project=project, name="w", slug="w",
                                   period=timedelta(seconds=2), grace=timedelta(seconds=1))
        m.channels.set([hook])
        ingest(m.pk, PingInput("fail", exit_status=7), timezone.now())  # -> deliver.delay
        got = receiver.wait_for(lambda r: r.json()["event"] == "incident.opened", timeout=30)
        assert got.json()["incident"]["cause"] == "failed"
        ingest(m.pk, PingInput("success"), timezone.now())
        receiver.wait_for(lambda r: r.json()["event"] == "incident.resolved", timeout=30)
        # The evaluator tick as Celery beat would send it:
        from monitors.tasks import evaluate
        time.sleep(3.2)  # slot + grace passes
        evaluate.delay()
        missed = receiver.wait_for(lambda r: r.json()["incident"]["cause"] == "missed",
                                   timeout=30)
        assert missed.json()["event"] == "incident.opened"
        # the receiver logs a request before answering; the worker records it after
        deadline = time.time() + 10
        while Delivery.objects.filter(status="delivered").count() < 3 and time.time() < deadline:
            time.sleep(0.05)
        assert Delivery.objects.filter(status="delivered").count() == 3
    finally:
        worker.terminate()
        worker.wait(30)
