"""Email, Microsoft Teams, Discord, Opsgenie and ntfy: exact requests, limits, and
what a local HTTP server receives; the "send test notification" action."""
import json
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from django.core import mail, signing

from alerts import links
from alerts.delivery import transmit
from alerts.integrations import discord, email, ntfy, opsgenie, teams
from alerts.models import Channel, Incident, IncidentEvent
from monitors.models import Monitor, Ping, Run
from tests.live import Receiver

pytestmark = pytest.mark.django_db
SLOT = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)
OPENED = SLOT + timedelta(seconds=5)
DEDUP = "1d1f4c1e-aaaa-4bbb-8ccc-dddddddddddd"


@pytest.fixture(autouse=True)
def _links_signed_at_a_fixed_time(monkeypatch):
    monkeypatch.setattr(signing, "time", SimpleNamespace(time=lambda: 1735732900.0))


@pytest.fixture
def event(project):
    m = Monitor.objects.create(project=project, name="Nightly backup", slug="nightly-backup",
                               tags=["db"], period=timedelta(60), grace=timedelta(seconds=5),
                               timezone="Europe/Berlin",
                               last_ping_at=SLOT + timedelta(seconds=4))
    Run.objects.create(monitor=m, slot_at=SLOT, started_at=SLOT + timedelta(seconds=1),
                       ended_at=SLOT + timedelta(seconds=4), outcome="failed")
    Ping.objects.create(monitor=m, received_at=SLOT + timedelta(seconds=4), kind="fail",
                        method="POST", body=b"disk full")
    incident = Incident.objects.create(monitor=m, cause="failed", summary="Nightly backup: run "
                                       "failed (exit status 2)", dedup_key=DEDUP,
                                       opened_at=OPENED, severity="error")
    return IncidentEvent.objects.create(incident=incident, kind="opened", at=OPENED)


def channel(project, kind, **config):
    return Channel.objects.create(project=project, kind=kind, config=config)


def ack_link(event):
    return links.make(event.incident_id, "ack")


FACTS = [("Monitor", "Nightly backup (acme/nightly-backup)"), ("Cause", "failed"),
         ("Severity", "error"), ("Opened", "2025-01-01T12:00:05Z"),
         ("Scheduled", "2025-01-01T13:00:00+01:00"), ("Last ping", "2025-01-01T12:00:04Z"),
         ("Run took", "3s")]


def test_teams_adaptive_card(project, event):
    req = teams.build_request(channel(project, "teams", url="https://x.logic.azure.com/w"),
                              event)
    card = json.loads(req.body)["attachments"][0]
    assert card["contentType"] == "application/vnd.microsoft.card.adaptive"
    content = card["content"]
    assert (content["type"], content["version"]) == ("AdaptiveCard", "1.4")
    assert [b["type"] for b in content["body"]] == ["TextBlock", "TextBlock", "FactSet"]
    assert content["body"][0]["text"] == "Incident opened: Nightly backup"
    assert content["body"][1]["text"] == "Nightly backup: run failed (exit status 2)"
    assert content["body"][2]["facts"] == [{"title": k, "value": v} for k, v in FACTS]
    assert content["actions"][0] == {"type": "Action.OpenUrl", "title": "Acknowledge",
                                     "url": ack_link(event)}
    resolved = IncidentEvent.objects.create(incident=event.incident, kind="resolved",
                                            at=OPENED + timedelta(seconds=60))
    after = json.loads(teams.build_request(channel(project, "teams", url="https://x.test/w"),
                                           resolved).body)["attachments"][0]["content"]
    assert [a["title"] for a in after["actions"]] == ["Monitor"]  # nothing left to act on


def test_teams_stays_under_28_kb(project, event):
    Incident.objects.filter(pk=event.incident_id).update(summary="s" * 500)
    event.incident.summary = "s" * 500
    event.message = "m" * 100_000
    event.kind = "escalated"
    req = teams.build_request(channel(project, "teams", url="https://x.test/w"), event)
    assert len(req.body) <= 28 * 1024


