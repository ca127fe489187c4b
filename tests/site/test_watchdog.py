"""cronradar.watchdog: the outbound dead-man's switch, against a real local
receiver (tests.live.Receiver records every POST: path with query, headers, body)."""
import logging
import sqlite3
import threading
import time
from itertools import pairwise

import httpx
import pytest
from django.db import DatabaseError

from alerts.models import Delivery, Incident
from cronradar import watchdog
from cronradar.watchdog import Reason, Watchdog, fail_url, judge
from monitors import evaluator
from monitors.models import Chore, LivenessSpan, Monitor
from tests.conftest import T0, s
from tests.live import Receiver, Service, free_port

LAG_BODY = "evaluator_lag: a monitor has been due for 45 s (limit 30 s)"
BACKLOG_BODY = ("delivery_backlog: the oldest delivery that can be sent has waited 400 s "
                "(limit 300 s)")


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


@pytest.fixture(autouse=True)
def _process(monkeypatch):
    """This process's watchdog (the one on monitors.signals.tick) starts afresh."""
    monkeypatch.setattr(watchdog, "PROCESS", Watchdog())


@pytest.fixture(autouse=True)
def _ticked(request):
    """The evaluator has just ticked, as it has whenever the watchdog runs (the tick
    records its liveness before the tick signal): a span to well after T0."""
    if "db" in request.fixturenames or "url" in request.fixturenames:
        request.getfixturevalue("db")
        LivenessSpan.objects.create(component="evaluator", started_at=T0 - s(60),
                                    last_seen_at=T0 + s(86400))


@pytest.fixture
def url(receiver, settings, db):
    """The watchdog on, pinging ``<receiver>/ping/wd`` every 60 s."""
    settings.CRONRADAR_WATCHDOG_URL = f"{receiver.url}/ping/wd"
    settings.CRONRADAR_WATCHDOG_INTERVAL = 60
    return settings.CRONRADAR_WATCHDOG_URL


@pytest.fixture
def quick(monkeypatch):
    """Short attempts so that unreachable receivers give up within a second."""
    monkeypatch.setattr(watchdog, "TIMEOUT", 0.3)
    monkeypatch.setattr(watchdog, "BACKOFF", 0.05)


def tick(dog: Watchdog, now):
    """One tick at ``now``; waits for its request (if any) to be done."""
    thread = dog.tick(now)
    if thread is not None:
        thread.join(10)
        assert not thread.is_alive()
    return thread


def sent(receiver):
    return [(r.path, r.body.decode(), r.headers["Content-Type"]) for r in receiver.requests]


def warnings(caplog):
    return [r.getMessage() for r in caplog.records
            if r.name == "cronradar.watchdog" and r.levelno >= logging.WARNING]


def lagging(seconds):
    """A monitor due ``seconds`` before T0 that the evaluator has not taken yet."""
    m = Monitor.objects.first()
    Monitor.objects.filter(pk=m.pk).update(next_evaluation_at=T0 - s(seconds))


def waiting_delivery(make_monitor, hook, seconds):
    """A notification the engine could have sent ``seconds`` before T0 and has not."""
    m = make_monitor(channels=[hook])
    Monitor.objects.filter(pk=m.pk).update(next_evaluation_at=T0 + s(3600))  # up to date
    incident = Incident.objects.create(monitor=m, cause="missed", summary="job-1: missed",
                                       opened_at=T0 - s(seconds), missed_count=1)
    at = T0 - s(seconds)
    event = incident.events.create(kind="opened", at=at)
    return Delivery.objects.create(event=event, incident=incident, channel=hook, created_at=at,
                                   next_attempt_at=at)


OK = ("/ping/wd", "ok", "text/plain; charset=utf-8")
LAG = ("/ping/wd/fail", LAG_BODY, "text/plain; charset=utf-8")


def test_pings_once_an_interval_and_most_ticks_ask_nothing(url, receiver,
                                                          django_assert_num_queries):
    dog = Watchdog()
    assert tick(dog, T0) is not None
    with django_assert_num_queries(0):  # this process knows: not due before T0 + 60 s
        assert tick(dog, T0 + s(10)) is None
        assert tick(dog, T0 + s(59)) is None
    assert tick(dog, T0 + s(60)) is not None
    assert sent(receiver) == [OK, OK]
    assert Chore.objects.values_list("name", "due_at", "last_at", "last_result").get() == (
        "watchdog", T0 + s(120), T0 + s(60), "ok")


def test_two_processes_ping_once_between_them(url, receiver):
    """Two evaluators (Celery workers, two serve on one database), each with its
    own memory: whichever ticks first when due pings; the other one does not."""
    a, b = Watchdog(), Watchdog()
    assert tick(a, T0) is not None
    assert tick(b, T0) is None
    assert tick(b, T0 + s(1)) is None  # b remembers the row's due_at now
    assert tick(b, T0 + s(61)) is not None
    assert tick(a, T0 + s(61)) is None  # a's memory said due: the row says b did it
    assert tick(a, T0 + s(62)) is None
    assert sent(receiver) == [OK, OK]


