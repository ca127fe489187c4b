"""Exact requests built by each integration kind, and channel config validation."""
import hashlib
import hmac
import json
import uuid
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from alerts import links
from alerts.integrations import KINDS, OutgoingRequest, pagerduty, slack, webhook
from alerts.models import Channel, Incident, IncidentEvent
from monitors.models import Monitor, Ping, Run

SLOT = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
LAST_PING = datetime(2025, 1, 1, 12, 0, 4, tzinfo=UTC)
OPENED = datetime(2025, 1, 1, 12, 0, 5, tzinfo=UTC)
RESOLVED = datetime(2025, 1, 1, 12, 3, 0, tzinfo=UTC)
MONITOR_UUID = uuid.UUID("5a6b7c8d-1111-4222-8333-444455556666")
DEDUP = "1d1f4c1e-aaaa-4bbb-8ccc-dddddddddddd"
SECRET = "s3cret-hook-key"
JSON_HEADERS = {"Content-Type": "application/json", "User-Agent": "CronRadar/0.1"}


SIGNED_AT = 1735732900.0  # the time the links in notifications are signed at


@pytest.fixture(autouse=True)
def _links_signed_at_a_fixed_time(monkeypatch):
    from django.core import signing

    monkeypatch.setattr(signing, "time", SimpleNamespace(time=lambda: SIGNED_AT))


@pytest.fixture
def monitor(project):
    """A monitor in Berlin whose last run (slot 12:00 UTC) failed after 3 s."""
    m = Monitor.objects.create(
        project=project, name="Nightly backup", slug="nightly-backup", uuid=MONITOR_UUID,
        tags=["db", "prod"], kind="interval", period=timedelta(seconds=60),
        grace=timedelta(seconds=5), timezone="Europe/Berlin", last_ping_at=LAST_PING,
    )
    run = Run.objects.create(monitor=m, slot_at=SLOT, started_at=SLOT + timedelta(seconds=1),
                             ended_at=LAST_PING, outcome="failed", exit_status=2)
    Ping.objects.create(monitor=m, run=run, received_at=LAST_PING, kind="fail", method="POST",
                        body=b"x" * 600 + b"backup failed: disk full")
    return m


def context(incident):
    """The facts every incident notification of ``monitor`` carries."""
    return {
        "scheduled_at": "2025-01-01T13:00:00+01:00",
        "timezone": "Europe/Berlin",
        "last_ping_at": "2025-01-01T12:00:04Z",
        "run_duration": 3,
        "last_ping_body": ("x" * 600 + "backup failed: disk full")[-500:],
        "links": {"acknowledge": links.make(incident.pk, "ack"),
                  "resolve": links.make(incident.pk, "resolve"),
                  "monitor": f"http://127.0.0.1:8000/api/v1/monitors/{incident.monitor_id}/"},
    }


@pytest.fixture
def incident(monitor):
    return Incident.objects.create(
        monitor=monitor, cause="missed", summary="Nightly backup: no ping within 60s + 5s grace",
        dedup_key=DEDUP, opened_at=OPENED, missed_count=1,
    )


@pytest.fixture
def opened(incident):
    return IncidentEvent.objects.create(incident=incident, kind="opened", at=OPENED,
                                        message="no ping within 60s + 5s grace")


@pytest.fixture
def resolved(incident, opened):
    incident.resolved_at = RESOLVED
    incident.resolution = "ping received"
    incident.save()
    return IncidentEvent.objects.create(incident=incident, kind="resolved", at=RESOLVED,
                                        message="ping received")


def channel(project, kind, **config):
    return Channel.objects.create(project=project, kind=kind, config=config)


def canonical(document) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def test_registry_maps_every_channel_kind():
    assert {"webhook", "slack", "pagerduty", "email", "teams", "discord", "opsgenie",
            "ntfy"} == set(KINDS)
    assert (KINDS["webhook"], KINDS["slack"], KINDS["pagerduty"]) == (webhook, slack, pagerduty)
    assert set(KINDS) == set(Channel.Kind.values)


