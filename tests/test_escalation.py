"""Escalation tiers, repeats, re-notification, acknowledgement and resolution,
driven through whole incidents with a controlled clock. Requests are answered by
respx; ``sent`` runs the delivery engine first."""
import json
from datetime import timedelta

import httpx
import pytest
import respx
from django.utils import timezone

from alerts import incidents
from alerts.models import Alerting, Channel, EscalationPolicy, EscalationTier, Incident
from monitors import evaluator
from monitors.pings import PingInput, ingest
from tests.conftest import T0, send_due

pytestmark = pytest.mark.django_db
ONE, TWO, PD = "https://one.test/h", "https://two.test/h", "https://pd.test/v2/enqueue"


def s(n):
    return timedelta(seconds=n)


@pytest.fixture
def http():
    with respx.mock(assert_all_called=False) as router:
        for url in (ONE, TWO):
            router.post(url).mock(return_value=httpx.Response(200))
        router.post(PD).mock(return_value=httpx.Response(202))
        yield router


def seen(http, now):
    """What each receiver got so far: [(url, event or PagerDuty action, tier)]."""
    send_due(now)
    out = []
    for call in http.calls:
        body = json.loads(call.request.content)
        what = body.get("event_action") or body["event"]
        out.append((str(call.request.url), what))
    return out


@pytest.fixture
def channels(project):
    return (Channel.objects.create(project=project, kind="webhook", config={"url": ONE,
                                                                           "secret": "k"}),
            Channel.objects.create(project=project, kind="webhook", config={"url": TWO,
                                                                           "secret": "k"}),
            Channel.objects.create(project=project, kind="pagerduty",
                                   config={"routing_key": "R", "events_url": PD}))


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


# --- the API ----------------------------------------------------------------------------

def test_policies_through_the_api(api, channels, project):
    one, two, pd = channels
    created = api.post("/api/v1/escalation-policies/", {
        "name": "on-call", "repeat": 2,
        "tiers": [{"delay": 0, "channels": [one.pk]},
                  {"delay": 600, "channels": [two.pk, pd.pk]}]}, format="json")
    assert created.status_code == 201, created.json()
    body = created.json()
    assert (body["name"], body["repeat"], body["monitors"]) == ("on-call", 2, [])
    assert body["tiers"] == [{"delay": 0, "channels": [one.pk]},
                             {"delay": 600, "channels": sorted([two.pk, pd.pk])}]
    url = f"/api/v1/escalation-policies/{body['id']}/"
    changed = api.patch(url, {"tiers": [{"delay": 30, "channels": [two.pk]}]}, format="json")
    assert changed.json()["tiers"] == [{"delay": 30, "channels": [two.pk]}]
    assert api.delete(f"/api/v1/channels/{two.pk}/").json() == {
        "detail": "the only channel of tier 1 of escalation policy 'on-call': change the "
                  "policy first"}
    api.patch(url, {"tiers": [{"delay": 30, "channels": [two.pk, pd.pk]}]}, format="json")
    assert api.delete(f"/api/v1/channels/{two.pk}/").status_code == 204  # pd is left
    assert api.get(url).json()["tiers"] == [{"delay": 30, "channels": [pd.pk]}]
    for bad, field, message in [
        ({"name": "x", "tiers": []}, "tiers", "Ensure this field has at least 1 elements."),
        ({"name": "x", "tiers": [{"delay": 0, "channels": [999]}]}, "tiers", "no channel"),
        ({"name": "x", "repeat": 10, "tiers": [{"delay": 0, "channels": [one.pk]}]}, "repeat",
         "less than or equal to 9"),
        ({"name": "on-call", "tiers": [{"delay": 0, "channels": [one.pk]}]}, "name", "exists"),
        ({"name": "x", "tiers": [{"delay": -1, "channels": [one.pk]}]}, "tiers", "at least 0"),
    ]:
        resp = api.post("/api/v1/escalation-policies/", bad, format="json")
        assert resp.status_code == 400 and message in json.dumps(resp.json()[field]), resp.json()


def test_a_monitors_alerting_settings(api, channels, project):
    one = channels[0]
    p = api.post("/api/v1/escalation-policies/", {
        "name": "p", "tiers": [{"delay": 0, "channels": [one.pk]}]}, format="json").json()
    m = api.post("/api/v1/monitors/", {"name": "m", "period": 60, "grace": 5}, format="json")
    assert {k: m.json()[k] for k in ("escalation_policy", "urgency", "severity", "renotify")} == {
        "escalation_policy": None, "urgency": "high", "severity": None, "renotify": None}
    url = f"/api/v1/monitors/{m.json()['id']}/"
    resp = api.patch(url, {"escalation_policy": p["id"], "urgency": "low", "severity": "error",
                           "renotify": 3600}, format="json").json()
    assert (resp["escalation_policy"], resp["urgency"], resp["severity"], resp["renotify"]) == (
        p["id"], "low", "error", 3600)
    assert api.get(f"/api/v1/escalation-policies/{p['id']}/").json()["monitors"] == [
        m.json()["id"]]
    delete = api.delete(f"/api/v1/escalation-policies/{p['id']}/")
    assert delete.status_code == 400 and "in use by monitors" in delete.json()["detail"]
    for field, value, message in [("escalation_policy", 999, "no escalation policy"),
                                  ("urgency", "medium", "not a valid choice"),
                                  ("renotify", 10, "at least 60")]:
        resp = api.patch(url, {field: value}, format="json")
        assert resp.status_code == 400 and message in resp.json()[field][0]
    assert api.patch(url, {"escalation_policy": None, "severity": None},
                     format="json").json()["severity"] is None
    assert api.delete(f"/api/v1/escalation-policies/{p['id']}/").status_code == 204


def test_ack_and_resolve_through_the_api(api, channels, make_monitor, http, project):
    from accounts.models import ApiKey

    ApiKey.objects.update(name="deploy bot")
    one = channels[0]
    m = make_monitor(period=s(3600), grace=s(60), channels=[one])
    ingest(m.pk, PingInput("fail"), T0)
    incident = Incident.objects.get()
    acked = api.post(f"/api/v1/incidents/{incident.pk}/ack/", {"note": "looking"},
                     format="json").json()
    assert (acked["acknowledged_by"], acked["tier"]) == ("deploy bot", 1)
    assert [e["kind"] for e in acked["events"]] == ["opened", "acknowledged"]
    resolved = api.post(f"/api/v1/incidents/{incident.pk}/resolve/", {"by": "ana"},
                        format="json").json()
    assert resolved["resolution"] == "resolved by ana"
    assert api.post(f"/api/v1/incidents/{incident.pk}/ack/").status_code == 409
    assert api.post("/api/v1/incidents/999/ack/").status_code == 404
    assert api.post(f"/api/v1/incidents/{incident.pk}/ack/", {"by": "x" * 201},
                    format="json").status_code == 400
    assert seen(http, timezone.now() + s(1)) == [
        (ONE, "incident.opened"), (ONE, "incident.acknowledged"), (ONE, "incident.resolved")]


def test_a_tier_with_no_channel_left_says_so(project, channels, make_monitor, http):
    one, two, _ = channels
    m = monitor_with(make_monitor, policy(project, [(0, [one]), (60, [two])]))
    Channel.objects.filter(pk=one.pk).update(deleted_at=T0)  # gone before it was notified
    ingest(m.pk, PingInput("fail"), T0)
    tick(T0 + s(60))
    assert seen(http, T0 + s(60)) == [(TWO, "incident.escalated")]
    assert Incident.objects.get().events.get(step="tier:1:0").message == (
        "tier 2 notified: tier 1 had no channel left to notify")
