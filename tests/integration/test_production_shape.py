"""The production shape, on the PostgreSQL + Redis run of scripts/test:
two evaluator processes on one database, a real Celery worker on Redis, and the
web tier through a PostgreSQL restart."""
import concurrent.futures
import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from datetime import timedelta

import httpx
import pytest
from django.db import connection
from django.utils import timezone

from accounts.models import ApiKey
from alerts.models import Channel, Delivery, Incident, IncidentEvent
from monitors.models import Monitor, PingLog
from monitors.pings import PingInput, ingest
from tests.conftest import send_due
from tests.live import ROOT, Receiver, free_port

pytestmark = pytest.mark.live
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
    Channel.objects.create(project=project, kind="webhook", name="r",
                           config={"url": receiver.url, "secret": "s"})
    t0 = timezone.now() - timedelta(hours=1)
    n = 60
    for i in range(n):
        m = Monitor.objects.create(project=project, name=f"m{i}", slug=f"m{i}",
                                   period=timedelta(seconds=10), grace=timedelta(seconds=1),
                                   next_expected_at=t0)
        ingest(m.pk, PingInput("success"), t0)  # armed: next slot t0+10s, long overdue
    now = timezone.now().isoformat()
    start = str(time.time() + 1.5)
    env = _child_env()
    procs = [subprocess.Popen([sys.executable, "-c", EVALUATOR, now, start], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    counts = [int(p.communicate(timeout=120)[0].strip().splitlines()[-1]) for p in procs]
    assert sum(counts) == n  # each monitor evaluated by exactly one process
    assert Incident.objects.filter(cause="missed").count() == n
    assert IncidentEvent.objects.filter(kind="opened").count() == n
    assert Delivery.objects.count() == n
    assert send_due() == n  # the delivery engine, on this process
    monitors = sorted(r.json()["monitor"]["slug"] for r in receiver.requests)
    assert monitors == sorted(f"m{i}" for i in range(n))  # n notifications, none twice


@needs_redis
@pytest.mark.django_db(transaction=True)
def test_celery_worker_on_redis_evaluates_and_delivers(project, receiver):
    """Deliveries are rows, not broker messages: one created while no worker runs and
    whose nudge is then lost (Redis flushed) is sent by the worker on beat's next
    ``deliver`` task; later ones go out on the commit's own nudge."""
    import redis

    Channel.objects.create(project=project, kind="webhook", name="r",
                           config={"url": receiver.url, "secret": "s"})
    m = Monitor.objects.create(project=project, name="w", slug="w",
                               period=timedelta(seconds=2), grace=timedelta(seconds=1))
    ingest(m.pk, PingInput("fail", exit_status=7), timezone.now())  # row + deliver.delay()
    redis.Redis.from_url(os.environ["REDIS_URL"]).flushall()  # the nudge is gone
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "cronradar", "worker", "--pool=solo",
         "--loglevel=WARNING", "--without-gossip", "--without-mingle"],
        cwd=ROOT, env=_child_env())
    try:
        from alerts.tasks import deliver
        from monitors.tasks import evaluate

        deliver.delay()  # what beat sends every tick
        got = receiver.wait_for(lambda r: r.json()["event"] == "incident.opened", timeout=30)
        assert got.json()["incident"]["cause"] == "failed"
        ingest(m.pk, PingInput("success"), timezone.now())  # its commit nudges the worker
        receiver.wait_for(lambda r: r.json()["event"] == "incident.resolved", timeout=30)
        time.sleep(3.2)  # slot + grace passes
        evaluate.delay()  # the evaluator tick as beat would send it
        missed = receiver.wait_for(lambda r: r.json()["incident"]["cause"] == "missed",
                                   timeout=30)
        assert missed.json()["event"] == "incident.opened"
        # the receiver logs a request before answering; the worker records it after
        deadline = time.time() + 10
        while Delivery.objects.filter(status="delivered").count() < 3 and time.time() < deadline:
            time.sleep(0.05)
        assert Delivery.objects.filter(status="delivered").count() == 3
        assert len(receiver.requests) == 3
    finally:
        worker.terminate()
        worker.wait(30)


