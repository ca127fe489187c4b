"""alerts.integrations.pagerduty: exact Events API v2 requests (trigger, resolve,
acknowledge, change events), severities, and channel config validation."""
import json

import pytest

from alerts.integrations import OutgoingRequest, pagerduty
from alerts.models import Channel, Incident, IncidentEvent
from tests.alerts.integrations.conftest import (
    BASE,
    BROKEN,
    BROKEN_PAGE,
    DEDUP,
    FAILING_TEXT,
    FAILING_TITLE,
    JSON_HEADERS,
    OPENED,
    OUTAGE_TEXT,
    RESOLVED,
    TAIL,
    TEST_TEXT,
    canonical,
    channel,
    channel_page,
    context,
)
from tests.helpers import runs_of, slow_monitor


def test_pagerduty_trigger(project, incident, opened):
    ch = channel(project, "pagerduty", routing_key="R" * 32)

    req = pagerduty.build_request(ch, opened)

    assert req == OutgoingRequest(
        url="https://events.pagerduty.com/v2/enqueue",
        body=canonical({
            "routing_key": "R" * 32,
            "event_action": "trigger",
            "dedup_key": DEDUP,
            "links": [{"href": context(incident)["links"]["acknowledge"], "text": "Acknowledge"},
                      {"href": f"{BASE}/incidents/{incident.pk}/", "text": "Incident"},
                      {"href": f"{BASE}/monitors/{incident.monitor_id}/", "text": "Monitor"}],
            "payload": {
                "summary": "Nightly backup: no ping within 60s + 5s grace",
                "source": "acme/nightly-backup",
                "severity": "critical",
                "timestamp": "2025-01-01T12:00:05Z",
                "component": "nightly-backup",
                "group": "acme",
                "class": "missed",
                "custom_details": {
                    "monitor": "Nightly backup",
                    "monitor_uuid": "5a6b7c8d-1111-4222-8333-444455556666",
                    "tags": ["db", "prod"],
                    "incident_id": incident.pk,
                    "missed_count": 1,
                    "failure_count": 0,
                    "scheduled_at": "2025-01-01T13:00:00+01:00",
                    "last_ping_at": "2025-01-01T12:00:04Z",
                    "run_duration": 3,
                    "last_ping_body": TAIL,
                },
            },
        }),
        headers=JSON_HEADERS,
    )


def test_pagerduty_resolve_carries_only_the_key(project, resolved):
    ch = channel(project, "pagerduty", routing_key="R" * 32,
                 events_url="https://pd.internal.example/v2/enqueue")

    req = pagerduty.build_request(ch, resolved)

    assert req == OutgoingRequest(
        url="https://pd.internal.example/v2/enqueue",
        body=canonical({"routing_key": "R" * 32, "event_action": "resolve", "dedup_key": DEDUP}),
        headers=JSON_HEADERS,
    )


def test_pagerduty_events_url_follows_setting(project, opened, settings):
    settings.CRONRADAR_PAGERDUTY_EVENTS_URL = "http://127.0.0.1:9999/v2/enqueue"
    req = pagerduty.build_request(channel(project, "pagerduty", routing_key="k"), opened)
    assert req.url == "http://127.0.0.1:9999/v2/enqueue"


def test_pagerduty_dedup_key_is_stable_per_incident(project, incident, resolved):
    ch = channel(project, "pagerduty", routing_key="k")
    keys = {json.loads(pagerduty.build_request(ch, ev).body)["dedup_key"]
            for ev in incident.events.all()}
    assert keys == {DEDUP}


@pytest.mark.parametrize(("cause", "chosen", "severity"), [
    ("missed", "", "critical"), ("stuck", "", "critical"), ("deadline", "", "critical"),
    ("failed", "", "critical"), ("overlap", "", "warning"), ("too_fast", "", "warning"),
    ("slow", "", "warning"), ("missed", "info", "info"), ("overlap", "error", "error"),
])
def test_pagerduty_severity(project, monitor, cause, chosen, severity):
    from alerts.incidents import severity as severity_of
    from alerts.models import Alerting

    Alerting.objects.create(monitor=monitor, severity=chosen)
    monitor.refresh_from_db()
    inc = Incident.objects.create(monitor=monitor, cause=cause, summary="x", opened_at=OPENED,
                                  severity=severity_of(monitor, cause))
    event = IncidentEvent.objects.create(incident=inc, kind="opened", at=OPENED)
    payload = json.loads(pagerduty.build_request(channel(project, "pagerduty", routing_key="k"),
                                                 event).body)["payload"]
    assert (payload["severity"], payload["class"]) == (severity, cause)


