"""Escalation tiers, repeats, re-notification, acknowledgement and resolution,
driven through whole incidents with a controlled clock. Requests are answered by
respx; ``seen`` runs the delivery engine first."""
import httpx
import pytest

from alerts import incidents
from alerts.models import Alerting, Channel, EscalationPolicy, EscalationTier, Incident
from monitors import evaluator
from monitors.pings import PingInput, ingest
from tests.alerts.conftest import ONE, PD, TWO, seen
from tests.conftest import T0, s, send_due

pytestmark = pytest.mark.django_db


def policy(project, tiers, repeat=0):
    name = f"p{EscalationPolicy.objects.count()}"
    p = EscalationPolicy.objects.create(project=project, name=name, repeat=repeat)
    for position, (delay, chans) in enumerate(tiers):
        EscalationTier.objects.create(policy=p, position=position, delay=s(delay)).channels.set(
            chans)
    return p


def monitor_with(make_monitor, p, **alerting):
    m = make_monitor(period=s(3600), grace=s(60), all_channels=True)
    Alerting.objects.create(monitor=m, escalation_policy=p, **alerting)
    m.refresh_from_db()
    return m


def tick(at):
    evaluator.tick(at)


def test_two_tiers_with_a_repeat_then_silence(project, channels, make_monitor, http):
    one, two, pd = channels
    m = monitor_with(make_monitor, policy(project, [(60, [one]), (600, [two, pd])], repeat=1))
    ingest(m.pk, PingInput("fail"), T0)
    incident = Incident.objects.get()
    assert (incident.tier, incident.next_escalation_at) == (-1, T0 + s(60))
    assert seen(http, T0) == []  # tier 1 waits for its delay
    tick(T0 + s(59))
    assert seen(http, T0 + s(59)) == []
    tick(T0 + s(60))
    assert seen(http, T0 + s(60)) == [(ONE, "incident.escalated")]
    tick(T0 + s(660))
    assert seen(http, T0 + s(660))[1:] == [(TWO, "incident.escalated"), (PD, "trigger")]
    tick(T0 + s(720))  # the repeat: tier 1 again, 60 s after tier 2
    tick(T0 + s(1320))
    tick(T0 + s(99999))  # nothing after the repeat
    assert seen(http, T0 + s(99999))[3:] == [
        (ONE, "incident.escalated"), (TWO, "incident.escalated"), (PD, "trigger")]
    incident.refresh_from_db()
    assert (incident.tier, incident.round, incident.next_escalation_at) == (1, 1, None)
    steps = list(incident.events.exclude(step=None).values_list("step", "at", "detail__reason"))
    assert steps == [
        ("opened", T0, None),
        ("tier:0:0", T0 + s(60), "60s after the incident opened"),
        ("tier:1:0", T0 + s(660), "not acknowledged after tier 1"),
        ("tier:0:1", T0 + s(720), "not acknowledged after tier 2"),
        ("tier:1:1", T0 + s(1320), "not acknowledged after tier 1")]
    # a good run resolves it on every channel that was told
    ingest(m.pk, PingInput("success"), T0 + s(99999))
    assert sorted(seen(http, T0 + s(99999))[6:]) == [
        (ONE, "incident.resolved"), (PD, "resolve"), (TWO, "incident.resolved")]


def test_a_first_tier_without_delay_is_told_as_the_incident_opens(project, channels,
                                                                  make_monitor, http):
    one, two, _ = channels
    m = monitor_with(make_monitor, policy(project, [(0, [one]), (300, [two])]))
    ingest(m.pk, PingInput("fail"), T0)
    assert seen(http, T0) == [(ONE, "incident.opened")]
    incident = Incident.objects.get()
    assert (incident.tier, incident.next_escalation_at) == (0, T0 + s(300))
    assert incident.events.get(kind="opened").detail["tier"] == 1


