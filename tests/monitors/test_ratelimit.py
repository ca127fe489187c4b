"""Ping rate limits (monitors.ratelimit): per monitor and per organisation, from the
plan or CRONRADAR_PING_RATE, in memory (the embedded default) and in Redis; the
429 and its Retry-After; Redis down; the counters flushed (monitors.usage); the
refusal streak the evaluator reads."""
import logging
import shutil
import socket
import subprocess
import time
from datetime import UTC, date, datetime
from types import SimpleNamespace

import pytest

from accounts.models import Plan
from core import logs
from monitors import ratelimit, usage, views
from monitors.models import Monitor, PingLog, PingUsage
from monitors.runs import rearm
from tests.conftest import T0, S, new_project

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 1, 5, 12, 0, 20, tzinfo=UTC)  # 20 s into a minute: 40 s to its end


@pytest.fixture
def clock(monkeypatch):
    """The ping view's clock, set by the test (``clock.now``)."""
    fake = SimpleNamespace(now=lambda: fake.at, at=NOW)
    monkeypatch.setattr(views, "timezone", fake)
    return fake


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def redis_cache(settings, tmp_path):
    """The default cache on a redis-server of the test's own (the production shape's
    counters)."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server not installed")
    port = _free_port()
    server = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1",
                               "--save", "", "--appendonly", "no", "--dir", str(tmp_path)],
                              stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        settings.CACHES = {"default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{port}/0", "KEY_PREFIX": "t",
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5}}}
        yield port
    finally:
        server.terminate()
        server.wait(10)


@pytest.fixture
def memory_cache(settings):
    """The default cache in this process's memory (the embedded default's counters),
    also on the PostgreSQL+Redis run of scripts/test, whose REDIS_URL makes it Redis."""
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}


@pytest.fixture(params=["memory", "redis"])
def store(request):
    """Each test once with the in-memory counters and once on Redis."""
    if request.param == "redis":
        request.getfixturevalue("redis_cache")
        assert isinstance(ratelimit.backend(), ratelimit.Redis)
    else:
        request.getfixturevalue("memory_cache")
        assert ratelimit.backend() is ratelimit.MEMORY
    return request.param


def _on_plan(project, **limits) -> Plan:
    plan = Plan.objects.create(name="free", **limits)
    project.organisation.plan = plan
    project.organisation.save()
    return plan


def test_the_setting_limits_each_ping_url_without_a_plan(client, make_monitor, settings,
                                                          clock, store):
    settings.CRONRADAR_PING_RATE = "2/min"
    m = make_monitor(period=3600 * S, grace=60 * S)
    answers = [client.get(f"/ping/{m.uuid}") for _ in range(4)]
    assert [a.status_code for a in answers] == [200, 200, 429, 429]
    assert answers[2].content == (b"too many pings for this monitor: at most 2/min "
                                  b"(CRONRADAR_PING_RATE); this one was not stored\n")
    assert [a["Retry-After"] for a in answers[2:]] == ["40", "40"]
    assert PingLog.objects.filter(monitor=m).count() == 2  # what was refused is not stored
    other = make_monitor(period=3600 * S, grace=60 * S)
    assert client.get(f"/ping/{other.uuid}").status_code == 200  # per ping URL
    clock.at = NOW + 40 * S  # the next minute
    assert client.get(f"/ping/{m.uuid}").status_code == 200


def test_the_plans_rate_per_monitor_overrides_the_setting(client, make_monitor, project,
                                                         settings, clock, store):
    settings.CRONRADAR_PING_RATE = "100/min"
    _on_plan(project, pings_per_minute=3)
    m = make_monitor(name="backup", period=3600 * S, grace=60 * S)
    url = f"/ping/{project.ping_key}/backup"
    assert [client.get(url).status_code for _ in range(4)] == [200, 200, 200, 429]
    refused = client.get(f"/ping/{m.uuid}/start")  # the same monitor by its other URL
    assert (refused.status_code, refused["Retry-After"], refused.content) == (
        429, "40", b"too many pings for this monitor: this organisation's plan (free) allows "
                   b"3 pings a minute per monitor; this one was not stored\n")
    assert PingLog.objects.filter(monitor=m).count() == 3


def test_the_plans_rate_per_organisation_counts_all_its_monitors(client, make_monitor, project,
                                                                settings, clock, store):
    _on_plan(project, org_pings_per_minute=3)
    a, b = make_monitor(period=3600 * S), make_monitor(period=3600 * S)
    stranger = Monitor(project=new_project("elsewhere"), name="x", slug="x", period=3600 * S,
                       grace=S)
    rearm(stranger, T0)
    stranger.save()
    codes = [client.get(f"/ping/{m.uuid}").status_code for m in (a, b, a, b)]
    assert codes == [200, 200, 200, 429]
    refused = client.get(f"/ping/{a.uuid}")
    assert (refused.status_code, refused["Retry-After"], refused.content) == (
        429, "40", b"too many pings for this organisation: this organisation's plan (free) "
                   b"allows 3 pings a minute for the whole organisation; this one was not "
                   b"stored\n")
    assert client.get(f"/ping/{stranger.uuid}").status_code == 200  # another organisation
    stored = PingLog.objects.filter
    assert (stored(monitor=a).count(), stored(monitor=b).count()) == (2, 1)


def test_a_refused_ping_writes_the_monitor_once_a_window(client, make_monitor, project, clock,
                                                        store, django_assert_num_queries):
    _on_plan(project, pings_per_minute=1)
    m = make_monitor(period=3600 * S)
    assert client.get(f"/ping/{m.uuid}").status_code == 200
    with django_assert_num_queries(1):  # the refusal streak on the monitor
        assert client.get(f"/ping/{m.uuid}").status_code == 429
    with django_assert_num_queries(0):
        assert [client.get(f"/ping/{m.uuid}").status_code for _ in range(5)] == [429] * 5
    m.refresh_from_db()
    minute = datetime(2026, 1, 5, 12, 1, tzinfo=UTC)
    assert (m.refused_since, m.refused_until) == (NOW, minute)
    clock.at = minute + 5 * S  # the next window: the streak goes on
    assert [client.get(f"/ping/{m.uuid}").status_code for _ in range(2)] == [200, 429]
    m.refresh_from_db()
    assert (m.refused_since, m.refused_until) == (NOW, minute + 60 * S)
    clock.at = minute + 185 * S  # two windows without a refusal: a new streak
    assert [client.get(f"/ping/{m.uuid}").status_code for _ in range(2)] == [200, 429]
    m.refresh_from_db()
    assert (m.refused_since, m.refused_until) == (minute + 185 * S, minute + 240 * S)


def test_counters_are_flushed_to_exact_numbers(client, make_monitor, project, clock, store):
    _on_plan(project, pings_per_minute=2)
    a, b = make_monitor(period=3600 * S), make_monitor(period=3600 * S)
    for m, n in ((a, 5), (b, 1)):
        for _ in range(n):
            client.get(f"/ping/{m.uuid}")
    assert usage.flush() == 2
    assert usage.flush() == 0  # nothing new
    clock.at = datetime(2026, 2, 1, 0, 0, 1, tzinfo=UTC)  # a new month
    client.get(f"/ping/{a.uuid}")
    clock.at = datetime(2026, 2, 1, 0, 0, 2, tzinfo=UTC)
    client.get(f"/ping/{a.uuid}")
    client.get(f"/ping/{a.uuid}")
    assert usage.flush() == 1
    rows = PingUsage.objects.order_by("monitor_id", "month")
    assert [(r.monitor_id, r.month, r.pings, r.refused) for r in rows] == [
        (a.pk, date(2026, 1, 1), 2, 3), (a.pk, date(2026, 2, 1), 2, 1),
        (b.pk, date(2026, 1, 1), 1, 0)]
    assert [Monitor.objects.get(pk=m.pk).dropped_pings for m in (a, b)] == [4, 0]


def test_a_failed_flush_gives_the_counts_back(client, make_monitor, clock, monkeypatch, store):
    m = make_monitor(period=3600 * S)
    client.get(f"/ping/{m.uuid}")

    def broken(*args):
        raise RuntimeError("database gone")

    monkeypatch.setattr(usage, "_add", broken)
    with pytest.raises(RuntimeError):
        usage.flush()
    monkeypatch.undo()
    assert usage.flush() == 1
    assert PingUsage.objects.get().pings == 1


def test_redis_down_lets_every_ping_through_with_one_log_line(client, make_monitor, project,
                                                             settings, monkeypatch, caplog):
    """Redis (the counters' server) refuses connections: every ping is stored as
    usual, one warning line (no traceback), and Redis is not asked again per ping."""
    monkeypatch.setattr(ratelimit, "cache_down", logs.Outage(
        "cache", "ping(s) let through without their rate limit", level=logging.WARNING))
    _on_plan(project, pings_per_minute=1)
    m = make_monitor(period=3600 * S)
    settings.CACHES = {"default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": f"redis://127.0.0.1:{_free_port()}/0",
        "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5}}}
    assert [client.get(f"/ping/{m.uuid}").status_code for _ in range(4)] == [200] * 4
    assert PingLog.objects.filter(monitor=m).count() == 4
    lines = [r for r in caplog.records if r.name == "monitors.ratelimit"]
    assert [(r.levelno, r.exc_info) for r in lines] == [(logging.WARNING, None)]
    assert lines[0].getMessage().startswith("cache unreachable since ")
    assert "1 ping(s) let through without their rate limit in this process" in (
        lines[0].getMessage())
    assert usage.flush() == 0  # nothing counted, and the flush fails quietly too


def test_a_hung_redis_lets_pings_through_at_once(client, make_monitor, settings, monkeypatch,
                                                 caplog):
    """Redis accepts connections and never answers: the first ping waits out the
    short socket timeout once (one connection, its script not sent again on
    another), the next ones don't touch it; every one is stored."""
    from tests.helpers import hung_redis_cache

    monkeypatch.setattr(ratelimit, "cache_down", logs.Outage(
        "cache", "ping(s) let through without their rate limit", level=logging.WARNING))
    settings.CRONRADAR_PING_RATE = "2/min"
    m = make_monitor(period=3600 * S, grace=60 * S)
    took = []
    with hung_redis_cache(settings) as server:
        for _ in range(4):
            started = time.monotonic()
            assert client.get(f"/ping/{m.uuid}").status_code == 200
            took.append(time.monotonic() - started)
        server.setblocking(False)
        connections = []
        while True:
            try:
                connections.append(server.accept()[0])
            except BlockingIOError:
                break
        for c in connections:
            c.close()
    assert len(connections) == 1
    assert took[0] < 1.5 and max(took[1:]) < 0.3, took
    assert PingLog.objects.filter(monitor=m).count() == 4
    lines = [r for r in caplog.records if r.name == "monitors.ratelimit"]
    assert [(r.levelno, r.exc_info) for r in lines] == [(logging.WARNING, None)]


def test_a_plan_change_applies_once_the_remembered_target_expires(client, make_monitor, project,
                                                                 clock):
    m = make_monitor(period=3600 * S)
    assert [client.get(f"/ping/{m.uuid}").status_code for _ in range(3)] == [200] * 3
    _on_plan(project, pings_per_minute=3)
    assert client.get(f"/ping/{m.uuid}").status_code == 200  # still the old limits
    for key, (_, remembered) in list(ratelimit._targets.items()):  # TARGET_TTL went by
        ratelimit._targets[key] = (time.monotonic() - 1, remembered)
    # counted from now on (without a limit nothing was counted against one)
    assert [client.get(f"/ping/{m.uuid}").status_code for _ in range(4)] == [200] * 3 + [429]


def test_a_target_is_read_by_one_statement_and_remembered_for_a_random_part_of_the_ttl(
        make_monitor, project, django_assert_num_queries):
    """A miss reads the monitor, its organisation and plan in one statement; each
    URL is remembered from TARGET_SPREAD x TARGET_TTL to TARGET_TTL seconds, spread
    so that URLs read together are not read again together."""
    from monitors import pings

    _on_plan(project, pings_per_minute=7, org_pings_per_minute=70)
    monitors = [make_monitor(slug=f"t{i}") for i in range(20)]
    ratelimit.forget()
    before = time.monotonic()
    with django_assert_num_queries(20):
        found = [ratelimit.target(("u", m.uuid), pings.lookup(uuid=m.uuid)) for m in monitors]
    after = time.monotonic()
    assert found[0] == ratelimit.Target(monitors[0].pk, project.organisation_id, "free",
                                        ratelimit.Rate(7, 60), ratelimit.Rate(70, 60), True)
    by_slug = ratelimit.target(("k", project.ping_key, "t1"),
                               pings.lookup(ping_key=project.ping_key, slug="t1"))
    assert by_slug.monitor_id == monitors[1].pk
    expiries = [ratelimit._targets[("u", m.uuid)][0] for m in monitors]
    ttl, spread = ratelimit.TARGET_TTL, ratelimit.TARGET_SPREAD
    assert all(before + spread * ttl <= e <= after + ttl for e in expiries)
    assert len({round(e, 3) for e in expiries}) > 10  # not all at once
    with django_assert_num_queries(0):  # remembered
        assert ratelimit.target(("u", monitors[0].uuid), pings.lookup(uuid=monitors[0].uuid)) \
            == found[0]
    monitors[2].deleted_at = NOW
    monitors[2].save()
    ratelimit.forget()
    assert ratelimit.target(("u", monitors[2].uuid), pings.lookup(uuid=monitors[2].uuid)) is None


def test_memory_counters_are_thread_safe(memory_cache):
    import threading

    results = []

    def pinger():
        results.extend(ratelimit.MEMORY.hit(("m:1:60:0", ""), (500, 0), (61, 0), "1:2026-01")
                       for _ in range(100))

    threads = [threading.Thread(target=pinger) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sorted(set(results)) == [(0, False), (1, False), (1, True)]
    assert [results.count(r) for r in ((0, False), (1, True))] == [500, 1]
    assert ratelimit.drain() == {(1, date(2026, 1, 1)): (500, 300)}


def test_a_cron_slot_whose_first_ping_was_refused_is_unknown_then_one_missed(
        client, make_monitor, project, clock, store):
    from alerts.models import Incident
    from monitors import evaluator
    from monitors.models import Run

    _on_plan(project, org_pings_per_minute=1)
    job = make_monitor(name="job", kind="cron", schedule="* * * * *", grace=10 * S,
                       created=T0 - S)
    noisy = make_monitor(name="noisy", period=3600 * S)
    clock.at = T0 + S
    assert client.get(f"/ping/{job.uuid}").status_code == 200  # the 12:00 run
    clock.at = T0 + 60 * S
    assert client.get(f"/ping/{noisy.uuid}").status_code == 200  # the minute's one ping
    clock.at = T0 + 61 * S
    assert client.get(f"/ping/{job.uuid}").status_code == 429  # the 12:01 run's first ping
    evaluator.tick(T0 + 71 * S)
    assert not Incident.objects.exists()
    assert list(Run.objects.filter(monitor=job).order_by("slot_at")
                .values_list("slot_at", "outcome", "reason")) == [
        (T0, "succeeded", ""), (T0 + 60 * S, "unknown", "rate_limited")]
    evaluator.tick(T0 + 131 * S)  # 12:02: no ping at all
    incident = Incident.objects.get()
    assert (incident.monitor_id, incident.cause, incident.missed_count) == (job.pk, "missed", 1)


def test_the_redis_counters_are_one_store_per_connection_pool(redis_cache, client, make_monitor):
    """Django's get_client() makes a new client object every call: the store is kept
    per connection pool, so a thousand pings hold one store, not a thousand (a leak
    of about 50 KB a ping, found by bench/ping_http.sh's memory figures)."""
    ratelimit._redis.clear()
    m = make_monitor()
    first = ratelimit.backend()
    assert ratelimit.backend() is first
    for _ in range(50):
        assert client.get(f"/ping/{m.uuid}").status_code == 200
    assert list(ratelimit._redis.values()) == [first]
