"""cronradar.health: the readiness parts (check), GET /readyz through the probes
(ahead of host validation), and cronradar_ready{part}."""
import contextlib
import json
import os
import socket
import threading
import time

import pytest
from django.db import connection, connections
from django.db.migrations.recorder import MigrationRecorder
from django.db.utils import load_backend
from django.test.utils import CaptureQueriesContext
from prometheus_client import CollectorRegistry, generate_latest

from alerts import backlog
from alerts.models import Channel, Delivery, Incident, IncidentEvent
from cronradar import guard, health
from cronradar.health import Part, ReadinessCollector, check
from cronradar.probes import Probes
from monitors.models import LivenessSpan, Monitor
from tests.conftest import T0, s
from tests.helpers import StuckRead, wsgi_call

pytestmark = pytest.mark.django_db
NOW = T0
ALL_OK = {"database": "ok", "migrations": "ok", "redis": "off", "evaluator": "ok",
          "deliveries": "ok"}
DB_DOWN = "the database is unreachable"


@pytest.fixture(autouse=True)
def well(settings, monkeypatch):
    """All is well at NOW: the evaluator ticked a second ago, nothing is due, no
    Redis configured; /readyz reads the clock as NOW."""
    settings.REDIS_URL = ""
    settings.CRONRADAR_LIVENESS_INTERVAL = 1
    settings.CRONRADAR_READY_EVALUATOR_LAG = 30
    settings.CRONRADAR_READY_DELIVERY_LAG = 300
    monkeypatch.setattr(health.timezone, "now", lambda: NOW)
    evaluator_ticked(s(1))


def evaluator_ticked(ago):
    LivenessSpan.objects.create(component="evaluator", started_at=NOW - ago - s(60),
                                last_seen_at=NOW - ago)


def statuses(result: dict) -> dict:
    return {name: part.status for name, part in result.items()}


def readyz(path="/readyz", method="GET"):
    """GET /readyz as a probe sends it (a pod address as Host): (status, headers but
    X-Request-ID, JSON)."""
    def app(environ, start_response):
        raise AssertionError("the request went past the probes")

    status, headers, body = wsgi_call(Probes(app), path, method, host="10.0.0.9:8000")
    headers.pop("X-Request-ID")  # every answer's own (tests/site/test_probes.py)
    return status, headers, json.loads(body) if body else None


