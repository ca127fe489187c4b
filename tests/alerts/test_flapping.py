"""Flapping: many incidents in an hour collapse into one notice, and one "stable
again" notice follows a quiet hour."""
import pytest

from alerts.models import Alerting, Incident
from monitors import evaluator
from monitors.pings import PingInput, ingest
from tests.conftest import T0, hook_bodies, s

pytestmark = pytest.mark.django_db


def received(http, now):
    return [(b["event"], b["incident"]["id"]) for b in hook_bodies(http, now)]


@pytest.fixture
def monitor(make_monitor, hook, settings):
    settings.CRONRADAR_FLAPPING_INCIDENTS = 3
    return make_monitor(period=s(3600), grace=s(60), channels=[hook])


def flap(monitor, times):
    for t in times:
        ingest(monitor.pk, PingInput("fail"), T0 + s(t))
        ingest(monitor.pk, PingInput("success"), T0 + s(t + 5))


def test_many_incidents_in_an_hour_collapse_into_one_notice(monitor, hook_http):
    flap(monitor, [0, 60, 120, 180, 240, 300])
    ids = list(Incident.objects.order_by("pk").values_list("pk", flat=True))
    assert len(ids) == 6  # every incident is recorded
    got = received(hook_http, T0 + s(400))
    # three notified as usual; the fourth crosses the line and says so; then silence.
    # Each resolve waits for its own trigger, so per incident the order is fixed.
    assert sorted(got) == sorted((e, i) for i in ids[:4]
                                 for e in ("incident.opened", "incident.resolved"))
    for i in ids[:4]:
        assert [e for e, j in got if j == i] == ["incident.opened", "incident.resolved"]
    fourth = Incident.objects.get(pk=ids[3])
    assert "flapping: 4 incidents in the last hour" in fourth.summary
    assert Incident.objects.get(pk=ids[4]).events.get(kind="opened").detail["suppressed"] == (
        "the monitor is flapping")
    alerting = Alerting.objects.get(monitor=monitor)
    assert (alerting.flapping_since, alerting.stable_check_at) == (T0 + s(180), T0 + s(3900))
    evaluator.tick(T0 + s(3899))
    assert len(received(hook_http, T0 + s(3899))) == 8
    evaluator.tick(T0 + s(3900))  # an hour without a new incident
    # about the incident that crossed the line (PagerDuty: a resolve of its page)
    assert received(hook_http, T0 + s(3900))[8:] == [("incident.stable", ids[3])]
    alerting.refresh_from_db()
    assert alerting.flapping_since is None


def test_an_incident_open_when_flapping_stops_is_notified_then(monitor, hook_http):
    flap(monitor, [0, 60, 120, 180])
    ingest(monitor.pk, PingInput("fail"), T0 + s(240))  # held back, and it stays down
    down = Incident.objects.order_by("-pk").first()
    assert down.resolved_at is None and down.tier == -1
    evaluator.tick(T0 + s(3840))  # quiet for an hour: flapping ends ...
    evaluator.tick(T0 + s(3841))  # ... and the open incident is notified
    assert received(hook_http, T0 + s(3841))[-1] == ("incident.escalated", down.pk)
    assert down.events.get(step="tier:0:0").message == (
        "notified: still open after the monitor stopped flapping")


def test_the_api_shows_since_when_a_monitor_flaps(monitor, hook_http, client, api_key):
    url = f"/api/v1/monitors/{monitor.pk}/"
    auth = {"HTTP_AUTHORIZATION": f"Bearer {api_key}"}
    assert client.get(url, **auth).json()["flapping_since"] is None
    flap(monitor, [0, 60, 120, 180])
    assert client.get(url, **auth).json()["flapping_since"] == "2026-01-05T12:03:00Z"
    # read-only: a PATCH of it changes nothing
    client.patch(url, {"flapping_since": None}, content_type="application/json", **auth)
    assert client.get(url, **auth).json()["flapping_since"] == "2026-01-05T12:03:00Z"


def test_flapping_that_ends_while_a_notified_incident_is_open_sends_no_stable(monitor,
                                                                            hook_http,
                                                                            settings):
    settings.CRONRADAR_FLAPPING_QUIET = 600
    flap(monitor, [0, 60, 120, 180])  # the fourth crosses the line
    evaluator.tick(T0 + s(780))  # quiet for 10 minutes: stable again
    assert received(hook_http, T0 + s(780))[-1][0] == "incident.stable"
    ingest(monitor.pk, PingInput("fail"), T0 + s(800))  # 5 in the hour: crosses again
    down = Incident.objects.order_by("-pk").first()
    assert down.tier == 0 and "flapping: 5 incidents in the last hour" in down.summary
    evaluator.tick(T0 + s(1400))  # quiet again, and it is still open
    got = received(hook_http, T0 + s(1400))
    assert [e for e, i in got if i == down.pk] == ["incident.opened"]  # no "stable"
    assert Incident.objects.get(pk=down.pk).resolved_at is None
    assert Alerting.objects.get(monitor=monitor).flapping_since is None
