"""alerts.integrations.webhook: exact signed requests of each event, and channel
config validation."""
import hashlib
import hmac
import json

import pytest

from alerts.integrations import OutgoingRequest, webhook
from alerts.models import IncidentEvent
from tests.alerts.integrations.conftest import (
    BROKEN,
    DEDUP,
    JSON_HEADERS,
    RESOLVED,
    SECRET,
    canonical,
    channel,
    context,
)


def webhook_document(event, incident, event_name, occurred_at, resolved_at=None, resolution=""):
    return {
        "schema": "cronradar.incident.v1",
        "event": event_name,
        "event_id": event.pk,
        "occurred_at": occurred_at,
        "message": event.message,
        "context": context(incident),
        "incident": {
            "id": incident.pk,
            "cause": "missed",
            "summary": "Nightly backup: no ping within 60s + 5s grace",
            "opened_at": "2025-01-01T12:00:05Z",
            "resolved_at": resolved_at,
            "resolution": resolution,
            "missed_count": 1,
            "failure_count": 0,
            "dedup_key": DEDUP,
            "severity": "critical",
            "acknowledged_at": None,
            "acknowledged_by": "",
        },
        "monitor": {
            "id": incident.monitor.pk,
            "uuid": "5a6b7c8d-1111-4222-8333-444455556666",
            "name": "Nightly backup",
            "slug": "nightly-backup",
            "project": "acme",
            "tags": ["db", "prod"],
        },
    }


def test_webhook_opened(project, incident, opened):
    ch = channel(project, "webhook", url="https://hooks.example.com/cr", secret=SECRET)

    req = webhook.build_request(ch, opened)

    expected = webhook_document(opened, incident, "incident.opened", "2025-01-01T12:00:05Z")
    assert req.url == "https://hooks.example.com/cr"
    assert json.loads(req.body) == expected
    assert req.body == canonical(expected)
    digest = hmac.new(SECRET.encode(), req.body, hashlib.sha256).hexdigest()
    assert req.headers == {
        **JSON_HEADERS,
        "X-CronRadar-Event": "incident.opened",
        "X-CronRadar-Signature": f"sha256={digest}",
    }


def test_webhook_resolved(project, incident, resolved):
    ch = channel(project, "webhook", url="https://hooks.example.com/cr", secret=SECRET)

    req = webhook.build_request(ch, resolved)

    expected = webhook_document(resolved, incident, "incident.resolved", "2025-01-01T12:03:00Z",
                                resolved_at="2025-01-01T12:03:00Z", resolution="ping received")
    assert req.body == canonical(expected)
    digest = hmac.new(SECRET.encode(), req.body, hashlib.sha256).hexdigest()
    assert req.headers == {
        **JSON_HEADERS,
        "X-CronRadar-Event": "incident.resolved",
        "X-CronRadar-Signature": f"sha256={digest}",
    }


def test_webhook_signature_depends_on_secret(project, opened):
    a, b = (webhook.build_request(channel(project, "webhook", url="https://x.test/", secret=s),
                                  opened) for s in ("a", "b"))
    assert a.body == b.body
    assert a.headers["X-CronRadar-Signature"] != b.headers["X-CronRadar-Signature"]


def test_webhook_keeps_non_ascii_as_utf8(project, monitor, incident, opened):
    monitor.name = "Sauvegarde nocturne é"
    monitor.save()
    req = webhook.build_request(
        channel(project, "webhook", url="https://x.test/", secret=SECRET),
        IncidentEvent.objects.get(pk=opened.pk),
    )
    assert '"name":"Sauvegarde nocturne é"'.encode() in req.body


def test_webhook_validate_config_generates_a_secret():
    config = webhook.validate_config({"url": "https://hooks.example.com/cr"})
    assert config["url"] == "https://hooks.example.com/cr"
    assert len(config["secret"]) == 48
    assert set(config["secret"]) <= set("0123456789abcdef")


def test_webhook_validate_config_keeps_given_secret():
    assert webhook.validate_config({"url": " http://10.0.0.5:8080/x ", "secret": "abc"}) == {
        "url": "http://10.0.0.5:8080/x", "secret": "abc",
    }


