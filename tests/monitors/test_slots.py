"""monitors.slots: which slot a run belongs to (early, late and end-only pings), and a
monitor's status."""
from datetime import UTC, datetime

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


def _at(h, mi, sec=0):
    return datetime(2026, 1, 5, h, mi, sec, tzinfo=UTC)


def _runs(m):
    return list(Run.objects.filter(monitor=m).order_by("slot_at", "pk")
                .values_list("slot_at", "outcome"))


def _job(m, first_ping):
    ingest(m.pk, PingInput("start"), first_ping)
    ingest(m.pk, PingInput("success"), first_ping + s(20))


def test_grace_wider_than_the_gap_reports_the_slot_without_a_run(make_monitor):
    # */5 with grace 600 s: runs first-pinged at 09:55:02, 10:05:02, 10:10:02, none
    # for 10:00 (getsentry/sentry#54639)
    m = make_monitor(kind="cron", schedule="*/5 * * * *", grace=s(600), created=_at(9, 50, 30))
    _job(m, _at(9, 55, 2))
    _job(m, _at(10, 5, 2))
    m.refresh_from_db()
    # 10:00 is still open: next_expected_at stays there (never past it)
    assert (m.next_expected_at, m.next_evaluation_at) == (_at(10, 0), _at(10, 10))
    assert evaluator.tick(_at(10, 9, 59)) == 0
    assert evaluator.tick(_at(10, 10)) == 1  # 10:00 + grace
    assert _runs(m) == [(_at(9, 55), "succeeded"), (_at(10, 0), "missed"),
                        (_at(10, 5), "succeeded")]
    inc = Incident.objects.get(monitor=m)
    assert (inc.cause, inc.missed_count, inc.opened_at) == ("missed", 1, _at(10, 10))
    m.refresh_from_db()  # 10:05 has its run: 10:10 is the next one expected
    assert (m.next_expected_at, m.next_evaluation_at) == (_at(10, 10), _at(10, 20))
    _job(m, _at(10, 10, 2))
    assert _runs(m)[-1] == (_at(10, 10), "succeeded")
    m.refresh_from_db()
    assert m.next_expected_at == _at(10, 15)
    evaluator.tick(_at(10, 20))
    assert Run.objects.filter(monitor=m, outcome="missed").count() == 1


def test_a_late_run_takes_an_earlier_slot_still_within_grace(make_monitor):
    # 10:05 has its run; a first ping at 10:07 belongs to 10:00, still within its
    # grace and without a run; 10:05 then counts, and 10:10 is expected next
    m = make_monitor(kind="cron", schedule="*/5 * * * *", grace=s(600), created=_at(9, 58))
    _job(m, _at(10, 5, 2))
    _job(m, _at(10, 7))
    m.refresh_from_db()
    assert _runs(m) == [(_at(10, 0), "succeeded"), (_at(10, 5), "succeeded")]
    assert (m.next_expected_at, m.next_evaluation_at) == (_at(10, 10), _at(10, 20))
    assert evaluator.tick(_at(10, 19, 59)) == 0
    evaluator.tick(_at(10, 20))
    assert _runs(m)[-1] == (_at(10, 10), "missed")
    assert Incident.objects.get(monitor=m).missed_count == 1


def test_when_every_slot_within_grace_has_a_run_a_ping_is_another_run_of_the_latest(
        make_monitor):
    m = make_monitor(kind="cron", schedule="*/5 * * * *", grace=s(600), created=_at(9, 54),
                     max_attempts=2)
    _job(m, _at(9, 55, 2))
    _job(m, _at(10, 0, 2))
    _job(m, _at(10, 2))  # 09:55 and 10:00 have runs: another run of 10:00
    assert _runs(m) == [(_at(9, 55), "succeeded"), (_at(10, 0), "succeeded"),
                        (_at(10, 0), "succeeded")]
    m.refresh_from_db()
    assert m.next_expected_at == _at(10, 5)


def test_the_evaluator_writes_off_a_skipped_slot_it_was_late_for(make_monitor):
    # the evaluator did not run between 10:05 + grace and the early ping for 10:10:
    # 10:05 is still reported, not skipped
    m = make_monitor(kind="cron", schedule="*/5 * * * *", grace=s(60), created=_at(10, 4))
    _job(m, _at(10, 9, 30))  # 30 s early for 10:10; 10:05 had no run
    m.refresh_from_db()
    assert (m.next_expected_at, m.next_evaluation_at) == (_at(10, 5), _at(10, 6))
    evaluator.tick(_at(10, 9, 51))
    assert _runs(m) == [(_at(10, 5), "missed"), (_at(10, 10), "succeeded")]
    assert Incident.objects.get(monitor=m).missed_count == 1
    m.refresh_from_db()
    assert m.next_expected_at == _at(10, 15)


