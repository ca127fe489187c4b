"""alerts.integrations.pushover: the exact message request, the priority from the
severity, and an emergency message's receipt kept and cancelled on acknowledge
and resolve (through the delivery engine)."""
import re
from urllib.parse import urlencode

import httpx
import pytest

from alerts.integrations import pushover
from alerts.models import DeliveryAttempt, IncidentEvent
from tests.alerts.integrations.conftest import (
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

TOKEN, USER = "a" * 27 + "TOK", "u" * 27 + "USR"
RECEIPT = "rLqVuqTRh62UzxtmqiaLzQmVcPgiCy"
MESSAGES = "https://api.pushover.net/1/messages.json"
FORM = {"Content-Type": "application/x-www-form-urlencoded", "User-Agent": "CronRadar/0.1"}
OPENED_TS, RESOLVED_TS = 1735732805, 1735732980  # OPENED, RESOLVED in Unix seconds
FACTS = ("Monitor: Nightly backup (acme/nightly-backup)\nCause: failed\nSeverity: error\n"
         "Opened: 2025-01-01T13:00:05+01:00\nScheduled: 2025-01-01T13:00:00+01:00\n"
         "Last ping: 2025-01-01T13:00:04+01:00\nRun took: 3s")


def ours(project, **config):
    return channel(project, "pushover", token=TOKEN, user=USER, **config)


def form(**fields) -> bytes:
    return urlencode(sorted({"token": TOKEN, "user": USER, **fields}.items())).encode()


def anchors(incident) -> str:
    ack, resolve, _, monitor = (url for _, url in page_links(incident))
    return (f'<a href="{ack}">Acknowledge</a> · <a href="{resolve}">Resolve</a> · '
            f'<a href="{monitor}">Monitor</a>')


def test_pushover_opened_exactly(project, event):
    req = pushover.build_request(ours(project), event)
    incident_page = page_links(event.incident)[2][1]
    assert (req.method, req.url, req.headers, req.before) == ("POST", MESSAGES, FORM, ())
    assert req.body == form(
        title="Incident opened: Nightly backup", html=1, priority=1, timestamp=OPENED_TS,
        message=(f"Nightly backup: run failed (exit status 2)\n\n{FACTS}\n\nLast ping body:\n"
                 f"disk full\n\n{anchors(event.incident)}"),
        url=incident_page, url_title="Incident")
    assert req.redact == (TOKEN, USER)


@pytest.mark.parametrize("severity,priority", [("critical", 2), ("error", 1), ("warning", 0),
                                               ("info", -1)])
def test_pushover_priority_follows_the_severity(project, event, severity, priority):
    event.incident.severity = severity
    req = pushover.build_request(ours(project), event)
    fields = dict(httpx.QueryParams(req.body.decode()))
    emergency = {"retry": "60", "expire": "3600"} if priority == 2 else {}
    assert {k: v for k, v in fields.items() if k in ("priority", "retry", "expire")} == {
        "priority": str(priority), **emergency}


@pytest.mark.parametrize("kind,title", [("acknowledged", "✅ Acknowledged: Nightly backup"),
                                        ("resolved", "✅ Resolved: Nightly backup")])
def test_pushover_acknowledged_and_resolved_exactly(project, event, kind, title):
    event.incident.severity = "critical"
    later = IncidentEvent.objects.create(incident=event.incident, kind=kind, at=RESOLVED,
                                         message="done by ana")
    req = pushover.build_request(ours(project), later)
    facts = FACTS.replace("Severity: error", "Severity: critical")
    assert (req.method, req.url, req.before) == ("POST", MESSAGES, ())  # no delivery: no receipts
    assert req.body == form(
        title=title, html=1, priority=0, timestamp=RESOLVED_TS,
        message=(f"done by ana\n\n{facts}\n\nLast ping body:\ndisk full\n\n"
                 f"{anchors(event.incident)}"),
        url=page_links(event.incident)[2][1], url_title="Incident")


def test_pushover_channel_removed_is_marked_as_information(project, removed):
    fields = dict(httpx.QueryParams(pushover.build_request(ours(project), removed).body.decode()))
    assert (fields["title"], fields["priority"]) == (
        "ℹ️ No longer following: Nightly backup", "0")  # noqa: RUF001


def test_pushover_cuts_and_escapes_the_text_keeping_the_links(project, event):
    event.incident.summary = "<b>&" * 600
    title = "T" * 300
    event.incident.monitor.name = title
    fields = dict(httpx.QueryParams(pushover.build_request(ours(project), event).body.decode()))
    after = f"\n\n{anchors(event.incident)}"
    assert fields["title"] == ("Incident opened: " + title)[:249] + "…"
    assert len(fields["message"]) <= 1024
    assert fields["message"].endswith("…" + after)
    text = fields["message"].removesuffix("…" + after)
    assert ("&lt;b&gt;&amp;" * 600).startswith(text)
    assert re.search(r"&[a-z]*$", text) is None  # cut between entities, never inside one
    assert 1024 - len(after) - 5 < len(text) + 1 <= 1024 - len(after)


def test_pushover_a_long_incident_page_is_left_out_of_url(project, event, settings):
    settings.CRONRADAR_BASE_URL = "https://" + "x" * 520 + ".example.com"
    fields = dict(httpx.QueryParams(pushover.build_request(ours(project), event).body.decode()))
    assert "url" not in fields and "url_title" not in fields
    # the links would leave less than 200 characters of 1,024: only Acknowledge is kept
    [anchor] = re.findall(r'<a href="[^"]*">\w+</a>', fields["message"])
    assert anchor == f'<a href="{page_links(event.incident)[0][1]}">Acknowledge</a>'
    assert fields["message"].endswith(f"\n\n{anchor}") and len(fields["message"]) <= 1024


def test_pushover_notices_exactly(project, outage_notice, failing, test_notice):
    ch = ours(project, api_url="http://127.0.0.1:9/")
    local = "http://127.0.0.1:9/1/messages.json"
    req = pushover.build_notice(ch, outage_notice)
    assert (req.url, req.body) == (local, form(
        title="CronRadar was unreachable", message=OUTAGE_TEXT, html=1, priority=-1,
        timestamp=int(outage_notice.at.timestamp())))
    assert pushover.build_notice(ch, failing).body == form(
        title=FAILING_TITLE, message=FAILING_TEXT, html=1, priority=-1,
        timestamp=RESOLVED_TS, url=BROKEN_PAGE, url_title="Channel")
    test_ch, notice = test_notice("pushover", token=TOKEN, user=USER)
    assert pushover.build_notice(test_ch, notice).body == form(
        title="CronRadar test notification", message=TEST_TEXT, html=1, priority=-1,
        timestamp=OPENED_TS, url=channel_page(test_ch), url_title="Channel")
    with pytest.raises(ValueError, match="has no builder"):
        pushover.build_notice(ch, IncidentEvent(kind="nope", project=project, at=OPENED))


@pytest.mark.parametrize("answer,receipt", [
    (b'{"status":1,"request":"647d2300-702c-4b38-8b2f-d56326ae460b","receipt":"'
     + RECEIPT.encode() + b'"}', RECEIPT),
    (b'{"status":1,"request":"647d2300-702c-4b38-8b2f-d56326ae460b"}', ""),
    (b'{"receipt":"../../x"}', ""), (b"not json", ""), (b"[1]", ""), (b"", "")])
def test_the_receipt_of_an_answer(answer, receipt):
    assert pushover.receipt(answer) == receipt


ANSWER = ('{"status":1,"request":"647d2300-702c-4b38-8b2f-d56326ae460b","receipt":"'
          f'{RECEIPT}"}}')
OK = '{"status":1,"request":"6f2a7b3c-0000-4000-8000-000000000000"}'
CANCEL = (f"https://api.pushover.net/1/receipts/{RECEIPT}/cancel.json",
          f"token={TOKEN}".encode())


def test_an_emergency_receipt_is_kept_and_cancelled_on_acknowledge_and_resolve(project, event):
    event.incident.severity = "critical"
    event.incident.save()
    ch = ours(project)
    opened = deliver(event, ch)
    script = Script(httpx.Response(200, text=ANSWER))
    assert attempt(opened, script, OPENED) == "delivered"
    assert opened.receipt == RECEIPT
    [(method, url, _, body)] = script.requests
    assert (method, url, dict(httpx.QueryParams(body.decode()))["priority"]) == (
        "POST", MESSAGES, "2")

    for kind in ("acknowledged", "resolved"):  # each cancels it once, then says so
        later = deliver(IncidentEvent.objects.create(incident=event.incident, kind=kind,
                                                     at=RESOLVED), ch)
        script = Script(httpx.Response(200, text=OK), httpx.Response(200, text=OK))
        assert attempt(later, script, RESOLVED) == "delivered"
        assert [(m, u, b) for m, u, _, b in script.requests][:1] == [("POST", *CANCEL)]
        assert [(m, u) for m, u, _, _ in script.requests][1:] == [("POST", MESSAGES)]
        assert later.receipt == ""  # a calm message has none


def test_a_cancel_to_retry_holds_the_message_and_a_refused_one_does_not(project, event):
    event.incident.severity = "critical"
    event.incident.save()
    ch = ours(project)
    opened = deliver(event, ch)
    attempt(opened, Script(httpx.Response(200, text=ANSWER)), OPENED)
    ack = deliver(IncidentEvent.objects.create(incident=event.incident, kind="acknowledged",
                                               at=RESOLVED), ch)
    script = Script(httpx.Response(503, text="busy"))
    assert attempt(ack, script, RESOLVED) == "pending"  # the message is not sent yet
    assert [u for _, u, _, _ in script.requests] == [CANCEL[0]]
    assert ack.last_error == "before 1: HTTP 503: busy"
    # the retry: the receipt expired meanwhile (Pushover refuses the cancel): the
    # message goes, once
    script = Script(httpx.Response(400, text='{"status":0,"errors":["receipt not found"]}'),
                    httpx.Response(200, text=OK))
    assert attempt(ack, script, ack.next_attempt_at) == "delivered"
    assert [u for _, u, _, _ in script.requests] == [CANCEL[0], MESSAGES]
    assert DeliveryAttempt.objects.filter(delivery=ack).count() == 2


def test_the_token_never_reaches_an_error(project, event):
    ch = ours(project)
    d = deliver(event, ch)
    script = Script(httpx.Response(400, text=f'{{"token":"{TOKEN} is invalid","user":"{USER}"}}'))
    assert attempt(d, script, OPENED) == "failed"
    assert TOKEN not in d.last_error and USER not in d.last_error
    assert d.last_error == 'HTTP 400: {"token":"*** is invalid","user":"***"}'


@pytest.mark.parametrize("config,message", [
    ({"token": TOKEN}, "user: this field is required"),
    ({"user": USER}, "token: this field is required"),
    ({"token": "short", "user": USER}, "token: must be a Pushover key: 30 letters and digits"),
    ({"token": TOKEN, "user": USER, "sound": "siren"}, "sound: unknown field"),
    ({"token": TOKEN, "user": USER, "api_url": "http://pushover.example.com"},
     "api_url: must be an https URL"),
])
def test_pushover_config_is_checked(config, message):
    with pytest.raises(ValueError) as exc:
        pushover.validate_config(config)
    assert str(exc.value) == message


def test_pushover_config_is_normalized_and_keeps_secrets():
    assert pushover.validate_config({"token": f" {TOKEN} ", "user": USER}) == {
        "token": TOKEN, "user": USER}
    assert pushover.validate_config({"user": USER}, previous={"token": TOKEN, "user": "x"}) == {
        "token": TOKEN, "user": USER}
    assert pushover.validate_config({"token": TOKEN, "user": USER,
                                     "api_url": "https://po.example.com"}) == {
        "token": TOKEN, "user": USER, "api_url": "https://po.example.com"}


def test_pushover_schema_and_help():
    props = pushover.CONFIG_SCHEMA["properties"]
    assert set(props) == {"token", "user", "api_url"}
    assert (props["token"]["format"], props["user"]["format"]) == ("password", "password")
    assert all(p["description"] for p in props.values())
    assert "https://pushover.net/api" in pushover.HELP
