"""alerts.integrations.mattermost: the exact webhook messages (also Rocket.Chat's),
Mattermost's 16,383 characters, mentions made harmless, config checks, and the
hook id kept out of errors and logs."""
import json
import logging

import pytest

from alerts.integrations import OutgoingRequest, mattermost
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

HOOK = "https://mattermost.example.com/hooks/xq9b3k7rjpgmtfz1"


def fields(rows) -> list[dict]:
    return [{"short": True, "title": k, "value": v} for k, v in rows]


def links(rows) -> str:
    return " · ".join(f"[{label}]({url})" for label, url in rows)


def test_mattermost_opened_exactly(project, event):
    req = mattermost.build_request(channel(project, "mattermost", url=HOOK), event)
    title = "Incident opened: Nightly backup"
    text = "Nightly backup: run failed (exit status 2)"
    assert req == OutgoingRequest(url=HOOK, headers=JSON_HEADERS, body=canonical({
        "text": title, "attachments": [{
            "fallback": f"{title}: {text}", "color": "#E8590C", "title": title,
            "title_link": f"{BASE}/incidents/{event.incident_id}/",
            "text": (f"{text}\n\n**Last ping body**\n```\ndisk full\n```\n\n"
                     f"{links(page_links(event.incident))}"),
            "fields": fields(FACTS)}]}), redact=("xq9b3k7rjpgmtfz1",))


def test_mattermost_resolved_exactly(project, resolved):
    req = mattermost.build_request(channel(project, "mattermost", url=HOOK), resolved)
    assert json.loads(req.body) == {"text": "Resolved: Nightly backup", "attachments": [{
        "fallback": "Resolved: Nightly backup: ping received", "color": "#2E7D32",
        "title": "Resolved: Nightly backup",
        "title_link": f"{BASE}/incidents/{resolved.incident_id}/",
        "text": (f"ping received\n\n**Last ping body**\n```\n{TAIL}\n```\n\n"
                 f"{links(page_links(resolved.incident))}"),
        "fields": fields(MISSED_FACTS)}]}


def test_mattermost_notices_exactly(test_notice, project, outage_notice, failing):
    ch, notice = test_notice("mattermost", url=HOOK)
    assert json.loads(mattermost.build_notice(ch, notice).body) == {
        "text": "CronRadar test notification", "attachments": [{
            "fallback": f"CronRadar test notification: {TEST_TEXT}", "color": "#2E7D32",
            "title": "CronRadar test notification", "title_link": channel_page(ch),
            "text": f"{TEST_TEXT}\n\n{links([('Channel', channel_page(ch))])}",
            "fields": []}]}
    assert json.loads(mattermost.build_notice(ch, outage_notice).body) == {
        "text": "CronRadar was unreachable", "attachments": [{
            "fallback": f"CronRadar was unreachable: {OUTAGE_TEXT}", "color": "#4A90D9",
            "title": "CronRadar was unreachable", "text": OUTAGE_TEXT, "fields": []}]}
    assert json.loads(mattermost.build_notice(ch, failing).body) == {
        "text": "Channel failing: Ops hook", "attachments": [{
            "fallback": f"Channel failing: Ops hook: {FAILING_TEXT}", "color": "#F5A623",
            "title": "Channel failing: Ops hook", "title_link": BROKEN_PAGE,
            "text": f"{FAILING_TEXT}\n\n{links([('Channel', BROKEN_PAGE)])}",
            "fields": fields(BROKEN_FACTS)}]}


