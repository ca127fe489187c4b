"""Ping ingest (monitors.pings): stored fields, run pairing, idempotency, detections
(failed, overlap, too_fast), attempts per slot, create on ping."""
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from alerts.models import Incident
from monitors.models import Monitor, Ping, PingLog, Run
from monitors.pings import PingInput, ingest
from tests.conftest import T0, S, s

pytestmark = pytest.mark.django_db


def test_start_then_success_pairs_by_rid_and_records_run(make_monitor):
    m = make_monitor(max_runtime=s(60))
    a, b = uuid.uuid4(), uuid.uuid4()
    ingest(m.pk, PingInput("start", rid=a), T0 + s(3))
    ingest(m.pk, PingInput("start", rid=b), T0 + s(4))
    ingest(m.pk, PingInput("success", exit_status=0, rid=a), T0 + s(10))
    ra, rb = Run.objects.get(rid=a), Run.objects.get(rid=b)
    assert (ra.outcome, ra.started_at, ra.ended_at, ra.duration, ra.exit_status) == (
        "succeeded", T0 + s(3), T0 + s(10), s(7), 0)
    assert ra.slot_at == T0 + s(3)  # interval: the expected slot T0+3s
    assert ra.timeout_at == T0 + s(63)
    assert (rb.outcome, rb.ended_at) == ("running", None)


def test_end_without_rid_closes_most_recent_open_run(make_monitor):
    m = make_monitor()
    ingest(m.pk, PingInput("start"), T0 + s(1))
    ingest(m.pk, PingInput("start"), T0 + s(2))
    ingest(m.pk, PingInput("success"), T0 + s(5))
    runs = list(Run.objects.filter(monitor=m).order_by("started_at"))
    assert [(r.started_at, r.outcome) for r in runs] == [
        (T0 + s(1), "running"), (T0 + s(2), "succeeded")]
    # with nothing else open the next end ping closes the first run ...
    ingest(m.pk, PingInput("fail", exit_status=3), T0 + s(6))
    runs[0].refresh_from_db()
    assert (runs[0].outcome, runs[0].exit_status) == ("failed", 3)
    # ... and once nothing is open, an end ping records a run without a start
    ingest(m.pk, PingInput("success"), T0 + s(7))
    last = Run.objects.filter(monitor=m).latest("pk")
    assert (last.started_at, last.ended_at, last.outcome) == (None, T0 + s(7), "succeeded")


def test_duplicate_pings_with_same_rid_are_idempotent(make_monitor):
    m = make_monitor()
    rid = uuid.uuid4()
    for _ in range(3):
        ingest(m.pk, PingInput("start", rid=rid), T0 + s(1))
    for _ in range(3):
        ingest(m.pk, PingInput("fail", exit_status=2, rid=rid), T0 + s(2))
    assert Run.objects.filter(monitor=m).count() == 1
    assert PingLog.objects.filter(monitor=m).count() == 6  # all stored ...
    assert PingLog.objects.filter(monitor=m, duplicate=True).count() == 4  # ... 4 flagged
    m.refresh_from_db()
    assert m.n_pings == 2  # the start and the end; duplicates not counted
    inc = Incident.objects.get(monitor=m)
    assert (inc.cause, inc.failure_count) == ("failed", 1)


def test_log_ping_changes_no_state(make_monitor):
    m = make_monitor()
    ingest(m.pk, PingInput("log", body=b"progress 50%", body_size=12), T0 + s(1))
    m.refresh_from_db()
    assert m.last_ping_at is None and Run.objects.count() == 0
    assert m.n_pings == 0  # a log line is not a ping of the job's runs
    assert bytes(PingLog.objects.get().body) == b"progress 50%"


def test_n_pings_counts_every_ping_of_a_run_and_outlives_pruning(make_monitor):
    m = make_monitor(n_pings=41)  # imported, or counted before the pings were pruned
    for kind in ("start", "success", "fail", "success"):
        ingest(m.pk, PingInput(kind), T0 + s(1))
    Ping.objects.filter(monitor=m).delete()  # retention prunes rows, never the count
    m.refresh_from_db()
    assert m.n_pings == 45


def test_a_get_ping_to_a_post_only_monitor_is_refused_and_stores_nothing(make_monitor):
    from monitors.pings import MethodRefused

    m = make_monitor(methods="POST")
    for method in ("GET", "HEAD"):
        with pytest.raises(MethodRefused):
            ingest(m.pk, PingInput("success", method=method), T0 + s(1))
    assert not PingLog.objects.exists() and not Run.objects.exists()
    ingest(m.pk, PingInput("success", method="POST"), T0 + s(2))
    m.refresh_from_db()
    assert (m.n_pings, m.last_ping_at, PingLog.objects.get().method) == (1, T0 + s(2), "POST")