@pytest.mark.parametrize(("config", "message"), [
    ({}, "url: this field is required"),
    ({"url": ""}, "url: this field is required"),
    ({"url": "ftp://example.com/x"}, "url: must be an http(s) URL"),
    ({"url": "https://"}, "url: must be an http(s) URL"),
    ({"url": "https://x.test/", "secret": ""}, "secret: must be a string of 1 to 256 characters"),
    ({"url": "https://x.test/", "secret": 5}, "secret: must be a string of 1 to 256 characters"),
    ({"url": "https://x.test/", "secret": "k" * 257},
     "secret: must be a string of 1 to 256 characters"),
    ({"url": 5}, "url: must be a string"),
    ({"url": "https://x.test/" + "a" * 2048}, "url: must be at most 2048 characters"),
    ({"url": "https://x.test/a b"}, "url: must not contain spaces or control characters"),
    ({"url": "https://x.test/\x00"}, "url: NUL characters are not allowed"),
    ({"url": "https://x.test/", "extra": 1}, "extra: unknown field"),
    (["https://x.test/"], "config: must be an object"),
])
def test_webhook_validate_config_errors(config, message):
    with pytest.raises(ValueError) as exc:
        webhook.validate_config(config)
    assert str(exc.value) == message


def test_webhook_channel_removed(project, incident, removed):
    req = webhook.build_request(channel(project, "webhook", url="https://x.test/", secret=SECRET),
                                removed)
    assert req.headers["X-CronRadar-Event"] == "incident.channel_removed"
    assert json.loads(req.body) == webhook_document(removed, incident, "incident.channel_removed",
                                                    "2025-01-01T12:03:00Z")


def test_webhook_outage_summary(project, outage_notice):
    req = webhook.build_notice(channel(project, "webhook", url="https://x.test/", secret=SECRET),
                               outage_notice)
    body = canonical({
        "schema": "cronradar.outage.v2", "event": "outage.summary",
        "event_id": outage_notice.pk, "occurred_at": "2025-01-01T12:03:00Z",
        "outage": {"started_at": "2025-01-01T12:00:05Z", "ended_at": "2025-01-01T12:00:20Z",
                   "unknown_slots": 6},
        "project": "acme"})
    signature = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert req == OutgoingRequest(url="https://x.test/", body=body, headers={
        **JSON_HEADERS, "X-CronRadar-Event": "outage.summary",
        "X-CronRadar-Signature": f"sha256={signature}"})


def test_webhook_validate_config_keeps_the_stored_secret_on_a_change():
    assert webhook.validate_config({"url": "https://new.test/"},
                                   {"url": "https://old.test/", "secret": "kept"}) == {
        "url": "https://new.test/", "secret": "kept"}


def test_webhook_escalated(project, incident, opened):
    up = IncidentEvent.objects.create(incident=incident, kind="escalated", at=RESOLVED,
                                      message="tier 2 notified: not acknowledged after tier 1")
    req = webhook.build_request(channel(project, "webhook", url="https://x.test/",
                                        secret=SECRET), up)
    assert req.headers["X-CronRadar-Event"] == "incident.escalated"
    assert json.loads(req.body) == webhook_document(up, incident, "incident.escalated",
                                                    "2025-01-01T12:03:00Z")


@pytest.mark.parametrize("notice", ["failing", "recovered"])
def test_webhook_channel_notice(project, notice, request):
    event = request.getfixturevalue(notice)
    req = webhook.build_notice(channel(project, "webhook", url="https://x.test/", secret=SECRET),
                               event)
    body = canonical({
        "schema": "cronradar.channel.v1", "event": f"channel.{notice}", "event_id": event.pk,
        "occurred_at": "2025-01-01T12:03:00Z", "channel": BROKEN, "project": "acme"})
    signature = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert req == OutgoingRequest(url="https://x.test/", body=body, headers={
        **JSON_HEADERS, "X-CronRadar-Event": f"channel.{notice}",
        "X-CronRadar-Signature": f"sha256={signature}"})