@pytest.mark.parametrize("kinds", [("success",), ("start", "success")])
def test_a_fast_clock_never_alerts_when_grace_is_wider_than_the_gap(make_monitor, kinds):
    m = make_monitor(kind="cron", schedule="*/5 * * * *", grace=s(600), created=T0 - s(60))
    fires = [T0 + s(300 * i) for i in range(6)]
    pings = [(slot - s(30) + s(i), kind) for slot in fires for i, kind in enumerate(kinds)]
    _run_hours(m, pings, T0 + s(1800 + 590))
    assert not Incident.objects.exists()
    assert _runs(m) == [(slot, "succeeded") for slot in fires]


NOW = datetime(2026, 1, 5, 10, 7, tzinfo=UTC)


@pytest.mark.parametrize("expected,claimed,at,slot", [
    (_at(10, 0), {_at(10, 5)}, _at(10, 7), _at(10, 0)),  # latest without a run
    (_at(10, 0), set(), _at(10, 7), _at(10, 5)),  # latest: 10:00 goes missed
    (_at(10, 0), {_at(10, 5)}, _at(10, 10, 30), _at(10, 10)),
    (_at(10, 10), set(), _at(10, 9, 30), _at(10, 10)),  # early: all within grace have runs
    (_at(10, 10), set(), _at(10, 8), _at(10, 5)),  # another run of the latest
    (_at(10, 0), {_at(10, 5)}, _at(10, 14, 30), _at(10, 10)),  # 10:00 past grace
])
def test_slot_for_with_grace_wider_than_the_gap(expected, claimed, at, slot):
    m = Monitor(kind="cron", schedule="*/5 * * * *", timezone="UTC", cron_semantics="debian",
                grace=s(600), next_expected_at=expected)
    assert slots.slot_for(m, at, frozenset(claimed)) == slot


def test_overdue_skips_slots_that_have_runs():
    m = Monitor(kind="cron", schedule="*/5 * * * *", timezone="UTC", cron_semantics="debian",
                grace=s(600), next_expected_at=_at(10, 0))
    got = slots.overdue(m, _at(10, 25), claimed=frozenset({_at(10, 5), _at(10, 15)}))
    assert (got.missed, got.missed_count, got.next_expected) == (
        [_at(10, 0), _at(10, 10)], 2, _at(10, 20))


def test_overdue_during_an_outage_does_not_count_slots_that_have_runs():
    from monitors.liveness import Liveness, Window

    m = Monitor(kind="cron", schedule="*/5 * * * *", timezone="UTC", cron_semantics="debian",
                grace=s(600), next_expected_at=_at(10, 0))
    # grace ends 10:10 .. 10:25 fall into the unknown window [10:12, 10:22]
    alive = Liveness((Window(_at(10, 12), _at(10, 22), _at(10, 12), _at(10, 22)),))
    got = slots.overdue(m, _at(10, 25), alive, frozenset({_at(10, 5)}))
    assert (got.missed, got.missed_count, got.unknown, got.unknown_by_outage,
            got.next_expected) == ([_at(10, 0), _at(10, 15)], 2, [_at(10, 10)],
                                   {_at(10, 12): 1}, _at(10, 20))


def test_under_forbid_with_grace_wider_than_the_gap_claimed_slots_are_neither_missed_nor_skipped():
    m = Monitor(kind="cron", schedule="*/5 * * * *", timezone="UTC", cron_semantics="debian",
                grace=s(600), next_expected_at=_at(10, 0), concurrency="forbid")
    claimed = frozenset({_at(10, 5), _at(10, 15)})
    long_run = Run(pk=1, started_at=_at(9, 58), ended_at=_at(10, 17))
    due = slots.overdue(m, _at(10, 30), claimed=claimed)
    assert (due.missed, due.missed_count) == ([_at(10, 0), _at(10, 10), _at(10, 20)], 3)
    got = slots.skipped(m, due, [long_run], claimed=claimed)
    assert (got.count, [(slot, run.pk) for slot, run in got.slots]) == (
        2, [(_at(10, 0), 1), (_at(10, 10), 1)])  # 10:20 came after it ended: missed