def test_discord_message_and_limits(project, event):
    req = discord.build_request(channel(project, "discord",
                                        url="https://discord.com/api/webhooks/1/abc"), event)
    assert req.url == "https://discord.com/api/webhooks/1/abc?wait=true"
    threaded = discord.build_request(channel(
        project, "discord", url="https://discord.com/api/webhooks/1/abc?thread_id=7&wait=false"),
        event)
    assert threaded.url == "https://discord.com/api/webhooks/1/abc?thread_id=7&wait=true"
    body = json.loads(req.body)
    assert body["content"] == "Incident opened: Nightly backup"
    assert body["allowed_mentions"] == {"parse": []}
    [embed] = body["embeds"]
    assert (embed["title"], embed["color"]) == ("Incident opened: Nightly backup", 0xE8590C)
    assert embed["description"].startswith("Nightly backup: run failed (exit status 2)\n\n"
                                           f"[Acknowledge]({ack_link(event)})")
    assert [(f["name"], f["value"]) for f in embed["fields"]] == FACTS
    event.incident.monitor.name = "n" * 3000
    big = json.loads(discord.build_request(channel(project, "discord", url="https://d.test/w"),
                                           event).body)
    assert len(big["content"]) == 2000 and len(big["embeds"][0]["title"]) == 256
    embed = big["embeds"][0]
    assert len(embed["title"]) + len(embed["description"]) + sum(
        len(f["name"]) + len(f["value"]) for f in embed["fields"]) + len("CronRadar") <= 6000


def test_opsgenie_create_acknowledge_close(project, event):
    ch = channel(project, "opsgenie", api_key="K", region="eu")
    req = opsgenie.build_request(ch, event)
    assert (req.url, req.headers["Authorization"]) == (
        "https://api.eu.opsgenie.com/v2/alerts", "GenieKey K")
    body = json.loads(req.body)
    assert {k: body[k] for k in ("message", "alias", "priority", "entity", "tags", "source")} == {
        "message": "Incident opened: Nightly backup", "alias": DEDUP, "priority": "P2",
        "entity": "acme/nightly-backup", "tags": ["db"], "source": "CronRadar"}
    assert body["description"] == "Nightly backup: run failed (exit status 2)\n\ndisk full"
    assert body["details"]["acknowledge"] == ack_link(event)
    event.incident.monitor.name = "n" * 300
    assert len(json.loads(opsgenie.build_request(ch, event).body)["message"]) == 130
    ack = IncidentEvent(incident=event.incident, kind="acknowledged", at=OPENED,
                        message="acknowledged by ana")
    req = opsgenie.build_request(ch, ack)
    assert req.url == f"https://api.eu.opsgenie.com/v2/alerts/{DEDUP}/acknowledge?identifierType=alias"
    assert json.loads(req.body) == {"source": "CronRadar", "user": "CronRadar",
                                    "note": "acknowledged by ana"}
    done = IncidentEvent(incident=event.incident, kind="resolved", at=OPENED, message="ok")
    assert opsgenie.build_request(ch, done).url.endswith("/close?identifierType=alias")


def test_ntfy_publish(project, event):
    req = ntfy.build_request(channel(project, "ntfy", url="https://ntfy.sh/ops-alerts",
                                     token="tk"), event)
    assert (req.url, req.headers["Authorization"]) == ("https://ntfy.sh/", "Bearer tk")
    body = json.loads(req.body)
    assert {k: body[k] for k in ("topic", "title", "priority", "tags")} == {
        "topic": "ops-alerts", "title": "Incident opened: Nightly backup", "priority": 4,
        "tags": ["rotating_light"]}
    assert body["actions"][0] == {"action": "view", "label": "Acknowledge",
                                  "url": ack_link(event), "clear": True}


def test_email_message(project, event):
    ch = channel(project, "email", to=["ops@example.com"])
    message = email.build_request(ch, event)
    assert message.to == ("ops@example.com",)
    assert message.subject == "[ERROR] Incident opened: Nightly backup"
    assert message.text.splitlines()[:3] == ["Nightly backup: run failed (exit status 2)", "",
                                             "Monitor: Nightly backup (acme/nightly-backup)"]
    assert f"Acknowledge: {ack_link(event)}" in message.text
    assert "<pre>disk full</pre>" in message.html
    event.incident.monitor.name = "evil\r\nBcc: victim@example.com"
    assert "\n" not in email.build_request(ch, event).subject  # never a header injection
    assert transmit(message) == (250, "", False, None)
    [sent] = mail.outbox
    assert (sent.subject, sent.to, sent.alternatives[0].mimetype) == (
        "[ERROR] Incident opened: Nightly backup", ["ops@example.com"], "text/html")


