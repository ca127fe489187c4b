"""The delivery engine: outcomes, retries and their timing, order per (incident,
channel), per-channel caps, claims that expire, SSRF guard, visibility.

No request leaves the process: tests pass ``send`` an ``httpx.MockTransport``,
or run a real local HTTP server (tests.live.Receiver). Time is the
controlled ``NOW`` unless a test is about threads.
"""
import json
import socket
import threading
from datetime import UTC, datetime

import httpx
import pytest
from django.db import connections

from alerts import delivery
from alerts.delivery import claim_due, claim_timeout, retry_delay, send
from alerts.integrations.common import OutgoingRequest
from alerts.models import Channel, Delivery, DeliveryAttempt
from core.destinations import GuardedTransport
from monitors.models import Monitor
from tests.alerts.conftest import HOOK, NOW, new_delivery, new_incident, webhook
from tests.conftest import new_project, s, send_due

OTHER = "https://other.example.com/cr"


@pytest.fixture
def make_delivery(project, monitor):
    def make(url=HOOK, **config):
        return new_delivery(new_incident(monitor), webhook(project, url))

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
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)

    @property
    def guarded(self) -> GuardedTransport:
        """A transport like the one deliveries use: the SSRF guard in front."""
        return GuardedTransport(httpx.MockTransport(self))


def attempt(d, transport, now=NOW):
    """Claim ``d`` at ``now`` and make its attempt; returns its status afterwards."""
    [claim] = [c for c in claim_due(now, 100) if c.delivery_id == d.pk]
    send(claim, transport=transport, clock=lambda: now)
    d.refresh_from_db()
    return d.status


def log(d):
    return list(DeliveryAttempt.objects.filter(delivery=d)
                .values_list("number", "at", "status_code", "error"))


# --- one attempt ------------------------------------------------------------

def test_success_is_delivered_and_logged(make_delivery):
    d = make_delivery()
    receiver = Receiver(httpx.Response(200, text="ok"))

    assert attempt(d, receiver.transport) == "delivered"

    [sent] = receiver.requests
    assert (sent.method, str(sent.url)) == ("POST", HOOK)
    assert json.loads(sent.content)["event"] == "incident.opened"
    assert sent.headers["X-CronRadar-Event"] == "incident.opened"
    assert (d.attempts, d.delivered_at, d.last_error, d.next_attempt_at) == (1, NOW, "", None)
    assert log(d) == [(1, NOW, 200, "")]


def test_server_error_is_retried_later(make_delivery, settings):
    settings.CRONRADAR_DELIVERY_BACKOFF = 2.0
    d = make_delivery()
    assert attempt(d, Receiver(httpx.Response(503, text="busy")).transport) == "pending"
    assert (d.attempts, d.delivered_at, d.last_error) == (1, None, "HTTP 503: busy")
    assert NOW + s(1) <= d.next_attempt_at <= NOW + s(2)  # 2 ** 1, jittered down to half
    assert log(d) == [(1, NOW, 503, "HTTP 503: busy")]
    assert claim_due(NOW + s(0.99), 10) == []  # not due yet


@pytest.mark.parametrize("header,delay", [("120", 120), ("99999", 600), ("0", 0),
                                          ("Wed, 01 Jan 2025 12:01:06 GMT", 60)])
def test_retry_after_is_honoured_up_to_the_cap(make_delivery, header, delay, monkeypatch):
    monkeypatch.setattr(delivery.timezone, "now", lambda: NOW)  # for the HTTP-date form
    d = make_delivery()
    answer = httpx.Response(429, headers={"Retry-After": header})
    assert attempt(d, Receiver(answer).transport) == "pending"
    assert d.next_attempt_at == NOW + s(delay)


def test_backoff_grows_with_jitter_and_a_cap(settings):
    settings.CRONRADAR_DELIVERY_BACKOFF = 2.0
    for attempts, base in ((1, 2), (3, 8), (9, 512), (10, 600), (40, 600)):
        delays = {retry_delay(attempts) for _ in range(50)}
        assert all(base / 2 <= x <= base for x in delays) and len(delays) > 1


@pytest.mark.parametrize("code", [400, 404, 410, 301])
def test_other_statuses_fail_without_retry(make_delivery, code):
    d = make_delivery()
    assert attempt(d, Receiver(httpx.Response(code)).transport) == "failed"
    assert (d.attempts, d.last_error, d.next_attempt_at) == (1, f"HTTP {code}", None)