def test_concurrency_replace_closes_open_run(make_monitor):
    m = make_monitor(concurrency="replace", max_runtime=s(5))
    ingest(m.pk, PingInput("start"), T0 + s(1))
    ingest(m.pk, PingInput("start"), T0 + s(4))
    first, second = Run.objects.order_by("pk")
    assert (first.outcome, first.ended_at) == ("replaced", T0 + s(4))
    assert second.outcome == "running"
    assert not Incident.objects.exists()


def test_paused_monitor_stores_pings_without_alerts(make_monitor):
    m = make_monitor(paused=True)
    ingest(m.pk, PingInput("fail"), T0 + s(1))
    assert PingLog.objects.filter(monitor=m).count() == 1
    assert Run.objects.get(monitor=m).outcome == "failed"
    assert not Incident.objects.exists()


def test_ping_is_stored_even_when_applying_it_fails(client, make_monitor, monkeypatch, caplog):
    from core import logs

    caplog.handler.addFilter(logs.ContextFilter())
    m = make_monitor()

    def boom(*args):
        raise RuntimeError("schedule engine exploded")

    monkeypatch.setattr("monitors.slots.slot_for", boom)
    resp = client.post(f"/ping/{m.uuid}/start", data=b"x", content_type="text/plain")
    assert resp.status_code == 200
    p = PingLog.objects.get(monitor=m)
    assert (p.kind, p.run, bytes(p.body)) == ("start", None, b"x")
    assert Run.objects.count() == 0  # the half-applied effect was rolled back
    m.refresh_from_db()
    assert m.evaluation_error == ("a ping's effects could not be applied: RuntimeError: "
                                  "schedule engine exploded")
    assert m.n_pings == 1  # stored, so counted
    assert not Incident.objects.exists()  # a start is no failure
    assert [(r.getMessage(), r.monitor) for r in caplog.records if r.name == "monitors.pings"
            ] == [("ping stored without applying its effects (RuntimeError: schedule engine "
                   "exploded)", m.pk)]


def test_a_failure_whose_run_cannot_be_recorded_still_raises_failed(client, make_monitor,
                                                                   monkeypatch):
    m = make_monitor()

    def boom(*args):
        raise RuntimeError("schedule engine exploded")

    monkeypatch.setattr("monitors.slots.slot_for", boom)
    assert client.get(f"/ping/{m.uuid}/3").status_code == 200
    assert PingLog.objects.get(monitor=m).exit_status == 3
    incident = Incident.objects.get(monitor=m)
    assert (incident.cause, incident.summary) == (
        "failed", f"{m.name}: run failed (exit status 3); a ping's effects could not be "
                  "applied: RuntimeError: schedule engine exploded")


@pytest.mark.django_db(transaction=True)
def test_an_end_ping_whose_run_is_gone_when_written_is_stored_alone(make_monitor, monkeypatch):
    """The run an end ping closes disappears between reading and writing it (here
    deleted in the same transaction, so the rollback brings it back): the ping is
    stored alone, as when applying it fails (on PostgreSQL the run's update finds
    no row; on SQLite the ping's reference to it fails at commit)."""
    from monitors import pings

    m = make_monitor()
    rid = uuid.uuid4()
    ingest(m.pk, PingInput("start", rid=rid), T0)

    def then_delete(read):  # the runs are read with the lock on PostgreSQL, else alone
        def read_then_delete(*args, **kwargs):
            runs = read(*args, **kwargs)
            Run.objects.filter(monitor=m, rid=rid).delete()
            return runs
        return read_then_delete

    monkeypatch.setattr(pings, "pending_runs", then_delete(pings.pending_runs))
    monkeypatch.setattr(pings, "_lock_reading", then_delete(pings._lock_reading))
    ping = ingest(m.pk, PingInput("success", rid=rid), T0 + s(5))
    assert (ping.kind, ping.run) == ("success", None)
    assert Run.objects.get(monitor=m, rid=rid).outcome == "running"
    m.refresh_from_db()
    assert m.evaluation_error.startswith("a ping's effects could not be applied: ")


def test_late_cron_start_takes_over_missed_slot(make_monitor):
    from monitors import evaluator

    m = make_monitor(kind="cron", schedule="*/5 * * * *", grace=s(60), created=T0 - s(1))
    ingest(m.pk, PingInput("success"), T0 + s(2))  # slot T0
    evaluator.tick(T0 + s(360))  # slot T0+5min missed
    assert Run.objects.get(outcome="missed").slot_at == T0 + s(300)
    ingest(m.pk, PingInput("start"), T0 + s(400))  # late run for T0+5min
    run = Run.objects.get(slot_at=T0 + s(300))
    assert (run.outcome, run.started_at) == ("running", T0 + s(400))
    ingest(m.pk, PingInput("success"), T0 + s(410))
    assert Incident.objects.get(monitor=m).resolved_at == T0 + s(410)