def test_an_evaluator_behind_posts_fail_with_the_reason(url, receiver, make_monitor):
    make_monitor()
    lagging(45)
    tick(Watchdog(), T0)
    assert sent(receiver) == [LAG]
    assert Chore.objects.get().last_result == "evaluator_lag"


def test_the_fail_body_gives_whole_seconds(url, receiver, make_monitor):
    make_monitor()
    lagging(101.4)
    tick(Watchdog(), T0)
    assert sent(receiver) == [("/ping/wd/fail",
                               "evaluator_lag: a monitor has been due for 102 s (limit 30 s)",
                               "text/plain; charset=utf-8")]


def test_a_lag_at_the_limit_is_still_ok(url, receiver, make_monitor):
    make_monitor()
    lagging(30)
    tick(Watchdog(), T0)
    assert sent(receiver) == [OK]


def test_the_evaluators_own_tick_sends_fail_when_it_falls_behind(url, receiver, make_monitor,
                                                                 monkeypatch):
    """The evaluator's tick held back: it stops taking batches (here: one monitor a
    batch, no time left) with a monitor due 45 s ago still waiting; the tick's
    watchdog sees it. Through monitors.signals.tick as connected in ready()."""
    monkeypatch.setattr(evaluator, "BATCH", 1)
    monkeypatch.setattr(evaluator, "TICK_BUDGET", -1)
    make_monitor(name="a")
    make_monitor(name="b")
    Monitor.objects.update(next_evaluation_at=T0 - s(45))
    evaluator.tick(T0)
    receiver.wait_for(lambda r: True, 10)
    assert sent(receiver) == [LAG]


def test_a_delivery_backlog_posts_fail(url, receiver, make_monitor, hook):
    waiting_delivery(make_monitor, hook, 400)
    tick(Watchdog(), T0)
    assert sent(receiver) == [("/ping/wd/fail", BACKLOG_BODY, "text/plain; charset=utf-8")]
    assert Chore.objects.get().last_result == "delivery_backlog"


def test_a_backlog_at_the_limit_or_not_claimable_is_ok(url, receiver, make_monitor, hook):
    """Rows held back by a receiver's Retry-After are not the service's backlog."""
    d = waiting_delivery(make_monitor, hook, 300)
    tick(Watchdog(), T0)
    Delivery.objects.filter(pk=d.pk).update(next_attempt_at=T0 - s(400), rate_limited=True)
    tick(Watchdog(), T0 + s(60))
    assert sent(receiver) == [OK, OK]


def test_both_failing_say_both_the_evaluator_first(make_monitor, hook):
    waiting_delivery(make_monitor, hook, 400)
    lagging(45)
    assert judge(T0) == (Reason.EVALUATOR_LAG, f"{LAG_BODY}\n{BACKLOG_BODY}")
    assert not judge(T0).ok


def test_all_well_is_ok(db):
    assert judge(T0) == (Reason.OK, "ok")
    assert judge(T0).ok


def test_the_query_string_is_kept(url, receiver, make_monitor, settings):
    settings.CRONRADAR_WATCHDOG_URL = f"{receiver.url}/ping/wd?rid=7&x=a%20b"
    dog = Watchdog()
    tick(dog, T0)
    make_monitor()
    lagging(45 - 60)  # due at T0 + 15 s: 45 s behind at T0 + 60 s
    tick(dog, T0 + s(60))
    assert [r.path for r in receiver.requests] == ["/ping/wd?rid=7&x=a%20b",
                                                   "/ping/wd/fail?rid=7&x=a%20b"]


@pytest.mark.parametrize(("given", "fail"), [
    ("https://hc-ping.com/0b2c", "https://hc-ping.com/0b2c/fail"),
    ("https://hc-ping.com/0b2c/", "https://hc-ping.com/0b2c/fail"),
    ("https://cr.example/ping/0b2c?create=1#x", "https://cr.example/ping/0b2c/fail?create=1"),
    ("https://cronitor.link/abc123", "https://cronitor.link/abc123/fail"),
])
def test_fail_url(given, fail):
    assert fail_url(given) == fail


def test_off_without_a_url_asks_nothing(db, settings, django_assert_num_queries):
    settings.CRONRADAR_WATCHDOG_URL = ""
    with django_assert_num_queries(0):
        assert Watchdog().tick(T0) is None
    assert not Chore.objects.exists()


