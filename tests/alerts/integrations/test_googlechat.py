"""alerts.integrations.googlechat: the exact card messages, one thread per
incident, Google Chat's 32,000 bytes, escaping, config checks, and the URL's key
and token kept out of errors and logs."""
import json
import logging

import pytest

from alerts.integrations import OutgoingRequest, googlechat
from tests.alerts.integrations.conftest import (
    BROKEN_FACTS,
    BROKEN_PAGE,
    DEDUP,
    FACTS,
    FAILING_TEXT,
    JSON_HEADERS,
    MISSED_FACTS,
    OPENED,
    OUTAGE_TEXT,
    TAIL,
    TEST_TEXT,
    canonical,
    channel,
    channel_page,
    deliver,
    page_links,
    sent_for_real,
)

pytestmark = pytest.mark.django_db

HOOK = "https://chat.googleapis.com/v1/spaces/AAAAkq1/messages?key=AIzaK&token=tOk3n%3D"
THREADED = f"{HOOK}&messageReplyOption=REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD"


def card(title, subtitle, text, rows=(), links=(), body=None) -> list[dict]:
    sections = [{"widgets": [{"textParagraph": {"text": text}}]}]
    if rows:
        sections.append({"widgets": [{"decoratedText": {"topLabel": k, "text": v}}
                                     for k, v in rows]})
    if body is not None:
        sections.append({"header": "Last ping body",
                         "widgets": [{"textParagraph": {"text": body}}]})
    if links:
        sections.append({"widgets": [{"buttonList": {"buttons": [
            {"text": label, "onClick": {"openLink": {"url": url}}} for label, url in links]}}]})
    return [{"cardId": "cronradar", "card": {"header": {"title": title, "subtitle": subtitle},
                                             "sections": sections}}]


def test_googlechat_opened_exactly(project, event):
    req = googlechat.build_request(channel(project, "googlechat", url=HOOK), event)
    title = "Incident opened: Nightly backup"
    assert req == OutgoingRequest(url=THREADED, headers=JSON_HEADERS, body=canonical({
        "text": title, "thread": {"threadKey": f"cronradar-{DEDUP}"},
        "cardsV2": card(title, "🟠 ERROR", "Nightly backup: run failed (exit status 2)", FACTS,
                        page_links(event.incident), "disk full")}),
        redact=("AIzaK", "tOk3n%3D", "tOk3n="))  # the key, the token as written and decoded


def test_googlechat_resolved_exactly(project, resolved):
    req = googlechat.build_request(channel(project, "googlechat", url=HOOK), resolved)
    assert (req.url, json.loads(req.body)) == (THREADED, {
        "text": "Resolved: Nightly backup", "thread": {"threadKey": f"cronradar-{DEDUP}"},
        "cardsV2": card("Resolved: Nightly backup", "✅ RESOLVED", "ping received", MISSED_FACTS,
                        page_links(resolved.incident), TAIL)})


def test_googlechat_notices_start_threads_of_their_own(test_notice, project, outage_notice,
                                                       failing):
    ch, notice = test_notice("googlechat", url=HOOK)
    req = googlechat.build_notice(ch, notice)
    assert req.redact == ("AIzaK", "tOk3n%3D", "tOk3n=")
    assert (req.url, json.loads(req.body)) == (HOOK, {
        "text": "CronRadar test notification",
        "cardsV2": card("CronRadar test notification", "✅ TEST", TEST_TEXT,
                        links=[("Channel", channel_page(ch))])})
    assert json.loads(googlechat.build_notice(ch, outage_notice).body) == {
        "text": "CronRadar was unreachable",
        "cardsV2": card("CronRadar was unreachable", "⚠️ OUTAGE", OUTAGE_TEXT)}
    assert json.loads(googlechat.build_notice(ch, failing).body) == {
        "text": "Channel failing: Ops hook",
        "cardsV2": card("Channel failing: Ops hook", "⚠️ FAILING", FAILING_TEXT, BROKEN_FACTS,
                        [("Channel", BROKEN_PAGE)])}


