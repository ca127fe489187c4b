"""cronradar.selfmetrics: GET /metrics, CronRadar's own metrics, with real values
after real pings, ticks and deliveries, the database's readings, and who may read
them.

prometheus_client's default registry is global to the test process: the process
metrics are read as deltas around what a test does."""
import time
from datetime import timedelta

import httpx
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.wsgi import get_wsgi_application
from django.db import OperationalError
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from alerts.models import Channel, Delivery, Incident, IncidentEvent
from cronradar import selfmetrics
from cronradar.probes import Probes
from monitors import evaluator, liveness
from monitors.models import Monitor
from monitors.pings import PingInput, ingest
from monitors.views import PingRoute
from tests.conftest import HOOK, T0, S, send_due
from tests.helpers import StuckRead, wsgi_call

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def app():
    """The web application as wsgi.py builds it (without its heartbeat thread)."""
    return Probes(PingRoute(get_wsgi_application()))


def scrape(app, **kwargs) -> dict:
    """GET /metrics from loopback: {(sample name, frozenset of labels): value}."""
    status, headers, body = wsgi_call(app, "/metrics", **kwargs)
    assert status == "200 OK", body
    assert headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(body.decode())
            for s in family.samples}


def value(samples: dict, name: str, **labels) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_pings_are_counted_by_kind_and_timed(app, make_monitor):
    m = make_monitor()
    before = scrape(app)
    for _ in range(3):
        assert wsgi_call(app, f"/ping/{m.uuid}")[0] == "200 OK"
    assert wsgi_call(app, f"/ping/{m.uuid}/start")[0] == "200 OK"
    # not stored: timed, not counted
    assert wsgi_call(app, "/ping/00000000-0000-0000-0000-000000000000")[0] == "404 Not Found"
    after = scrape(app)
    delta = {kind: value(after, "cronradar_pings_total", kind=kind)
             - value(before, "cronradar_pings_total", kind=kind)
             for kind in ("success", "start", "fail", "log")}
    assert delta == {"success": 3.0, "start": 1.0, "fail": 0.0, "log": 0.0}
    assert (value(after, "cronradar_ping_duration_seconds_count")
            - value(before, "cronradar_ping_duration_seconds_count")) == 5.0
    # every kind has its series from the start (no label lookup on the ping path)
    assert ("cronradar_pings_total", frozenset({("kind", "log")})) in after


def test_a_tick_is_timed(app, make_monitor):
    make_monitor()
    before = scrape(app)
    evaluator.tick(T0 + 10 * S)
    after = scrape(app)
    assert (value(after, "cronradar_evaluator_tick_duration_seconds_count")
            - value(before, "cronradar_evaluator_tick_duration_seconds_count")) == 1.0
    assert value(after, "cronradar_evaluator_tick_duration_seconds_bucket", le="+Inf") == \
        value(after, "cronradar_evaluator_tick_duration_seconds_count")


def test_a_missed_incident_is_counted_once_committed(app, make_monitor,
                                                     django_capture_on_commit_callbacks):
    m = make_monitor(period=3 * S, grace=1 * S)
    ingest(m.pk, PingInput("success"), T0)
    before = scrape(app)
    with django_capture_on_commit_callbacks(execute=False) as pending:
        assert evaluator.tick(T0 + 4 * S) == 1
    assert Incident.objects.get(monitor=m).cause == "missed"
    # not counted before the transaction commits
    assert value(scrape(app), "cronradar_incidents_opened_total", cause="missed") == \
        value(before, "cronradar_incidents_opened_total", cause="missed")
    for callback in pending:
        callback()
    after = scrape(app)
    assert (value(after, "cronradar_incidents_opened_total", cause="missed")
            - value(before, "cronradar_incidents_opened_total", cause="missed")) == 1.0


class Receiver:
    """An httpx.MockTransport handler answering the scripted statuses in turn."""

    def __init__(self, *statuses):
        self.statuses = list(statuses)

    def __call__(self, request):
        return httpx.Response(self.statuses.pop(0))