class Proxy:
    """A TCP proxy in front of PostgreSQL that the test can take down and bring back,
    as a database restart looks to the web tier: connections cut, then refused."""

    def __init__(self, upstream: tuple[str, int]):
        self.upstream = upstream
        self.port = free_port()
        self.conns: list[socket.socket] = []
        self.listener = None
        self.up()

    def up(self):
        self.listener = socket.create_server(("127.0.0.1", self.port), reuse_port=True)
        threading.Thread(target=self._accept, args=(self.listener,), daemon=True).start()

    def down(self):
        with contextlib.suppress(OSError):  # wakes the accept() blocked on it (Linux)
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        for c in self.conns:
            with contextlib.suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)
            c.close()
        self.conns.clear()

    def _accept(self, listener):
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            self.conns += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src, dst):
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_RDWR)


def _web(server: str, port: int) -> list[str]:
    """The command of a web process on ``port``: ``granian``, the documented
    production web server as README "Production" starts it (2 workers of 2 request
    threads), or ``serve`` (waitress, 4 threads, no evaluator)."""
    if server == "granian":
        return [sys.executable, "-m", "granian", "--interface", "wsgi", "--host", "127.0.0.1",
                "--port", str(port), "--workers", "2", "--blocking-threads", "2",
                "--respawn-failed-workers", "--workers-kill-timeout", "10",
                "cronradar.wsgi:application"]
    return [sys.executable, "manage.py", "serve", "--no-evaluator", "--port", str(port),
            "--threads", "4"]


def _until_up(url: str, proc: subprocess.Popen) -> httpx.Response:
    """The first answer of ``proc``'s web server to a GET of ``url`` (60 s at most)."""
    deadline = time.time() + 60
    while True:
        try:
            return httpx.get(url, timeout=5)
        except httpx.TransportError:
            assert time.time() < deadline and proc.poll() is None
            time.sleep(0.2)


