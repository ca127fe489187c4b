"""Sending deliveries: outcomes, retries, SSRF guard, claiming, dispatch.

No request leaves the process: ``attempt`` gets an ``httpx.MockTransport``
client, and task-level tests run under ``respx`` (unmocked requests raise).
"""
import json
import socket
import threading
import time
from datetime import UTC, datetime, timedelta

import httpx
import pytest
import respx
from celery.exceptions import Retry
from django.db import transaction

from alerts import tasks
from alerts.delivery import attempt, backoff
from alerts.models import Channel, Delivery, DeliveryAttempt, Incident, IncidentEvent
from alerts.tasks import deliver, dispatch
from monitors.models import Monitor

NOW = datetime(2025, 1, 1, 12, 0, 6, tzinfo=UTC)
HOOK = "https://hooks.example.com/cr"
OTHER = "https://other.example.com/cr"


@pytest.fixture
def event(project):
    monitor = Monitor.objects.create(
        project=project, name="Nightly backup", slug="nightly-backup", kind="interval",
        period=timedelta(seconds=60), grace=timedelta(seconds=5),
    )
    incident = Incident.objects.create(
        monitor=monitor, cause="missed", summary="Nightly backup: no ping",
        opened_at=datetime(2025, 1, 1, 12, 0, 5, tzinfo=UTC), missed_count=1,
    )
    return IncidentEvent.objects.create(incident=incident, kind="opened", at=incident.opened_at)


@pytest.fixture
def make_delivery(project, event):
    def make(url=HOOK, **config):
        config = {"url": url, "secret": "k", **config}
        ch = Channel.objects.create(project=project, kind="webhook", config=config)
        return Delivery.objects.create(event=event, channel=ch)

    return make