def test_timeout_is_logged_and_retryable(make_delivery):
    d = make_delivery()
    assert attempt(d, Receiver(httpx.ReadTimeout("timed out")).transport) == "pending"
    assert log(d) == [(1, NOW, None, "timeout after 5s: ReadTimeout")]


def test_network_error_is_logged_and_retryable(make_delivery):
    d = make_delivery()
    assert attempt(d, Receiver(httpx.ConnectError("refused")).transport) == "pending"
    assert log(d) == [(1, NOW, None, "network error: ConnectError: refused")]


def test_retries_stop_at_the_max_age_and_the_delivery_is_dead_lettered(make_delivery,
                                                                       settings):
    settings.CRONRADAR_DELIVERY_MAX_AGE = 3600
    d = make_delivery()
    transport = Receiver(*[httpx.Response(502)] * 3).transport
    assert attempt(d, transport, NOW) == "pending"
    assert attempt(d, transport, NOW + s(3599)) == "pending"
    assert attempt(d, transport, NOW + s(3610)) == "failed"
    assert d.last_error == "gave up after 3 attempts over 1h00m: HTTP 502"
    assert d.next_attempt_at is None


def test_max_attempts_is_an_extra_bound(make_delivery, settings):
    settings.CRONRADAR_DELIVERY_MAX_ATTEMPTS = 2
    d = make_delivery()
    transport = Receiver(httpx.Response(500), httpx.Response(500)).transport
    assert attempt(d, transport, NOW) == "pending"
    assert attempt(d, transport, NOW + s(10)) == "failed"
    assert [row[2] for row in log(d)] == [500, 500]


def test_long_error_bodies_are_cut(make_delivery):
    d = make_delivery()
    attempt(d, Receiver(httpx.Response(500, text="x" * 10_000)).transport)
    assert d.last_error == "HTTP 500: " + "x" * 200


def test_unbuildable_request_fails_without_http(make_delivery):
    d = make_delivery()
    Channel.objects.filter(pk=d.channel_id).update(config={})
    receiver = Receiver()
    assert attempt(d, receiver.transport) == "failed"
    assert receiver.requests == []
    assert log(d) == [(1, NOW, None, "build error: KeyError: 'url'")]


def test_the_channel_records_its_health(make_delivery):
    d = make_delivery()
    transport = Receiver(httpx.Response(503, text="down"), httpx.Response(503, text="still"),
                         httpx.Response(200)).transport
    attempt(d, transport, NOW)
    attempt(d, transport, NOW + s(30))
    channel = Channel.objects.get(pk=d.channel_id)
    assert (channel.last_error, channel.failing_since) == ("HTTP 503: still", NOW)
    attempt(d, transport, NOW + s(90))
    channel.refresh_from_db()
    assert (channel.last_error, channel.failing_since) == ("HTTP 503: still", None)


def test_a_failing_channels_first_success_releases_its_backoff_but_not_429s(
        project, monitor, settings, monkeypatch):
    settings.CRONRADAR_DELIVERY_BACKOFF, settings.CRONRADAR_CHANNEL_CONCURRENCY = 10.0, 2
    monkeypatch.setattr(delivery.random, "uniform", lambda low, high: high)  # no jitter
    channel, other = webhook(project), webhook(project, OTHER)
    answers = [httpx.ConnectError("refused"), httpx.Response(500),
               httpx.Response(503, headers={"Retry-After": "60"}),
               httpx.Response(429, headers={"Retry-After": "120"}), httpx.Response(429)]
    waiting = []
    for answer in answers:  # one at a time: each is the only one due at NOW
        waiting.append(new_delivery(new_incident(monitor), channel))
        assert attempt(waiting[-1], Receiver(answer).transport) == "pending"
    elsewhere = new_delivery(new_incident(monitor), other)
    assert attempt(elsewhere, Receiver(httpx.Response(500)).transport) == "pending"
    before = [NOW + s(10), NOW + s(10), NOW + s(60), NOW + s(120), NOW + s(10)]
    assert [Delivery.objects.get(pk=d.pk).next_attempt_at for d in waiting] == before

    ok = new_delivery(new_incident(monitor), channel, at=NOW + s(5))
    assert attempt(ok, Receiver(httpx.Response(200)).transport, NOW + s(5)) == "delivered"

    after = [NOW + s(5), NOW + s(5), NOW + s(5), NOW + s(120), NOW + s(10)]
    assert [Delivery.objects.get(pk=d.pk).next_attempt_at for d in waiting] == after
    assert [d.rate_limited for d in Delivery.objects.filter(
        pk__in=[d.pk for d in waiting]).order_by("pk")] == [False, False, False, True, True]
    assert Delivery.objects.get(pk=elsewhere.pk).next_attempt_at == NOW + s(10)
    assert Channel.objects.get(pk=channel.pk).failing_since is None
    # released, they still go at most the channel's cap at a time, oldest first
    claimed = [c.delivery_id for c in claim_due(NOW + s(5), 100)]
    assert claimed == [waiting[0].pk, waiting[1].pk]