@needs_pg
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("server", ["serve", "granian"])
def test_a_database_restart_gives_503_then_no_failed_request(project, tmp_path, server):
    """While PostgreSQL is unreachable pings get 503 + Retry-After; once it is back no
    request fails (persistent connections are health-checked)."""
    s = connection.settings_dict
    proxy = Proxy((s["HOST"], int(s["PORT"])))
    port = free_port()
    env = _child_env(DATABASE_URL=f"postgres://{s['USER']}@127.0.0.1:{proxy.port}/{s['NAME']}",
                     CRONRADAR_LIVENESS_INTERVAL="0", CRONRADAR_DATA_DIR=str(tmp_path))
    env.pop("REDIS_URL", None)
    m = Monitor.objects.create(project=project, name="db", slug="db",
                               period=timedelta(seconds=60), grace=timedelta(seconds=5))
    web = subprocess.Popen(_web(server, port), cwd=ROOT, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/ping/{m.uuid}"
    try:
        assert _until_up(url, web).status_code == 200

        def blast(n):
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                return list(pool.map(lambda _: httpx.get(url, timeout=30), range(n)))

        assert {r.status_code for r in blast(40)} == {200}  # every thread has a connection
        proxy.down()  # every thread's connection is cut; one thread hears of it now
        during = httpx.get(url, timeout=30)
        assert (during.status_code, during.headers["Retry-After"]) == (503, "5")
        proxy.up()  # the other threads still hold their cut connections
        assert [r.status_code for r in blast(40)] == [200] * 40
        assert PingLog.objects.filter(monitor=m).count() == 1 + 40 + 40  # every 200 is stored
    finally:
        web.terminate()
        web.wait(30)
        proxy.down()


@needs_pg
@pytest.mark.django_db(transaction=True)
def test_the_production_web_server_stores_every_ping_it_acknowledges(project, tmp_path):
    """granian as README "Production" runs it: GET, HEAD, a POST body over the limit,
    a chunked body, the client address from the proxy, bad input, 200 concurrent
    pings to one monitor; every 2xx is one stored ping, and each web process beats."""
    from monitors.models import LivenessSpan

    port = free_port()
    env = _child_env(CRONRADAR_PING_BODY_LIMIT="1000", CRONRADAR_TRUST_X_FORWARDED_FOR="true",
                     CRONRADAR_LIVENESS_INTERVAL="0.5", CRONRADAR_DATA_DIR=str(tmp_path))
    env.pop("REDIS_URL", None)
    m = Monitor.objects.create(project=project, name="web", slug="web",
                               period=timedelta(seconds=60), grace=timedelta(seconds=5))
    LivenessSpan.objects.all().delete()
    web = subprocess.Popen(_web("granian", port), cwd=ROOT, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/ping/{m.uuid}"
    try:
        first = _until_up(url, web)
        assert (first.status_code, first.text) == (200, "OK\n")
        head = httpx.head(url, timeout=10)
        assert (head.status_code, head.content) == (200, b"")
        big = httpx.post(url + "/fail", content=b"x" * 1010, timeout=10,
                         headers={"X-Forwarded-For": "198.51.100.7"})
        chunked = httpx.post(url + "/log", content=iter([b"abc", b"def" * 500]), timeout=10)
        bad = httpx.get(url + "/300", timeout=10)
        assert [big.status_code, chunked.status_code, bad.status_code] == [200, 200, 400]
        made = httpx.post(f"http://127.0.0.1:{port}/api/v1/monitors/", timeout=10,
                          content=iter([b'{"name": "chunked", ', b'"period": 60, "grace": 5}']),
                          headers={"Content-Type": "application/json",
                                   "Authorization": f"Bearer {ApiKey.issue(project)[1]}"})
        assert (made.status_code, made.json()["name"]) == (201, "chunked")  # core.edge read it
        assert bad.text == "exit status must be an integer from 0 to 255, got 300\n"
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            many = list(pool.map(lambda _: httpx.get(url, timeout=30).status_code, range(200)))
        assert many == [200] * 200
        stored = list(PingLog.objects.filter(monitor=m).order_by("pk"))
        assert len(stored) == 2 + 2 + 200  # the first GET, HEAD, the two POSTs, the 200
        assert [(p.method, p.kind) for p in stored[:4]] == [
            ("GET", "success"), ("HEAD", "success"), ("POST", "fail"), ("POST", "log")]
        assert (bytes(stored[2].body), stored[2].body_size, stored[2].body_truncated,
                stored[2].remote_addr) == (b"x" * 1000, 1010, True, "198.51.100.7")
        assert (bytes(stored[3].body), stored[3].body_size) == ((b"abc" + b"def" * 500)[:1000],
                                                               1503)
        assert stored[0].remote_addr == "127.0.0.1"
        end = time.time() + 10
        while not LivenessSpan.objects.filter(component="web").exists():
            assert time.time() < end, "no web liveness beat from granian's workers"
            time.sleep(0.2)
    finally:
        web.terminate()
        web.wait(30)


@needs_pg
@pytest.mark.django_db(transaction=True)
def test_two_evaluator_processes_take_each_escalation_step_once(project, receiver):
    from alerts.models import Alerting, EscalationPolicy, EscalationTier

    first = Channel.objects.create(project=project, kind="webhook", name="t1",
                                   config={"url": receiver.url + "/t1", "secret": "s"})
    second = Channel.objects.create(project=project, kind="webhook", name="t2",
                                    config={"url": receiver.url + "/t2", "secret": "s"})
    policy = EscalationPolicy.objects.create(project=project, name="p", repeat=1)
    for position, channel in enumerate((first, second)):
        EscalationTier.objects.create(policy=policy, position=position,
                                      delay=timedelta(seconds=10)).channels.set([channel])
    t0 = timezone.now() - timedelta(hours=1)
    n = 30
    for i in range(n):
        m = Monitor.objects.create(project=project, name=f"e{i}", slug=f"e{i}",
                                   period=timedelta(hours=2), grace=timedelta(seconds=60))
        Alerting.objects.create(monitor=m, escalation_policy=policy)
        ingest(m.pk, PingInput("fail"), t0)  # tier 1 due at t0+10s, long ago
    env = _child_env()
    base = timezone.now()
    for k in range(4):  # four ticks 11 s apart, each by two evaluator processes at once
        now = (base + timedelta(seconds=11 * k)).isoformat()
        start = str(time.time() + 1.5)
        procs = [subprocess.Popen([sys.executable, "-c", EVALUATOR, now, start], cwd=ROOT,
                                  env=env, stdout=subprocess.PIPE, text=True) for _ in range(2)]
        for p in procs:
            p.communicate(timeout=120)
    steps = list(IncidentEvent.objects.filter(kind="escalated").values_list("incident", "step"))
    assert len(steps) == len(set(steps)) == 4 * n  # tiers 1, 2, then both again: once each
    assert send_due(base + timedelta(seconds=40)) == 4 * n
    paths = sorted(r.path for r in receiver.requests)
    assert paths == sorted(["/t1"] * 2 * n + ["/t2"] * 2 * n)


KILLED_MID_TICK = """
import os, signal, sys, django
django.setup()
from datetime import datetime
from alerts import incidents
from monitors.evaluator import tick
real, calls = incidents._escalate, []

def step_then_die(*args):
    taken = real(*args)
    calls.append(taken)
    if len(calls) == int(sys.argv[2]):  # inside the step's transaction, before its commit
        os.kill(os.getpid(), signal.SIGKILL)
    return taken

incidents._escalate = step_then_die
tick(datetime.fromisoformat(sys.argv[1]))
"""


@needs_pg
@pytest.mark.django_db(transaction=True)
def test_an_evaluator_killed_mid_escalation_loses_and_repeats_nothing(project, receiver):
    """An evaluator process is SIGKILLed in the middle of a tick, inside the 8th
    incident's step: the 7 committed steps stay, the 8th rolls back, and the next
    evaluator takes the 13 left (8th included) once each."""
    from alerts.models import Alerting, EscalationPolicy, EscalationTier

    hook = Channel.objects.create(project=project, kind="webhook", name="t1",
                                  config={"url": receiver.url + "/t1", "secret": "s"})
    policy = EscalationPolicy.objects.create(project=project, name="p")
    EscalationTier.objects.create(policy=policy, position=0,
                                  delay=timedelta(seconds=10)).channels.set([hook])
    t0 = timezone.now() - timedelta(hours=1)
    for i in range(20):
        m = Monitor.objects.create(project=project, name=f"k{i}", slug=f"k{i}",
                                   period=timedelta(hours=2), grace=timedelta(seconds=60))
        Alerting.objects.create(monitor=m, escalation_policy=policy)
        ingest(m.pk, PingInput("fail"), t0)  # tier 1 due at t0+10s, long ago
    now = timezone.now().isoformat()
    killed = subprocess.run([sys.executable, "-c", KILLED_MID_TICK, now, "8"], cwd=ROOT,
                            env=_child_env(), capture_output=True, text=True, timeout=120)
    assert killed.returncode == -9, killed.stderr
    assert IncidentEvent.objects.filter(step="tier:0:0").count() == 7
    survivor = subprocess.run([sys.executable, "-c", EVALUATOR, now, "0"], cwd=ROOT,
                              env=_child_env(), capture_output=True, text=True, timeout=120)
    assert survivor.returncode == 0, survivor.stderr
    steps = list(IncidentEvent.objects.filter(step="tier:0:0").values_list("incident", flat=True))
    assert sorted(steps) == sorted(Incident.objects.values_list("pk", flat=True))  # 20, once
    assert Delivery.objects.filter(channel=hook).count() == 20
    assert send_due(timezone.now()) == 20
    assert len(receiver.requests) == 20
