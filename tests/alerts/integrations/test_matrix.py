"""alerts.integrations.matrix: the exact PUT of m.room.message, and its transaction
id: the delivery's, the same on a retry, so a retried delivery never posts twice."""
import json
import re
from datetime import timedelta

import httpx
import pytest

from alerts.integrations import matrix
from alerts.models import IncidentEvent
from tests.alerts.integrations.conftest import (
    BROKEN_FACTS,
    BROKEN_PAGE,
    FAILING_TEXT,
    FAILING_TITLE,
    OPENED,
    OUTAGE_TEXT,
    RESOLVED,
    TEST_TEXT,
    Script,
    attempt,
    channel,
    channel_page,
    deliver,
    page_links,
)

pytestmark = pytest.mark.django_db

TOKEN = "syt_Y3JvbnJhZGFy_abcdefghijklmnop_0a1b2c"
ROOM = "!OGEhHVWSdvArJzumhm:matrix.org"
SEND = "https://matrix.example.org/_matrix/client/v3/rooms/%21OGEhHVWSdvArJzumhm%3Amatrix.org/send/m.room.message/"
HEADERS = {"Content-Type": "application/json", "User-Agent": "CronRadar/0.1",
           "Authorization": f"Bearer {TOKEN}"}
FACTS = [("Monitor", "Nightly backup (acme/nightly-backup)"), ("Cause", "failed"),
         ("Severity", "error"), ("Opened", "2025-01-01T13:00:05+01:00"),
         ("Scheduled", "2025-01-01T13:00:00+01:00"), ("Last ping", "2025-01-01T13:00:04+01:00"),
         ("Run took", "3s")]


def ours(project):
    return channel(project, "matrix", homeserver="https://matrix.example.org", room_id=ROOM,
                   access_token=TOKEN)


def expected(title, text, facts, links, body="", msgtype="m.text") -> dict:
    """The message document, written out: plain body and HTML of the same parts."""
    plain = "\n\n".join(p for p in [title, text, "\n".join(f"{k}: {v}" for k, v in facts),
                                    body and f"Last ping body:\n{body}",
                                    "\n".join(f"{k}: {v}" for k, v in links)] if p)
    html = (f"<p><strong>{title}</strong></p><p>{text}</p>"
            + ("<ul>" + "".join(f"<li><strong>{k}</strong>: {v}</li>" for k, v in facts)
               + "</ul>" if facts else "")
            + (f"<p>Last ping body:</p><pre><code>{body}</code></pre>" if body else "")
            + ("<p>" + " · ".join(f'<a href="{u}">{k}</a>' for k, u in links) + "</p>"
               if links else ""))
    return {"msgtype": msgtype, "body": plain, "format": "org.matrix.custom.html",
            "formatted_body": html}


def test_matrix_opened_exactly(project, event):
    ch = ours(project)
    d = deliver(event, ch)
    req = matrix.build_request(ch, event, delivery=d)
    assert (req.method, req.url, req.headers, req.redact) == (
        "PUT", f"{SEND}cronradar-{d.pk}", HEADERS, (TOKEN,))
    assert json.loads(req.body) == expected(
        "[ERROR] Incident opened: Nightly backup", "Nightly backup: run failed (exit status 2)",
        FACTS, page_links(event.incident), "disk full")


@pytest.mark.parametrize("kind,title", [("acknowledged", "✅ Acknowledged: Nightly backup"),
                                        ("resolved", "✅ Resolved: Nightly backup")])
def test_matrix_acknowledged_and_resolved_exactly(project, event, kind, title):
    ch = ours(project)
    later = IncidentEvent.objects.create(incident=event.incident, kind=kind, at=RESOLVED,
                                         message="done by <ana> & bob")
    d = deliver(later, ch)
    req = matrix.build_request(ch, later, delivery=d)
    assert (req.method, req.url, req.headers) == ("PUT", f"{SEND}cronradar-{d.pk}", HEADERS)
    document = json.loads(req.body)
    assert document == {**expected(title, "done by &lt;ana&gt; &amp; bob", FACTS,
                                   page_links(event.incident), "disk full"),
                        "body": expected(title, "done by <ana> & bob", FACTS,
                                         page_links(event.incident), "disk full")["body"]}


def test_a_channel_removed_is_a_notice(project, event):
    removed = IncidentEvent.objects.create(incident=event.incident, kind="channel_removed",
                                           at=RESOLVED)
    document = json.loads(matrix.build_request(ours(project), removed).body)
    assert (document["msgtype"], document["body"].split("\n")[0]) == (
        "m.notice", "ℹ️ No longer following: Nightly backup")  # noqa: RUF001


def test_an_info_incident_is_a_notice(project, event):
    event.incident.severity = "info"
    document = json.loads(matrix.build_request(ours(project), event).body)
    assert (document["msgtype"], document["body"].split("\n")[0]) == (
        "m.notice", "[INFO] Incident opened: Nightly backup")