def test_a_channel_that_delivers_and_fails_in_one_batch_stays_failing(project, monitor,
                                                                      settings):
    settings.CRONRADAR_DELIVERY_BACKOFF = 10.0
    channel = webhook(project)
    first = new_delivery(new_incident(monitor), channel)
    assert attempt(first, Receiver(httpx.Response(500)).transport) == "pending"
    later = NOW + s(3)
    pair = [new_delivery(new_incident(monitor), channel, at=later) for _ in range(2)]
    attempts = delivery.prepare(claim_due(later, 10))
    receiver = Receiver(httpx.Response(200), httpx.Response(502))
    for a in attempts:
        delivery.attempt(a, receiver.transport, clock=lambda: later)
    assert delivery.record(attempts) == ["delivered", "pending"]
    channel.refresh_from_db()
    assert (channel.failing_since, channel.last_error) == (later, "HTTP 502")
    assert Delivery.objects.get(pk=first.pk).next_attempt_at > later  # not released
    assert pair[1].pk in [a.delivery.pk for a in attempts]


def test_delivery_deleted_while_being_sent(make_delivery):
    d = make_delivery()

    def answer(request):
        Delivery.objects.filter(pk=d.pk).delete()  # the monitor was deleted meanwhile
        return httpx.Response(200)

    [claim] = claim_due(NOW, 10)
    assert send(claim, transport=httpx.MockTransport(answer)) == ""
    assert not DeliveryAttempt.objects.exists()


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

    assert attempt(d, receiver.guarded) == "failed"
    assert receiver.requests == []
    host = httpx.URL(url).host
    assert log(d) == [(1, NOW, None, f"blocked: {host} is a non-public address {address}")]


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

    assert attempt(d, receiver.guarded) == "failed"
    assert receiver.requests == []
    assert d.last_error == "blocked: hooks.example.com resolves to non-public address 10.0.0.7"


def test_public_hostname_is_sent_when_blocking(make_delivery, settings, monkeypatch):
    settings.CRONRADAR_BLOCK_PRIVATE_ADDRESSES = True
    monkeypatch.setattr(socket, "getaddrinfo", fake_dns("93.184.215.14", "2606:2800:21f::1"))
    receiver = Receiver(httpx.Response(204))

    assert attempt(make_delivery(), receiver.guarded) == "delivered"
    assert len(receiver.requests) == 1