# --- webhook ----------------------------------------------------------------

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


@pytest.mark.parametrize("kind", ["webhook", "slack", "pagerduty"])
def test_non_notifying_event_kinds_are_refused(project, incident, kind):
    event = IncidentEvent.objects.create(incident=incident, kind="missed", at=OPENED)
    ch = channel(project, kind, url="https://x.test/", secret=SECRET, routing_key="k")
    with pytest.raises(ValueError, match="event kind 'missed' does not notify"):
        KINDS[kind].build_request(ch, event)


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


# --- slack ------------------------------------------------------------------

def slack_fields(*extra):
    return [
        {"type": "mrkdwn", "text": "*Monitor*\nNightly backup (acme/nightly-backup)"},
        {"type": "mrkdwn", "text": "*Cause*\nmissed"},
        {"type": "mrkdwn",
         "text": "*Opened*\n<!date^1735732805^{date_short_pretty} {time_secs}"
                 "|2025-01-01T12:00:05Z>"},
        *extra,
        {"type": "mrkdwn", "text": "*Scheduled*\n2025-01-01T13:00:00+01:00"},
        {"type": "mrkdwn", "text": "*Run took*\n3s"},
    ]


def slack_context(incident):
    """The last ping's body and the links, after a Slack message's fields."""
    c = context(incident)
    return [
        {"type": "section", "text": {"type": "mrkdwn", "text": (
            "*Last ping body*\n```" + c["last_ping_body"] + "```")}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": (
            f"<{c['links']['acknowledge']}|Acknowledge> · <{c['links']['resolve']}|Resolve> · "
            f"<{c['links']['monitor']}|Monitor>")}]},
    ]


def test_slack_opened(project, opened):
    ch = channel(project, "slack", url="https://hooks.slack.com/services/T0/B0/xyz")

    req = slack.build_request(ch, opened)

    assert req == OutgoingRequest(
        url="https://hooks.slack.com/services/T0/B0/xyz",
        body=canonical({
            "text": "CronRadar: incident opened (missed): "
                    "Nightly backup: no ping within 60s + 5s grace",
            "blocks": [
                {"type": "header", "text": {
                    "type": "plain_text", "emoji": True,
                    "text": ":rotating_light: Incident opened: Nightly backup"}},
                {"type": "section", "text": {
                    "type": "mrkdwn", "text": "Nightly backup: no ping within 60s + 5s grace"}},
                {"type": "section", "fields": slack_fields()},
                *slack_context(opened.incident),
            ],
        }),
        headers=JSON_HEADERS,
    )


def test_slack_resolved(project, resolved):
    ch = channel(project, "slack", url="https://hooks.slack.com/services/T0/B0/xyz")

    req = slack.build_request(ch, resolved)

    assert json.loads(req.body) == {
        "text": "CronRadar: incident resolved: Nightly backup: ping received",
        "blocks": [
            {"type": "header", "text": {
                "type": "plain_text", "emoji": True,
                "text": ":white_check_mark: Incident resolved: Nightly backup"}},
            {"type": "section", "text": {"type": "mrkdwn", "text": "ping received"}},
            {"type": "section", "fields": slack_fields(
                {"type": "mrkdwn",
                 "text": "*Resolved*\n<!date^1735732980^{date_short_pretty} {time_secs}"
                         "|2025-01-01T12:03:00Z>"},
            )},
            *slack_context(resolved.incident),
        ],
    }
    assert req.headers == JSON_HEADERS


