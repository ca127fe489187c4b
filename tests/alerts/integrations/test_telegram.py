"""alerts.integrations.telegram: the exact sendMessage requests, Telegram's
4,096 characters, HTML escaping, config checks, and the token kept out of errors."""
import html
import json
import logging
import re

import httpx
import pytest

from alerts import delivery
from alerts.integrations import OutgoingRequest, telegram
from tests.alerts.integrations.conftest import (
    BASE,
    BROKEN_FACTS,
    BROKEN_PAGE,
    FACTS,
    FAILING_TEXT,
    JSON_HEADERS,
    MISSED_FACTS,
    OPENED,
    OUTAGE_TEXT,
    RECOVERED_TEXT,
    TAIL,
    TEST_TEXT,
    canonical,
    channel,
    channel_page,
    deliver,
    page_links,
    sent_for_real,
)
from tests.live import free_port

pytestmark = pytest.mark.django_db

TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
API = f"https://api.telegram.org/bot{TOKEN}/sendMessage"


def bot(project, **config):
    return channel(project, "telegram", **{"bot_token": TOKEN, "chat_id": "-1001234567890",
                                           **config})


def facts(rows) -> str:
    return "\n".join(f"<b>{k}:</b> {v}" for k, v in rows)


def links(rows) -> str:
    return " · ".join(f'<a href="{url}">{label}</a>' for label, url in rows)


def message(text: str, silent: bool) -> bytes:
    return canonical({"chat_id": "-1001234567890", "text": text, "parse_mode": "HTML",
                      "link_preview_options": {"is_disabled": True},
                      "disable_notification": silent})


def test_telegram_opened_exactly(project, event):
    req = telegram.build_request(bot(project), event)
    assert req == OutgoingRequest(url=API, headers=JSON_HEADERS, redact=(TOKEN,), body=message(
        "<b>🟠 [ERROR] Incident opened: Nightly backup</b>\n"
        "Nightly backup: run failed (exit status 2)\n\n"
        f"{facts(FACTS)}\n\n"
        "<b>Last ping body</b>\n<pre>disk full</pre>\n\n"
        f"{links(page_links(event.incident))}", silent=False))


def test_telegram_resolved_exactly(project, resolved):
    req = telegram.build_request(bot(project, api_url="http://127.0.0.1:8081"), resolved)
    assert req == OutgoingRequest(
        url=f"http://127.0.0.1:8081/bot{TOKEN}/sendMessage", headers=JSON_HEADERS,
        redact=(TOKEN,), body=message(
            "<b>✅ Resolved: Nightly backup</b>\nping received\n\n"
            f"{facts(MISSED_FACTS)}\n\n<b>Last ping body</b>\n<pre>{TAIL}</pre>\n\n"
            f"{links(page_links(resolved.incident))}", silent=False))


def test_telegram_escapes_user_text_and_an_info_incident_is_silent(project, event):
    incident = event.incident
    incident.monitor.name = "<b>db</b> & co"
    incident.summary = "exit <2>"
    incident.severity = "info"
    text = json.loads(telegram.build_request(bot(project), event).body)
    assert text["disable_notification"] is True
    assert text["text"].startswith("<b>🔵 [INFO] Incident opened: &lt;b&gt;db&lt;/b&gt; &amp; co"
                                   "</b>\nexit &lt;2&gt;\n\n<b>Monitor:</b> &lt;b&gt;db")