def test_pagerduty_validate_config():
    assert pagerduty.validate_config({"routing_key": " abc "}) == {"routing_key": "abc"}
    assert pagerduty.validate_config(
        {"routing_key": "abc", "events_url": "https://pd.example/v2/enqueue"}
    ) == {"routing_key": "abc", "events_url": "https://pd.example/v2/enqueue"}
    for config, message in [
        ({}, "routing_key: this field is required"),
        ({"routing_key": "  "}, "routing_key: this field is required"),
        ({"routing_key": 123}, "routing_key: must be a string of at most 255 characters"),
        ({"routing_key": "abc", "events_url": "nope"}, "events_url: must be an http(s) URL"),
        ({"routing_key": "abc", "url": "https://x.test"}, "url: unknown field"),
    ]:
        with pytest.raises(ValueError) as exc:
            pagerduty.validate_config(config)
        assert str(exc.value) == message


def test_pagerduty_channel_removed_is_a_resolve(project, removed):
    req = pagerduty.build_request(channel(project, "pagerduty", routing_key="R"), removed)
    assert json.loads(req.body) == {"routing_key": "R", "event_action": "resolve",
                                    "dedup_key": DEDUP}


def test_pagerduty_outage_summary_is_a_change_event(project, outage_notice):
    req = pagerduty.build_notice(channel(project, "pagerduty", routing_key="R"), outage_notice)
    assert req == OutgoingRequest(
        url="https://events.pagerduty.com/v2/change/enqueue",
        body=canonical({"routing_key": "R", "payload": {
            "summary": OUTAGE_TEXT, "source": "cronradar", "timestamp": "2025-01-01T12:03:00Z",
            "custom_details": {"project": "acme", "outage_started_at": "2025-01-01T12:00:05Z",
                               "outage_ended_at": "2025-01-01T12:00:20Z",
                               "unknown_slots": 6}}}),
        headers=JSON_HEADERS)


def test_pagerduty_acknowledge_and_escalation(project, incident, opened):
    ch = channel(project, "pagerduty", routing_key="R")
    ack = IncidentEvent.objects.create(incident=incident, kind="acknowledged", at=RESOLVED,
                                       message="acknowledged by ana")
    assert json.loads(pagerduty.build_request(ch, ack).body) == {
        "routing_key": "R", "event_action": "acknowledge", "dedup_key": DEDUP}
    up = IncidentEvent.objects.create(incident=incident, kind="escalated", at=RESOLVED,
                                      message="tier 2 notified")
    body = json.loads(pagerduty.build_request(ch, up).body)
    assert (body["event_action"], body["dedup_key"]) == ("trigger", DEDUP)


@pytest.mark.django_db
def test_pagerduty_gets_a_new_trigger_with_the_raised_severity(make_monitor, project):
    m = slow_monitor(make_monitor)
    runs_of(m, [60] * 20 + [200, -1])
    incident = Incident.objects.get()
    ch = Channel.objects.create(project=project, kind="pagerduty", config={"routing_key": "k"})
    docs = [json.loads(pagerduty.build_request(ch, incident.events.get(kind=k)).body)
            for k in ("opened", "escalated")]
    assert {d["event_action"] for d in docs} == {"trigger"}
    assert {d["dedup_key"] for d in docs} == {str(incident.dedup_key)}
    assert (docs[1]["payload"]["severity"], docs[1]["payload"]["class"]) == ("critical",
                                                                            "failed")


def test_pagerduty_test_notification_and_its_close(test_notice):
    ch, notice = test_notice("pagerduty", routing_key="R")
    assert json.loads(pagerduty.build_notice(ch, notice).body) == {
        "routing_key": "R", "event_action": "trigger", "dedup_key": f"cronradar-test-{ch.pk}",
        "links": [{"href": channel_page(ch), "text": "Channel"}],
        "payload": {"summary": TEST_TEXT, "source": "cronradar", "severity": "info",
                    "timestamp": "2025-01-01T12:00:05Z", "class": "test",
                    "custom_details": {"event_id": notice.pk}}}
    close = pagerduty.build_test_close(ch, notice)
    assert (close.url, json.loads(close.body)) == ("https://events.pagerduty.com/v2/enqueue", {
        "routing_key": "R", "event_action": "resolve", "dedup_key": f"cronradar-test-{ch.pk}"})


def test_pagerduty_refuses_a_notice_kind_it_does_not_know(project):
    notice = IncidentEvent.objects.create(kind="resolved", project=project, at=OPENED)
    with pytest.raises(ValueError, match="notice kind 'resolved' has no builder"):
        pagerduty.build_notice(channel(project, "pagerduty", routing_key="R"), notice)


def test_pagerduty_channel_notice_is_a_change_event(project, failing):
    req = pagerduty.build_notice(channel(project, "pagerduty", routing_key="R"), failing)
    assert req == OutgoingRequest(
        url="https://events.pagerduty.com/v2/change/enqueue",
        body=canonical({
            "routing_key": "R", "links": [{"href": BROKEN_PAGE, "text": "Channel"}],
            "payload": {
                "summary": f"{FAILING_TITLE}. {FAILING_TEXT}", "source": "cronradar",
                "timestamp": "2025-01-01T12:03:00Z",
                "custom_details": {"event": "channel.failing", "event_id": failing.pk,
                                   "channel": BROKEN, "project": "acme"}}}),
        headers=JSON_HEADERS)