def _while_another_holds_the_lock(hold, then) -> None:
    """Run ``hold`` in a transaction of another thread (and connection) that keeps
    the locks it took for 0.5 s more, and ``then`` here meanwhile (it waits for
    them). PostgreSQL only: SQLite serializes whole transactions."""
    import threading
    import time

    from django.db import connection, connections, transaction

    if connection.vendor != "postgresql":
        pytest.skip("SQLite serializes whole transactions: nothing can open meanwhile")
    locked = threading.Event()

    def holder():
        try:
            with transaction.atomic():
                hold()
                locked.set()
                time.sleep(0.5)  # then() is waiting for the lock meanwhile
        finally:
            connections.close_all()

    thread = threading.Thread(target=holder)
    thread.start()
    assert locked.wait(10)
    then()
    thread.join(10)


@pytest.mark.django_db(transaction=True)
def test_a_ping_that_waited_for_the_lock_sees_the_incident_opened_meanwhile(make_monitor):
    """The evaluator holds the monitor's lock and opens an incident; a success ping
    arriving then waits for the lock and must resolve that incident (on PostgreSQL
    the statement that waited reads other tables as they were before it waited, so
    whether an incident is open is read after the lock)."""
    from monitors.models import Monitor

    monitor = make_monitor()
    opened_at = T0 + timedelta(minutes=2)

    def evaluator():
        list(Monitor.objects.select_for_update().filter(pk=monitor.pk))
        Incident.objects.create(monitor=monitor, cause="missed", summary="x: missed",
                                opened_at=opened_at, missed_count=1)

    _while_another_holds_the_lock(evaluator, lambda: ingest(
        monitor.pk, PingInput("success"), opened_at + timedelta(seconds=3)))
    incident = Incident.objects.get(monitor=monitor)
    assert (incident.resolved_at, incident.resolution) == (opened_at + timedelta(seconds=3),
                                                          "a run succeeded")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("kind", ["success", "start"])
def test_a_ping_that_waited_for_the_lock_sees_the_run_opened_meanwhile(make_monitor, kind):
    """A start ping holds the monitor's lock while its run is written; a second ping
    waits for the lock. On PostgreSQL the statement that waited reads the runs as
    they were before it waited: the ping must still see the run (a success closes
    it; a start under concurrency "forbid" reports the overlap), not act as if no
    run were open."""
    m = make_monitor(concurrency="forbid")
    _while_another_holds_the_lock(lambda: ingest(m.pk, PingInput("start"), T0),
                                  lambda: ingest(m.pk, PingInput(kind), T0 + s(5)))
    runs = list(Run.objects.filter(monitor=m).order_by("pk")
                .values_list("outcome", "started_at", "ended_at"))
    if kind == "success":
        assert runs == [("succeeded", T0, T0 + s(5))]
    else:
        assert runs == [("running", T0, None), ("running", T0 + s(5), None)]
        assert Incident.objects.get(monitor=m).cause == "overlap"


@pytest.mark.django_db(transaction=True)
def test_a_migration_under_prepared_statements_costs_no_ping_its_effects(make_monitor):
    """On PostgreSQL the ping path's statements are prepared (core.sql). A
    migration that changes the type of a column they return makes PostgreSQL
    refuse them once: the ping is applied again, not stored alone."""
    from django.db import connection, connections

    if connection.vendor != "postgresql":
        pytest.skip("prepared statements: PostgreSQL only")
    m = make_monitor()
    for i in range(6):  # past prepare_threshold (5): the statements are prepared
        ingest(m.pk, PingInput("success"), T0 + s(3 * i))
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("ALTER TABLE monitors_monitor "
                           "ALTER COLUMN evaluation_error TYPE varchar(501)")
        ping = ingest(m.pk, PingInput("success"), T0 + s(18))
    finally:
        with other.cursor() as cursor:
            cursor.execute("ALTER TABLE monitors_monitor "
                           "ALTER COLUMN evaluation_error TYPE varchar(500)")
        other.close()
    assert ping.run.started_at is None and ping.run.ended_at == T0 + s(18)
    assert Run.objects.filter(monitor=m, outcome="succeeded").count() == 7
    m.refresh_from_db()
    assert m.evaluation_error == ""


def test_fail_ping_opens_failed_incident(make_monitor):
    m = make_monitor()
    ingest(m.pk, PingInput("fail", exit_status=4), T0 + s(1))
    inc = Incident.objects.get(monitor=m)
    assert (inc.cause, inc.summary) == ("failed", "job-1: run failed (exit status 4)")