def test_unresolvable_hostname_is_retryable(make_delivery, settings, monkeypatch):
    settings.CRONRADAR_BLOCK_PRIVATE_ADDRESSES = True

    def getaddrinfo(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    d = make_delivery()
    receiver = Receiver()

    assert attempt(d, receiver.guarded) == "pending"
    assert receiver.requests == []
    assert d.last_error == f"dns error: [Errno {socket.EAI_NONAME}] Name or service not known"


def test_private_destinations_are_allowed_when_not_blocking(make_delivery):
    receiver = Receiver(httpx.Response(200))
    d = make_delivery(url="http://127.0.0.1:8080/hook")
    assert attempt(d, receiver.guarded) == "delivered"


# --- claiming: leases, order, caps ---------------------------------------------

@pytest.mark.parametrize("status", ["delivered", "failed"])
def test_finished_deliveries_are_never_claimed(make_delivery, status):
    d = make_delivery()
    Delivery.objects.filter(pk=d.pk).update(status=status, next_attempt_at=None)
    assert claim_due(NOW + s(3600), 10) == []


def test_a_claim_is_held_until_it_expires(make_delivery):
    d = make_delivery()
    [claim] = claim_due(NOW, 10)
    assert claim_due(NOW + claim_timeout() - s(0.001), 10) == []  # a sender holds it
    # the sender died without a word: the row is due again when the claim expires
    [again] = claim_due(NOW + claim_timeout(), 10)
    assert (again.delivery_id, again.lease) == (d.pk, claim.lease + 1)
    assert send(claim, transport=Receiver().transport) == ""  # the old claim can write nothing
    assert send(again, transport=Receiver(httpx.Response(200)).transport) == "delivered"
    assert log(d)[0][2] == 200 and len(log(d)) == 1


def test_a_resolve_never_overtakes_its_trigger(project, monitor):
    incident, channel = new_incident(monitor), webhook(project)
    opened = new_delivery(incident, channel, "opened", NOW)
    resolved = new_delivery(incident, channel, "resolved", NOW + s(1))
    other = new_delivery(new_incident(monitor), channel, "opened", NOW + s(1))
    assert attempt(opened, Receiver(httpx.Response(503)).transport, NOW) == "pending"
    # the trigger waits for its retry: the resolve of the same incident waits behind it,
    # another incident's notification does not
    assert [c.delivery_id for c in claim_due(NOW + s(1), 10)] == [other.pk]
    Delivery.objects.filter(pk=other.pk).update(status="delivered", next_attempt_at=None)
    order = Receiver(httpx.Response(200), httpx.Response(200))
    assert send_due(opened.next_attempt_at, order.transport) == 2
    assert [json.loads(r.content)["event"] for r in order.requests] == [
        "incident.opened", "incident.resolved"]
    resolved.refresh_from_db()
    assert resolved.status == "delivered"


def test_a_given_up_trigger_lets_the_resolve_go(project, monitor):
    incident, channel = new_incident(monitor), webhook(project)
    opened = new_delivery(incident, channel, "opened", NOW)
    resolved = new_delivery(incident, channel, "resolved", NOW)
    assert attempt(opened, Receiver(httpx.Response(400)).transport) == "failed"
    assert [c.delivery_id for c in claim_due(NOW, 10)] == [resolved.pk]


def test_a_channel_gets_at_most_its_cap_of_claims(project, monitor, settings):
    settings.CRONRADAR_CHANNEL_CONCURRENCY = 3
    busy, calm = webhook(project), webhook(project, OTHER)
    many = [new_delivery(new_incident(monitor), busy) for _ in range(10)]
    one = new_delivery(new_incident(monitor), calm)
    claims = claim_due(NOW, 100)
    assert sorted(c.delivery_id for c in claims) == sorted([*(d.pk for d in many[:3]), one.pk])
    assert claim_due(NOW, 100) == []  # the busy channel is at its cap
    send(claims[0], transport=Receiver(httpx.Response(200)).transport, clock=lambda: NOW)
    assert [c.delivery_id for c in claim_due(NOW, 100)] == [many[3].pk]


def test_a_channel_with_a_backlog_never_hides_the_others(project, monitor, settings):
    """Claims take each channel's first due rows, not the oldest rows overall: 50
    older rows of one channel (more than a claim reads) leave room for the other."""
    settings.CRONRADAR_CHANNEL_CONCURRENCY = 4
    busy, calm = webhook(project), webhook(project, OTHER)
    backlog = [new_delivery(new_incident(monitor), busy, at=NOW - s(60)) for _ in range(50)]
    late = new_delivery(new_incident(monitor), calm, at=NOW)
    claims = claim_due(NOW, 5)
    assert [c.delivery_id for c in claims] == [d.pk for d in backlog[:4]] + [late.pk]


def test_a_claim_reads_a_window_of_due_rows_and_a_full_channel_leaves_it(
        project, monitor, settings, monkeypatch):
    """A claim reads CLAIM_WINDOW due rows first: when one channel's rows fill it
    and give the claim all it asked for, only they are read; the next claim skips
    the now full channel and reaches the others' rows. When the window leaves
    threads free, every due row is read."""
    settings.CRONRADAR_CHANNEL_CONCURRENCY = 3
    monkeypatch.setattr(delivery, "CLAIM_WINDOW", 5)
    busy, calm = webhook(project), webhook(project, OTHER)
    backlog = [new_delivery(new_incident(monitor), busy, at=NOW - s(60)) for _ in range(8)]
    late = [new_delivery(new_incident(monitor), calm, at=NOW) for _ in range(2)]
    assert [c.delivery_id for c in claim_due(NOW, 3)] == [d.pk for d in backlog[:3]]
    assert [c.delivery_id for c in claim_due(NOW, 10)] == [d.pk for d in late]
    for channel, at in ((busy, NOW - s(60)), (calm, NOW)):  # as they were
        Delivery.objects.filter(channel=channel).update(status="pending", next_attempt_at=at)
    assert [c.delivery_id for c in claim_due(NOW, 10)] == (
        [d.pk for d in backlog[:3]] + [d.pk for d in late])


def test_rows_waiting_behind_a_retry_never_hide_the_others(project, monitor, settings,
                                                          monkeypatch):
    """A failing channel's resolves, due but each waiting for its incident's
    opened (in backoff), fill the claim window: the other channel's rows are
    claimed all the same (found by QA: every notification had stopped)."""
    settings.CRONRADAR_CHANNEL_CONCURRENCY = 3
    monkeypatch.setattr(delivery, "CLAIM_WINDOW", 5)
    down, ok = webhook(project), webhook(project, OTHER)
    for _ in range(8):
        incident = new_incident(monitor)
        new_delivery(incident, down, "opened", at=NOW + s(600))  # retried in 10 minutes
        new_delivery(incident, down, "resolved", at=NOW - s(60))  # due, must wait
    late = [new_delivery(new_incident(monitor), ok, at=NOW) for _ in range(2)]
    assert [c.delivery_id for c in claim_due(NOW, 10)] == [d.pk for d in late]


def test_an_organisations_backlog_on_50_channels_never_hides_anothers_delivery(
        project, monitor, settings, monkeypatch):
    """Organisation A's 200 older deliveries on 50 channels (more than the claim
    window reads; no channel at its cap) and B's one, due later: the claim shares
    across organisations (A's first row, B's, then A's second, ...), so B's is in
    the first claim, second; every channel stays within its cap."""
    settings.CRONRADAR_CHANNEL_CONCURRENCY = 4
    monkeypatch.setattr(delivery, "CLAIM_WINDOW", 50)
    channels = [webhook(project, f"{HOOK}/{i}") for i in range(50)]
    backlog = [new_delivery(new_incident(monitor), channels[i % 50], at=NOW - s(60))
               for i in range(200)]
    other = new_project("globex")
    theirs = new_delivery(new_incident(Monitor.objects.create(
        project=other, name="b", slug="b", period=s(60), grace=s(5))), webhook(other), at=NOW)
    claims = claim_due(NOW, 32)
    assert [c.delivery_id for c in claims] == [backlog[0].pk, theirs.pk,
                                               *(d.pk for d in backlog[1:31])]
    assert [c.delivery_id for c in claim_due(NOW, 300)] == [d.pk for d in backlog[31:]]
    in_flight = Delivery.objects.filter(status="sending").values_list("channel_id", flat=True)
    assert max(list(in_flight).count(ch.pk) for ch in channels) == 4


def test_outcomes_of_a_batch_are_written_together(project, monitor):
    """record(): each outcome as send() would write it, in one transaction; the
    channel's health follows the order the outcomes happened in."""
    hook, other = webhook(project), webhook(project, OTHER)
    Channel.objects.filter(pk=other.pk).update(failing_since=NOW - s(600), last_error="old")
    rows = [new_delivery(new_incident(monitor), hook) for _ in range(2)] + [
        new_delivery(new_incident(monitor), other) for _ in range(2)]
    prepared = delivery.prepare(claim_due(NOW, 10))
    assert [a.delivery.pk for a in prepared] == [d.pk for d in rows]
    answers = {HOOK: [httpx.Response(503), httpx.Response(200)],
               OTHER: [httpx.Response(200), httpx.Response(500)]}
    transport = httpx.MockTransport(lambda request: answers[str(request.url)].pop(0))
    for i, a in enumerate(prepared):
        delivery.attempt(a, transport, clock=lambda i=i: NOW + s(i))
    assert delivery.record(prepared) == ["pending", "delivered", "delivered", "pending"]
    assert [(d.status, d.attempts, d.last_error) for d in
            Delivery.objects.filter(pk__in=[d.pk for d in rows]).order_by("pk")] == [
        ("pending", 1, "HTTP 503"), ("delivered", 1, ""), ("delivered", 1, ""),
        ("pending", 1, "HTTP 500")]
    assert DeliveryAttempt.objects.filter(delivery__in=rows).count() == 4
    hook.refresh_from_db()
    other.refresh_from_db()
    # hook failed, then delivered: healthy, the error kept; other was failing,
    # delivered (healthy again), then failed: failing since that failure
    assert (hook.failing_since, hook.last_error) == (None, "HTTP 503")
    assert (other.failing_since, other.last_error) == (NOW + s(3), "HTTP 500")


def test_an_outcome_whose_claim_was_lost_is_logged_not_written(project, monitor):
    d = new_delivery(new_incident(monitor), webhook(project))
    [a] = delivery.prepare(claim_due(NOW, 10))
    delivery.attempt(a, Receiver(httpx.Response(200)).transport, clock=lambda: NOW)
    [again] = claim_due(NOW + claim_timeout(), 10)  # expired: claimed anew meanwhile
    assert delivery.record([a]) == [""]
    d.refresh_from_db()
    assert (d.status, d.lease, d.attempts) == ("sending", again.lease, 0)
    assert list(d.log.values_list("number", "status_code")) == [(1, 200)]


def test_a_batch_reads_what_notifications_carry_once(project, monitor, settings,
                                                     django_assert_num_queries,
                                                     links_signed_at_a_fixed_time):
    """prepare() builds the same requests as one-by-one building, with a fixed
    number of queries whatever the batch size."""
    from alerts.integrations import common

    settings.CRONRADAR_CHANNEL_CONCURRENCY = 10

    hook = webhook(project)
    rows = [new_delivery(new_incident(monitor), hook) for _ in range(5)]
    for d in rows:
        m = d.incident.monitor
        m.runs.create(slot_at=NOW - s(60), started_at=NOW - s(59), ended_at=NOW - s(50),
                      outcome="succeeded")
        m.pings.create(received_at=NOW - s(50), kind="success", body=f"done {m.pk}".encode())
    alone = [common.context(Delivery.objects.get(pk=d.pk).incident) for d in rows]
    claims = claim_due(NOW, 10)
    # the deliveries, their channels, events, incidents, monitors, projects; runs, pings
    with django_assert_num_queries(8):
        prepared = delivery.prepare(claims)
    assert [common.context(a.delivery.event.incident) for a in prepared] == alone
    assert alone[0]["last_ping_body"] == f"done {rows[0].incident.monitor_id}"
    assert alone[0]["run_duration"] == 9
    assert len(prepared) == 5


def test_two_claimers_never_claim_one_row_twice(project, monitor):
    rows = [new_delivery(new_incident(monitor), webhook(project)) for _ in range(30)]
    first, second = claim_due(NOW, 20), claim_due(NOW, 20)
    ids = [c.delivery_id for c in first + second]
    assert sorted(ids) == sorted(d.pk for d in rows)


# --- the real modes ---------------------------------------------------------------------

@pytest.mark.django_db(transaction=True)
def test_ordered_per_incident_and_channel_under_failures_and_races(project, monitor, live):
    """Four sender threads claim and send 60 notifications (an opened and a resolved
    for each of 30 incidents, to one channel) from a receiver that fails a third of
    requests: every incident is seen opened before resolved, each exactly delivered."""
    receiver = live(fail_every=3)
    channel = webhook(project, receiver.url + "/hook")
    now = datetime.now(UTC)
    for _ in range(30):
        incident = new_incident(monitor)
        new_delivery(incident, channel, "opened", now)
        new_delivery(incident, channel, "resolved", now)
    Delivery.objects.update(next_attempt_at=now)

    def sender():
        try:
            for _ in range(200):
                if not send_due(None) and not Delivery.objects.exclude(
                        status="delivered").exists():
                    return
                Delivery.objects.filter(status="pending").update(next_attempt_at=now)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=sender) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert Delivery.objects.filter(status="delivered").count() == 60
    seen = {}
    for r in receiver.requests:
        body = r.json()
        if r.status < 300:
            seen.setdefault(body["incident"]["id"], []).append(body["event"])
    assert len(seen) == 30
    assert all(events == ["incident.opened", "incident.resolved"] for events in seen.values())




