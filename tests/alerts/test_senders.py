"""alerts.senders: the sender pool keeps a healthy channel's alerts moving while
other channels' receivers hang."""
import threading
from datetime import UTC, datetime

import pytest

from alerts import senders
from alerts.models import Delivery
from tests.alerts.conftest import new_delivery, new_incident, webhook
from tests.conftest import s


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
