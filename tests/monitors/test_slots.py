"""monitors.slots: which slot a run belongs to (early, late and end-only pings), and a
monitor's status."""
import pytest

from alerts.models import Incident
from monitors import evaluator, slots
from monitors.models import Monitor, Run
from monitors.pings import PingInput, ingest
from tests.conftest import T0, s

pytestmark = pytest.mark.django_db


def test_status_values(make_monitor):
    m = make_monitor(period=s(10), grace=s(5))

    def st(now):
        m.refresh_from_db()
        running = m.runs.filter(outcome="running").exists()
        return slots.status(m, now, running=running,
                            incident_open=m.incidents.filter(resolved_at=None).exists())

    assert st(T0) == "new"
    ingest(m.pk, PingInput("start"), T0 + s(1))
    assert st(T0 + s(2)) == "running"
    ingest(m.pk, PingInput("success"), T0 + s(3))
    assert st(T0 + s(4)) == "up"
    assert st(T0 + s(12)) == "late"
    evaluator.tick(T0 + s(16))
    assert st(T0 + s(16)) == "down"
    Monitor.objects.filter(pk=m.pk).update(paused=True)
    assert st(T0 + s(16)) == "paused"


def _run_hours(m, ping_times, until):
    """Ingest end-only (or start+end) pings at the given times while an evaluator
    ticks every 20 s up to ``until``."""
    t, pings = T0 - s(3600), sorted(ping_times)
    while t <= until:
        while pings and pings[0][0] <= t:
            at, kind = pings.pop(0)
            ingest(m.pk, PingInput(kind), at)
        evaluator.tick(t)
        t += s(20)


@pytest.mark.parametrize("early", [2, 30, 59])
@pytest.mark.parametrize("kinds", [("success",), ("start", "success")])
def test_a_host_with_a_fast_clock_never_alerts(make_monitor, early, kinds):
    # 0 * * * *, grace 60; the job's host clock runs `early` seconds fast, so its
    # pings come just before each hour (end-only, or start + end one second apart)
    m = make_monitor(kind="cron", schedule="0 * * * *", grace=s(60), created=T0 - s(1800))
    hours = [T0 + s(3600 * h) for h in range(5)]
    pings = [(slot - s(early) + s(i), kind) for slot in hours for i, kind in enumerate(kinds)]
    _run_hours(m, pings, T0 + s(4 * 3600 + 600))
    assert not Incident.objects.exists()
    assert list(Run.objects.order_by("slot_at").values_list("slot_at", "outcome")) == [
        (slot, "succeeded") for slot in hours]


def test_an_end_only_job_belongs_to_the_minute_it_started_in(make_monitor):
    # * * * * *: a 50 s job that pings only when it ends (grace covers its run)
    m = make_monitor(kind="cron", schedule="* * * * *", grace=s(60), created=T0 - s(1))
    _run_hours(m, [(T0 + s(60 * i + 50), "success") for i in range(10)], T0 + s(600))
    assert not Incident.objects.exists()
    assert list(Run.objects.order_by("slot_at").values_list("slot_at", flat=True)) == [
        T0 + s(60 * i) for i in range(10)]


def test_cron_slot_for_late_and_early_first_pings(make_monitor):
    m = make_monitor(kind="cron", schedule="* * * * *", grace=s(40), created=T0 - s(1))
    ingest(m.pk, PingInput("start"), T0 + s(35))  # late but within grace: its own slot
    ingest(m.pk, PingInput("success"), T0 + s(36))
    ingest(m.pk, PingInput("start"), T0 + s(90))  # T0+1min had no run: late again
    ingest(m.pk, PingInput("start"), T0 + s(175))  # T0+2min past its grace: 5 s early
    assert list(Run.objects.order_by("pk").values_list("slot_at", flat=True)) == [
        T0, T0 + s(60), T0 + s(180)]


def test_skipped_slots_are_those_an_earlier_run_was_open_at_counted_exactly():
    """Pure: slots every 10 s from T0+10; run 1 open from T0+5 to T0+35 (slots 10, 20,
    30), run 2 from T0+42 and still open (50 .. 190); an outage makes the grace ends
    of slots 100 and 110 unknown; only the 10 newest missed slots are listed."""
    from monitors.liveness import Liveness, Window

    m = Monitor(kind="interval", period=s(10), grace=s(2), next_expected_at=T0 + s(10))
    outage = Window(T0 + s(101), T0 + s(113), T0 + s(101), T0 + s(113))
    alive = Liveness((outage,))
    runs = [Run(pk=1, started_at=T0 + s(5), ended_at=T0 + s(35)),
            Run(pk=2, started_at=T0 + s(42)), Run(pk=3, ended_at=T0 + s(44))]  # no start
    due = slots.overdue(m, T0 + s(192), alive)
    assert (due.missed_count, due.unknown_by_outage) == (17, {T0 + s(101): 2})
    due.missed = due.missed[-10:]  # as if capped (slots.MAX_RUN_ROWS)
    got = slots.skipped(m, due, runs, alive)
    assert got.count == 3 + 15 - 2  # 10, 20, 30; 50 .. 190 but the two unknown ones
    assert [(slot, run.pk) for slot, run in got.slots] == [
        (T0 + s(10 * i), 2) for i in (8, 9, *range(12, 20))]
    # a slot that already has a run (claimed by a slot assignment) is no skipped one
    assert slots.skipped(m, due, runs, alive, frozenset({T0 + s(20), T0 + s(110)})).count == 15
