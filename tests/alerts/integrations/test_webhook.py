"""alerts.integrations.webhook: exact signed requests of each event, and channel
config validation."""
import base64
import hashlib
import hmac
import json
import shutil
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from django.utils import timezone

from alerts.delivery import transmit
from alerts.integrations import OutgoingRequest, slack, webhook
from alerts.models import Channel, Delivery, IncidentEvent
from tests.alerts.integrations.conftest import (
    BROKEN,
    BROKEN_PAGE,
    DEDUP,
    JSON_HEADERS,
    OPENED,
    RESOLVED,
    SECRET,
    canonical,
    channel,
    context,
)
from tests.conftest import send_due
from tests.helpers import spec_verify


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
        "webhook-id": str(opened.pk),
    }
    assert req.signing_key == SECRET.encode()


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
        "webhook-id": str(resolved.pk),
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
    assert len(config["secret"]) == 64  # 32 random bytes, hex
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
        "X-CronRadar-Signature": f"sha256={signature}",
        "webhook-id": str(outage_notice.pk)}, signing_key=SECRET.encode())


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


# --- Standard Webhooks ------------------------------------------------------------------

SENT_AT = datetime(2025, 1, 1, 12, 0, 7, 600_000, tzinfo=UTC)


def test_webhook_is_signed_as_standard_webhooks_says_for_the_attempt_time(project, opened):
    ch = channel(project, "webhook", url="https://x.test/", secret=SECRET)
    req = webhook.build_request(ch, opened)
    sent = req.stamped(SENT_AT)
    signed = f"{opened.pk}.1735732807.".encode() + req.body
    signature = base64.b64encode(hmac.new(SECRET.encode(), signed, hashlib.sha256).digest())
    assert sent.headers == {**req.headers, "webhook-id": str(opened.pk),
                            "webhook-timestamp": "1735732807",
                            "webhook-signature": f"v1,{signature.decode()}"}
    assert sent.body == req.body
    assert sent.headers["X-CronRadar-Signature"] == req.headers["X-CronRadar-Signature"]
    secret = webhook.signing_secret(SECRET)
    assert secret == "whsec_" + base64.b64encode(SECRET.encode()).decode()
    assert spec_verify(secret, sent.headers, sent.body, SENT_AT)["event_id"] == opened.pk
    with pytest.raises(ValueError, match="no matching signature"):
        spec_verify(secret, sent.headers, sent.body + b" ", SENT_AT)
    with pytest.raises(ValueError, match="tolerance"):
        spec_verify(secret, sent.headers, sent.body, SENT_AT + timedelta(minutes=6))


def test_other_kinds_are_not_stamped(project, opened):
    req = slack.build_request(channel(project, "slack", url="https://h.test/x"), opened)
    assert req.signing_key is None and req.stamped(SENT_AT) is req


def test_each_attempt_is_signed_when_it_starts(project, opened):
    """A retry after a backoff carries its own timestamp and signature."""
    ch = channel(project, "webhook", url="https://x.test/", secret=SECRET)
    Delivery.objects.create(event=opened, incident=opened.incident, channel=ch,
                            created_at=OPENED, next_attempt_at=OPENED)
    answers = iter([httpx.Response(503), httpx.Response(200)])
    seen = []

    def handler(request):
        seen.append(request)
        return next(answers)

    transport = httpx.MockTransport(handler)
    first, later = OPENED + timedelta(seconds=1), OPENED + timedelta(minutes=10)
    assert send_due(first, transport) == 1
    Delivery.objects.update(next_attempt_at=later)
    assert send_due(later, transport) == 1
    assert Delivery.objects.get().status == "delivered"
    secret = webhook.signing_secret(SECRET)
    assert [r.headers["webhook-timestamp"] for r in seen] == [
        str(int(first.timestamp())), str(int(later.timestamp()))]
    assert [r.headers["webhook-id"] for r in seen] == [str(opened.pk)] * 2
    for request, at in zip(seen, (first, later), strict=True):
        assert spec_verify(secret, dict(request.headers), request.content, at)["event_id"] == (
            opened.pk)
    with pytest.raises(ValueError, match="tolerance"):  # the first one's would be stale now
        spec_verify(secret, dict(seen[0].headers), seen[0].content, later)