# --- connections -------------------------------------------------------------

@pytest.mark.parametrize("answer", [b"", b"ok", b"x" * 5000])
def test_notifications_to_one_receiver_reuse_its_connection(answer, settings):
    """A 2xx answer is read to its end, so httpx keeps the connection for the next
    request (it closes one whose body was left unread: a TCP and TLS handshake
    per notification)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from alerts.integrations import OutgoingRequest

    peers = []

    class KeepAlive(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            peers.append(self.client_address)
            self.send_response(200)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), KeepAlive)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    settings.CRONRADAR_BLOCK_PRIVATE_ADDRESSES = False
    url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    try:
        results = [delivery.transmit(OutgoingRequest(url, b"{}", {})) for _ in range(5)]
    finally:
        server.shutdown()
    assert results == [(200, "", False, None)] * 5
    assert len(peers) == 5 and len(set(peers)) == 1


def test_a_receiver_that_trickles_its_answer_is_cut_off_at_the_deadline(settings):
    """httpx bounds each read; the attempt as a whole ends within twice
    CRONRADAR_DELIVERY_TIMEOUT, inside its claim, however slowly a receiver sends
    its status line (found by QA: such a receiver got the notification again each
    time the claim expired and held ever more sender threads)."""
    import time

    from alerts.integrations import OutgoingRequest

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    stop = threading.Event()

    def trickle():
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n":
                if stop.wait(0.1):
                    return
                conn.sendall(bytes([byte]))

    threading.Thread(target=trickle, daemon=True).start()
    settings.CRONRADAR_BLOCK_PRIVATE_ADDRESSES = False
    settings.CRONRADAR_DELIVERY_TIMEOUT = 0.5
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/hook"
    started = time.monotonic()
    try:
        outcome = delivery.transmit(OutgoingRequest(url, b"{}", {}))
    finally:
        stop.set()
        listener.close()
    assert outcome == (None, "timeout: no complete answer within the attempt's 1s (ReadTimeout)",
                       True, None)
    assert 1.0 <= time.monotonic() - started < 2.0  # 2 x timeout, not the 3.7 s it trickles


def test_a_delivery_to_a_real_receiver_is_retried_then_delivered(make_delivery, settings):
    """Over the network (the shared transport): the exact request the webhook kind
    built, a 503 retried after its Retry-After, then delivered; each attempt logged."""
    from tests.live import Receiver as LiveReceiver

    settings.CRONRADAR_BLOCK_PRIVATE_ADDRESSES = False
    receiver = LiveReceiver(fail_every=1)
    try:
        d = make_delivery(f"{receiver.url}/hooks/cronradar?team=ops")
        [prepared] = delivery.prepare([c for c in claim_due(NOW, 100)])
        built = prepared.request
        delivery.attempt(prepared, clock=lambda: NOW)
        assert delivery.record([prepared]) == ["pending"]
        receiver.fail_every = 0
        assert attempt(d, None, NOW + s(1)) == "delivered"
    finally:
        receiver.close()
    first, second = receiver.requests
    assert (first.method, first.path, first.body, first.status) == (
        "POST", "/hooks/cronradar?team=ops", built.body, 503)
    assert {k.lower(): v for k, v in first.headers.items()} == {
        "host": receiver.url.removeprefix("http://"), "accept": "*/*",
        "accept-encoding": "gzip, deflate", "connection": "keep-alive",
        "user-agent": f"python-httpx/{httpx.__version__}",
        **{k.lower(): v for k, v in built.stamped(NOW).headers.items()},
        "content-length": str(len(built.body))}
    assert (second.method, second.path, second.status) == ("POST", first.path, 200)
    assert log(d) == [(1, NOW, 503, "HTTP 503: ok"), (2, NOW + s(1), 200, "")]


def test_a_receiver_that_never_answers_times_out(make_delivery, settings):
    """Connected, the request sent, no answer: a read timeout after
    CRONRADAR_DELIVERY_TIMEOUT, retried later."""
    import time

    listener = socket.create_server(("127.0.0.1", 0))
    settings.CRONRADAR_BLOCK_PRIVATE_ADDRESSES = False
    settings.CRONRADAR_DELIVERY_TIMEOUT = 0.5
    d = make_delivery(f"http://127.0.0.1:{listener.getsockname()[1]}/hook")
    started = time.monotonic()
    try:
        assert attempt(d, None) == "pending"
    finally:
        listener.close()
    assert 0.5 <= time.monotonic() - started < 1.5
    assert d.last_error == "timeout after 0.5s: ReadTimeout"


def test_notifications_are_traced_when_tracing_is_on(settings):
    """With OTEL_EXPORTER_OTLP_ENDPOINT set, the shared transport makes a span per
    request (httpx's instrumentation wraps only httpx's own transport), around the
    guard: the span names the URL's host, not the checked address."""
    otel = pytest.importorskip("opentelemetry.instrumentation.httpx")
    settings.OTEL_EXPORTER_OTLP_ENDPOINT = "http://127.0.0.1:4318"
    delivery._shared_transport.cache_clear()
    try:
        transport = delivery._shared_transport()
    finally:
        delivery._shared_transport.cache_clear()
    assert isinstance(transport, otel.SyncOpenTelemetryTransport)
    assert isinstance(transport._transport, GuardedTransport)