def test_overlap_under_forbid(make_monitor):
    m = make_monitor(concurrency="forbid")
    ingest(m.pk, PingInput("start"), T0 + s(1))
    assert not Incident.objects.exists()
    ingest(m.pk, PingInput("start"), T0 + s(2))
    inc = Incident.objects.get(monitor=m)
    assert inc.cause == "overlap"
    assert "1 earlier run(s) were still open" in inc.summary


def test_allow_permits_overlap(make_monitor):
    m = make_monitor(concurrency="allow")
    ingest(m.pk, PingInput("start"), T0 + s(1))
    ingest(m.pk, PingInput("start"), T0 + s(2))
    assert not Incident.objects.exists()


def test_too_fast(make_monitor):
    m = make_monitor(min_runtime=s(30))
    ingest(m.pk, PingInput("start"), T0 + s(1))
    ingest(m.pk, PingInput("success"), T0 + s(5))
    inc = Incident.objects.get(monitor=m)
    assert inc.cause == "too_fast" and inc.resolved_at is None
    ingest(m.pk, PingInput("start"), T0 + s(10))
    ingest(m.pk, PingInput("success"), T0 + s(50))
    inc.refresh_from_db()
    assert inc.resolved_at == T0 + s(50)


def test_a_failed_attempt_a_retry_may_make_good_opens_nothing(make_monitor):
    m = make_monitor(kind="cron", schedule="0 * * * *", grace=s(300), max_attempts=3,
                     created=T0 - s(1))
    for i in range(2):  # two attempts of the T0 slot fail
        ingest(m.pk, PingInput("start"), T0 + s(10 + 100 * i))
        ingest(m.pk, PingInput("fail", exit_status=1), T0 + s(20 + 100 * i))
    assert not Incident.objects.exists()
    assert list(Run.objects.values_list("slot_at", "outcome")) == [(T0, "failed")] * 2
    ingest(m.pk, PingInput("start"), T0 + s(210))  # the last allowed attempt fails too
    ingest(m.pk, PingInput("fail", exit_status=1), T0 + s(220))
    incident = Incident.objects.get()
    assert incident.summary.endswith("run failed (exit status 1), attempt 3 of 3")


def test_a_retry_that_succeeds_keeps_the_slot_green(make_monitor):
    m = make_monitor(kind="cron", schedule="0 * * * *", grace=s(300), max_attempts=2,
                     created=T0 - s(1))
    ingest(m.pk, PingInput("start"), T0 + s(10))
    ingest(m.pk, PingInput("fail"), T0 + s(20))
    ingest(m.pk, PingInput("start"), T0 + s(30))
    ingest(m.pk, PingInput("success"), T0 + s(40))
    assert not Incident.objects.exists()


def test_attempts_of_an_interval_monitor_are_failures_in_a_row(make_monitor):
    m = make_monitor(period=s(3600), grace=s(60), max_attempts=2)
    ingest(m.pk, PingInput("fail"), T0)
    assert not Incident.objects.exists()
    ingest(m.pk, PingInput("fail"), T0 + s(30))  # the retry fails too
    assert Incident.objects.get().summary.endswith("attempt 2 of 2")


def test_create_on_ping(client, project, api):
    base = f"/ping/{project.ping_key}"
    assert client.get(f"{base}/new-job").status_code == 404  # not without create=1
    made = client.get(f"{base}/new-job?create=1")
    assert (made.status_code, made.content) == (201, b"Created\n")
    m = Monitor.objects.get(slug="new-job")
    assert (m.kind, m.period, m.grace, m.name) == ("interval", 86400 * S, 3600 * S, "new-job")
    # the ping itself is stored
    assert [p.kind for p in PingLog.objects.filter(monitor=m)] == ["success"]
    again = client.get(f"{base}/new-job/fail?create=1")
    assert (again.status_code, Monitor.objects.filter(slug="new-job").count()) == (200, 1)
    cron = client.post(f"{base}/backup/start?create=1&schedule=0+3+*+*+*"
                       "&timezone=Europe/Berlin&grace=600")
    assert cron.status_code == 201
    b = Monitor.objects.get(slug="backup")
    assert (b.kind, b.schedule, b.timezone, b.grace) == ("cron", "0 3 * * *", "Europe/Berlin",
                                                         600 * S)
    assert api.get(f"/api/v1/monitors/{b.pk}/").json()["status"] == "running"
    for query, message in [("schedule=61+*+*+*+*", "bad minute field '61'"),
                           ("timezone=Mars/Olympus", "Mars/Olympus"),
                           ("grace=0", "grace must be a whole number of seconds"),
                           ("period=abc", "period must be"),
                           ("period=60&schedule=0+3+*+*+*", "not both")]:
        resp = client.get(f"{base}/bad-one?create=1&{query}")
        assert resp.status_code == 400 and message in resp.content.decode(), query
    assert client.get(f"{base}/{'x' * 101}?create=1").status_code == 400
    assert client.get("/ping/not-a-key/job?create=1").status_code == 404
    assert not Monitor.objects.filter(slug="bad-one").exists()