def test_slack_escapes_mrkdwn_and_caps_header(project, monitor, incident, opened):
    monitor.name = "a<b>&c" + "x" * 190  # fits max_length=200, longer than the header cap
    monitor.save()
    incident.summary = "<!channel> & co"
    incident.save()
    ch = channel(project, "slack", url="https://hooks.slack.com/services/T0/B0/xyz")

    doc = json.loads(slack.build_request(ch, IncidentEvent.objects.get(pk=opened.pk)).body)

    assert doc["text"] == "CronRadar: incident opened (missed): &lt;!channel&gt; &amp; co"
    header = doc["blocks"][0]["text"]["text"]
    assert len(header) == 150
    assert header.startswith(":rotating_light: Incident opened: a<b>&cxxx")  # plain_text
    assert doc["blocks"][1]["text"]["text"] == "&lt;!channel&gt; &amp; co"
    assert doc["blocks"][2]["fields"][0]["text"].startswith("*Monitor*\na&lt;b&gt;&amp;cxxx")


def test_slack_validate_config():
    url = "https://hooks.slack.com/services/T0/B0/xyz"
    assert slack.validate_config({"url": url}) == {"url": url}
    assert slack.validate_config({"url": "http://127.0.0.1:9000/hook"}) == {
        "url": "http://127.0.0.1:9000/hook"}
    assert slack.validate_config({"url": "http://localhost/hook"}) == {
        "url": "http://localhost/hook"}
    for config, message in [
        ({}, "url: this field is required"),
        ({"url": "http://hooks.slack.com/services/x"}, "url: must be an https URL"),
        ({"url": url, "channel": "#ops"}, "channel: unknown field"),
    ]:
        with pytest.raises(ValueError) as exc:
            slack.validate_config(config)
        assert str(exc.value) == message


# --- pagerduty --------------------------------------------------------------

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
                      {"href": context(incident)["links"]["monitor"], "text": "Monitor"}],
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
                    "last_ping_body": context(incident)["last_ping_body"],
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


# --- channel removed and outage summaries -----------------------------------------------

@pytest.fixture
def removed(incident, opened):
    return IncidentEvent.objects.create(incident=incident, kind="channel_removed", at=RESOLVED,
                                        detail={"channel": 1})


@pytest.fixture
def impact(project):
    from monitors.models import Outage, OutageImpact

    outage = Outage.objects.create(started_at=OPENED, ended_at=OPENED + timedelta(seconds=15),
                                   summarized_at=RESOLVED)
    return OutageImpact.objects.create(outage=outage, project=project, unknown_slots=6)


def test_webhook_channel_removed(project, incident, removed):
    req = webhook.build_request(channel(project, "webhook", url="https://x.test/", secret=SECRET),
                                removed)
    assert req.headers["X-CronRadar-Event"] == "incident.channel_removed"
    assert json.loads(req.body) == webhook_document(removed, incident, "incident.channel_removed",
                                                    "2025-01-01T12:03:00Z")


def test_pagerduty_channel_removed_is_a_resolve(project, removed):
    req = pagerduty.build_request(channel(project, "pagerduty", routing_key="R"), removed)
    assert json.loads(req.body) == {"routing_key": "R", "event_action": "resolve",
                                    "dedup_key": DEDUP}


def test_slack_channel_removed(project, removed):
    req = slack.build_request(channel(project, "slack", url="https://hooks.slack.test/x"), removed)
    body = json.loads(req.body)
    assert body["text"] == "CronRadar: this channel no longer follows Nightly backup"
    assert body["blocks"][0]["text"]["text"] == (
        ":information_source: No longer following: Nightly backup")


OUTAGE_TEXT = ("CronRadar could not receive pings from 2025-01-01T12:00:05Z to "
               "2025-01-01T12:00:20Z: 6 expected runs of project acme fell in that time and "
               "are recorded as unknown, not missed.")