def test_transmit_sends_the_requests_method_and_redacts_its_credentials():
    """A kind that wants PUT (Matrix) gets PUT with the exact body; a credential the
    request names in ``redact`` (a Telegram bot token in its URL) reads ``***`` in
    the error, wherever the error quotes it."""
    from alerts.integrations.common import OutgoingRequest

    token = "123456:SECRET-token"
    receiver = Receiver(httpx.Response(200), httpx.Response(
        404, text=f"no bot{token} here"), httpx.ConnectError(f"cannot reach /bot{token}/x"))
    put = OutgoingRequest(f"{HOOK}/txn/7", b'{"a":1}', {"Content-Type": "application/json"},
                          method="PUT")
    assert delivery.transmit(put, receiver.transport) == (200, "", False, None)
    sent = receiver.requests[0]
    assert (sent.method, str(sent.url), sent.content) == ("PUT", f"{HOOK}/txn/7", b'{"a":1}')
    post = OutgoingRequest(f"{HOOK}/bot{token}/sendMessage", b"{}", {}, redact=(token,))
    assert delivery.transmit(post, receiver.transport) == (404, "HTTP 404: no bot*** here",
                                                       False, None)
    assert receiver.requests[1].method == "POST"
    code, error, retryable, _ = delivery.transmit(post, receiver.transport)
    assert (code, retryable, token in error, "/bot***/x" in error) == (None, True, False, True)