def test_a_receiver_that_is_down_is_logged_once_and_the_tick_goes_on(url, settings, quick,
                                                                     caplog):
    port = free_port()  # nothing listens there
    settings.CRONRADAR_WATCHDOG_URL = f"http://127.0.0.1:{port}/ping/wd"
    dog = Watchdog()
    started = time.monotonic()
    thread = dog.tick(T0)
    assert time.monotonic() - started < 0.5  # the tick never waits for the request
    thread.join(10)
    tick(dog, T0 + s(60))
    assert warnings(caplog) == [
        f"the watchdog URL cannot be reached: http://127.0.0.1:{port}/…: "
        "ConnectError: [Errno 111] Connection refused (logged once until it works again)"]


def test_a_receiver_that_hangs_times_out_is_retried_and_logged_once(url, receiver, quick,
                                                                    caplog, monkeypatch):
    receiver.hold = threading.Event()
    monkeypatch.setattr(watchdog, "ATTEMPTS", 2)
    dog = Watchdog()
    try:
        started = time.monotonic()
        thread = dog.tick(T0)
        assert time.monotonic() - started < 0.5
        thread.join(10)
        tick(dog, T0 + s(60))
    finally:
        receiver.hold.set()
    assert len(receiver.requests) == 4  # two attempts each
    assert warnings(caplog) == [
        f"the watchdog URL cannot be reached: {receiver.url}/…: ReadTimeout: timed out "
        "(logged once until it works again)"]


def test_a_streak_ends_when_the_receiver_answers_again(url, receiver, quick, caplog):
    caplog.set_level(logging.INFO, "cronradar.watchdog")
    receiver.status = 503
    dog = Watchdog()
    tick(dog, T0)
    assert len(receiver.requests) == watchdog.ATTEMPTS  # a 5xx is asked again
    receiver.status = 200
    tick(dog, T0 + s(60))
    receiver.status = 503
    tick(dog, T0 + s(120))
    assert [r.getMessage() for r in caplog.records if r.name == "cronradar.watchdog"] == [
        f"the watchdog URL cannot be reached: {receiver.url}/…: HTTP 503 "
        "(logged once until it works again)",
        "the watchdog URL cannot be reached: works again",
        f"the watchdog URL cannot be reached: {receiver.url}/…: HTTP 503 "
        "(logged once until it works again)"]


def test_a_wrong_url_is_not_asked_again(url, receiver, quick, caplog):
    receiver.status = 404
    tick(Watchdog(), T0)
    assert len(receiver.requests) == 1
    assert warnings(caplog) == [f"the watchdog URL cannot be reached: {receiver.url}/…: "
                                "HTTP 404 (logged once until it works again)"]


def test_a_database_error_never_reaches_the_tick(url, receiver, monkeypatch, caplog):
    def broken(*args):
        raise DatabaseError("connection refused")

    monkeypatch.setattr(watchdog.chores, "claim", broken)
    dog = Watchdog()
    assert dog.tick(T0) is None
    assert dog.tick(T0 + s(1)) is None
    assert warnings(caplog) == ["the watchdog could not judge: DatabaseError: connection "
                                "refused (logged once until it works again)"]
    assert receiver.requests == []


@pytest.mark.live
def test_a_real_serve_pings_every_second_and_stops_while_its_tick_is_held(tmp_path, receiver):
    """``manage.py serve`` with a 1 s watchdog: a ping about every second, query
    string kept. Then the evaluator's tick is held (the test holds SQLite's write
    lock: the tick waits on it, the web process still answers): no ping while it
    waits, so the other service would page; they resume when it goes on. (A tick
    held back yet running, which sends /fail, cannot be made in a real serve: the
    evaluator does all its due work before the tick signal, tens of thousands of
    monitors within its budget; test_the_evaluators_own_tick_sends_fail_when_it_falls_behind
    covers it.)"""
    service = Service(tmp_path, extra_env={
        "CRONRADAR_WATCHDOG_URL": f"{receiver.url}/ping/wd?k=1",
        "CRONRADAR_WATCHDOG_INTERVAL": "1"})
    try:
        receiver.wait_for(lambda r: len(receiver.requests) >= 3, 20)
        assert {(r.path, r.body) for r in receiver.requests} == {("/ping/wd?k=1", b"ok")}
        gaps = [b.at - a.at for a, b in pairwise(list(receiver.requests))]
        assert all(0.8 < gap < 4 for gap in gaps), gaps  # the interval, not every tick
        db = sqlite3.connect(tmp_path / "cronradar.sqlite3", isolation_level=None)
        db.execute("BEGIN EXCLUSIVE")
        held_at = time.time()
        assert httpx.get(f"{service.url}/healthz", timeout=5).status_code == 200
        time.sleep(6)
        released_at = time.time()
        db.execute("ROLLBACK")
        db.close()
        assert [r for r in receiver.requests if held_at + 1.5 < r.at < released_at] == []
        receiver.wait_for(lambda r: r.at > released_at, 15)
    finally:
        service.stop()