# --- double launches (a second run of one cron slot) -------------------------------------

def hourly(make_monitor, **fields):
    return make_monitor(kind="cron", schedule="0 * * * *", grace=s(300), created=T0 - s(1),
                        **fields)


def test_a_run_for_a_slot_that_already_succeeded_is_a_double_launch(make_monitor):
    m = hourly(make_monitor)
    ingest(m.pk, PingInput("start"), T0 + s(10))
    ingest(m.pk, PingInput("success"), T0 + s(20))
    ingest(m.pk, PingInput("start"), T0 + s(30))  # the same 12:00 slot again
    inc = Incident.objects.get(monitor=m)
    first = Run.objects.get(monitor=m, started_at=T0 + s(10))
    assert (inc.cause, inc.severity, inc.opened_at) == ("double_launch", "warning", T0 + s(30))
    assert inc.summary == ("job-1: run 2 of the 12:00 slot started although the slot's run "
                           "succeeded at 12:00:20")
    assert inc.events.get(kind="opened").detail == {
        "code": "succeeded", "slot": T0.isoformat(), "attempt": 2, "other_run": first.pk,
        "cause": "double_launch"}
    ingest(m.pk, PingInput("success"), T0 + s(40))  # a success of the same slot ...
    inc.refresh_from_db()
    assert inc.resolved_at is None  # ... does not resolve it
    ingest(m.pk, PingInput("start"), T0 + s(3605))  # the 13:00 slot
    ingest(m.pk, PingInput("success"), T0 + s(3610))
    inc.refresh_from_db()
    assert (inc.resolved_at, inc.resolution) == (T0 + s(3610), "a run succeeded")
    assert list(Run.objects.filter(monitor=m).order_by("pk").values_list(
        "slot_at", "started_at", "outcome")) == [
        (T0, T0 + s(10), "succeeded"), (T0, T0 + s(30), "succeeded"),
        (T0 + s(3600), T0 + s(3605), "succeeded")]


def test_under_forbid_a_second_start_of_an_open_slot_is_a_double_launch_not_an_overlap(
        make_monitor):
    m = hourly(make_monitor, concurrency="forbid")
    ingest(m.pk, PingInput("start"), T0 + s(10))
    ingest(m.pk, PingInput("start"), T0 + s(20))
    inc = Incident.objects.get(monitor=m)
    assert (inc.cause, inc.summary) == (
        "double_launch", "job-1: run 2 of the 12:00 slot started while its run that started "
                         "at 12:00:10 was still open")
    assert [e.kind for e in inc.events.all()] == ["opened"]  # no overlap beside it


def test_a_start_while_an_earlier_slots_run_is_open_stays_an_overlap(make_monitor):
    m = hourly(make_monitor, concurrency="forbid")
    ingest(m.pk, PingInput("start"), T0 + s(10))
    ingest(m.pk, PingInput("start"), T0 + s(3610))  # the 13:00 slot's own run
    assert Incident.objects.get(monitor=m).cause == "overlap"


def test_more_runs_than_max_attempts_is_a_double_launch(make_monitor):
    m = hourly(make_monitor, max_attempts=2)
    for i in range(2):  # both allowed attempts fail
        ingest(m.pk, PingInput("start"), T0 + s(10 + 100 * i))
        ingest(m.pk, PingInput("fail", exit_status=1), T0 + s(20 + 100 * i))
    ingest(m.pk, PingInput("start"), T0 + s(210))  # a third
    inc = Incident.objects.get(monitor=m)
    assert inc.cause == "failed"  # the last allowed attempt failed first
    launched = inc.events.get(kind="double_launch")
    assert (launched.at, launched.message, launched.detail) == (
        T0 + s(210), "run 3 of the 12:00 slot started: more than max_attempts (2)",
        {"code": "attempts", "slot": T0.isoformat(), "attempt": 3})
    ingest(m.pk, PingInput("success"), T0 + s(220))
    inc.refresh_from_db()
    assert inc.resolved_at is None  # the slot was launched too often: a later slot's success
    ingest(m.pk, PingInput("success"), T0 + s(3620))
    inc.refresh_from_db()
    assert inc.resolved_at == T0 + s(3620)


def test_a_double_launch_is_judged_in_the_monitors_time_zone(make_monitor):
    m = hourly(make_monitor, timezone="America/New_York")
    ingest(m.pk, PingInput("success"), T0 + s(20))
    ingest(m.pk, PingInput("start"), T0 + s(40))
    assert Incident.objects.get(monitor=m).summary == (
        "job-1: run 2 of the 07:00 slot started although the slot's run succeeded at 07:00:20 "
        "(America/New_York time)")