@contextlib.contextmanager
def closed_port():
    """A loopback port nothing listens on (bound, not listening: connections are
    refused) for the block's duration."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


@pytest.fixture
def database_stopped():
    """The default database is a PostgreSQL server that is not running (a closed
    port); yields the port."""
    real = connections["default"]
    with closed_port() as port:
        down = load_backend("django.db.backends.postgresql").DatabaseWrapper(
            {**real.settings_dict, "ENGINE": "django.db.backends.postgresql",
             "HOST": "127.0.0.1", "PORT": port, "NAME": "cronradar", "USER": "cronradar",
             "PASSWORD": "", "OPTIONS": {}}, "default")
        connections["default"] = down
        try:
            yield port
        finally:
            down.close()
            connections["default"] = real


@pytest.fixture
def due_delivery(project, make_monitor):
    """due_delivery(at, **channel_fields) -> a Delivery of a new incident's opening
    to a new channel, due at ``at``; the monitor is not due."""
    def make(at, **channel_fields):
        monitor = make_monitor(created=NOW)
        incident = Incident.objects.create(monitor=monitor, cause="missed",
                                           summary="m: missed", opened_at=at, missed_count=1)
        channel = Channel.objects.create(project=project, kind="webhook",
                                         config={"url": "https://hook.test/h", "secret": "k"},
                                         **channel_fields)
        event = IncidentEvent.objects.create(incident=incident, kind="opened", at=at)
        return Delivery.objects.create(event=event, incident=incident, channel=channel,
                                       created_at=at, next_attempt_at=at)

    return make


# --- all is well ------------------------------------------------------------------------

def test_all_well_is_200_with_every_part():
    assert check(NOW) == {name: Part("off" if name == "redis" else "ok") for name in health.PARTS}
    status, headers, body = readyz()
    assert (status, body) == ("200 OK", ALL_OK)
    assert list(body) == ["database", "migrations", "redis", "evaluator", "deliveries"]
    assert (headers["Content-Type"], headers["Cache-Control"]) == ("application/json",
                                                                  "no-store")


def test_head_answers_without_a_body():
    status, headers, body = readyz(method="HEAD")
    assert (status, body) == ("200 OK", None)
    assert headers["Content-Length"] == str(len(json.dumps(ALL_OK)))


def test_a_check_is_four_small_reads_and_the_web_tiers_one():
    def reads(parts=None):
        with CaptureQueriesContext(connection) as seen:
            check(NOW, parts)
        return [q["sql"] for q in seen.captured_queries  # the test's transaction adds savepoints
                if "SAVEPOINT" not in q["sql"]]

    assert len(reads()) == 4  # django_migrations, the last beat, the oldest due, the backlog
    [read] = reads(["database", "migrations"])
    assert "django_migrations" in read
    assert reads(["redis"]) == []


# --- the database -------------------------------------------------------------------------

def test_a_stopped_database_is_unreachable_and_what_it_holds_unknown(database_stopped):
    refused = (f'connection failed: connection to server at "127.0.0.1", port '
               f"{database_stopped} failed: Connection refused")
    assert check(NOW) == {"database": Part("unreachable", refused),
                          "migrations": Part("unknown", DB_DOWN), "redis": Part("off"),
                          "evaluator": Part("unknown", DB_DOWN),
                          "deliveries": Part("unknown", DB_DOWN)}
    assert readyz() == ("503 Service Unavailable", readyz()[1], {
        "database": "unreachable", "migrations": "unknown", "redis": "off",
        "evaluator": "unknown", "deliveries": "unknown",
        "detail": {"database": refused, "migrations": DB_DOWN, "evaluator": DB_DOWN,
                   "deliveries": DB_DOWN}})
    assert readyz("/readyz?parts=database,migrations")[::2] == ("503 Service Unavailable", {
        "database": "unreachable", "migrations": "unknown",
        "detail": {"database": refused, "migrations": DB_DOWN}})


def test_a_database_never_migrated_answers_with_nothing_applied():
    with connection.cursor() as cursor:  # undone with the test's transaction
        cursor.execute(f"DROP TABLE {MigrationRecorder.Migration._meta.db_table}")
    assert statuses(check(NOW, ["database", "migrations"])) == {"database": "ok",
                                                                "migrations": "unapplied"}
    assert readyz("/readyz?parts=database,migrations")[::2] == ("503 Service Unavailable", {
        "database": "ok", "migrations": "unapplied",
        "detail": {"migrations": "no migration applied"}})


# --- migrations -------------------------------------------------------------------------

def test_an_unapplied_migration_is_named():
    [leaf] = [name for app, name in health.leaves() if app == "monitors"]
    MigrationRecorder.Migration.objects.filter(app="monitors", name=leaf).delete()
    missing = f"not applied: monitors.{leaf}"
    assert check(NOW, ["migrations"]) == {"migrations": Part("unapplied", missing)}
    assert readyz()[::2] == ("503 Service Unavailable", {
        **ALL_OK, "migrations": "unapplied", "detail": {"migrations": missing}})


def test_many_unapplied_migrations_name_the_first_three():
    assert len(health.leaves()) > 3
    MigrationRecorder.Migration.objects.all().delete()
    first = sorted(f"{app}.{name}" for app, name in health.leaves())[:3]
    assert check(NOW, ["migrations"]) == {"migrations": Part(
        "unapplied", f"not applied: {', '.join(first)} and {len(health.leaves()) - 3} more")}


def test_the_leaves_are_every_apps_last_migration():
    by_app = dict(health.leaves())
    assert by_app["monitors"] == max(n for a, n in MigrationRecorder.Migration.objects
                                     .values_list("app", "name") if a == "monitors")
    assert {"monitors", "alerts", "accounts", "auth", "contenttypes"} <= set(by_app)



def test_the_leaves_are_read_once_per_process(monkeypatch):
    loads = []

    class Counting(health.MigrationLoader):
        def __init__(self, *args, **kwargs):
            loads.append(args)
            super().__init__(*args, **kwargs)

    health.leaves.cache_clear()
    monkeypatch.setattr(health, "MigrationLoader", Counting)
    try:
        for _ in range(3):
            assert check(NOW, ["migrations"]) == {"migrations": Part("ok")}
    finally:
        health.leaves.cache_clear()
    assert loads == [(None,)]


def test_migration_files_that_do_not_load_leave_migrations_unknown(monkeypatch):
    def broken(*args, **kwargs):
        raise ImportError("No module named 'monitors.migrations.0099_x'")

    health.leaves.cache_clear()
    monkeypatch.setattr(health, "MigrationLoader", broken)
    try:
        assert check(NOW, ["database", "migrations"]) == {
            "database": Part("ok"),
            "migrations": Part("unknown", "ImportError: No module named "
                                          "'monitors.migrations.0099_x'")}
    finally:
        health.leaves.cache_clear()

# --- a database that does not answer ----------------------------------------------------

LATE = "not checked: the database did not answer within 1 s"
SILENT = {"database": "unreachable", "migrations": "unknown", "redis": "unknown",
          "evaluator": "unknown", "deliveries": "unknown",
          "detail": {"database": "no answer within 1 s", "migrations": DB_DOWN,
                     "redis": LATE, "evaluator": DB_DOWN, "deliveries": DB_DOWN}}


@pytest.fixture
def silent_database(settings, monkeypatch):
    """The first read of the database never answers (until the test ends); the
    probes wait the default second for it."""
    settings.CRONRADAR_READY_TIMEOUT = 1
    stuck = StuckRead(returns=set())
    monkeypatch.setattr(health, "_recorded", stuck)
    yield stuck
    stuck.free()


def timed(path="/readyz"):
    began = time.monotonic()
    answer = readyz(path)
    return answer[::2], time.monotonic() - began


def test_a_database_that_does_not_answer_fails_within_a_second(silent_database):
    answer, took = timed()
    assert answer == ("503 Service Unavailable", SILENT)
    assert 1 <= took < 1.3
    assert silent_database.threads == ["cronradar-probe-reads"]  # never the request's thread


def test_while_a_read_is_stuck_probes_answer_at_once_and_start_none(silent_database):
    timed()
    for path, body in (("/readyz", SILENT),
                       ("/readyz?parts=database,migrations", {
                           "database": "unreachable", "migrations": "unknown",
                           "detail": {"database": "no answer within 1 s",
                                      "migrations": DB_DOWN}})):
        answer, took = timed(path)
        assert answer == ("503 Service Unavailable", body)
        assert took < 0.2
    assert timed("/readyz?parts=redis")[0] == ("200 OK", {"redis": "off"})  # no database read
    assert len(silent_database.threads) == 1


def test_a_concurrent_probe_answers_when_the_first_gives_up_without_a_second_read(
        silent_database):
    answers = []
    first = threading.Thread(target=lambda: answers.append(timed()))
    began = time.monotonic()
    first.start()
    while not silent_database.threads:
        time.sleep(0.01)
    time.sleep(0.3)
    assert timed()[0] == ("503 Service Unavailable", SILENT)
    assert 1 <= time.monotonic() - began < 1.3
    first.join()
    assert answers[0][0] == ("503 Service Unavailable", SILENT)
    assert len(silent_database.threads) == 1


@pytest.mark.django_db(transaction=True)
def test_the_reads_run_on_the_probes_thread_and_see_the_database(settings, monkeypatch):
    """The real path: /readyz's reads on cronradar.guard's thread (its own
    connection: the rows are committed here)."""
    settings.CRONRADAR_READY_TIMEOUT = 1
    threads = []
    real = health._recorded

    def spy(wanted):
        threads.append(threading.current_thread().name)
        return real(wanted)

    monkeypatch.setattr(health, "_recorded", spy)
    try:
        assert readyz()[::2] == ("200 OK", ALL_OK)
        LivenessSpan.objects.all().delete()
        assert readyz()[::2] == ("503 Service Unavailable", {
            **ALL_OK, "evaluator": "stalled", "detail": {"evaluator": "no tick recorded"}})
    finally:
        guard.within(connections.close_all, 5)  # its connection: the test database may go
    assert threads == ["cronradar-probe-reads"] * 2


def test_the_collector_reads_within_the_timeout(silent_database):
    registry = CollectorRegistry()
    registry.register(ReadinessCollector())
    began = time.monotonic()
    text = generate_latest(registry).decode()
    assert 1 <= time.monotonic() - began < 1.3
    assert [line for line in text.splitlines() if not line.startswith("#")] == [
        'cronradar_ready{part="database"} 0.0', 'cronradar_ready{part="migrations"} 0.0',
        'cronradar_ready{part="redis"} 0.0', 'cronradar_ready{part="evaluator"} 0.0',
        'cronradar_ready{part="deliveries"} 0.0']


# --- the evaluator ------------------------------------------------------------------------

def test_an_evaluator_stopped_longer_than_the_limit_is_stalled():
    LivenessSpan.objects.all().delete()
    evaluator_ticked(s(45))
    stalled = Part("stalled", "last tick 45 s ago (limit 30 s)")
    assert check(NOW, ["evaluator"]) == {"evaluator": stalled}
    assert readyz()[::2] == ("503 Service Unavailable", {
        **ALL_OK, "evaluator": "stalled", "detail": {"evaluator": stalled.detail}})


def test_the_evaluator_limit_is_the_setting_and_exactly_it_is_still_ok(settings):
    LivenessSpan.objects.all().delete()
    evaluator_ticked(s(30))
    assert check(NOW, ["evaluator"]) == {"evaluator": Part("ok")}
    evaluator_ticked(s(30.5))  # an older span: the latest counts
    assert check(NOW + s(0.5), ["evaluator"]) == {
        "evaluator": Part("stalled", "last tick 31 s ago (limit 30 s)")}
    settings.CRONRADAR_READY_EVALUATOR_LAG = 31
    assert check(NOW + s(0.5), ["evaluator"]) == {"evaluator": Part("ok")}


def test_an_evaluator_that_never_ticked_is_stalled():
    LivenessSpan.objects.all().delete()
    assert check(NOW, ["evaluator"]) == {"evaluator": Part("stalled", "no tick recorded")}


def test_an_evaluator_ticking_but_far_behind_is_stalled(make_monitor):
    m = make_monitor()
    Monitor.objects.filter(pk=m.pk).update(next_evaluation_at=NOW - s(30))
    assert check(NOW, ["evaluator"]) == {"evaluator": Part("ok")}
    Monitor.objects.filter(pk=m.pk).update(next_evaluation_at=NOW - s(31))
    assert check(NOW, ["evaluator"]) == {
        "evaluator": Part("stalled", "a monitor has been due for 31 s (limit 30 s)")}


def test_figures_are_whole_seconds_rounded_up(make_monitor, due_delivery):
    """docs/operations.md: whole seconds; a figure past the limit never reads as it."""
    m = make_monitor()
    Monitor.objects.filter(pk=m.pk).update(next_evaluation_at=NOW - s(101.4))
    due_delivery(NOW - s(300.2))
    assert check(NOW, ["evaluator", "deliveries"]) == {
        "evaluator": Part("stalled", "a monitor has been due for 102 s (limit 30 s)"),
        "deliveries": Part("backlog", "the oldest delivery that can be sent has waited "
                                      "301 s (limit 300 s)")}


def test_with_liveness_off_the_evaluator_is_off_unless_monitors_show_it_behind(settings,
                                                                               make_monitor):
    settings.CRONRADAR_LIVENESS_INTERVAL = 0
    LivenessSpan.objects.all().delete()
    assert check(NOW, ["evaluator"]) == {"evaluator": Part("off")}
    assert readyz() == ("200 OK", readyz()[1], {**ALL_OK, "evaluator": "off"})
    Monitor.objects.filter(pk=make_monitor().pk).update(next_evaluation_at=NOW - s(120))
    assert check(NOW, ["evaluator"]) == {
        "evaluator": Part("stalled", "a monitor has been due for 120 s (limit 30 s)")}


# --- deliveries ------------------------------------------------------------------------

def test_a_delivery_backlog_older_than_the_limit_fails(due_delivery):
    due_delivery(NOW - s(300))
    assert check(NOW, ["deliveries"]) == {"deliveries": Part("ok")}
    due_delivery(NOW - s(301))
    backed_up = "the oldest delivery that can be sent has waited 301 s (limit 300 s)"
    assert check(NOW, ["deliveries"]) == {"deliveries": Part("backlog", backed_up)}
    assert readyz()[::2] == ("503 Service Unavailable", {
        **ALL_OK, "deliveries": "backlog", "detail": {"deliveries": backed_up}})


def test_one_customers_dead_receiver_is_no_backlog(due_delivery):
    due_delivery(NOW - s(3000), failing_since=NOW - s(3600))
    Delivery.objects.filter(pk=due_delivery(NOW - s(3000)).pk).update(rate_limited=True)
    assert readyz()[::2] == ("200 OK", ALL_OK)


# --- Redis ------------------------------------------------------------------------------

def test_redis_configured_but_unreachable(settings):
    with closed_port() as port:
        settings.REDIS_URL = f"redis://127.0.0.1:{port}/0"
        refused = f"Error 111 connecting to 127.0.0.1:{port}. Connection refused."
        assert check(NOW, ["redis"]) == {"redis": Part("unreachable", refused)}
        assert readyz()[::2] == ("503 Service Unavailable", {
            **ALL_OK, "redis": "unreachable", "detail": {"redis": refused}})


@pytest.mark.skipif(not os.environ.get("REDIS_URL"),
                    reason="REDIS_URL unset: the PostgreSQL+Redis run of scripts/test has a Redis")
def test_a_reachable_redis_is_ok(settings):
    settings.REDIS_URL = os.environ["REDIS_URL"]
    assert readyz()[::2] == ("200 OK", {**ALL_OK, "redis": "ok"})


# --- what the web tier asks -----------------------------------------------------------------

def test_the_web_tiers_parts_ignore_the_evaluator_redis_and_deliveries(settings, due_delivery):
    LivenessSpan.objects.all().delete()
    due_delivery(NOW - s(3000))
    with closed_port() as port:
        settings.REDIS_URL = f"redis://127.0.0.1:{port}/0"
        assert readyz()[0] == "503 Service Unavailable"
        assert readyz("/readyz?parts=database,migrations")[::2] == (
            "200 OK", {"database": "ok", "migrations": "ok"})
        assert readyz("/readyz?parts=evaluator&parts=database")[::2] == (
            "503 Service Unavailable", {"database": "ok", "evaluator": "stalled",
                                        "detail": {"evaluator": "no tick recorded"}})


@pytest.mark.parametrize(("query", "message"), [
    ("parts=database,cpu", 'unknown part "cpu": use database, migrations, redis, evaluator, '
                           "deliveries"),
    ("parts=", "name one or more of database, migrations, redis, evaluator, deliveries"),
    ("parts=,", "name one or more of database, migrations, redis, evaluator, deliveries"),
])
def test_a_bad_parts_parameter_is_400(query, message):
    assert readyz(f"/readyz?{query}")[::2] == ("400 Bad Request", {"parts": [message]})
    with pytest.raises(ValueError, match="unknown part"):
        check(NOW, ["cpu"])


def test_other_methods_are_405():
    status, headers, body = readyz(method="POST")
    assert (status, body) == ("405 Method Not Allowed", {"detail": 'Method "POST" not allowed.'})
    assert headers["Allow"] == "GET, HEAD"


def test_an_unexpected_error_fails_its_part_with_the_reason_never_a_500(monkeypatch):
    def broken(now):
        raise RuntimeError("boom\nmore lines")

    monkeypatch.setattr(backlog, "oldest_claimable", broken)
    assert readyz()[::2] == ("503 Service Unavailable", {
        **ALL_OK, "deliveries": "unknown", "detail": {"deliveries": "RuntimeError: boom"}})


# --- cronradar_ready{part} ------------------------------------------------------------------

def test_the_collector_exports_each_part_1_when_ready_0_when_failing():
    registry = CollectorRegistry()
    with CaptureQueriesContext(connection) as seen:
        registry.register(ReadinessCollector())
    assert seen.captured_queries == []  # registering reads nothing
    LivenessSpan.objects.all().delete()
    text = generate_latest(registry).decode()
    assert text == (
        "# HELP cronradar_ready Whether a part of CronRadar is ready (1: ok or not "
        "configured, 0: failing; see /readyz).\n"
        "# TYPE cronradar_ready gauge\n"
        'cronradar_ready{part="database"} 1.0\n'
        'cronradar_ready{part="migrations"} 1.0\n'
        'cronradar_ready{part="redis"} 1.0\n'
        'cronradar_ready{part="evaluator"} 0.0\n'
        'cronradar_ready{part="deliveries"} 1.0\n')


@pytest.mark.live
def test_granian_probes_answer_within_a_second_while_the_database_hangs(tmp_path):
    """The QA case: granian as documented (2 workers x 2 threads), the database
    taken by another process before the server starts (an exclusive SQLite lock:
    every connection waits its 30 s busy timeout, as on a PostgreSQL that accepts
    and never answers). Six
    concurrent readiness probes each answer within about a second, later ones at
    once, and /healthz keeps answering."""
    import concurrent.futures
    import sqlite3
    import subprocess
    import sys

    import httpx

    from tests.live import ROOT, free_port

    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CRONRADAR_", "DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS"))}
    env.update(CRONRADAR_DATA_DIR=str(tmp_path), CRONRADAR_LIVENESS_INTERVAL="0")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env,
                   check=True, timeout=120)
    lock = sqlite3.connect(tmp_path / "cronradar.sqlite3", isolation_level=None, timeout=10)
    lock.execute("PRAGMA locking_mode=EXCLUSIVE")
    lock.execute("BEGIN EXCLUSIVE")
    lock.execute("DELETE FROM django_session")
    port = free_port()
    web = subprocess.Popen(
        [sys.executable, "-m", "granian", "--interface", "wsgi", "--host", "127.0.0.1",
         "--port", str(port), "--workers", "2", "--blocking-threads", "2",
         "cronradar.wsgi:application"], cwd=ROOT, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/healthz", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline and web.poll() is None
            time.sleep(0.2)

        def probe(path):
            began = time.monotonic()
            r = httpx.get(base + path, timeout=10)
            return r.status_code, r.json(), time.monotonic() - began

        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            answers = list(pool.map(probe, ["/readyz?parts=database,migrations"] * 6))
        assert {(status, json.dumps(body)) for status, body, _ in answers} == {
            (503, json.dumps({"database": "unreachable", "migrations": "unknown",
                              "detail": {"database": "no answer within 1 s",
                                         "migrations": DB_DOWN}}))}
        assert max(took for *_, took in answers) < 2.5  # a second each, two threads each
        began = time.monotonic()
        assert httpx.get(f"{base}/healthz", timeout=5).status_code == 200
        assert time.monotonic() - began < 0.5
        later = [probe("/readyz") for _ in range(3)]
        assert {(status, body["database"], body["detail"]["database"])
                for status, body, _ in later} == {(503, "unreachable", "no answer within 1 s")}
        # the stuck read is still stuck: at once. A worker the six probes all missed
        # (the kernel hands connections to either) waits its one second once, then
        # it has a stuck read too: at most one of three is slow
        assert max(sorted(took for *_, took in later)[:2]) < 0.5
    finally:
        lock.close()
        web.terminate()
        web.wait(30)