EXAMPLES = Path(__file__).resolve().parents[3] / "docs" / "examples"


@pytest.fixture(params=[[sys.executable, "verify_webhook.py"], ["node", "verify_webhook.mjs"]],
                ids=["python", "node"])
def example_receiver(request, project):
    """A docs/examples receiver running with a webhook channel's signing secret:
    (channel, its URL)."""
    ch = channel(project, "webhook", url="http://127.0.0.1:1/", secret=Channel.new_secret())
    command, name = request.param
    command = shutil.which(command) or command  # Node.js: .ci/run installs it when missing
    proc = subprocess.Popen([command, str(EXAMPLES / name), "0"], cwd=EXAMPLES, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={"PATH": "/usr/bin:/bin",
                                 "WEBHOOK_SECRET": webhook.signing_secret(ch.config["secret"])})
    try:
        port = proc.stdout.readline().split()[-1]
        ch.config["url"] = f"http://127.0.0.1:{port}/hook"
        yield ch
    finally:
        proc.kill()
        proc.wait()


def test_the_documented_examples_verify_a_real_signed_request(example_receiver, opened):
    """Each example accepts a notification as CronRadar sends it, and refuses a
    tampered body and a timestamp 6 minutes old."""
    req = webhook.build_request(example_receiver, opened)
    now = timezone.now()
    assert transmit(req, at=now) == (204, "", False, None)
    assert transmit(req, at=now - timedelta(minutes=4)) == (204, "", False, None)
    # changed on the way, after it was signed
    tampered = replace(req.stamped(now), body=req.body.replace(b"missed", b"passed"),
                       signing_key=None)
    assert transmit(tampered, at=now) == (400, "HTTP 400: no matching signature", False, None)
    assert transmit(req, at=now - timedelta(minutes=6)) == (
        400, "HTTP 400: timestamp too old or too new", False, None)


def test_channels_md_shows_the_examples_as_they_are():
    text = (EXAMPLES.parent / "channels.md").read_text()
    for name, fence in (("verify_webhook.py", "python"), ("verify_webhook.mjs", "js")):
        assert f"```{fence}\n{(EXAMPLES / name).read_text()}```" in text


def test_a_test_notice_exactly(project, settings):
    from alerts import notices

    settings.CRONRADAR_BASE_URL = "https://cron.example.com"
    ch = Channel.objects.create(project=project, kind="webhook", name="ops hook",
                                config={"url": "https://x.test/", "secret": SECRET})
    notice = notices.issue("test", project.pk, OPENED, {"channel": ch.pk}, [])
    req = webhook.build_notice(ch, notice)
    body = canonical({
        "schema": "cronradar.test.v1", "event": "test", "event_id": notice.pk,
        "occurred_at": "2025-01-01T12:00:05Z", "incident": None,
        "message": ("This is a test notification from CronRadar to channel ops hook: all is "
                    "well. Nothing is wrong with your monitors."),
        "channel": {"id": ch.pk, "name": "ops hook", "kind": "webhook"}, "project": "acme",
        "links": {"channel_page": f"https://cron.example.com/channels/{ch.pk}/"}})
    digest = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert req == OutgoingRequest(url="https://x.test/", body=body, headers={
        **JSON_HEADERS, "X-CronRadar-Event": "test", "X-CronRadar-Signature": f"sha256={digest}",
        "webhook-id": str(notice.pk)}, signing_key=SECRET.encode())


@pytest.mark.parametrize("notice", ["failing", "recovered"])
def test_webhook_channel_notice(project, notice, request):
    event = request.getfixturevalue(notice)
    req = webhook.build_notice(channel(project, "webhook", url="https://x.test/", secret=SECRET),
                               event)
    body = canonical({
        "schema": "cronradar.channel.v1", "event": f"channel.{notice}", "event_id": event.pk,
        "occurred_at": "2025-01-01T12:03:00Z", "channel": BROKEN, "project": "acme",
        "links": {"channel_page": BROKEN_PAGE}})
    signature = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert req == OutgoingRequest(url="https://x.test/", body=body, headers={
        **JSON_HEADERS, "X-CronRadar-Event": f"channel.{notice}",
        "X-CronRadar-Signature": f"sha256={signature}", "webhook-id": str(event.pk)},
        signing_key=SECRET.encode())