def test_double_launch_is_a_function_of_the_slots_runs_and_max_attempts():
    from monitors.pings import double_launch

    def run(pk, outcome, ended=True):
        return Run(pk=pk, slot_at=T0, started_at=T0, outcome=outcome,
                   ended_at=T0 + s(1) if ended else None)

    assert double_launch([], 1) is None
    assert double_launch([run(1, "failed")], 2) is None  # a retry
    assert double_launch([run(1, "failed"), run(2, "failed")], 2) == ("attempts", None)
    still = run(2, "running", ended=False)
    assert double_launch([run(1, "failed"), still], 3) == ("open_run", still)
    done = run(1, "succeeded")
    assert double_launch([done], 5) == ("succeeded", done)


def test_the_runs_of_a_claimed_later_slot_are_read_for_the_double_launch_check(make_monitor):
    """A slot from next_expected_at on has no run unless a slot assignment let a run
    claim it early (``claimed``): only then are its runs read."""
    from monitors.pings import _slot_runs

    m = hourly(make_monitor)
    later = T0 + s(3600)
    run = Run.objects.create(monitor=m, slot_at=later, started_at=later, outcome="running")
    m.refresh_from_db()
    assert m.next_expected_at == T0
    assert _slot_runs(m, later, []) == []
    assert _slot_runs(m, later, [], frozenset({later})) == [run]


# --- a ping that names its slot (?slot=) ------------------------------------------------

def _slots(m):
    return list(Run.objects.filter(monitor=m).order_by("slot_at", "pk")
                .values_list("slot_at", "outcome"))


def test_a_named_slot_is_the_runs_slot_and_earlier_unclaimed_slots_still_go_missed(
        make_monitor):
    from monitors import evaluator

    # */5, grace 600: at T0+7min a start names T0+5min although T0 has no run
    m = make_monitor(kind="cron", schedule="*/5 * * * *", grace=s(600), created=T0 - s(60))
    ingest(m.pk, PingInput("start", slot=T0 + s(300)), T0 + s(420))
    ingest(m.pk, PingInput("start", slot=T0 + s(600)), T0 + s(560))  # 40 s early
    m.refresh_from_db()
    assert (m.next_expected_at, m.next_evaluation_at) == (T0, T0 + s(600))
    evaluator.tick(T0 + s(600))
    assert _slots(m) == [(T0, "missed"), (T0 + s(300), "running"), (T0 + s(600), "running")]
    assert Incident.objects.get(monitor=m).missed_count == 1
    m.refresh_from_db()
    assert m.next_expected_at == T0 + s(900)


def test_an_end_ping_naming_its_slot_closes_that_slots_open_run(make_monitor):
    m = make_monitor(kind="cron", schedule="*/5 * * * *", grace=s(600), created=T0 - s(60))
    ingest(m.pk, PingInput("start"), T0 + s(2))
    ingest(m.pk, PingInput("start"), T0 + s(302))
    ingest(m.pk, PingInput("fail", slot=T0), T0 + s(320))  # not the latest open run
    assert _slots(m) == [(T0, "failed"), (T0 + s(300), "running")]
    ingest(m.pk, PingInput("success", slot=T0 + s(600)), T0 + s(630))  # end only
    assert _slots(m)[-1] == (T0 + s(600), "succeeded")
    assert Run.objects.get(slot_at=T0 + s(600)).started_at is None


def test_a_named_slot_that_already_succeeded_gets_another_run(make_monitor):
    # the double-launch detection's case (a run for a slot that already succeeded)
    m = make_monitor(kind="cron", schedule="0 * * * *", grace=s(300), created=T0 - s(60))
    ingest(m.pk, PingInput("start"), T0 + s(2))
    ingest(m.pk, PingInput("success"), T0 + s(30))
    ingest(m.pk, PingInput("start", slot=T0), T0 + s(3000))
    assert _slots(m) == [(T0, "succeeded"), (T0, "running")]
    m.refresh_from_db()
    assert m.next_expected_at == T0 + s(3600)


def test_a_named_slot_takes_over_its_missed_row(make_monitor):
    from monitors import evaluator

    m = make_monitor(kind="cron", schedule="0 * * * *", grace=s(300), created=T0 - s(60))
    evaluator.tick(T0 + s(300))
    ingest(m.pk, PingInput("success"), T0 + s(3600 + 10))  # the monitor's first ping
    evaluator.tick(T0 + s(7200 + 300))  # the evaluator reports from the first ping on
    assert _slots(m) == [(T0, "missed"), (T0 + s(3600), "succeeded"),
                         (T0 + s(7200), "missed")]
    ingest(m.pk, PingInput("success", slot=T0 + s(7200)), T0 + s(7200 + 900))
    assert _slots(m) == [(T0, "missed"), (T0 + s(3600), "succeeded"),
                         (T0 + s(7200), "succeeded")]