@pytest.mark.parametrize("kind,config,message", [
    ("email", {"to": []}, "to: a list of 1 to 20 email addresses is required"),
    ("email", {"to": ["not an address"]}, "to: 'not an address' is not an email address"),
    ("opsgenie", {"api_key": "k", "region": "mars"}, "region: must be us or eu"),
    ("opsgenie", {}, "api_key: a string of at most 200 characters is required"),
    ("ntfy", {"url": "https://ntfy.sh/"}, "url: must name one topic"),
    ("discord", {"url": "http://discord.com/x"}, "url: must be an https URL"),
    ("teams", {}, "url: this field is required"),
])
def test_configs_are_checked(kind, config, message):
    from alerts.integrations import KINDS

    with pytest.raises(ValueError) as exc:
        KINDS[kind].validate_config(config)
    assert str(exc.value).startswith(message)


LOCAL = {  # kind -> (config, where the receiver sees the request), receiver at {r}
    "webhook": ({"url": "{r}/hook", "secret": "k"}, "/hook"),
    "slack": ({"url": "{r}/services/T/B/X"}, "/services/T/B/X"),
    "pagerduty": ({"routing_key": "R" * 32, "events_url": "{r}/v2/enqueue"}, "/v2/enqueue"),
    "opsgenie": ({"api_key": "k", "region": "us"}, "/v2/alerts"),
    "teams": ({"url": "{r}/topic"}, "/topic"),
    "discord": ({"url": "{r}/topic"}, "/topic?wait=true"),
    "ntfy": ({"url": "{r}/topic"}, "/"),
}


@pytest.mark.parametrize("kind", sorted(LOCAL))
def test_a_local_server_receives_exactly_the_built_request(project, event, kind, monkeypatch):
    """Every HTTP integration's request, sent for real: the receiver gets the exact
    body and headers that were built (the payloads themselves are asserted above
    and in test_integrations.py)."""
    from alerts.integrations import KINDS

    receiver = Receiver()
    try:
        monkeypatch.setitem(opsgenie.HOSTS, "us", receiver.url)
        config, path = LOCAL[kind]
        ch = channel(project, kind, **{k: v.replace("{r}", receiver.url)
                                       for k, v in config.items()})
        req = KINDS[kind].build_request(ch, event)
        assert transmit(req)[0] == 200
        [got] = receiver.requests
        assert (got.path, got.body) == (path, req.body)
        for name, value in req.headers.items():
            assert got.headers[name] == value
    finally:
        receiver.close()


def test_send_a_test_notification(api, project):
    receiver = Receiver()
    try:
        ch = api.post("/api/v1/channels/", {"kind": "webhook", "config": {
            "url": receiver.url + "/hook"}}, format="json").json()
        resp = api.post(f"/api/v1/channels/{ch['id']}/test/")
        assert resp.json() == {"ok": True, "status_code": 200, "error": ""}
        [got] = receiver.requests
        body = got.json()
        assert (body["event"], body["incident"]["severity"], body["monitor"]["name"]) == (
            "incident.opened", "info", "CronRadar test notification")
        assert not Incident.objects.exists()  # nothing stored
        receiver.status = 500
        assert api.post(f"/api/v1/channels/{ch['id']}/test/").json() == {
            "ok": False, "status_code": 500, "error": "HTTP 500: ok"}
        assert api.post("/api/v1/channels/999/test/").status_code == 404
    finally:
        receiver.close()


def test_a_pagerduty_test_notification_leaves_no_page_open(api, project):
    receiver = Receiver(status=202)
    try:
        ch = api.post("/api/v1/channels/", {"kind": "pagerduty", "config": {
            "routing_key": "R" * 32, "events_url": receiver.url + "/v2/enqueue"}},
            format="json").json()
        assert api.post(f"/api/v1/channels/{ch['id']}/test/").json() == {
            "ok": True, "status_code": 202, "error": ""}
        sent = [(r.json()["event_action"], r.json()["dedup_key"]) for r in receiver.requests]
        assert sent == [("trigger", f"cronradar-test-{ch['id']}"),
                        ("resolve", f"cronradar-test-{ch['id']}")]
    finally:
        receiver.close()