def test_acknowledging_stops_escalation_and_tells_the_notified(project, channels,
                                                                make_monitor, http):
    from alerts.incidents import acknowledge

    one, two, pd = channels
    m = monitor_with(make_monitor, policy(project, [(0, [one, pd]), (300, [two])], repeat=3))
    ingest(m.pk, PingInput("fail"), T0)
    incident = acknowledge(Incident.objects.get().pk, "ana", "on it", T0 + s(100))
    assert (incident.acknowledged_by, incident.next_escalation_at) == ("ana", None)
    tick(T0 + s(5000))
    assert sorted(seen(http, T0 + s(5000))) == sorted([
        (ONE, "incident.opened"), (PD, "trigger"),
        (ONE, "incident.acknowledged"), (PD, "acknowledge")])
    event = incident.events.get(kind="acknowledged")
    assert (event.message, event.at) == ("acknowledged by ana: on it", T0 + s(100))
    assert acknowledge(incident.pk, "bob", "", T0 + s(200)).acknowledged_by == "ana"  # once


def test_low_urgency_tells_the_first_tier_only(project, channels, make_monitor, http):
    one, two, _ = channels
    m = monitor_with(make_monitor, policy(project, [(0, [one]), (300, [two])], repeat=2),
                     urgency="low")
    ingest(m.pk, PingInput("fail"), T0)
    assert Incident.objects.get().next_escalation_at is None
    tick(T0 + s(10000))
    assert seen(http, T0 + s(10000)) == [(ONE, "incident.opened")]


def test_renotify_sends_again_to_the_last_tier_reached(project, channels, make_monitor, http):
    one, two, _ = channels
    m = monitor_with(make_monitor, policy(project, [(0, [one]), (300, [two])]),
                     renotify=s(3600))
    ingest(m.pk, PingInput("fail"), T0)
    for at in (300, 3900, 7500):
        tick(T0 + s(at))
    assert seen(http, T0 + s(7500)) == [
        (ONE, "incident.opened"), (TWO, "incident.escalated"),
        (TWO, "incident.renotified"), (TWO, "incident.renotified")]
    assert Incident.objects.get().next_escalation_at == T0 + s(11100)


def test_without_a_policy_renotify_goes_to_the_monitors_channels(project, channels,
                                                                 make_monitor, http):
    one = channels[0]
    m = make_monitor(period=s(3600), grace=s(60), channels=[one])
    Alerting.objects.filter(monitor=m).update(renotify=s(1800))
    m.refresh_from_db()
    ingest(m.pk, PingInput("fail"), T0)
    tick(T0 + s(1800))
    assert seen(http, T0 + s(1800)) == [(ONE, "incident.opened"), (ONE, "incident.renotified")]


def test_a_tier_whose_notifications_all_fail_escalates_at_once(project, channels,
                                                               make_monitor, http):
    one, two, _ = channels
    http.post(ONE).mock(return_value=httpx.Response(400))  # refused for good
    m = monitor_with(make_monitor, policy(project, [(0, [one]), (900, [two])]))
    ingest(m.pk, PingInput("fail"), T0)
    send_due(T0 + s(1))
    assert Incident.objects.get().next_escalation_at == T0 + s(1)
    tick(T0 + s(2))
    assert seen(http, T0 + s(2))[-1] == (TWO, "incident.escalated")
    assert Incident.objects.get().events.get(step="tier:1:0").detail["reason"] == (
        "every notification of tier 1 failed")


def test_a_step_is_taken_once_even_if_two_evaluators_race(project, channels, make_monitor,
                                                          http):
    one, two, _ = channels
    m = monitor_with(make_monitor, policy(project, [(0, [one]), (300, [two])]))
    ingest(m.pk, PingInput("fail"), T0)
    incident = Incident.objects.get()
    # the other evaluator took the step and committed, this one still sees it due
    incident.events.create(kind="escalated", at=T0 + s(300), step="tier:1:0")
    assert incidents.escalate_due(T0 + s(300)) == 0
    assert incident.deliveries.filter(channel=two).count() == 0  # nothing sent twice


def test_a_tier_with_no_channel_left_says_so(project, channels, make_monitor, http):
    one, two, _ = channels
    m = monitor_with(make_monitor, policy(project, [(0, [one]), (60, [two])]))
    Channel.objects.filter(pk=one.pk).update(deleted_at=T0)  # gone before it was notified
    ingest(m.pk, PingInput("fail"), T0)
    tick(T0 + s(60))
    assert seen(http, T0 + s(60)) == [(TWO, "incident.escalated")]
    assert Incident.objects.get().events.get(step="tier:1:0").message == (
        "tier 2 notified: tier 1 had no channel left to notify")