@pytest.mark.parametrize("fields,slot,message", [
    ({"period": s(60)}, T0, "slot: an interval monitor has no fire times to name; "
                            "leave slot out"),
    ({"kind": "cron", "schedule": "*/5 * * * *", "timezone": "Europe/Berlin"}, T0 + s(60),
     "slot 2026-01-05T12:01:00Z is not a fire time of '*/5 * * * *' (Europe/Berlin); the "
     "nearest are 2026-01-05T12:00:00Z and 2026-01-05T12:05:00Z"),
    ({"kind": "cron", "schedule": "* * * * *"}, datetime(1969, 12, 31, 23, 59, tzinfo=UTC),
     "slot 1969-12-31T23:59:00Z is before 1970: not supported"),
    ({"kind": "cron", "schedule": "* * * * *"}, T0 + s(120),
     "slot 2026-01-05T12:02:00Z is in the future: at most 60 seconds after now "
     "(2026-01-05T12:00:30Z)"),
])
def test_a_slot_that_cannot_be_the_monitors_is_refused_and_nothing_stored(
        make_monitor, fields, slot, message):
    from monitors.pings import SlotError

    m = make_monitor(created=T0 - s(60), **fields)
    for kind in ("start", "success"):
        with pytest.raises(SlotError) as err:
            ingest(m.pk, PingInput(kind, slot=slot), T0 + s(30))
        assert str(err.value) == message
    assert not PingLog.objects.exists() and not Run.objects.exists()
    m.refresh_from_db()
    assert m.last_ping_at is None


# --- the detection branches together: named slots, grace wider than the gap ---------------

def _runs(m):
    return list(Run.objects.filter(monitor=m).order_by("slot_at", "pk")
                .values_list("slot_at", "started_at", "ended_at", "outcome"))


def test_a_named_slot_that_already_succeeded_is_a_double_launch_until_a_later_slot_succeeds(
        make_monitor):
    m = make_monitor(kind="cron", schedule="0 * * * *", grace=s(300), created=T0 - s(60))
    ingest(m.pk, PingInput("start"), T0 + s(2))
    ingest(m.pk, PingInput("success"), T0 + s(30))
    first = Run.objects.get(monitor=m)
    ingest(m.pk, PingInput("start", slot=T0), T0 + s(3000))  # 12:00 again, by name
    inc = Incident.objects.get(monitor=m)
    assert (inc.cause, inc.severity, inc.opened_at) == ("double_launch", "warning", T0 + s(3000))
    assert inc.summary == ("job-1: run 2 of the 12:00 slot started although the slot's run "
                           "succeeded at 12:00:30")
    assert inc.events.get(kind="opened").detail == {
        "code": "succeeded", "slot": T0.isoformat(), "attempt": 2, "other_run": first.pk,
        "cause": "double_launch"}
    ingest(m.pk, PingInput("success"), T0 + s(3010))  # the second 12:00 run succeeds
    inc.refresh_from_db()
    assert inc.resolved_at is None
    ingest(m.pk, PingInput("success"), T0 + s(3605))  # 13:00, pinged at its end only
    inc.refresh_from_db()
    assert (inc.resolved_at, inc.resolution) == (T0 + s(3605), "a run succeeded")
    assert _runs(m) == [(T0, T0 + s(2), T0 + s(30), "succeeded"),
                        (T0, T0 + s(3000), T0 + s(3010), "succeeded"),
                        (T0 + s(3600), None, T0 + s(3605), "succeeded")]


def test_an_end_only_run_naming_a_slot_that_already_succeeded_is_a_double_launch(make_monitor):
    m = make_monitor(kind="cron", schedule="0 * * * *", grace=s(300), created=T0 - s(60))
    ingest(m.pk, PingInput("success", slot=T0), T0 + s(30))
    assert not Incident.objects.exists()
    ingest(m.pk, PingInput("success", slot=T0), T0 + s(60))  # no open run: another run
    inc = Incident.objects.get(monitor=m)
    first = Run.objects.filter(monitor=m).order_by("pk").first()
    assert (inc.cause, inc.severity, inc.opened_at, inc.summary) == (
        "double_launch", "warning", T0 + s(60),
        "job-1: run 2 of the 12:00 slot started although the slot's run succeeded at 12:00:30")
    assert inc.events.get(kind="opened").detail == {
        "code": "succeeded", "slot": T0.isoformat(), "attempt": 2, "other_run": first.pk,
        "cause": "double_launch"}
    assert inc.resolved_at is None  # its own success does not resolve it
    assert _runs(m) == [(T0, None, T0 + s(30), "succeeded"), (T0, None, T0 + s(60), "succeeded")]
    m.refresh_from_db()
    assert m.next_expected_at == T0 + s(3600)
    ingest(m.pk, PingInput("success"), T0 + s(3620))
    inc.refresh_from_db()
    assert inc.resolved_at == T0 + s(3620)


