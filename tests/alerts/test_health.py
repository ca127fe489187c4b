"""Channels that say when they break (alerts.health): one ``channel.failing`` to the
project's other working channels and one email to the organisation's admins and
owners, when a channel has failed for CRONRADAR_CHANNEL_FAILING_AFTER or a delivery
failed for good; one ``channel.recovered`` when it delivers again; never more per
failure period, whoever runs the tick. Time is the controlled ``NOW``."""
import json
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import respx
from django.core import mail
from django.db import connections

from alerts import channels, health
from alerts.models import Channel, Delivery, IncidentEvent
from monitors import evaluator
from tests.alerts.conftest import NOW, new_delivery, new_incident
from tests.conftest import s, send_due
from tests.helpers import person

A, B, C = "https://a.test/h", "https://b.test/h", "https://c.test/h"


@pytest.fixture
def answers():
    """What each receiver answers (status codes; change them to heal or break one)."""
    return {A: 500, B: 200, C: 200}


@pytest.fixture
def http(answers):
    with respx.mock(assert_all_called=False) as router:
        for url in answers:
            router.post(url).mock(side_effect=lambda request: httpx.Response(
                answers[str(request.url)], text="boom" if answers[str(request.url)] >= 300
                else "ok"))
        yield router


def received(http, url) -> list[dict]:
    return [json.loads(c.request.content) for c in http.calls if str(c.request.url) == url]


@pytest.fixture
def broken(project):
    """Channel "Ops hook" to A (answering 500), and "Team hook" to B (working)."""
    org = project.organisation
    person("ana", org, "owner"), person("bob", org, "admin"), person("cy", org, "member")
    person("vi", org, "viewer")
    return (Channel.objects.create(project=project, kind="webhook", name="Ops hook",
                                   config={"url": A, "secret": "k"}),
            Channel.objects.create(project=project, kind="webhook", name="Team hook",
                                   config={"url": B, "secret": "k"}))


def notice(kind, event, channel, since, error, held, at):
    return {"schema": "cronradar.channel.v1", "event": kind, "event_id": event.pk,
            "occurred_at": at, "project": "acme",
            "links": {"channel_page": f"http://127.0.0.1:8000/channels/{channel.pk}/"},
            "channel": {"id": channel.pk, "name": "Ops hook", "kind": "webhook",
                        "failing_since": since, "last_error": error, "held": held}}


def test_a_channel_failing_for_the_setting_is_announced_once_then_recovered_once(
        broken, monitor, http, answers):
    a, b = broken
    for _ in range(2):
        new_delivery(new_incident(monitor), a)
    send_due(NOW)
    a.refresh_from_db()
    assert (a.failing_since, a.failing_check_at, a.failing_notified_at) == (
        NOW, NOW + s(600), None)
    assert health.check_due(NOW + s(599)) == 0

    assert health.check_due(NOW + s(600)) == 1
    assert health.check_due(NOW + s(600)) == 0  # a second evaluator's tick: nothing more
    send_due(NOW + s(600))
    failing = IncidentEvent.objects.get(kind="channel.failing")
    assert received(http, B) == [notice("channel.failing", failing, a, "2025-01-01T12:00:06Z",
                                        "HTTP 500: boom", 2, "2025-01-01T12:10:06Z")]
    [email] = mail.outbox
    assert (email.to, email.subject) == (["ana@example.com", "bob@example.com"],
                                         "[INFO] Channel failing: Ops hook")
    assert email.body.startswith(
        "Notifications to Ops hook (webhook) have been failing since 2025-01-01T12:00:06Z: "
        "HTTP 500: boom. 2 notifications are held and will be sent when it works again.")
    assert health.check_due(NOW + s(1200)) == 0
    send_due(NOW + s(1200))
    assert len(received(http, B)) == 1 and len(mail.outbox) == 1  # no repeat

    answers[A] = 200
    send_due(NOW + s(1300))
    recovered = IncidentEvent.objects.get(kind="channel.recovered")
    assert received(http, B)[1:] == [notice("channel.recovered", recovered, a,
                                            "2025-01-01T12:00:06Z", "HTTP 500: boom", 1,
                                            "2025-01-01T12:21:46Z")]
    assert [m.subject for m in mail.outbox] == ["[INFO] Channel failing: Ops hook",
                                                "[INFO] Channel recovered: Ops hook"]
    a.refresh_from_db()
    assert (a.failing_since, a.failing_check_at, a.failing_notified_at) == (None, None, None)
    assert not Delivery.objects.filter(channel=a, status__in=Delivery.ACTIVE).exists()
    assert health.check_due(NOW + s(3000)) == 0
    send_due(NOW + s(3000))
    assert len(received(http, B)) == 2 and len(mail.outbox) == 2


def test_the_evaluator_tick_announces_it_once_however_many_ticks_run(broken, monitor, http):
    a, b = broken
    new_delivery(new_incident(monitor), a)
    send_due(NOW)
    evaluator.tick(NOW + s(600))
    evaluator.tick(NOW + s(600))  # another evaluator, the same moment
    evaluator.tick(NOW + s(601))
    assert list(IncidentEvent.objects.values_list("kind", flat=True)) == [
        "opened", "channel.failing"]
    send_due(NOW + s(601))
    assert [body["event"] for body in received(http, B)] == ["channel.failing"]