def test_telegram_cuts_a_long_text_to_4096_visible_characters(project, event):
    event.incident.summary = "s" * 5000
    req = telegram.build_request(bot(project), event)
    text = json.loads(req.body)["text"]
    after = (f"\n\n{facts(FACTS)}\n\n<b>Last ping body</b>\n<pre>disk full</pre>\n\n"
             f"{links(page_links(event.incident))}")
    visible = ("🟠 [ERROR] Incident opened: Nightly backup\n\n\n" + "\n".join(
        f"{k}: {v}" for k, v in FACTS) + "\n\nLast ping body\ndisk full\n\n"
        "Acknowledge · Resolve · Incident · Monitor")
    kept = 4096 - telegram.units(visible) - 1  # the ellipsis
    assert req.body == message("<b>🟠 [ERROR] Incident opened: Nightly backup</b>\n"
                               + "s" * kept + "…" + after, silent=False)
    # what Telegram counts: the text after entity parsing, in UTF-16 units (the emoji: 2)
    shown = html.unescape(re.sub(r"<[^>]+>", "", text))
    assert (len(shown.encode("utf-16-le")) // 2, len(shown)) == (4096, 4095)


def test_telegram_test_notification(test_notice):
    ch, notice = test_notice("telegram", bot_token=TOKEN, chat_id="@cronradar_ops")
    assert telegram.build_notice(ch, notice) == OutgoingRequest(
        url=API, headers=JSON_HEADERS, redact=(TOKEN,), body=canonical({
            "chat_id": "@cronradar_ops", "parse_mode": "HTML", "disable_notification": True,
            "link_preview_options": {"is_disabled": True},
            "text": f"<b>✅ CronRadar test notification</b>\n{TEST_TEXT}\n\n"
                    f"{links([('Channel', channel_page(ch))])}"}))


def test_telegram_outage_and_channel_notices(project, outage_notice, failing, recovered):
    ch = bot(project)
    assert telegram.build_notice(ch, outage_notice).body == message(
        f"<b>⚠️ CronRadar was unreachable</b>\n{OUTAGE_TEXT}", silent=True)
    assert telegram.build_notice(ch, failing).body == message(
        f"<b>⚠️ Channel failing: Ops hook</b>\n{FAILING_TEXT}\n\n{facts(BROKEN_FACTS)}\n\n"
        f"{links([('Channel', BROKEN_PAGE)])}", silent=True)
    assert json.loads(telegram.build_notice(ch, recovered).body)["text"].startswith(
        f"<b>✅ Channel recovered: Ops hook</b>\n{RECOVERED_TEXT}\n\n")


def test_telegram_links_are_the_dashboards(project, event):
    text = json.loads(telegram.build_request(bot(project), event).body)["text"]
    assert f'<a href="{BASE}/incidents/{event.incident_id}/">Incident</a>' in text
    assert "/api/" not in text


@pytest.mark.parametrize("config,message", [
    ({"chat_id": "1"}, "bot_token: this field is required"),
    ({"bot_token": "abc", "chat_id": "1"}, "bot_token: must be a bot token as @BotFather"),
    ({"bot_token": TOKEN}, "chat_id: this field is required"),
    ({"bot_token": TOKEN, "chat_id": "my group"}, "chat_id: must be an integer chat ID"),
    ({"bot_token": TOKEN, "chat_id": True}, "chat_id: must be an integer chat ID"),
    ({"bot_token": TOKEN, "chat_id": 1, "api_url": "http://example.com"},
     "api_url: must be an https URL"),
    ({"bot_token": TOKEN, "chat_id": 1, "api_url": "https://example.com/?x=1"},
     "api_url: must be the server's base URL"),
    ({"bot_token": TOKEN, "chat_id": 1, "parse_mode": "HTML"}, "parse_mode: unknown field"),
])
def test_telegram_config_is_checked(config, message):
    with pytest.raises(ValueError) as exc:
        telegram.validate_config(config)
    assert str(exc.value).startswith(message)


def test_telegram_config_is_normalized_and_keeps_the_token():
    assert telegram.validate_config({"bot_token": f" {TOKEN} ", "chat_id": -1001234567890,
                                     "api_url": "https://tg.example.com/"}) == {
        "bot_token": TOKEN, "chat_id": "-1001234567890", "api_url": "https://tg.example.com"}
    assert telegram.validate_config({"chat_id": "@ops_room"}, previous={
        "bot_token": TOKEN, "chat_id": "1"}) == {"bot_token": TOKEN, "chat_id": "@ops_room"}


def test_telegram_token_never_reaches_the_error(project, event):
    """Telegram quotes nothing of the token, but a network error names the URL:
    the error reads ``***`` where the token was."""
    req = telegram.build_request(bot(project), event)

    def refuse(request):
        raise httpx.ConnectError(f"cannot reach {request.url}")

    code, error, retryable, _ = delivery.transmit(
        req, httpx.MockTransport(refuse))
    assert (code, retryable) == (None, True)
    assert error == ("network error: ConnectError: cannot reach "
                     "https://api.telegram.org/bot***/sendMessage")


@pytest.mark.parametrize("server, error", [
    ("echo", "HTTP 500: no such path: /bot***/sendMessage"),
    ("closed", "network error: ConnectError: [Errno 111] Connection refused")])
def test_the_token_never_reaches_a_stored_error_or_a_log(project, event, caplog, request,
                                                         server, error):
    """A delivery to a local Bot API server that quotes the URL in its 500, and to a
    closed port: the delivery's, its attempt's and the channel's errors and the
    log line hold no token."""
    caplog.set_level(logging.INFO, logger="alerts.delivery")
    api = (request.getfixturevalue("echo") if server == "echo"
           else f"http://127.0.0.1:{free_port()}")
    ch = bot(project, api_url=api)
    d = deliver(event, ch)
    assert sent_for_real(d, OPENED) == [error, error, error]
    logged = [r.getMessage() for r in caplog.records]
    assert logged == [f"delivery {d.pk} attempt 1 to channel {ch.pk}: pending {error}"]
    assert not any(TOKEN in m for m in logged)


def test_telegram_429_retry_after_from_its_json_body(project, event):
    """Telegram says when to retry in the body (``parameters.retry_after``), without
    a ``Retry-After`` header; a header, when there is one, wins."""
    req = telegram.build_request(bot(project), event)
    answers = iter([
        httpx.Response(429, json={"ok": False, "error_code": 429, "parameters": {
            "retry_after": 35}, "description": "Too Many Requests: retry after 35"}),
        httpx.Response(429, headers={"Retry-After": "7"},
                       json={"ok": False, "parameters": {"retry_after": 35}}),
        httpx.Response(429, json={"ok": False, "parameters": {"retry_after": "soon"}}),
        httpx.Response(400, json={"ok": False, "parameters": {"retry_after": 35}}),
    ])
    transport = httpx.MockTransport(lambda request: next(answers))
    assert [delivery.transmit(req, transport)[2:] for _ in range(4)] == [
        (True, 35.0), (True, 7.0), (True, None), (False, None)]


def test_telegram_marks_every_incident_event(project, incident, removed):
    """Paging events carry the severity, an acknowledgement / stable a check,
    a removed channel the information mark; each with the incident's links."""
    from alerts.models import IncidentEvent

    ch = bot(project)
    heads = {}
    for kind in ("opened", "escalated", "renotified", "acknowledged", "stable"):
        e = IncidentEvent.objects.create(incident=incident, kind=kind, at=incident.opened_at,
                                         message="m")
        heads[kind] = json.loads(telegram.build_request(ch, e).body)["text"].split("\n")[0]
    heads["channel_removed"] = json.loads(telegram.build_request(ch, removed).body)[
        "text"].split("\n")[0]
    assert heads == {
        "opened": "<b>🔴 [CRITICAL] Incident opened: Nightly backup</b>",
        "escalated": "<b>🔴 [CRITICAL] Escalated: Nightly backup</b>",
        "renotified": "<b>🔴 [CRITICAL] Still open: Nightly backup</b>",
        "acknowledged": "<b>✅ Acknowledged: Nightly backup</b>",
        "stable": "<b>✅ Stable again: Nightly backup</b>",
        "channel_removed": "<b>ℹ️ No longer following: Nightly backup</b>"}
    assert json.loads(telegram.build_request(ch, removed).body)["text"].endswith(
        links(page_links(incident)))


def test_telegram_token_is_masked_in_the_api_and_kept_when_left_out(api, project):
    from accounts.models import ApiKey
    from tests.helpers import as_key

    made = api.post("/api/v1/channels/", {"kind": "telegram", "name": "tg", "config": {
        "bot_token": TOKEN, "chat_id": -100123}}, format="json")
    assert made.status_code == 201, made.json()
    assert made.json()["config"] == {"bot_token": TOKEN, "chat_id": "-100123"}  # its admin
    url = f"/api/v1/channels/{made.json()['id']}/"
    reader = as_key(ApiKey.issue(project, read_only=True)[1])
    assert reader.get(url).json()["config"] == {"bot_token": "***", "chat_id": "***"}
    moved = api.patch(url, {"config": {"chat_id": "@ops_room"}}, format="json")
    assert moved.json()["config"] == {"bot_token": TOKEN, "chat_id": "@ops_room"}
    bad = api.post("/api/v1/channels/", {"kind": "telegram", "config": {
        "bot_token": "nope", "chat_id": 1}}, format="json")
    assert bad.status_code == 400 and "bot_token: must be a bot token" in str(bad.json())