def test_an_end_only_rerun_of_an_on_time_slot_is_a_double_launch_too(make_monitor):
    # without a slot name: every slot within grace has a run, so another run of 12:00
    m = make_monitor(kind="cron", schedule="0 * * * *", grace=s(300), created=T0 - s(60))
    ingest(m.pk, PingInput("success"), T0 + s(30))
    ingest(m.pk, PingInput("success"), T0 + s(90))
    assert Incident.objects.get(monitor=m).events.get(kind="opened").detail["code"] == (
        "succeeded")
    assert [r[0] for r in _runs(m)] == [T0, T0]


def _five_minutely(make_monitor, **fields):
    return make_monitor(kind="cron", schedule="*/5 * * * *", grace=s(600), created=T0 - s(60),
                        **fields)


def test_grace_wider_than_the_gap_a_ping_with_every_slot_taken_is_another_run_of_the_latest(
        make_monitor):
    m = _five_minutely(make_monitor, max_attempts=2)
    ingest(m.pk, PingInput("start"), T0 + s(2))
    ingest(m.pk, PingInput("success"), T0 + s(30))
    ingest(m.pk, PingInput("start"), T0 + s(302))
    ingest(m.pk, PingInput("fail", exit_status=1), T0 + s(320))  # attempt 1 of 12:05
    # 12:00 and 12:05 are both within grace and have a run: attempt 2 of 12:05
    ingest(m.pk, PingInput("start"), T0 + s(400))
    assert not Incident.objects.exists()
    assert _runs(m) == [(T0, T0 + s(2), T0 + s(30), "succeeded"),
                        (T0 + s(300), T0 + s(302), T0 + s(320), "failed"),
                        (T0 + s(300), T0 + s(400), None, "running")]
    m.refresh_from_db()
    assert m.next_expected_at == T0 + s(600)
    ingest(m.pk, PingInput("start"), T0 + s(410))  # while attempt 2 is open
    inc = Incident.objects.get(monitor=m)
    second = Run.objects.get(monitor=m, started_at=T0 + s(400))
    assert (inc.cause, inc.severity, inc.opened_at, inc.summary) == (
        "double_launch", "warning", T0 + s(410),
        "job-1: run 3 of the 12:05 slot started while its run that started at 12:06:40 was "
        "still open")
    assert inc.events.get(kind="opened").detail == {
        "code": "open_run", "slot": (T0 + s(300)).isoformat(), "attempt": 3,
        "other_run": second.pk, "cause": "double_launch"}
    assert Run.objects.get(monitor=m, started_at=T0 + s(410)).slot_at == T0 + s(300)


def test_grace_wider_than_the_gap_more_runs_than_max_attempts_is_a_double_launch(make_monitor):
    m = _five_minutely(make_monitor)
    ingest(m.pk, PingInput("start"), T0 + s(2))
    ingest(m.pk, PingInput("success"), T0 + s(30))
    ingest(m.pk, PingInput("start"), T0 + s(302))
    ingest(m.pk, PingInput("fail", exit_status=1), T0 + s(320))  # max_attempts 1: failed
    ingest(m.pk, PingInput("start"), T0 + s(400))  # a second run of 12:05
    inc = Incident.objects.get(monitor=m)
    assert inc.cause == "failed"
    launched = inc.events.get(kind="double_launch")
    assert (launched.at, launched.message, launched.detail) == (
        T0 + s(400), "run 2 of the 12:05 slot started: more than max_attempts (1)",
        {"code": "attempts", "slot": (T0 + s(300)).isoformat(), "attempt": 2})
    ingest(m.pk, PingInput("success"), T0 + s(420))  # the same slot: not resolved
    inc.refresh_from_db()
    assert inc.resolved_at is None
    ingest(m.pk, PingInput("start"), T0 + s(602))  # 12:10
    ingest(m.pk, PingInput("success"), T0 + s(620))
    inc.refresh_from_db()
    assert inc.resolved_at == T0 + s(620)


def test_a_failed_run_beyond_max_attempts_says_so_not_attempt_3_of_2(make_monitor):
    m = hourly(make_monitor, max_attempts=2)
    for i in range(3):
        ingest(m.pk, PingInput("start"), T0 + s(10 + 100 * i))
        ingest(m.pk, PingInput("fail", exit_status=1), T0 + s(20 + 100 * i))
    inc = Incident.objects.get(monitor=m)
    assert inc.summary == "job-1: run failed (exit status 1), attempt 2 of 2"
    assert inc.events.get(kind="failed").message == (
        "run failed (exit status 1), attempt 3: more than max_attempts (2)")
