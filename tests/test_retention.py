"""Retention: what monitors.retention and alerts.retention delete and keep."""
import uuid
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command

from alerts import retention as alert_retention
from alerts.models import Channel, Delivery, DeliveryAttempt, Incident, IncidentEvent
from monitors import retention
from monitors.models import Ping, PruneCursor, Run
from monitors.pings import PingInput, ingest
from tests.conftest import T0

pytestmark = pytest.mark.django_db
DAY = timedelta(days=1)


@pytest.fixture(autouse=True)
def small(settings):
    settings.CRONRADAR_KEEP_PINGS = 5
    settings.CRONRADAR_KEEP_RUNS = 4
    settings.CRONRADAR_RUN_RETENTION_DAYS = 10
    settings.CRONRADAR_INCIDENT_RETENTION_DAYS = 30
    settings.CRONRADAR_PRUNE_BATCH = 3  # several batches per monitor


def heartbeats(monitor, n, start=T0, step=timedelta(seconds=3)):
    for i in range(n):
        ingest(monitor.pk, PingInput("success"), start + i * step)


def test_each_monitor_keeps_its_newest_pings(make_monitor):
    busy, quiet = make_monitor(), make_monitor()
    heartbeats(busy, 12)
    heartbeats(quiet, 3)
    done = retention.prune(T0 + DAY)
    assert (done.pings, done.monitors) == (7, 2)
    kept = list(Ping.objects.filter(monitor=busy).order_by("received_at")
                .values_list("received_at", flat=True))
    assert kept == [T0 + timedelta(seconds=3 * i) for i in range(7, 12)]
    assert Ping.objects.filter(monitor=quiet).count() == 3


def test_a_step_looks_only_at_monitors_that_wrote_since_the_last_one(make_monitor):
    a, b = make_monitor(), make_monitor()
    heartbeats(a, 8)
    heartbeats(b, 8)
    assert retention.prune(T0 + DAY).monitors == 2
    assert retention.prune(T0 + DAY).monitors == 0  # nothing new
    heartbeats(b, 2, start=T0 + timedelta(hours=1))
    done = retention.prune(T0 + DAY)
    assert (done.monitors, done.pings) == (1, 2)
    assert Ping.objects.filter(monitor=a).count() == Ping.objects.filter(monitor=b).count() == 5


def test_two_processes_never_claim_the_same_range(make_monitor, monkeypatch):
    m = make_monitor()
    heartbeats(m, 8)
    assert retention._claim("pings", Ping) == [m.pk]
    end = PruneCursor.objects.get(name="pings").position
    assert end == Ping.objects.order_by("-pk").first().pk + 1
    # a second process that read the cursor before the first one moved it
    stale = PruneCursor(name="pings", position=0)
    monkeypatch.setattr(PruneCursor.objects, "get_or_create", lambda **kw: (stale, False))
    assert retention._claim("pings", Ping) is None
    assert PruneCursor.objects.get(name="pings").position == end


def test_runs_go_when_old_and_beyond_the_newest_ones(make_monitor, settings):
    settings.CRONRADAR_KEEP_PINGS = 100
    m = make_monitor(max_runtime=timedelta(hours=1))
    heartbeats(m, 6, step=DAY)  # runs at T0 .. T0+5d
    ingest(m.pk, PingInput("start"), T0 + 6 * DAY)
    ingest(m.pk, PingInput("success"), T0 + 30 * DAY)  # a run from T0+6d to T0+30d
    heartbeats(m, 2, start=T0 + 31 * DAY)
    runs = list(Run.objects.filter(monitor=m).order_by("pk"))
    assert len(runs) == 9
    done = retention.prune(T0 + 32 * DAY)
    kept = list(Run.objects.filter(monitor=m).order_by("pk"))
    # the newest 4 stay (the one that ended T0+5d too, although older than 10 days);
    # the 5 before are older than 10 days: gone
    assert kept == runs[-4:] and done.runs == 5
    # their pings stay, without a run
    assert Ping.objects.filter(monitor=m).count() == 10
    assert list(Ping.objects.filter(monitor=m, run__isnull=True).order_by("received_at")
                .values_list("received_at", flat=True)) == [T0 + i * DAY for i in range(5)]


def test_runs_younger_than_the_retention_stay_however_many(make_monitor):
    m = make_monitor()
    heartbeats(m, 9)
    assert retention.prune(T0 + DAY).runs == 0
    assert Run.objects.filter(monitor=m).count() == 9


def test_an_open_run_or_an_unchecked_deadline_is_never_deleted(make_monitor, settings):
    settings.CRONRADAR_KEEP_PINGS = 100
    m = make_monitor(period=DAY, grace=timedelta(hours=1), deadline=timedelta(hours=2))
    ingest(m.pk, PingInput("start", rid=uuid.uuid4()), T0)  # stays open
    for i in range(1, 8):  # runs of their own (other rids)
        ingest(m.pk, PingInput("success", rid=uuid.uuid4()), T0 + i * DAY)
    Run.objects.filter(monitor=m, ended_at__gt=T0 + DAY).update(deadline_checked=True)
    retention.prune(T0 + 100 * DAY)
    left = Run.objects.filter(monitor=m)
    # the newest 4, the open one, and the one whose deadline is not checked yet
    ended = sorted(left.values_list("ended_at", flat=True), key=lambda t: t or T0)
    assert ended == [None, T0 + DAY, *[T0 + i * DAY for i in range(4, 8)]]
    assert left.get(ended_at=None).outcome == "running"


def incident(monitor, resolved_at, status="delivered"):
    inc = Incident.objects.create(monitor=monitor, cause="missed", summary="x",
                                  opened_at=resolved_at - DAY, resolved_at=resolved_at)
    event = IncidentEvent.objects.create(incident=inc, kind="opened", at=inc.opened_at)
    channel = Channel.objects.create(project=monitor.project, kind="webhook",
                                     config={"url": "http://example.invalid"})
    delivery = Delivery.objects.create(event=event, incident=inc, channel=channel,
                                       status=status)
    DeliveryAttempt.objects.create(delivery=delivery, number=1, at=inc.opened_at)
    return inc


def test_old_resolved_incidents_go_with_their_events_deliveries_and_attempts(make_monitor):
    m = make_monitor()
    old = incident(m, T0 - 40 * DAY)
    recent = incident(m, T0 - 20 * DAY)
    sending = incident(m, T0 - 50 * DAY, status="pending")
    still_open = Incident.objects.create(monitor=m, cause="missed", summary="y",
                                         opened_at=T0 - 100 * DAY)
    assert alert_retention.prune(T0) == 1
    assert set(Incident.objects.values_list("pk", flat=True)) == {
        recent.pk, sending.pk, still_open.pk}
    assert not IncidentEvent.objects.filter(incident_id=old.pk).exists()
    assert not Delivery.objects.filter(incident_id=old.pk).exists()
    assert DeliveryAttempt.objects.count() == 2


def test_the_prune_command_with_all_looks_at_every_monitor(make_monitor):
    a = make_monitor()
    heartbeats(a, 9)
    PruneCursor.objects.update_or_create(name="pings", defaults={"position": 10**9})
    PruneCursor.objects.update_or_create(name="runs", defaults={"position": 10**9})
    out = StringIO()
    call_command("prune", stdout=out)
    assert Ping.objects.filter(monitor=a).count() == 9  # past the cursor: not looked at
    call_command("prune", "--all", stdout=out)
    assert Ping.objects.filter(monitor=a).count() == 5
    assert "deleted 4 pings, 5 runs and 0 incidents/outages" in out.getvalue()
