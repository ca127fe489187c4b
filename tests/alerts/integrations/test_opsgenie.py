"""alerts.integrations.opsgenie: create, acknowledge and close requests."""
import json

import pytest

from alerts.integrations import opsgenie
from alerts.models import IncidentEvent
from tests.alerts.integrations.conftest import (
    BROKEN_PAGE,
    DEDUP,
    FACTS,
    OPENED,
    OUTAGE_TEXT,
    RECOVERED_TEXT,
    TEST_TEXT,
    ack_link,
    channel,
    channel_page,
    page_links,
)

pytestmark = pytest.mark.django_db


def test_opsgenie_create_acknowledge_close(project, event):
    ch = channel(project, "opsgenie", api_key="K", region="eu")
    req = opsgenie.build_request(ch, event)
    assert (req.url, req.headers["Authorization"]) == (
        "https://api.eu.opsgenie.com/v2/alerts", "GenieKey K")
    body = json.loads(req.body)
    assert {k: body[k] for k in ("message", "alias", "priority", "entity", "tags", "source")} == {
        "message": "Incident opened: Nightly backup", "alias": DEDUP, "priority": "P2",
        "entity": "acme/nightly-backup", "tags": ["db"], "source": "CronRadar"}
    assert body["description"] == ("Nightly backup: run failed (exit status 2)\n\n"
                                   "Last ping body:\ndisk full")
    # the facts, times in the monitor's zone, and the links people open: no API URL
    assert body["details"] == {**dict(FACTS), **dict(page_links(event.incident))}
    assert body["details"]["Acknowledge"] == ack_link(event)
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


def test_opsgenie_api_url_overrides_the_region(project, event):
    assert opsgenie.validate_config({"api_key": "K", "region": "eu",
                                     "api_url": "http://127.0.0.1:9000/og/"}) == {
        "api_key": "K", "region": "eu", "api_url": "http://127.0.0.1:9000/og"}
    ch = channel(project, "opsgenie", api_key="K", region="eu",
                 api_url="http://127.0.0.1:9000/og")
    assert opsgenie.build_request(ch, event).url == "http://127.0.0.1:9000/og/v2/alerts"
    done = IncidentEvent(incident=event.incident, kind="resolved", at=OPENED, message="ok")
    assert opsgenie.build_request(ch, done).url == (
        f"http://127.0.0.1:9000/og/v2/alerts/{DEDUP}/close?identifierType=alias")
    assert opsgenie.build_request(channel(project, "opsgenie", api_key="K"), event).url == (
        "https://api.opsgenie.com/v2/alerts")  # no region, no api_url: the US host
    with pytest.raises(ValueError, match="api_url: must be an http"):
        opsgenie.validate_config({"api_key": "K", "api_url": "ftp://x.test/"})


def test_opsgenie_description_keeps_the_body_tail_within_15000(project, event):
    event.incident.summary = "s" * 20000
    body = json.loads(opsgenie.build_request(channel(project, "opsgenie", api_key="K"),
                                             event).body)
    assert len(body["description"]) == 15000
    assert body["description"].endswith("s…\n\nLast ping body:\ndisk full")


def test_opsgenie_test_notification_and_its_close(test_notice):
    ch, notice = test_notice("opsgenie", api_key="K", region="us")
    req = opsgenie.build_notice(ch, notice)
    assert (req.url, req.headers["Authorization"]) == ("https://api.opsgenie.com/v2/alerts",
                                                       "GenieKey K")
    assert json.loads(req.body) == {
        "message": "CronRadar test notification", "alias": f"cronradar-test-{ch.pk}",
        "description": TEST_TEXT, "priority": "P5", "source": "CronRadar",
        "details": {"channel_page": channel_page(ch), "event_id": str(notice.pk)}}
    close = opsgenie.build_test_close(ch, notice)
    assert (close.url, json.loads(close.body)) == (
        f"https://api.opsgenie.com/v2/alerts/cronradar-test-{ch.pk}/close?identifierType=alias",
        {"source": "CronRadar", "user": "CronRadar", "note": "test notification"})


def test_opsgenie_outage_summary(project, outage_notice):
    req = opsgenie.build_notice(channel(project, "opsgenie", api_key="K"), outage_notice)
    assert (req.url, json.loads(req.body)) == ("https://api.opsgenie.com/v2/alerts", {
        "message": "CronRadar was unreachable",
        "alias": f"cronradar-outage-{outage_notice.detail['impact']}",
        "description": OUTAGE_TEXT, "priority": "P5", "source": "CronRadar"})


def test_opsgenie_channel_notice_is_a_p5_alert(project, recovered):
    req = opsgenie.build_notice(channel(project, "opsgenie", api_key="K"), recovered)
    assert (req.url, req.headers["Authorization"]) == ("https://api.opsgenie.com/v2/alerts",
                                                       "GenieKey K")
    assert json.loads(req.body) == {
        "message": "Channel recovered: Ops hook", "alias": f"cronradar-notice-{recovered.pk}",
        "description": RECOVERED_TEXT, "priority": "P5", "source": "CronRadar",
        "details": {"channel_page": BROKEN_PAGE, "event_id": str(recovered.pk)}}