def test_transmit_redacts_a_secret_that_holds_another_whole():
    """Longer secrets go first: a Google Chat token that starts with its key reads
    ``***``, not ``***`` and the rest of the token."""
    from alerts.integrations.common import OutgoingRequest

    receiver = Receiver(httpx.Response(404, text="no key=abc&token=abcdef"))
    post = OutgoingRequest(f"{HOOK}?key=abc&token=abcdef", b"{}", {},
                           redact=("abc", "abcdef"))
    assert delivery.transmit(post, receiver.transport) == (
        404, "HTTP 404: no key=***&token=***", False, None)


def test_transmit_redacts_a_secret_quoted_in_a_url_and_signed_link_tokens():
    """A receiver that echoes the URL percent-encoded (QA: a Telegram token's ``:``
    as ``%3A``, or ``%3a``) or quotes the notification's signed acknowledge link
    leaves neither the token nor the link's token in the error (read-only people
    read it)."""
    from alerts.integrations.common import OutgoingRequest

    token = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawXYZ"
    echo = ("Q=/bot123456789%3AAAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawXYZ/sendMessage "
            "/bot123456789%3aAAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawXYZ "
            "ack: https://cr.example/incident-link/eyJpIjo1fQ:1vR:sIg/")
    receiver = Receiver(httpx.Response(400, text=echo))
    post = OutgoingRequest(f"{HOOK}/bot{token}/sendMessage", b"{}", {}, redact=(token,))
    assert delivery.transmit(post, receiver.transport) == (
        400, "HTTP 400: Q=/bot***/sendMessage /bot*** "
             "ack: https://cr.example/incident-link/***/", False, None)