def test_delivery_attempts_are_counted_by_kind_and_result(app, make_monitor, hook,
                                                          django_capture_on_commit_callbacks):
    m = make_monitor(period=3 * S, grace=1 * S, channels=[hook])
    ingest(m.pk, PingInput("success"), T0)
    with django_capture_on_commit_callbacks(execute=True):
        evaluator.tick(T0 + 4 * S)
    assert Delivery.objects.filter(channel=hook).count() == 1
    before = scrape(app)
    transport = httpx.MockTransport(Receiver(503, 200))
    assert send_due(T0 + 4 * S, transport=transport) == 1  # 503: tried again later
    assert send_due(T0 + 4 * S + timedelta(hours=1), transport=transport) == 1  # 200
    after = scrape(app)

    def delta(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert {result: delta("cronradar_delivery_attempts_total", kind="webhook", result=result)
            for result in ("delivered", "retry", "failed")} == {
        "delivered": 1.0, "retry": 1.0, "failed": 0.0}
    assert delta("cronradar_delivery_duration_seconds_count", kind="webhook") == 2.0
    assert delta("cronradar_deliveries_finished_total", status="delivered") == 1.0
    assert delta("cronradar_deliveries_finished_total", status="failed") == 0.0

    # a 400 is not retried: failed for good
    m2 = make_monitor(period=3 * S, grace=1 * S, channels=[hook])
    ingest(m2.pk, PingInput("success"), T0)
    with django_capture_on_commit_callbacks(execute=True):
        evaluator.tick(T0 + 4 * S)
    transport = httpx.MockTransport(Receiver(400))
    assert send_due(T0 + 4 * S, transport=transport) == 1
    before, after = after, scrape(app)
    assert delta("cronradar_delivery_attempts_total", kind="webhook", result="failed") == 1.0
    assert delta("cronradar_deliveries_finished_total", status="failed") == 1.0


def _delivery(incident, channel, status, due):
    event = IncidentEvent.objects.create(incident=incident, kind="opened", at=due)
    return Delivery.objects.create(event=event, incident=incident, channel=channel,
                                   created_at=due, next_attempt_at=due, status=status)


def test_database_readings_are_exact(app, make_monitor, project, monkeypatch):
    now = T0 + 1000 * S
    monkeypatch.setattr(timezone, "now", lambda: now)
    m = make_monitor()
    Monitor.objects.filter(pk=m.pk).update(next_evaluation_at=now - 12 * S)
    make_monitor(name="later")  # due long ago too: the oldest counts
    Monitor.objects.filter(name="later").update(next_evaluation_at=now - 40 * S)
    liveness.beat(liveness.EVALUATOR, now - 7 * S)
    hook = Channel.objects.create(project=project, kind="webhook",
                                  config={"url": HOOK, "secret": "k"})
    dead = Channel.objects.create(project=project, kind="webhook", failing_since=now - 60 * S,
                                  config={"url": HOOK + "/dead", "secret": "k"})
    incident = Incident.objects.create(monitor=m, cause="missed", summary="x", opened_at=now)
    _delivery(incident, hook, Delivery.Status.PENDING, now - 30 * S)  # the oldest claimable
    _delivery(incident, hook, Delivery.Status.PENDING, now - 50 * S).delete()
    _delivery(incident, dead, Delivery.Status.PENDING, now - 90 * S)  # failing channel: waits
    _delivery(incident, hook, Delivery.Status.SENDING, now + 10 * S)
    _delivery(incident, hook, Delivery.Status.DELIVERED, now - 500 * S)  # not active
    got = scrape(app)
    assert {name: v for (name, labels), v in got.items() if name in {
        "cronradar_metrics_database_up", "cronradar_evaluator_lag_seconds",
        "cronradar_evaluator_last_tick_timestamp_seconds", "cronradar_delivery_lag_seconds",
        "cronradar_channels_failing"}} == {
        "cronradar_metrics_database_up": 1.0, "cronradar_evaluator_lag_seconds": 40.0,
        "cronradar_evaluator_last_tick_timestamp_seconds": (now - 7 * S).timestamp(),
        "cronradar_delivery_lag_seconds": 30.0, "cronradar_channels_failing": 1.0}
    assert value(got, "cronradar_deliveries", status="pending") == 2.0
    assert value(got, "cronradar_deliveries", status="sending") == 1.0
    assert ("cronradar_deliveries", frozenset({("status", "delivered")})) not in got


def test_nothing_due_reads_zero_and_no_tick_yet_is_absent(app, db):
    got = scrape(app)
    assert value(got, "cronradar_evaluator_lag_seconds") == 0.0
    assert value(got, "cronradar_delivery_lag_seconds") == 0.0
    assert value(got, "cronradar_deliveries", status="pending") == 0.0
    assert ("cronradar_deliveries", frozenset({("status", "pending")})) in got
    assert not any(name == "cronradar_evaluator_last_tick_timestamp_seconds"
                   for name, _ in got)


def test_a_database_outage_leaves_its_series_out(app, db, monkeypatch, caplog):
    def unreachable():
        raise OperationalError("connection refused")

    monkeypatch.setattr(selfmetrics, "_read_database", unreachable)
    monkeypatch.setattr(selfmetrics.connection, "close", lambda: None)  # the test's transaction
    monkeypatch.setattr(selfmetrics, "_last_outage_log", [])
    for _ in range(3):
        got = scrape(app)
    assert value(got, "cronradar_metrics_database_up") == 0.0
    assert not any(name in ("cronradar_evaluator_lag_seconds", "cronradar_deliveries",
                            "cronradar_channels_failing") for name, _ in got)
    assert ("cronradar_pings_total", frozenset({("kind", "success")})) in got  # still served
    logged = [r.getMessage() for r in caplog.records if r.name == "cronradar.selfmetrics"]
    assert logged == ["/metrics: database unavailable, its series left out: connection refused"]


def test_a_database_that_does_not_answer_is_left_out_within_a_second(app, db, monkeypatch,
                                                                     settings, caplog):
    """The database accepts and never answers: the scrape answers within the
    timeout (the readiness reads, behind the stuck one, at once), and the next
    scrape at once, starting no second read."""
    settings.CRONRADAR_READY_TIMEOUT = 1
    stuck = StuckRead()
    monkeypatch.setattr(selfmetrics, "_read_database", stuck)
    monkeypatch.setattr(selfmetrics, "_last_outage_log", [])
    try:
        for limit in (1.3, 0.2):
            began = time.monotonic()
            got = scrape(app)
            assert time.monotonic() - began < limit
            assert value(got, "cronradar_metrics_database_up") == 0.0
            assert not any(name in ("cronradar_evaluator_lag_seconds", "cronradar_deliveries",
                                    "cronradar_delivery_lag_seconds",
                                    "cronradar_channels_failing") for name, _ in got)
            assert value(got, "cronradar_ready", part="database") == 0.0
            assert ("cronradar_ready", frozenset({("part", "database")})) in got
    finally:
        stuck.free()
    assert stuck.threads == ["cronradar-probe-reads"]
    logged = [r.getMessage() for r in caplog.records if r.name == "cronradar.selfmetrics"]
    assert logged == ["/metrics: database unavailable, its series left out: "
                      "no answer within 1 s"]


def test_readiness_is_scraped_part_by_part(app, db, settings):
    """Readiness' parts as cronradar_ready{part}: the evaluator never ticked here
    (stalled: 0), no Redis configured (off: 1), the rest ok."""
    settings.REDIS_URL = ""
    got = scrape(app)
    ready = {dict(labels)["part"]: v for (name, labels), v in got.items()
             if name == "cronradar_ready"}
    assert ready == {"database": 1.0, "migrations": 1.0, "redis": 1.0, "evaluator": 0.0,
                     "deliveries": 1.0}


# --- who may read /metrics ----------------------------------------------------------

OUTSIDE = "203.0.113.5"


@pytest.fixture
def token(settings):
    settings.CRONRADAR_METRICS_TOKEN = "s3cret-token"
    return "s3cret-token"


def test_loopback_may_read_and_the_public_may_not(app, db):
    assert wsgi_call(app, "/metrics", remote_addr="127.0.0.1")[0] == "200 OK"
    assert wsgi_call(app, "/metrics", remote_addr="::1")[0] == "200 OK"
    assert wsgi_call(app, "/metrics", remote_addr="::ffff:127.0.0.1")[0] == "200 OK"
    status, headers, body = wsgi_call(app, "/metrics", remote_addr=OUTSIDE)
    assert status == "403 Forbidden"
    assert body == (b"forbidden: /metrics is readable with Authorization: Bearer "
                    b"<CRONRADAR_METRICS_TOKEN> or from an address in CRONRADAR_METRICS_ALLOWED "
                    b"(a request through a proxy counts as one only with "
                    b"CRONRADAR_TRUST_X_FORWARDED_FOR on)\n")
    assert headers["Content-Type"] == "text/plain; charset=utf-8"


def test_the_token_opens_it_from_anywhere(app, db, token):
    got = wsgi_call(app, "/metrics", headers={"Authorization": f"Bearer {token}"},
                    remote_addr=OUTSIDE)
    assert got[0] == "200 OK" and b"cronradar_pings_total" in got[2]


def test_a_wrong_token_is_401(app, db, token):
    status, headers, body = wsgi_call(app, "/metrics", remote_addr=OUTSIDE,
                                      headers={"Authorization": "Bearer s3cret-tokeN"})
    assert status == "401 Unauthorized"
    assert headers["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert body == b"wrong metrics token: send Authorization: Bearer <CRONRADAR_METRICS_TOKEN>\n"
    assert wsgi_call(app, "/metrics", remote_addr=OUTSIDE,
                     headers={"Authorization": f"Basic {token}"})[0] == "403 Forbidden"
    # from an allowed address too: a scraper with a wrong token hears so
    assert wsgi_call(app, "/metrics", remote_addr="127.0.0.1",
                     headers={"Authorization": "Bearer s3cret-tokeN"})[0] == "401 Unauthorized"
    assert wsgi_call(app, "/metrics", remote_addr="127.0.0.1")[0] == "200 OK"


def test_no_token_setting_means_no_token_works(app, db, settings):
    settings.CRONRADAR_METRICS_TOKEN = ""
    assert wsgi_call(app, "/metrics", remote_addr=OUTSIDE,
                     headers={"Authorization": "Bearer "})[0] == "403 Forbidden"
    assert wsgi_call(app, "/metrics", remote_addr=OUTSIDE,
                     headers={"Authorization": "Bearer x"})[0] == "401 Unauthorized"


def test_allowed_networks(app, db, settings):
    settings.CRONRADAR_METRICS_ALLOWED = ["10.0.0.0/8", "192.0.2.7"]
    assert wsgi_call(app, "/metrics", remote_addr="10.2.3.4")[0] == "200 OK"
    assert wsgi_call(app, "/metrics", remote_addr="192.0.2.7")[0] == "200 OK"
    assert wsgi_call(app, "/metrics", remote_addr="192.0.2.8")[0] == "403 Forbidden"
    assert wsgi_call(app, "/metrics", remote_addr="127.0.0.1")[0] == "403 Forbidden"


def test_a_bad_allowed_entry_is_a_configuration_error():
    with pytest.raises(ImproperlyConfigured, match="'10.0.0.0/33' is not an IP address"):
        selfmetrics.networks(("127.0.0.1", "10.0.0.0/33"))


def test_behind_a_trusted_proxy_the_last_forwarded_address_counts(app, db, settings):
    settings.CRONRADAR_TRUST_X_FORWARDED_FOR = True
    settings.CRONRADAR_METRICS_ALLOWED = ["192.0.2.0/24"]
    via = {"remote_addr": "10.9.9.9"}  # the proxy
    assert wsgi_call(app, "/metrics", headers={"X-Forwarded-For": "198.51.100.1, 192.0.2.4"},
                     **via)[0] == "200 OK"
    assert wsgi_call(app, "/metrics", headers={"X-Forwarded-For": "192.0.2.4, 198.51.100.1"},
                     **via)[0] == "403 Forbidden"  # a client can only prepend
    settings.CRONRADAR_METRICS_ALLOWED = ["127.0.0.0/8"]
    assert wsgi_call(app, "/metrics", headers={"X-Forwarded-For": "unknown"},
                     remote_addr="127.0.0.1")[0] == "403 Forbidden"  # not the proxy's address
    assert wsgi_call(app, "/metrics", remote_addr="127.0.0.1")[0] == "200 OK"  # not proxied


@pytest.mark.parametrize("header", [{"X-Forwarded-For": "198.51.100.1"},
                                    {"Forwarded": "for=198.51.100.1"},
                                    {"X-Real-IP": "198.51.100.1"},
                                    {"X-Forwarded-For": "127.0.0.1"}])
def test_a_proxied_request_is_never_loopback(app, db, settings, header):
    settings.CRONRADAR_TRUST_X_FORWARDED_FOR = False
    assert wsgi_call(app, "/metrics", headers=header, remote_addr="127.0.0.1")[0] == \
        "403 Forbidden"


def test_methods(app, db):
    status, headers, body = wsgi_call(app, "/metrics", "HEAD")
    assert (status, body) == ("200 OK", b"") and int(headers["Content-Length"]) > 0
    status, headers, body = wsgi_call(app, "/metrics", "POST")
    assert (status, headers["Allow"], body) == ("405 Method Not Allowed", "GET, HEAD",
                                                b"method not allowed: use GET or HEAD\n")


def test_openmetrics_when_the_scraper_asks(app, db):
    status, headers, body = wsgi_call(app, "/metrics", headers={
        "Accept": "application/openmetrics-text; version=1.0.0"})
    assert headers["Content-Type"].startswith("application/openmetrics-text; version=1.0.0")
    assert body.endswith(b"# EOF\n")