def test_googlechat_escapes_user_text(project, event):
    event.incident.monitor.name = "<users/all> & co"
    event.incident.summary = "line 1\nline <2>"
    document = json.loads(googlechat.build_request(channel(project, "googlechat", url=HOOK),
                                                   event).body)
    assert document["text"] == "Incident opened: ‹users/all› & co"  # noqa: RUF001
    sections = document["cardsV2"][0]["card"]["sections"]
    assert sections[0]["widgets"][0]["textParagraph"]["text"] == "line 1<br>line &lt;2&gt;"
    assert sections[1]["widgets"][0]["decoratedText"]["text"] == (
        "&lt;users/all&gt; &amp; co (acme/nightly-backup)")


def test_googlechat_cuts_a_long_text_to_32000_bytes(project, event):
    event.incident.summary = "é" * 20000  # 2 bytes each in UTF-8
    req = googlechat.build_request(channel(project, "googlechat", url=HOOK), event)
    title = "Incident opened: Nightly backup"

    def expected(kept: int) -> bytes:
        return canonical({
            "text": title, "thread": {"threadKey": f"cronradar-{DEDUP}"},
            "cardsV2": card(title, "🟠 ERROR", "é" * kept + "…", FACTS,
                            page_links(event.incident), "disk full")})

    # the most that fits (about 15,290: the links' ids, longer on a database whose
    # sequences have run on, take a few bytes): one "é" more is over 32,000 bytes
    kept = next(k for k in range(16000, 0, -1) if len(expected(k)) <= 32_000)
    assert 15_000 < kept < 15_400
    assert req.body == expected(kept)
    assert len(req.body) > 32_000 - 2


def test_googlechat_keeps_the_hooks_parameters_and_replaces_a_reply_option(project, event):
    url = f"{HOOK}&messageReplyOption=REPLY_MESSAGE_OR_FAIL"
    req = googlechat.build_request(channel(project, "googlechat", url=url), event)
    assert req.url == THREADED


@pytest.mark.parametrize("config,message", [
    ({}, "url: this field is required"),
    ({"url": "http://chat.googleapis.com/v1/spaces/A/messages?key=k&token=t"},
     "url: must be an https URL"),
    ({"url": "https://chat.google.com/room/AAAAkq1"}, "url: must be a Google Chat webhook URL"),
    ({"url": "https://chat.googleapis.com/v1/spaces/A/messages?key=k"},
     "url: must be a Google Chat webhook URL"),
    ({"url": "https://example.com/v1/spaces/A/messages?key=k&token=t"},
     "url: must be a Google Chat webhook URL"),
    ({"url": HOOK, "thread": "x"}, "thread: unknown field"),
])
def test_googlechat_config_is_checked(config, message):
    with pytest.raises(ValueError) as exc:
        googlechat.validate_config(config)
    assert str(exc.value).startswith(message)


def test_googlechat_config_accepts_a_webhook_url():
    assert googlechat.validate_config({"url": f" {HOOK} "}) == {"url": HOOK}


def test_googlechat_subtitles_of_the_other_incident_events(project, incident, removed):
    from alerts.models import IncidentEvent

    ch = channel(project, "googlechat", url=HOOK)
    acked = IncidentEvent.objects.create(incident=incident, kind="acknowledged",
                                         at=incident.opened_at, message="acknowledged")
    subtitles = [json.loads(googlechat.build_request(ch, e).body)["cardsV2"][0]["card"][
        "header"]["subtitle"] for e in (acked, removed)]
    assert subtitles == ["✅ ACKNOWLEDGED", "ℹ️ NO LONGER FOLLOWING"]


def test_googlechat_key_and_token_never_reach_an_error_or_a_log(project, event, echo, caplog):
    """A receiver whose 500 quotes the URL: the delivery's, its attempt's and the
    channel's errors and the log line read ``***`` where the key and token were."""
    caplog.set_level(logging.INFO, logger="alerts.delivery")
    key, token = "AIzaSyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI", "q1_Bw-xZ0%3D"
    ch = channel(project, "googlechat",
                 url=f"{echo}/v1/spaces/AAAAkq1/messages?key={key}&token={token}")
    d = deliver(event, ch)
    error = ("HTTP 500: no such path: /v1/spaces/AAAAkq1/messages?key=***&token=***"
             "&messageReplyOption=REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD")
    assert sent_for_real(d, OPENED) == [error, error, error]
    logged = [r.getMessage() for r in caplog.records]
    assert logged == [f"delivery {d.pk} attempt 1 to channel {ch.pk}: pending {error}"]