def test_mattermost_cuts_a_long_text_to_the_post_limit(project, event):
    event.incident.summary = "s" * 20000
    body = json.loads(mattermost.build_request(channel(project, "mattermost", url=HOOK),
                                               event).body)
    [a] = body["attachments"]
    title = "Incident opened: Nightly backup"
    after = (f"\n\n**Last ping body**\n```\ndisk full\n```\n\n"
             f"{links(page_links(event.incident))}")
    fixed = 3 * len(title) + 2 + sum(len(k) + len(v) for k, v in FACTS)
    kept = (16383 - fixed - len(after)) // 2 - 1  # the ellipsis
    assert body == {"text": title, "attachments": [{
        "fallback": f"{title}: " + "s" * kept + "…", "color": "#E8590C", "title": title,
        "title_link": f"{BASE}/incidents/{event.incident_id}/",
        "text": "s" * kept + "…" + after, "fields": fields(FACTS)}]}
    total = len(body["text"]) + len(a["fallback"]) + len(a["title"]) + len(a["text"]) + sum(
        len(f["title"]) + len(f["value"]) for f in a["fields"])
    assert 16382 <= total <= 16383


def test_mattermost_mentions_cannot_notify(project, event):
    event.incident.monitor.name = "@channel backup"
    body = json.loads(mattermost.build_request(channel(project, "mattermost", url=HOOK),
                                               event).body)
    assert body["text"] == "Incident opened: @\u2060channel backup"
    assert "@channel" not in json.dumps(body, ensure_ascii=False)


def test_rocket_chat_hook_urls_are_accepted_and_both_parts_redacted(project, event):
    url = "https://rocket.example.com/hooks/6a1b2c3d/Zx9yTokenTOKEN"
    assert mattermost.validate_config({"url": url}) == {"url": url}
    req = mattermost.build_request(channel(project, "mattermost", url=url), event)
    assert req.redact == ("6a1b2c3d", "Zx9yTokenTOKEN")


@pytest.mark.parametrize("config,message", [
    ({}, "url: this field is required"),
    ({"url": "https://mattermost.example.com/api/v4/posts"},
     "url: must be an incoming-webhook URL"),
    ({"url": "https://mattermost.example.com/hooks/"}, "url: must be an incoming-webhook URL"),
    ({"url": "ftp://mattermost.example.com/hooks/x"}, "url: must be an http(s) URL"),
    ({"url": HOOK, "channel": "town-square"}, "channel: unknown field"),
])
def test_mattermost_config_is_checked(config, message):
    with pytest.raises(ValueError) as exc:
        mattermost.validate_config(config)
    assert str(exc.value).startswith(message)


def test_mattermost_colours_of_the_other_incident_events(project, incident, removed):
    from alerts.models import IncidentEvent

    ch = channel(project, "mattermost", url=HOOK)
    renotified = IncidentEvent.objects.create(incident=incident, kind="renotified",
                                              at=incident.opened_at, message="still missing")
    stable = IncidentEvent.objects.create(incident=incident, kind="stable",
                                          at=incident.opened_at, message="stable again")
    assert [json.loads(mattermost.build_request(ch, e).body)["attachments"][0]["color"]
            for e in (renotified, stable, removed)] == ["#D0021B", "#2E7D32", "#4A90D9"]


@pytest.mark.parametrize("hook", ["/hooks/xq9b3k7rjpgmtfz1", "/hooks/6a1b2c3d/Zx9yTokenTOKEN"])
def test_the_hook_never_reaches_an_error_or_a_log(project, event, echo, caplog, hook):
    """A receiver whose 500 quotes the URL (Mattermost's, Rocket.Chat's with its
    token): the delivery's, its attempt's and the channel's errors and the log line
    read ``***`` for each part of the hook."""
    caplog.set_level(logging.INFO, logger="alerts.delivery")
    ch = channel(project, "mattermost", url=echo + hook)
    d = deliver(event, ch)
    error = "HTTP 500: no such path: " + {"/hooks/xq9b3k7rjpgmtfz1": "/hooks/***",
                                          "/hooks/6a1b2c3d/Zx9yTokenTOKEN": "/hooks/***/***"}[hook]
    assert sent_for_real(d, OPENED) == [error, error, error]
    logged = [r.getMessage() for r in caplog.records]
    assert logged == [f"delivery {d.pk} attempt 1 to channel {ch.pk}: pending {error}"]
