"""Retention: what monitors.retention deletes and keeps."""
import uuid
from datetime import timedelta

import pytest

from monitors import retention
from monitors.models import Ping, PruneCursor, Run
from monitors.pings import PingInput, ingest
from tests.conftest import T0
from tests.helpers import (
    DAY,
    heartbeats,
    small,  # noqa: F401 (autouse)
)

pytestmark = pytest.mark.django_db
ROW = b"ok"  # a ping with a body is a ping row on both databases (not kept in its run)


def test_each_monitor_keeps_its_newest_pings(make_monitor):
    busy, quiet = make_monitor(), make_monitor()
    heartbeats(busy, 12, body=ROW)
    heartbeats(quiet, 3, body=ROW)
    done = retention.prune(T0 + DAY)
    assert (done.pings, done.monitors) == (7, 2)
    kept = list(Ping.objects.filter(monitor=busy).order_by("received_at")
                .values_list("received_at", flat=True))
    assert kept == [T0 + timedelta(seconds=3 * i) for i in range(7, 12)]
    assert Ping.objects.filter(monitor=quiet).count() == 3


def test_a_step_looks_only_at_monitors_that_wrote_since_the_last_one(make_monitor):
    a, b = make_monitor(), make_monitor()
    heartbeats(a, 8, body=ROW)
    heartbeats(b, 8, body=ROW)
    assert retention.prune(T0 + DAY).monitors == 2
    assert retention.prune(T0 + DAY).monitors == 0  # nothing new
    heartbeats(b, 2, start=T0 + timedelta(hours=1), body=ROW)
    done = retention.prune(T0 + DAY)
    assert (done.monitors, done.pings) == (1, 2)
    assert Ping.objects.filter(monitor=a).count() == Ping.objects.filter(monitor=b).count() == 5


def test_two_processes_never_claim_the_same_range(make_monitor, monkeypatch):
    m = make_monitor()
    heartbeats(m, 8, body=ROW)
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
    heartbeats(m, 6, step=DAY, body=ROW)  # runs at T0 .. T0+5d
    ingest(m.pk, PingInput("start"), T0 + 6 * DAY)
    ingest(m.pk, PingInput("success"), T0 + 30 * DAY)  # a run from T0+6d to T0+30d
    heartbeats(m, 2, start=T0 + 31 * DAY, body=ROW)
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
    heartbeats(m, 9, body=ROW)
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


def test_a_plans_pings_kept_and_run_retention_override_the_settings(make_monitor, settings):
    from accounts.models import Organisation, Plan
    from monitors.models import Monitor
    from tests.conftest import new_project

    settings.CRONRADAR_RUN_RETENTION_DAYS = 10
    settings.CRONRADAR_KEEP_RUNS = 1
    plan = Plan.objects.create(name="free", pings_kept=2, run_retention_days=3)
    on_plan = make_monitor()
    Organisation.objects.filter(pk=on_plan.project.organisation_id).update(plan=plan)
    other = make_monitor()
    Monitor.objects.filter(pk=other.pk).update(project=new_project("no-plan"))
    for m in (on_plan, other):
        heartbeats(m, 6, step=DAY, body=ROW)  # pings and runs at T0 .. T0+5d
    done = retention.prune(T0 + 9 * DAY)
    assert (done.pings, done.monitors) == (4 + 1, 2)  # the plan keeps 2, the setting 5
    assert list(Ping.objects.filter(monitor=on_plan).order_by("received_at").values_list(
        "received_at", flat=True)) == [T0 + 4 * DAY, T0 + 5 * DAY]
    assert Ping.objects.filter(monitor=other).count() == 5
    # runs older than 3 days go for the plan's monitor (the newest one stays);
    # the setting's 10 days keep all of the other's
    assert list(Run.objects.filter(monitor=on_plan).order_by("slot_at").values_list(
        "ended_at", flat=True)) == [T0 + 5 * DAY]
    assert done.runs == 5 and Run.objects.filter(monitor=other).count() == 6