def test_matrix_notices_exactly(project, outage_notice, failing, test_notice):
    ch = ours(project)
    req = matrix.build_notice(ch, failing, delivery=deliver(failing, ch))
    assert (req.method, req.headers) == ("PUT", HEADERS)
    assert json.loads(req.body) == expected(FAILING_TITLE, FAILING_TEXT, BROKEN_FACTS,
                                            [("Channel", BROKEN_PAGE)], msgtype="m.notice")
    assert json.loads(matrix.build_notice(ch, outage_notice).body) == expected(
        "CronRadar was unreachable", OUTAGE_TEXT, [], [], msgtype="m.notice")
    test_ch, notice = test_notice("matrix", homeserver="https://matrix.example.org",
                                  room_id=ROOM, access_token=TOKEN)
    first, second = (matrix.build_notice(test_ch, notice) for _ in range(2))
    assert json.loads(first.body) == expected(
        "CronRadar test notification", TEST_TEXT, [], [("Channel", channel_page(test_ch))],
        msgtype="m.notice")
    # no delivery row: a fresh transaction id each time, so every test is posted
    assert re.fullmatch(re.escape(SEND) + "cronradar-test-[0-9a-f]{32}", first.url)
    assert first.url != second.url
    with pytest.raises(ValueError, match="has no builder"):
        matrix.build_notice(ch, IncidentEvent(kind="nope", project=project, at=OPENED))


def test_matrix_cuts_a_long_text(project, event):
    event.incident.summary = "é" * 5000
    document = json.loads(matrix.build_request(ours(project), event).body)
    assert document["body"].split("\n\n")[1] == "é" * 3999 + "…"
    assert document["formatted_body"].startswith(
        "<p><strong>[ERROR] Incident opened: Nightly backup</strong></p><p>" + "é" * 3999 + "…</p>")
    event.incident.summary = "<" * 5000  # 4 characters each once escaped: cut to 4,000
    document = json.loads(matrix.build_request(ours(project), event).body)
    assert document["body"].split("\n\n")[1] == "<" * 3999 + "…"
    assert "<p>" + "&lt;" * 999 + "…</p>" in document["formatted_body"]
    assert len(json.dumps(document, ensure_ascii=False).encode()) < 65_536


def test_a_retry_puts_the_same_transaction_and_another_delivery_another(project, event):
    ch = ours(project)
    d = deliver(event, ch)
    script = Script(httpx.Response(500, json={"errcode": "M_UNKNOWN", "error": TOKEN}),
                    httpx.Response(200, json={"event_id": "$abc"}))
    assert attempt(d, script, OPENED) == "pending"
    assert TOKEN not in d.last_error  # the token never reaches an error, even echoed
    assert d.last_error == 'HTTP 500: {"errcode":"M_UNKNOWN","error":"***"}'
    assert attempt(d, script, d.next_attempt_at) == "delivered"
    url = f"{SEND}cronradar-{d.pk}"
    assert [(m, u, h["authorization"]) for m, u, h, _ in script.requests] == [
        ("PUT", url, f"Bearer {TOKEN}")] * 2
    assert script.requests[0][3] == script.requests[1][3]  # the same message, once
    later = IncidentEvent.objects.create(incident=event.incident, kind="resolved", at=RESOLVED)
    other = deliver(later, ch)
    script = Script(httpx.Response(200, json={"event_id": "$def"}))
    assert attempt(other, script, RESOLVED) == "delivered"
    assert [(m, u) for m, u, _, _ in script.requests] == [("PUT", f"{SEND}cronradar-{other.pk}")]
    assert other.pk != d.pk


def test_a_rate_limited_send_waits_as_the_homeserver_says(project, event):
    d = deliver(event, ours(project))
    script = Script(httpx.Response(429, json={"errcode": "M_LIMIT_EXCEEDED",
                                              "error": "Too Many Requests",
                                              "retry_after_ms": 2500}))
    assert attempt(d, script, OPENED) == "pending"
    assert d.next_attempt_at - OPENED == timedelta(seconds=2.5)


@pytest.mark.parametrize("config,message", [
    ({"homeserver": "http://matrix.example.org", "room_id": ROOM, "access_token": TOKEN},
     "homeserver: must be an https URL"),
    ({"homeserver": "https://matrix.example.org/x", "room_id": ROOM, "access_token": TOKEN},
     "homeserver: must be the server's root URL, as https://matrix.org"),
    ({"homeserver": "https://matrix.example.org", "room_id": "#ops:matrix.org",
      "access_token": TOKEN}, "room_id: an alias (#…) cannot be sent to: use the room's "
     "internal id (!…:server, in the room's settings, Advanced)"),
    ({"homeserver": "https://matrix.example.org", "room_id": "ops", "access_token": TOKEN},
     "room_id: must be a room id, as !abcdef:matrix.org"),
    ({"homeserver": "https://matrix.example.org", "room_id": ROOM},
     "access_token: this field is required"),
    ({"homeserver": "https://matrix.example.org", "room_id": ROOM, "access_token": "a b"},
     "access_token: must be 1 to 500 characters without spaces"),
    ({"homeserver": "https://matrix.example.org", "room_id": ROOM, "access_token": TOKEN,
      "user": "x"}, "user: unknown field"),
])
def test_matrix_config_is_checked(config, message):
    with pytest.raises(ValueError) as exc:
        matrix.validate_config(config)
    assert str(exc.value) == message


def test_matrix_config_is_normalized_and_keeps_the_token():
    assert matrix.validate_config(
        {"homeserver": "https://matrix.example.org/", "room_id": f" {ROOM} "},
        previous={"access_token": TOKEN}) == {
        "homeserver": "https://matrix.example.org", "room_id": ROOM, "access_token": TOKEN}
    assert matrix.validate_config({"homeserver": "http://127.0.0.1:8008", "room_id": "!v12room",
                                   "access_token": TOKEN})["room_id"] == "!v12room"


def test_matrix_schema_and_help():
    props = matrix.CONFIG_SCHEMA["properties"]
    assert set(props) == {"homeserver", "room_id", "access_token"}
    assert props["access_token"]["format"] == "password"
    assert all(p["description"] for p in props.values())
    assert "https://spec.matrix.org/" in matrix.HELP