@pytest.mark.parametrize("request_", [
    OutgoingRequest(url="https://hooks.example.com/x?a=1", body=b'{"a":1}', headers={
        "Content-Type": "application/json", "User-Agent": "CronRadar/0.1",
        "X-CronRadar-Event": "incident.opened", "webhook-id": "42"}),
    OutgoingRequest(url="http://127.0.0.1:8080/hook", body=b"", headers={}),
    OutgoingRequest(url="https://matrix.example.org/_matrix/send/1", body=b"{}", method="put",
                    headers={"authorization": "Bearer t", "accept": "text/plain"}),
    OutgoingRequest(url="https://example.com/", body=b"", method="GET", headers={"X-A": "1"}),
    OutgoingRequest(url="https://bücher.example/a b", body=b"xyz", headers={
        "Host": "other.example", "Content-Length": "3", "Connection": "close"}),
])
def test_outgoing_request_is_what_httpx_builds(request_):
    """The request built without httpx's steps has the same method, URL, headers
    (names, values, order), body and extensions as httpx's own construction from
    the client's defaults updated with the request's headers."""
    headers = httpx.Headers(delivery._default_headers())
    headers.update(request_.headers)
    extensions = {"timeout": httpx.Timeout(5).as_dict(), "deadline": 12.5}
    expected = httpx.Request(request_.method, request_.url, content=request_.body,
                             headers=headers, extensions=extensions)
    built = delivery.outgoing_request(request_, extensions)
    assert (built.method, built.url, built.headers.raw, built.content, built.extensions) == (
        expected.method, expected.url, expected.headers.raw, expected.content,
        expected.extensions)