def test_a_delivery_that_fails_for_good_announces_it_at_once(broken, monitor, http, answers):
    a, b = broken
    answers[A] = 400
    new_delivery(new_incident(monitor), a)
    send_due(NOW)
    failing = IncidentEvent.objects.get(kind="channel.failing")
    assert failing.at == NOW
    a.refresh_from_db()
    assert (a.failing_notified_at, a.failing_check_at) == (NOW, None)
    new_delivery(new_incident(monitor), a, at=NOW + s(10))  # fails for good too
    send_due(NOW + s(10))
    assert health.check_due(NOW + s(600)) == 0
    send_due(NOW + s(600))
    assert received(http, B) == [notice("channel.failing", failing, a, "2025-01-01T12:00:06Z",
                                        "HTTP 400: boom", 0, "2025-01-01T12:00:06Z")]
    assert len(mail.outbox) == 1


def test_a_failure_that_heals_before_the_setting_is_never_announced(broken, monitor, http,
                                                                     answers, settings):
    settings.CRONRADAR_CHANNEL_FAILING_AFTER = 60
    a, b = broken
    new_delivery(new_incident(monitor), a)
    send_due(NOW)
    answers[A] = 200
    send_due(NOW + s(30))
    a.refresh_from_db()
    assert (a.failing_since, a.failing_check_at) == (None, None)
    assert health.check_due(NOW + s(60)) == 0
    send_due(NOW + s(60))
    assert received(http, B) == [] and mail.outbox == []
    assert not IncidentEvent.objects.filter(incident=None).exists()


def test_only_working_channels_are_told_and_the_admins_target_goes_once_sent(
        broken, monitor, http, project):
    a, b = broken
    c = Channel.objects.create(project=project, kind="webhook", name="Failing too",
                               config={"url": C, "secret": "k"}, failing_since=NOW)
    gone = Channel.objects.create(project=project, kind="webhook", config={"url": B,
                                                                           "secret": "k"},
                                  deleted_at=NOW)
    new_delivery(new_incident(monitor), a)
    send_due(NOW)
    health.check_due(NOW + s(600))
    [failing] = IncidentEvent.objects.filter(kind="channel.failing")
    targets = Channel.objects.filter(deliveries__event=failing)
    admins = targets.get(kind="email")
    assert sorted(targets.values_list("pk", flat=True)) == [b.pk, admins.pk]
    assert (admins.config, admins.deleted_at) == ({"to": ["ana@example.com",
                                                          "bob@example.com"]}, NOW + s(600))
    send_due(NOW + s(600))
    channels.purge_deleted()
    assert set(Channel.objects.values_list("pk", flat=True)) == {a.pk, b.pk, c.pk}
    assert gone.pk not in targets.values_list("pk", flat=True)


def test_without_admins_only_the_channels_are_told(project, monitor, http):
    a = Channel.objects.create(project=project, kind="webhook", name="Ops hook",
                               config={"url": A, "secret": "k"})
    Channel.objects.create(project=project, kind="webhook", config={"url": B, "secret": "k"})
    new_delivery(new_incident(monitor), a)
    send_due(NOW)
    assert health.check_due(NOW + s(600)) == 1
    send_due(NOW + s(600))
    assert [body["event"] for body in received(http, B)] == ["channel.failing"]
    assert mail.outbox == []


def test_a_failure_is_claimed_once_by_the_tick_or_a_dead_letter(broken):
    a, b = broken
    Channel.objects.filter(pk=a.pk).update(failing_since=NOW, failing_check_at=NOW + s(600))
    assert health.announce_failing(a.pk, NOW + s(5), due=True) is None  # not due yet
    assert health.announce_failing(a.pk, NOW + s(5)) is not None  # a dead letter
    assert health.announce_failing(a.pk, NOW + s(600), due=True) is None
    assert health.announce_failing(a.pk, NOW + s(601)) is None
    assert health.announce_recovered(a.pk, NOW, NOW + s(700)) is not None
    assert health.announce_recovered(a.pk, NOW, NOW + s(700)) is None
    assert list(IncidentEvent.objects.values_list("kind", flat=True)) == [
        "channel.failing", "channel.recovered"]


@pytest.mark.django_db(transaction=True)
def test_two_evaluators_ticking_at_the_same_moment_announce_it_once(broken):
    a, b = broken
    Channel.objects.filter(pk=a.pk).update(failing_since=NOW, failing_check_at=NOW + s(600),
                                           last_error="HTTP 500: boom")
    start = threading.Barrier(2)

    def evaluator_tick(_) -> int:
        try:
            start.wait(5)
            return health.check_due(NOW + s(600))
        finally:
            connections.close_all()

    with ThreadPoolExecutor(2) as evaluators:
        assert sorted(evaluators.map(evaluator_tick, range(2))) == [0, 1]
    [failing] = IncidentEvent.objects.filter(kind="channel.failing")
    assert sorted(Delivery.objects.filter(event=failing).values_list("channel__kind", flat=True)
                  ) == ["email", "webhook"]