class Receiver:
    """An httpx.MockTransport handler answering from a script; records requests."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    @property
    def client(self) -> httpx.Client:
        return httpx.Client(transport=httpx.MockTransport(self))


def log(delivery):
    return list(DeliveryAttempt.objects.filter(delivery=delivery)
                .values_list("number", "at", "status_code", "error"))


# --- one attempt ------------------------------------------------------------

def test_success_is_delivered_and_logged(make_delivery):
    d = make_delivery()
    receiver = Receiver(httpx.Response(200, text="ok"))

    result = attempt(d, client=receiver.client, now=NOW)

    assert (result.claimed, result.status, result.attempts, result.retry) == (
        True, "delivered", 1, False)
    [sent] = receiver.requests
    assert (sent.method, str(sent.url)) == ("POST", HOOK)
    assert json.loads(sent.content)["event"] == "incident.opened"
    assert sent.headers["X-CronRadar-Event"] == "incident.opened"
    d.refresh_from_db()
    assert (d.status, d.attempts, d.delivered_at, d.last_error) == ("delivered", 1, NOW, "")
    assert log(d) == [(1, NOW, 200, "")]


def test_server_error_stays_pending_for_a_retry(make_delivery):
    d = make_delivery()
    result = attempt(d, client=Receiver(httpx.Response(503, text="busy")).client, now=NOW)

    assert (result.status, result.attempts, result.retry) == ("pending", 1, True)
    d.refresh_from_db()
    assert (d.status, d.attempts, d.delivered_at, d.last_error) == (
        "pending", 1, None, "HTTP 503: busy")
    assert log(d) == [(1, NOW, 503, "HTTP 503: busy")]


def test_rate_limited_is_retryable(make_delivery):
    result = attempt(make_delivery(), client=Receiver(httpx.Response(429)).client, now=NOW)
    assert (result.status, result.retry) == ("pending", True)


@pytest.mark.parametrize("code", [400, 404, 410, 301])
def test_other_statuses_fail_without_retry(make_delivery, code):
    d = make_delivery()
    result = attempt(d, client=Receiver(httpx.Response(code)).client, now=NOW)

    assert (result.status, result.retry) == ("failed", False)
    d.refresh_from_db()
    assert (d.status, d.attempts, d.last_error) == ("failed", 1, f"HTTP {code}")


def test_timeout_is_logged_and_retryable(make_delivery):
    d = make_delivery()
    result = attempt(d, client=Receiver(httpx.ReadTimeout("timed out")).client, now=NOW)

    assert (result.status, result.retry) == ("pending", True)
    assert log(d) == [(1, NOW, None, "timeout after 5s: ReadTimeout")]


def test_network_error_is_logged_and_retryable(make_delivery):
    d = make_delivery()
    result = attempt(d, client=Receiver(httpx.ConnectError("refused")).client, now=NOW)

    assert (result.status, result.retry) == ("pending", True)
    assert log(d) == [(1, NOW, None, "network error: ConnectError: refused")]


def test_last_allowed_attempt_fails_for_good(make_delivery, settings):
    settings.CRONRADAR_DELIVERY_MAX_ATTEMPTS = 2
    d = make_delivery()
    client = Receiver(httpx.Response(500), httpx.Response(500)).client

    assert attempt(d, client=client, now=NOW).status == "pending"
    assert attempt(d, client=client, now=NOW).status == "failed"
    assert [row[:3] for row in log(d)] == [(1, NOW, 500), (2, NOW, 500)]


def test_long_error_bodies_are_cut(make_delivery):
    d = make_delivery()
    attempt(d, client=Receiver(httpx.Response(500, text="x" * 10_000)).client, now=NOW)
    d.refresh_from_db()
    assert d.last_error == "HTTP 500: " + "x" * 200


def test_unbuildable_request_fails_without_http(make_delivery):
    d = make_delivery()
    d.channel.config = {}
    d.channel.save()
    receiver = Receiver()

    result = attempt(d, client=receiver.client, now=NOW)

    assert (result.status, result.retry) == ("failed", False)
    assert receiver.requests == []
    assert log(d) == [(1, NOW, None, "build error: KeyError: 'url'")]


# --- private destinations ---------------------------------------------------

@pytest.mark.parametrize(("url", "address"), [
    ("http://127.0.0.1:8080/hook", "127.0.0.1"),
    ("http://10.1.2.3/hook", "10.1.2.3"),
    ("http://192.168.0.10/hook", "192.168.0.10"),
    ("http://169.254.169.254/latest/meta-data", "169.254.169.254"),
    ("http://100.64.0.1/hook", "100.64.0.1"),
    ("http://0.0.0.0/hook", "0.0.0.0"),
    ("http://[::1]/hook", "::1"),
    ("http://[::ffff:127.0.0.1]/hook", "127.0.0.1"),
    ("http://[fe80::1]/hook", "fe80::1"),
])
def test_private_destinations_are_blocked(make_delivery, settings, url, address):
    settings.CRONRADAR_BLOCK_PRIVATE_ADDRESSES = True
    d = make_delivery(url=url)
    receiver = Receiver()

    result = attempt(d, client=receiver.client, now=NOW)

    assert (result.status, result.retry) == ("failed", False)
    assert receiver.requests == []
    host = httpx.URL(url).host
    assert log(d) == [(1, NOW, None, f"blocked: {host} resolves to non-public address {address}")]


def fake_dns(*addresses):
    def getaddrinfo(host, port, *args, **kwargs):
        assert host == "hooks.example.com"
        return [(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "",
                 (a, port)) for a in addresses]

    return getaddrinfo


def test_hostname_with_any_private_address_is_blocked(make_delivery, settings, monkeypatch):
    settings.CRONRADAR_BLOCK_PRIVATE_ADDRESSES = True
    monkeypatch.setattr(socket, "getaddrinfo", fake_dns("93.184.215.14", "10.0.0.7"))
    d = make_delivery()
    receiver = Receiver()

    assert attempt(d, client=receiver.client, now=NOW).status == "failed"
    assert receiver.requests == []
    assert d.last_error == "blocked: hooks.example.com resolves to non-public address 10.0.0.7"


def test_public_hostname_is_sent_when_blocking(make_delivery, settings, monkeypatch):
    settings.CRONRADAR_BLOCK_PRIVATE_ADDRESSES = True
    monkeypatch.setattr(socket, "getaddrinfo", fake_dns("93.184.215.14", "2606:2800:21f::1"))
    receiver = Receiver(httpx.Response(204))

    assert attempt(make_delivery(), client=receiver.client, now=NOW).status == "delivered"
    assert len(receiver.requests) == 1


def test_unresolvable_hostname_is_retryable(make_delivery, settings, monkeypatch):
    settings.CRONRADAR_BLOCK_PRIVATE_ADDRESSES = True

    def getaddrinfo(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    d = make_delivery()
    receiver = Receiver()

    assert attempt(d, client=receiver.client, now=NOW).retry
    assert receiver.requests == []
    assert d.last_error == f"dns error: [Errno {socket.EAI_NONAME}] Name or service not known"


def test_private_destinations_are_allowed_when_not_blocking(make_delivery):
    receiver = Receiver(httpx.Response(200))
    d = make_delivery(url="http://127.0.0.1:8080/hook")
    assert attempt(d, client=receiver.client, now=NOW).status == "delivered"


# --- claiming ---------------------------------------------------------------

@pytest.mark.parametrize("status", ["sending", "delivered", "failed"])
def test_only_pending_deliveries_are_claimed(make_delivery, status):
    d = make_delivery()
    Delivery.objects.filter(pk=d.pk).update(status=status)
    receiver = Receiver()

    result = attempt(d, client=receiver.client, now=NOW)

    assert (result.claimed, result.status, result.retry) == (False, "", False)
    assert receiver.requests == []
    assert log(d) == []
    d.refresh_from_db()
    assert (d.status, d.attempts) == (status, 0)


def test_a_stale_copy_cannot_send_twice(make_delivery):
    d = make_delivery()
    stale = Delivery.objects.get(pk=d.pk)
    receiver = Receiver(httpx.Response(200))

    assert attempt(d, client=receiver.client, now=NOW).claimed
    assert not attempt(stale, client=receiver.client, now=NOW).claimed
    assert len(receiver.requests) == 1


# --- backoff and the task ---------------------------------------------------

def test_backoff(settings):
    settings.CRONRADAR_DELIVERY_BACKOFF = 2.0
    assert [backoff(n) for n in (1, 2, 3, 4, 8, 9, 30)] == [2, 4, 8, 16, 256, 300, 300]


@pytest.fixture
def mock_http():
    with respx.mock(assert_all_called=False) as router:
        yield router


def test_task_retries_until_delivered(make_delivery, mock_http):
    route = mock_http.post(HOOK).mock(side_effect=[httpx.Response(500, text="boom"),
                                                   httpx.Response(200)])
    d = make_delivery()

    deliver.apply(args=[d.pk])

    assert route.call_count == 2
    d.refresh_from_db()
    assert (d.status, d.attempts, d.last_error) == ("delivered", 2, "")
    assert [row[2:] for row in log(d)] == [(500, "HTTP 500: boom"), (200, "")]


def test_task_does_not_retry_client_errors(make_delivery, mock_http):
    route = mock_http.post(HOOK).mock(return_value=httpx.Response(400, text="invalid_payload"))
    d = make_delivery()

    deliver.apply(args=[d.pk])

    assert route.call_count == 1
    d.refresh_from_db()
    assert (d.status, d.attempts, d.last_error) == ("failed", 1, "HTTP 400: invalid_payload")


def test_task_gives_up_after_max_attempts(make_delivery, mock_http, settings):
    settings.CRONRADAR_DELIVERY_MAX_ATTEMPTS = 3
    route = mock_http.post(HOOK).mock(return_value=httpx.Response(502))
    d = make_delivery()

    deliver.apply(args=[d.pk])

    assert route.call_count == 3
    d.refresh_from_db()
    assert (d.status, d.attempts) == ("failed", 3)


def test_task_uses_celery_retry_with_a_broker(make_delivery, mock_http, monkeypatch):
    mock_http.post(HOOK).mock(return_value=httpx.Response(503))
    countdowns = []

    def retry(countdown):
        countdowns.append(countdown)
        return Retry()

    monkeypatch.setattr(deliver, "retry", retry)
    d = make_delivery()

    with pytest.raises(Retry):
        deliver(d.pk)  # a direct call: not eager, like a worker

    assert countdowns == [0.01]  # backoff(1) with the test base 0.01
    d.refresh_from_db()
    assert (d.status, d.attempts) == ("pending", 1)


def test_task_ignores_missing_delivery(db, mock_http):
    deliver.apply(args=[987654])
    assert mock_http.calls.call_count == 0


# --- dispatch ---------------------------------------------------------------

def test_one_failing_channel_does_not_stop_the_others(
    make_delivery, mock_http, monkeypatch, django_capture_on_commit_callbacks,
):
    mock_http.post(HOOK).mock(return_value=httpx.Response(500))
    good = mock_http.post(OTHER).mock(return_value=httpx.Response(200))
    broken = make_delivery()
    Channel.objects.filter(pk=broken.channel_id).update(config={})  # unbuildable
    erroring = make_delivery(url=HOOK)
    crashing = make_delivery(url=OTHER + "?crash")
    ok = make_delivery(url=OTHER)
    real_attempt = tasks.attempt

    def attempt_or_crash(delivery, **kwargs):
        if delivery.pk == crashing.pk:
            raise RuntimeError("worker bug")
        return real_attempt(delivery, **kwargs)

    monkeypatch.setattr(tasks, "attempt", attempt_or_crash)

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        dispatch([broken.pk, erroring.pk, crashing.pk, ok.pk])

    assert len(callbacks) == 4
    states = {d.pk: (d.status, d.attempts) for d in Delivery.objects.all()}
    assert states == {
        broken.pk: ("failed", 1),
        erroring.pk: ("failed", 5),
        crashing.pk: ("pending", 0),
        ok.pk: ("delivered", 1),
    }
    assert good.call_count == 1


def test_dispatch_waits_for_commit(make_delivery, mock_http, django_capture_on_commit_callbacks):
    route = mock_http.post(HOOK).mock(return_value=httpx.Response(200))
    d = make_delivery()

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        dispatch([d.pk])

    assert route.call_count == 0
    callbacks[0]()
    assert route.call_count == 1


@pytest.mark.django_db(transaction=True)
def test_embedded_dispatch_sends_on_the_delivery_threads(
    make_delivery, mock_http, monkeypatch, settings,
):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.CRONRADAR_DELIVERY_INLINE = False
    senders = []

    def receive(request):
        senders.append(threading.current_thread().name)
        return httpx.Response(200)

    mock_http.post(HOOK).mock(side_effect=receive)
    futures = []
    real_submit = tasks._executor.submit
    monkeypatch.setattr(tasks._executor, "submit",
                        lambda *a: futures.append(real_submit(*a)) or futures[-1])

    with transaction.atomic():
        d = make_delivery()
        dispatch([d.pk])
        assert futures == []  # nothing before commit

    [future] = futures
    future.result(timeout=10)
    assert len(senders) == 1
    assert senders[0].startswith("cronradar-delivery")
    assert senders[0] != threading.current_thread().name
    d.refresh_from_db()
    assert (d.status, d.attempts) == ("delivered", 1)


def test_broker_dispatch_enqueues_tasks(
    make_delivery, monkeypatch, settings, django_capture_on_commit_callbacks,
):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CRONRADAR_DELIVERY_INLINE = False
    queued = []
    monkeypatch.setattr(deliver, "delay", queued.append)
    a, b = make_delivery(), make_delivery(url=OTHER)

    with django_capture_on_commit_callbacks(execute=True):
        dispatch([a.pk, b.pk])

    assert queued == [a.pk, b.pk]


def test_eager_retry_waits_on_a_timer_not_a_pool_thread(make_delivery, mock_http, settings,
                                                       monkeypatch):
    settings.CRONRADAR_DELIVERY_INLINE = False
    settings.CRONRADAR_DELIVERY_BACKOFF = 2.0
    timers = []

    class FakeTimer:
        def __init__(self, delay, fn, args):
            timers.append((delay, fn, args))
            self.daemon = False

        def start(self):
            pass

    monkeypatch.setattr(tasks.threading, "Timer", FakeTimer)
    route = mock_http.post(HOOK).mock(return_value=httpx.Response(503))
    d = make_delivery()

    deliver.apply(args=[d.pk])  # returns after one attempt

    assert route.call_count == 1
    assert timers == [(2.0, tasks._submit, [d.pk])]
    d.refresh_from_db()
    assert (d.status, d.attempts) == ("pending", 1)


def test_redispatch_stale_finds_lost_deliveries(make_delivery, monkeypatch):
    sent = []
    monkeypatch.setattr(tasks, "_enqueue", sent.append)
    now = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
    fresh, lost, retrying, crashed, busy, done = (make_delivery() for _ in range(6))
    Delivery.objects.filter(pk=fresh.pk).update(created_at=now - timedelta(seconds=30))
    Delivery.objects.filter(pk__in=[lost.pk, retrying.pk, crashed.pk, busy.pk, done.pk]).update(
        created_at=now - timedelta(hours=1))
    DeliveryAttempt.objects.create(delivery=retrying, number=1, at=now - timedelta(seconds=100))
    Delivery.objects.filter(pk=crashed.pk).update(status="sending",
                                                  claimed_at=now - timedelta(minutes=5))
    Delivery.objects.filter(pk=busy.pk).update(status="sending",
                                               claimed_at=now - timedelta(seconds=3))
    Delivery.objects.filter(pk=done.pk).update(status="delivered")

    assert tasks.redispatch_stale(now) == 2
    assert sorted(sent) == sorted([lost.pk, crashed.pk])
    assert Delivery.objects.get(pk=crashed.pk).status == "pending"
    assert Delivery.objects.get(pk=busy.pk).status == "sending"
    sent.clear()
    assert tasks.redispatch_stale(now, everything=True) == 4
    assert sorted(sent) == sorted([fresh.pk, lost.pk, retrying.pk, crashed.pk])


@pytest.mark.django_db(transaction=True)
def test_a_slow_channel_holds_at_most_per_channel_threads(make_delivery, mock_http, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.CRONRADAR_DELIVERY_INLINE = False
    release = threading.Event()
    slow_started, fast_sent = [], threading.Event()

    def slow(request):
        slow_started.append(request)
        release.wait(10)
        return httpx.Response(200)

    def fast(request):
        fast_sent.set()
        return httpx.Response(200)

    mock_http.post(HOOK).mock(side_effect=slow)
    mock_http.post(OTHER).mock(side_effect=fast)
    slow_ones = [make_delivery()]
    slow_channel = slow_ones[0].channel
    slow_ones += [Delivery.objects.create(event=IncidentEvent.objects.create(
        incident=slow_ones[0].event.incident, kind="opened", at=slow_ones[0].event.at),
        channel=slow_channel) for _ in range(11)]
    for d in slow_ones:
        tasks._submit(d.pk)
    deadline = time.time() + 5
    while len(slow_started) < tasks.PER_CHANNEL and time.time() < deadline:
        time.sleep(0.01)
    tasks._submit(make_delivery(url=OTHER).pk)
    try:
        assert fast_sent.wait(5)  # 12 slow deliveries did not take all 16 threads
        assert len(slow_started) == tasks.PER_CHANNEL
    finally:
        release.set()
    deadline = time.time() + 10
    while Delivery.objects.filter(status="delivered").count() < 13 and time.time() < deadline:
        time.sleep(0.05)
    assert Delivery.objects.filter(status="delivered").count() == 13  # the line drained
    assert tasks._busy == {} and tasks._waiting == {}


def test_delivery_deleted_while_being_sent(make_delivery):
    d = make_delivery()

    def answer(request):
        Delivery.objects.filter(pk=d.pk).delete()  # the monitor was deleted meanwhile
        return httpx.Response(200)

    result = attempt(d, client=httpx.Client(transport=httpx.MockTransport(answer)))
    assert (result.claimed, result.status, result.retry) == (True, "failed", False)
    assert not DeliveryAttempt.objects.exists()
