"""alerts.senders: the sender pool keeps a healthy channel's alerts moving while
other channels' receivers hang; a broker that hangs or refuses never holds a ping."""
import logging
import socket
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from celery import Celery
from django.core.wsgi import get_wsgi_application

from alerts import senders
from alerts.models import Delivery
from cronradar.probes import Probes
from monitors.views import PingRoute
from tests.alerts.conftest import new_delivery, new_incident, webhook
from tests.conftest import T0, s
from tests.helpers import wsgi_call


@pytest.mark.django_db(transaction=True)
def test_hanging_channels_do_not_hold_up_a_healthy_one(project, monitor, live, settings):
    """Five channels whose receivers hang and one healthy channel, all with alerts due
    at once, sent by the embedded delivery loop and its pool of sender threads: the
    healthy channel's alerts are all delivered while every hanging channel still
    holds its sends, and no hanging channel holds more than its cap."""
    settings.CRONRADAR_CHANNEL_CONCURRENCY = 2
    settings.CRONRADAR_DELIVERY_TIMEOUT = 30
    release = threading.Event()
    hanging = [live(hold=release) for _ in range(5)]
    healthy = live()
    for receiver in hanging:
        channel = webhook(project, receiver.url + "/hook")
        for _ in range(4):
            new_delivery(new_incident(monitor), channel, at=datetime.now(UTC))
    good = webhook(project, healthy.url + "/hook")
    for _ in range(4):
        new_delivery(new_incident(monitor), good, at=datetime.now(UTC))
    stop = threading.Event()
    loop = threading.Thread(target=senders.delivery_loop, args=(stop,))
    loop.start()
    try:
        healthy.wait_for(lambda r: len(healthy.requests) == 4, timeout=10)
        deadline = datetime.now(UTC) + s(10)
        while (Delivery.objects.filter(channel=good, status="delivered").count() < 4
               and datetime.now(UTC) < deadline):
            threading.Event().wait(0.05)
        assert Delivery.objects.filter(channel=good, status="delivered").count() == 4
        assert [len(r.requests) for r in hanging] == [2] * 5  # each holds its cap, no more
        assert not Delivery.objects.exclude(channel=good).filter(status="delivered").exists()
    finally:
        release.set()
        deadline = datetime.now(UTC) + s(20)
        while Delivery.objects.exclude(status="delivered").exists() and (
                datetime.now(UTC) < deadline):
            threading.Event().wait(0.05)
        stop.set()
        loop.join(10)
        assert senders.drain(30)
    assert Delivery.objects.exclude(status="delivered").count() == 0


def test_a_delivery_attempts_log_lines_carry_its_delivery_and_incident(monkeypatch, caplog):
    from types import SimpleNamespace

    from core import logs

    caplog.handler.addFilter(logs.ContextFilter())
    seen = []

    def attempt(a):
        seen.append(logs.current())
        raise RuntimeError("bug")

    monkeypatch.setattr(senders.delivery, "attempt", attempt)
    monkeypatch.setattr(senders, "_done", lambda n: None)
    senders._attempt(SimpleNamespace(claim=SimpleNamespace(delivery_id=11),
                                     delivery=SimpleNamespace(incident_id=5)))
    assert seen == [{"delivery": 11, "incident": 5}]
    assert [(r.getMessage(), r.delivery, r.incident) for r in caplog.records] == [
        ("delivery 11 crashed", 11, 5)]


@pytest.fixture
def silent_broker():
    """A Redis URL whose port accepts connections (the kernel's backlog) and never
    answers: a hung Redis."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    yield f"redis://127.0.0.1:{server.getsockname()[1]}/0"
    server.close()


@pytest.fixture
def refusing_broker():
    """A Redis URL whose port refuses connections: Redis stopped."""
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    return f"redis://127.0.0.1:{port}/0"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("broker", ["silent_broker", "refusing_broker"])
def test_state_changing_pings_answer_at_once_while_the_broker_hangs_or_refuses(
        broker, request, make_monitor, project, settings, monkeypatch, caplog):
    # the project's Celery settings, this broker; not made the current app, which every
    # shared task (deliver.delay() in later tests) would then send to
    app = Celery("cronradar-test", set_as_current=False)
    app.config_from_object("django.conf:settings", namespace="CELERY")
    app.conf.broker_url = request.getfixturevalue(broker)
    monkeypatch.setattr(senders, "current_app", app)
    monkeypatch.setattr(senders, "broker", senders.BrokerDown())
    settings.CELERY_TASK_ALWAYS_EAGER = False
    m = make_monitor(channels=[webhook(project)])
    site = Probes(PingRoute(get_wsgi_application()))  # (re)configures logging
    monkeypatch.setattr(senders.logger, "handlers", [caplog.handler])
    caplog.set_level(logging.INFO, logger="alerts.senders")
    took = []
    for n, kind in enumerate(["fail", "", "fail"]):  # opened, resolved, opened
        started = time.monotonic()
        status = wsgi_call(site, f"/ping/{m.uuid}/{kind}".rstrip("/"))[0]
        took.append(time.monotonic() - started)
        assert status == "200 OK"
        assert Delivery.objects.filter(incident__monitor=m).count() == n + 1
        end = time.monotonic() + 15  # the nudge this ping asked for has failed
        while senders.broker.failures < n + 1 and time.monotonic() < end:
            time.sleep(0.05)
    assert max(took) < 1.0, took
    assert senders.broker.failures == 3
    lines = caplog.records
    assert [(r.levelname, r.exc_info) for r in lines] == [("WARNING", None)]
    assert lines[0].getMessage().startswith("broker unreachable since ")
    assert "1 deliver nudge(s) lost in this process" in lines[0].getMessage()


def test_broker_down_logs_once_a_minute_and_once_when_over(caplog):
    down = senders.BrokerDown()
    caplog.set_level(logging.INFO, logger="alerts.senders")
    for at in (100.0, 130.0, 159.9, 160.0, 170.0):
        down.failed(senders.logger, ConnectionError("Error 111 connecting\nmore"),
                    now=T0 + timedelta(seconds=at))
    down.ok(senders.logger, now=T0 + timedelta(seconds=170))
    down.ok(senders.logger)  # no outage: nothing
    messages = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert len(messages) == 3
    assert messages[0] == (logging.WARNING, (
        "broker unreachable since 2026-01-05T12:01:40+00:00: 1 deliver nudge(s) lost in this "
        "process, beat's next deliver tick sends them (ConnectionError: Error 111 connecting)"))
    assert "5 deliver nudge(s)" not in messages[1][1] and "4 deliver nudge(s)" in messages[1][1]
    assert messages[2] == (logging.INFO, "broker reachable again after 70 s (5 deliver "
                                         "nudge(s) lost in this process)")
    assert (down.since, down.failures) == (None, 0)