def test_webhook_outage_summary(project, impact):
    req = webhook.build_outage(channel(project, "webhook", url="https://x.test/", secret=SECRET),
                               impact)
    body = canonical({
        "schema": "cronradar.outage.v1", "event": "outage.summary",
        "event_id": f"outage-{impact.pk}", "occurred_at": "2025-01-01T12:03:00Z",
        "outage": {"started_at": "2025-01-01T12:00:05Z", "ended_at": "2025-01-01T12:00:20Z",
                   "unknown_slots": 6},
        "project": "acme"})
    signature = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert req == OutgoingRequest(url="https://x.test/", body=body, headers={
        **JSON_HEADERS, "X-CronRadar-Event": "outage.summary",
        "X-CronRadar-Signature": f"sha256={signature}"})


def test_pagerduty_outage_summary_is_a_change_event(project, impact):
    req = pagerduty.build_outage(channel(project, "pagerduty", routing_key="R"), impact)
    assert req == OutgoingRequest(
        url="https://events.pagerduty.com/v2/change/enqueue",
        body=canonical({"routing_key": "R", "payload": {
            "summary": OUTAGE_TEXT, "source": "cronradar", "timestamp": "2025-01-01T12:03:00Z",
            "custom_details": {"project": "acme", "outage_started_at": "2025-01-01T12:00:05Z",
                               "outage_ended_at": "2025-01-01T12:00:20Z",
                               "unknown_slots": 6}}}),
        headers=JSON_HEADERS)


def test_slack_outage_summary(project, impact):
    req = slack.build_outage(channel(project, "slack", url="https://hooks.slack.test/x"), impact)
    assert json.loads(req.body) == {
        "text": f"CronRadar: {OUTAGE_TEXT}",
        "blocks": [
            {"type": "header", "text": {"type": "plain_text", "emoji": True,
                                        "text": ":warning: CronRadar was unreachable"}},
            {"type": "section", "text": {"type": "mrkdwn", "text": OUTAGE_TEXT}}]}


def test_webhook_validate_config_keeps_the_stored_secret_on_a_change():
    assert webhook.validate_config({"url": "https://new.test/"},
                                   {"url": "https://old.test/", "secret": "kept"}) == {
        "url": "https://new.test/", "secret": "kept"}


# --- escalation events ---------------------------------------------------------------------

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


def test_webhook_escalated(project, incident, opened):
    up = IncidentEvent.objects.create(incident=incident, kind="escalated", at=RESOLVED,
                                      message="tier 2 notified: not acknowledged after tier 1")
    req = webhook.build_request(channel(project, "webhook", url="https://x.test/",
                                        secret=SECRET), up)
    assert req.headers["X-CronRadar-Event"] == "incident.escalated"
    assert json.loads(req.body) == webhook_document(up, incident, "incident.escalated",
                                                    "2025-01-01T12:03:00Z")


def test_slack_keeps_within_its_limits(project, monitor, incident, opened):
    Ping.objects.create(monitor=monitor, received_at=RESOLVED, kind="log", method="POST",
                        body=b"y" * 5000)
    incident.summary = "z" * 5000  # longer than any stored one: Slack must still take it
    opened.incident = incident
    body = json.loads(slack.build_request(channel(project, "slack", url="https://h.test/x"),
                                          opened).body)
    sections = [b["text"]["text"] for b in body["blocks"] if b["type"] == "section" and
                "text" in b]
    assert all(len(text) <= 3000 for text in sections)
    assert sections[0] == "z" * 3000  # cut, not refused


@pytest.mark.parametrize("severity,emoji", [
    ("critical", ":rotating_light:"), ("error", ":red_circle:"), ("warning", ":warning:"),
    ("info", ":information_source:")])
def test_slack_shows_the_severity(project, incident, opened, severity, emoji):
    Incident.objects.filter(pk=incident.pk).update(severity=severity)
    body = json.loads(slack.build_request(channel(project, "slack", url="https://h.test/x"),
                                          IncidentEvent.objects.get(pk=opened.pk)).body)
    assert body["blocks"][0]["text"]["text"] == f"{emoji} Incident opened: Nightly backup"
