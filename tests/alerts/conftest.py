"""Fixtures and helpers the alerts tests share: deliveries of made-up incidents,
escalation's receivers and channels, an incident for signed links."""
import json
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import httpx
import pytest
import respx
from django.core import signing

from alerts.models import (
    Channel,
    Delivery,
    Incident,
    IncidentEvent,
)
from monitors.models import Monitor
from monitors.pings import PingInput, ingest
from tests.conftest import T0, send_due
from tests.live import Receiver as LiveReceiver

SIGNED_AT = 1735732900.0  # the time the links in notifications are signed at


@pytest.fixture
def links_signed_at_a_fixed_time(monkeypatch):
    """Links in notifications signed at ``SIGNED_AT`` (their token carries the time,
    in whole seconds)."""
    monkeypatch.setattr(signing, "time", SimpleNamespace(time=lambda: SIGNED_AT))

NOW = datetime(2025, 1, 1, 12, 0, 6, tzinfo=UTC)
HOOK = "https://hooks.example.com/cr"


@pytest.fixture
def monitor(project):
    return Monitor.objects.create(
        project=project, name="Nightly backup", slug="nightly-backup", kind="interval",
        period=timedelta(seconds=60), grace=timedelta(seconds=5),
    )


def new_incident(monitor):
    """An open incident (of a monitor of its own, as one monitor has one open incident)."""
    own = Monitor.objects.create(project=monitor.project, name=monitor.name,
                                 slug=f"m{Monitor.objects.count()}", period=monitor.period,
                                 grace=monitor.grace)
    return Incident.objects.create(monitor=own, cause="missed", summary="Nightly backup: x",
                                   opened_at=NOW, missed_count=1)


def new_delivery(incident, channel, kind="opened", at=NOW):
    event = IncidentEvent.objects.create(incident=incident, kind=kind, at=at)
    return Delivery.objects.create(event=event, incident=incident, channel=channel,
                                   created_at=at, next_attempt_at=at)


def webhook(project, url=HOOK):
    return Channel.objects.create(project=project, kind="webhook",
                                  config={"url": url, "secret": "k"})


@pytest.fixture
def live():
    receivers = []

    def make(**kw):
        receivers.append(LiveReceiver(**kw))
        return receivers[-1]

    yield make
    for r in receivers:
        r.close()


ONE, TWO, PD = "https://one.test/h", "https://two.test/h", "https://pd.test/v2/enqueue"
PD_CHANGE = "https://pd.test/v2/change/enqueue"


@pytest.fixture
def http():
    with respx.mock(assert_all_called=False) as router:
        for url in (ONE, TWO):
            router.post(url).mock(return_value=httpx.Response(200))
        router.post(PD).mock(return_value=httpx.Response(202))
        router.post(PD_CHANGE).mock(return_value=httpx.Response(202))  # channel.* notices
        yield router


def seen(http, now):
    """What each receiver got so far: [(url, event or PagerDuty action ("change":
    a Change Event))]."""
    send_due(now)
    out = []
    for call in http.calls:
        body = json.loads(call.request.content)
        what = body.get("event_action") or body.get("event") or "change"
        out.append((str(call.request.url), what))
    return out


@pytest.fixture
def channels(project):
    return (Channel.objects.create(project=project, kind="webhook", config={"url": ONE,
                                                                           "secret": "k"}),
            Channel.objects.create(project=project, kind="webhook", config={"url": TWO,
                                                                           "secret": "k"}),
            Channel.objects.create(project=project, kind="pagerduty",
                                   config={"routing_key": "R", "events_url": PD}))


@pytest.fixture
def incident(make_monitor):
    m = make_monitor(period=timedelta(seconds=3600), grace=timedelta(seconds=60))
    ingest(m.pk, PingInput("fail"), T0)
    return Incident.objects.get()


def path(url):
    return url.removeprefix("http://127.0.0.1:8000")
