"""Query counts of the hot paths: ping ingest and evaluating a due monitor.

Pinned exactly so a regression (an extra query per ping or per monitor) shows up
here; if a change makes a path cheaper, lower the number. Inside a test the
outer ``transaction.atomic`` is a SAVEPOINT / RELEASE pair instead of BEGIN /
COMMIT, so the counts equal the production ones (bench/README.md). Each count
lists its statements.
"""
import uuid
from datetime import timedelta

import pytest
from django.db import connection

from alerts.models import Channel, Delivery, Incident, IncidentEvent
from monitors import evaluator, slots
from monitors.liveness import Liveness
from monitors.models import Monitor, Run
from monitors.pings import PingInput, ingest, pending_runs
from tests.conftest import T0

pytestmark = pytest.mark.django_db


# what a tick reads once for all the monitors it evaluates (here: always up)
ALIVE = Liveness()
# a ping's writes (its run, the monitor reading whether an incident is open, the
# ping): one statement on PostgreSQL (monitors.pings._write), three on SQLite
WRITES = 1 if connection.vendor == "postgresql" else 3
# locking the monitor and reading its runs: one statement on PostgreSQL
# (monitors.pings._lock_reading), two on SQLite
READS = 1 if connection.vendor == "postgresql" else 2


def s(n):
    return timedelta(seconds=n)


@pytest.fixture
def monitor(make_monitor):
    """An interval monitor (3 s period) that has pinged once at T0: its next slot is T0+3s."""
    m = make_monitor(max_runtime=s(60))
    ingest(m.pk, PingInput("success"), T0)
    return m


def test_start_ping_with_rid(monitor, django_assert_num_queries):
    # transaction, lock and read monitor, runs (pending + rid + a written-off row
    # of the slot; with the lock on PostgreSQL), insert run + update monitor +
    # insert ping, end transaction
    with django_assert_num_queries(2 + READS + WRITES):
        ingest(monitor.pk, PingInput("start", rid=uuid.uuid4()), T0 + s(3))
    assert Run.objects.filter(monitor=monitor, outcome="running").count() == 1


def test_end_ping_with_rid(monitor, django_assert_num_queries):
    rid = uuid.uuid4()
    ingest(monitor.pk, PingInput("start", rid=rid), T0 + s(3))
    # transaction, lock monitor, runs (pending + rid), update run + update monitor
    # (and whether an incident is open) + insert ping, end transaction
    with django_assert_num_queries(2 + READS + WRITES):
        ingest(monitor.pk, PingInput("success", rid=rid), T0 + s(4))
    assert Run.objects.get(monitor=monitor, rid=rid).outcome == "succeeded"


def test_end_ping_without_rid_closes_open_run(monitor, django_assert_num_queries):
    ingest(monitor.pk, PingInput("start"), T0 + s(3))
    # as with a rid: the open run comes with the pending runs
    with django_assert_num_queries(2 + READS + WRITES):
        ingest(monitor.pk, PingInput("success"), T0 + s(4))
    assert Run.objects.get(monitor=monitor, slot_at=T0 + s(3)).outcome == "succeeded"


def test_a_cron_heartbeat_with_grace_wider_than_the_gap_costs_the_same(
        make_monitor, django_assert_num_queries):
    # */5 with grace 600 s, pinged on time: no slot later than the expected one can
    # have a run, so none is looked for (monitors.runs.may_have_claimed)
    m = make_monitor(kind="cron", schedule="*/5 * * * *", grace=s(600), created=T0 - s(60))
    ingest(m.pk, PingInput("success"), T0 + s(2))
    with django_assert_num_queries(2 + READS + WRITES):
        ingest(m.pk, PingInput("success"), T0 + s(302))
    with django_assert_num_queries(2 + READS + WRITES):
        ingest(m.pk, PingInput("start"), T0 + s(602))
    with django_assert_num_queries(2 + READS + WRITES):
        ingest(m.pk, PingInput("success"), T0 + s(610))
    assert list(Run.objects.order_by("slot_at").values_list("slot_at", flat=True)) == [
        T0, T0 + s(300), T0 + s(600)]


def test_a_ping_after_a_slot_without_a_run_reads_the_claimed_slots_once(
        make_monitor, django_assert_num_queries):
    m = make_monitor(kind="cron", schedule="*/5 * * * *", grace=s(600), created=T0 - s(60))
    ingest(m.pk, PingInput("success"), T0 + s(302))  # T0 has no run: still expected
    # as a heartbeat, and the runs of slots after the expected one
    with django_assert_num_queries(2 + READS + WRITES + 1):
        ingest(m.pk, PingInput("success"), T0 + s(420))
    assert list(Run.objects.order_by("slot_at").values_list("slot_at", flat=True)) == [
        T0, T0 + s(300)]


def test_end_ping_without_start(monitor, django_assert_num_queries):
    # a heartbeat: no open run, so a new one (a missed row of its slot comes with
    # the pending runs): as many as closing an open run
    with django_assert_num_queries(2 + READS + WRITES):
        ingest(monitor.pk, PingInput("success"), T0 + s(3))
    assert Run.objects.filter(monitor=monitor, outcome="succeeded").count() == 2


def test_fail_ping_while_incident_open(monitor, django_assert_num_queries):
    ingest(monitor.pk, PingInput("fail"), T0 + s(3))
    # a new run (4 + WRITES, as above), the open incident + update its count, its
    # "failed" event?, insert that event (from then on: update it)
    with django_assert_num_queries(2 + READS + WRITES + 4):
        ingest(monitor.pk, PingInput("fail"), T0 + s(6))
    assert Incident.objects.get(monitor=monitor).failure_count == 2


def test_start_ping_of_a_cron_slot(make_monitor, django_assert_num_queries):
    m = make_monitor(kind="cron", schedule="0 * * * *", grace=s(300), max_attempts=2,
                     created=T0 - s(1))
    # as an interval monitor's: the expected slot has no run yet, so the
    # double-launch check (monitors.pings.double_launch) reads nothing
    with django_assert_num_queries(2 + READS + WRITES):
        ingest(m.pk, PingInput("start"), T0 + s(3))
    ingest(m.pk, PingInput("fail"), T0 + s(4))  # attempt 1 of 2: nothing opens
    # a retry of the same slot reads the slot's runs: one query more
    with django_assert_num_queries(3 + READS + WRITES):
        ingest(m.pk, PingInput("start"), T0 + s(5))
    assert list(Run.objects.filter(monitor=m).order_by("pk").values_list(
        "slot_at", "outcome")) == [(T0, "failed"), (T0, "running")]
    assert not Incident.objects.exists()


def test_duplicate_start_ping(monitor, django_assert_num_queries):
    rid = uuid.uuid4()
    ingest(monitor.pk, PingInput("start", rid=rid), T0 + s(3))
    # transaction, lock, runs (pending + rid), insert ping, end
    with django_assert_num_queries(3 + READS):
        ping = ingest(monitor.pk, PingInput("start", rid=rid), T0 + s(4))
    assert ping.duplicate


def test_evaluating_a_missed_monitor(project, monitor, django_assert_num_queries):
    monitor.alerting.channels.add(Channel.objects.create(project=project, kind="webhook",
                                                config={"url": "http://example.invalid"}))
    # transaction, lock monitor, pending runs, insert missed run, update monitor,
    # open incident?, maintenance windows, its alerting, its incidents of the last
    # hour (flapping?), its channels, insert incident, insert "opened" event, insert
    # deliveries, end transaction (they are sent after commit)
    with django_assert_num_queries(14):
        assert evaluator.evaluate_monitor(monitor.pk, T0 + s(4), ALIVE) is not None
    assert Run.objects.get(monitor=monitor, outcome="missed").slot_at == T0 + s(3)
    assert Delivery.objects.filter(event__incident__monitor=monitor).count() == 1


def test_evaluating_a_monitor_missed_again(monitor, django_assert_num_queries):
    evaluator.evaluate_monitor(monitor.pk, T0 + s(4), ALIVE)
    # the incident is already open: update its count, its "missed" event?, insert it
    with django_assert_num_queries(10):
        evaluator.evaluate_monitor(monitor.pk, T0 + s(7), ALIVE)
    assert Incident.objects.get(monitor=monitor).missed_count == 2


def test_evaluating_a_stuck_run(make_monitor, django_assert_num_queries):
    m = make_monitor(period=s(3600), grace=s(60), max_runtime=s(10))
    ingest(m.pk, PingInput("start"), T0)
    # transaction, lock monitor, pending runs, mark stuck, update monitor, open
    # incident?, maintenance windows, alerting, incidents of the last hour, channels
    # (none), insert incident, insert "opened" event, end
    with django_assert_num_queries(13):
        d = evaluator.evaluate_monitor(m.pk, T0 + s(10), ALIVE)
    assert len(d.stuck_runs) == 1 and not d.missed_slots
    assert Run.objects.get(monitor=m).outcome == "stuck"


def test_evaluating_a_skipped_slot(make_monitor, django_assert_num_queries):
    m = make_monitor(max_runtime=s(60), concurrency="forbid")
    ingest(m.pk, PingInput("success"), T0)
    ingest(m.pk, PingInput("start"), T0 + s(3))  # open at the T0+6s slot
    # as a missed slot without a channel, and the runs that ended after the slot
    # (was a run open at it?): transaction, lock monitor, pending runs, ended runs,
    # insert skipped run, update monitor, open incident?, maintenance windows,
    # alerting, incidents of the last hour, channels (none), insert incident,
    # insert "opened" event, end
    with django_assert_num_queries(14):
        d = evaluator.evaluate_monitor(m.pk, T0 + s(7), ALIVE)
    assert (d.skipped_slots, d.missed_slots) == ([T0 + s(6)], [])


def test_evaluating_a_monitor_that_is_no_longer_due(monitor, django_assert_num_queries):
    # transaction, lock (finds nothing due), end
    with django_assert_num_queries(3):
        assert evaluator.evaluate_monitor(monitor.pk, T0 + s(3)) is None


def _generic_plan(statement: str, params: list) -> tuple[dict, list[dict]]:
    """``EXPLAIN ANALYZE`` of ``statement`` (``%s`` placeholders for ``params``) under
    the generic plan PostgreSQL soon uses for a prepared statement, after an
    ``ANALYZE`` of the runs: (its top node, every node)."""
    import json

    parts = statement.split("%s")
    numbered = "".join(f"{part}${i}" for i, part in enumerate(parts[:-1], 1)) + parts[-1]
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE monitors_run")
        cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        cursor.execute(f"PREPARE generic AS {numbered}")
        cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE generic"
                       f"({', '.join(['%s'] * len(params))})", params)
        plan = cursor.fetchone()[0]
        cursor.execute("DEALLOCATE generic")
    plan = json.loads(plan) if isinstance(plan, str) else plan

    def nodes(node):
        yield node
        for child in node.get("Plans", []):
            yield from nodes(child)

    return plan[0]["Plan"], list(nodes(plan[0]["Plan"]))


@pytest.fixture
def long_history(make_monitor):
    """On PostgreSQL (prepared statements and generic plans; skipped elsewhere): a
    monitor with 3,000 finished runs, 300 missed ones and one running:
    (monitor, the running run)."""
    if connection.vendor != "postgresql":
        pytest.skip("prepared statements and generic plans: PostgreSQL")
    m = make_monitor()
    Run.objects.bulk_create(
        [Run(monitor=m, slot_at=T0 - s(i), started_at=T0 - s(i), ended_at=T0 - s(i),
             outcome="succeeded") for i in range(1, 3001)]
        + [Run(monitor=m, slot_at=T0 - s(i) / 2, outcome="missed") for i in range(1, 301)])
    return m, Run.objects.create(monitor=m, slot_at=T0, started_at=T0)


def test_the_prepared_pending_runs_read_skips_the_history(long_history, monkeypatch):
    """On PostgreSQL the pending-runs read is a prepared statement (core.sql),
    which soon runs a generic plan (made without the monitor's id): it must read
    no finished run of a monitor with a long history (a partial index per part)."""

    from core import sql

    m, _ = long_history
    read = []
    monkeypatch.setattr(sql, "select", lambda model, where, params, suffix: read.append(
        (f"SELECT * FROM monitors_run WHERE {where} {suffix}", params)) or [])
    pending_runs(m, rid=uuid.uuid4(), slot=T0 - s(1) / 2)
    top, nodes = _generic_plan(*read[0])
    scans = [n for n in nodes if n["Node Type"] == "Index Scan"]
    assert {n["Index Name"] for n in scans} == {
        "run_open", "run_deadline_unchecked", "run_rid_unique", "run_written_off_slot",
        "monitors_run_pkey"}
    assert not any(n.get("Rows Removed by Filter") for n in scans)
    assert top["Actual Rows"] == 2  # the open run, the slot's missed row


def _populated(monitor, n: int = 500) -> None:
    """``n`` more undeleted monitors in ``monitor``'s project, and the monitors'
    statistics: the planner chooses between the partial indexes
    monitor_uuid_unique and monitor_slug_unique (the same predicate) by cost, and
    on a table of a few rows without statistics they tie (it took either in CI)."""
    Monitor.objects.bulk_create([Monitor(project_id=monitor.project_id, name=f"bulk {i}",
                                         slug=f"bulk-{i}", grace=s(60)) for i in range(n)])
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE monitors_monitor")


def test_the_prepared_lock_and_runs_read_skips_the_history(long_history):
    """The statement that locks a monitor and reads its runs (PostgreSQL, prepared,
    soon a generic plan) reads no finished run of a monitor with a long history,
    and of its many missed rows only the latest."""

    from core import sql
    from monitors import pings

    m, running = long_history
    _populated(m)
    params = [sql.prep(type(m), "uuid", m.uuid), sql.prep(Run, "rid", uuid.uuid4())]
    top, nodes = _generic_plan(pings._lock_reading_sql("uuid = %s", True), params)
    on_runs = [n for n in nodes if n.get("Relation Name") == "monitors_run"]
    assert {(n["Node Type"], n["Index Name"]) for n in on_runs} == {
        ("Index Scan", name) for name in ("run_open", "run_deadline_unchecked", "run_rid_unique",
                                          "run_written_off_slot", "monitors_run_pkey")}
    assert not any(n.get("Rows Removed by Filter") for n in on_runs)
    latest = [n for n in on_runs if n["Index Name"] == "run_written_off_slot"]
    assert [n["Actual Rows"] for n in latest] == [1]
    assert top["Actual Rows"] == 2  # the running run, the latest missed row
    monitor, read = pings._lock_reading(("uuid = %s", params[:1]), uuid.uuid4())
    assert (monitor.pk, [r.pk for r in read.pending], read.latest_off.slot_at) == (
        m.pk, [running.pk], T0 - s(1) / 2)
    on_monitors = [n for n in nodes if n.get("Relation Name") == "monitors_monitor"]
    assert [(n["Node Type"], n["Index Name"]) for n in on_monitors] == [
        ("Index Scan", "monitor_uuid_unique"), ("Index Scan", "monitors_monitor_pkey")]


def test_a_ping_rewrites_five_indexes_of_its_monitor(make_monitor):
    """Every ping's UPDATE of its monitor changes next_evaluation_at (indexed), so
    it is never a HOT update: each index of monitors_monitor gets an entry a ping.
    The UUID has one index, monitor_uuid_unique (monitors 0024): every read by UUID
    is of undeleted monitors (the ping URL's, above; ratelimit.target's)."""
    if connection.vendor != "postgresql":
        pytest.skip("the indexes a ping writes: PostgreSQL")
    with connection.cursor() as cursor:
        found = connection.introspection.get_constraints(cursor, "monitors_monitor")
    indexes = {name: (c["columns"], c["unique"]) for name, c in found.items()
               if c["index"] or c["primary_key"]}
    assert indexes == {
        "monitors_monitor_pkey": (["id"], True),
        "monitor_uuid_unique": (["uuid"], True),
        "monitor_slug_unique": (["project_id", "slug"], True),
        "monitors_monitor_project_id_0a7b6a70": (["project_id"], False),
        "monitors_monitor_next_evaluation_at_d5c15d15": (["next_evaluation_at"], False),
    }
    m = make_monitor()
    _populated(m)
    plan = str(type(m).objects.filter(deleted_at__isnull=True, uuid=m.uuid).explain())
    assert "monitor_uuid_unique" in plan, plan


@pytest.mark.parametrize("concurrency", ["allow", "forbid", "replace"])
def test_next_evaluation_from_memory_equals_a_fresh_read(make_monitor, concurrency):
    """Ingest and the evaluator compute next_evaluation_at from the runs they updated
    in memory instead of reading the pending runs again: it must be the same."""
    m = make_monitor(kind="cron", schedule="* * * * *", grace=s(10), max_runtime=s(30),
                     deadline=s(45), concurrency=concurrency, created=T0 - s(1))
    rid = uuid.uuid4()
    steps = [
        ("start", rid, 60), ("start", None, 70), ("success", rid, 80), ("tick", None, 110),
        ("success", None, 125), ("start", None, 185), ("tick", None, 216), ("tick", None, 231),
        ("fail", None, 240), ("start", rid, 250), ("success", None, 300), ("tick", None, 500),
        ("start", None, 545), ("success", None, 546), ("log", None, 550), ("tick", None, 700),
    ]
    for kind, r, at in steps:
        if kind == "tick":
            evaluator.tick(T0 + s(at))
        else:
            ingest(m.pk, PingInput(kind, rid=r), T0 + s(at))
        m.refresh_from_db()
        assert m.next_evaluation_at == slots.next_evaluation(m, pending_runs(m)), (kind, at)


def _wsgi(app, path, method="GET"):
    import io
    seen = {}
    environ = {"REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": "",
               "SERVER_NAME": "testserver", "SERVER_PORT": "80", "wsgi.url_scheme": "http",
               "wsgi.input": io.BytesIO(b""), "REMOTE_ADDR": "192.0.2.7",
               "HTTP_USER_AGENT": "curl/8.0"}
    body = b"".join(app(environ, lambda status, headers: seen.update(
        status=status, headers=dict(headers))))
    return seen["status"], seen["headers"], body


def test_the_ping_route_skips_middleware_and_the_connection_check(
        make_monitor, django_assert_num_queries):
    """PingRoute answers /ping/ itself: the heartbeat's statements, no session or
    health-check query; anything else goes to the application it wraps. What a
    ping URL's pings are counted against (monitors.ratelimit.target) costs one
    statement the first time, none while it is remembered."""
    from monitors.models import PingLog
    from monitors.views import PingRoute

    m = make_monitor()
    route = PingRoute(lambda environ, start: [b"django"])
    with django_assert_num_queries(1 + 2 + READS + WRITES):
        status, headers, body = _wsgi(route, f"/ping/{m.uuid}")
    assert (status, body, headers["Content-Length"]) == ("200 OK", b"OK\n", "3")
    with django_assert_num_queries(2 + READS + WRITES):
        assert _wsgi(route, f"/ping/{m.uuid}")[::2] == ("200 OK", b"OK\n")
    assert headers["Content-Type"] == "text/plain; charset=utf-8"
    assert _wsgi(route, f"/ping/{m.uuid}/start", "HEAD")[::2] == ("200 OK", b"")
    ping = PingLog.objects.filter(monitor=m).order_by("pk").first()
    assert PingLog.objects.filter(monitor=m).count() == 3
    assert (ping.kind, ping.remote_addr, ping.user_agent) == ("success", "192.0.2.7", "curl/8.0")
    assert _wsgi(route, f"/ping/{uuid.uuid4()}")[::2] == (
        "404 Not Found", b"not found: no monitor with this ping URL\n")
    other = []
    route.app = lambda environ, start: other.append(environ["PATH_INFO"]) or [b"django"]
    route({"PATH_INFO": "/api/v1/monitors/"}, None)
    assert other == ["/api/v1/monitors/"]


@pytest.mark.django_db(transaction=True)
def test_a_heartbeat_is_four_round_trips_to_postgresql(make_monitor, tmp_path):
    """What the query counts above cannot show (psycopg sends BEGIN and COMMIT
    itself, and inside a test's transaction they are a savepoint's): a heartbeat
    through the ping route, its URL's target remembered, waits for PostgreSQL four
    times: BEGIN, lock and read (monitors.pings._lock_reading), write
    (monitors.pings._write), COMMIT. Counted in libpq's trace of the connection:
    one ReadyForQuery a round trip. Issue 24 measured sending BEGIN in the lock's
    message (a simple query: client-side binding, text results): it cost more
    CPU, in the web process and in PostgreSQL, than the round trip it saved."""
    from psycopg.pq import Trace

    from monitors.views import PingRoute

    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's protocol")
    m = make_monitor()
    route = PingRoute(None)
    assert _wsgi(route, f"/ping/{m.uuid}")[::2] == ("200 OK", b"OK\n")
    pgconn = connection.connection.pgconn
    trace = tmp_path / "trace"
    with open(trace, "wb") as f:
        pgconn.trace(f.fileno())
        pgconn.set_trace_flags(Trace.SUPPRESS_TIMESTAMPS | Trace.REGRESS_MODE)
        try:
            assert _wsgi(route, f"/ping/{m.uuid}")[::2] == ("200 OK", b"OK\n")
        finally:
            pgconn.untrace()
    lines = [line.split("\t") for line in trace.read_text().splitlines()]
    queries = [fields[3].strip() for fields in lines if fields[0] == "F" and fields[2] == "Query"]
    waits = [fields[3].strip() for fields in lines
             if fields[0] == "B" and fields[2] == "ReadyForQuery"]
    assert (queries, waits) == (['"BEGIN"', '"COMMIT"'], ["T", "T", "T", "I"])
    assert m.runs.count() == 2


def test_the_ping_route_answers_503_when_the_database_is_down(make_monitor, monkeypatch):
    from django.db import OperationalError

    from monitors import pings
    from monitors.views import PingRoute

    def down(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    m = make_monitor()
    monkeypatch.setattr(pings, "ingest_at", down)
    status, headers, body = _wsgi(PingRoute(None), f"/ping/{m.uuid}")
    assert (status, headers["Retry-After"], body) == (
        "503 Service Unavailable", "5",
        b"database unavailable, nothing was stored: retry in 5 seconds\n")


@pytest.mark.parametrize("all_channels", [False, True])
def test_a_tick_evaluates_due_monitors_together(project, make_monitor, monkeypatch,
                                                django_assert_num_queries, all_channels):
    """The hour-start burst: 30 monitors missed at once cost as many statements as
    one: the incidents, their "opened" events and their deliveries are one insert
    each for the whole batch, the monitors one update (their new values are equal)."""
    hook = Channel.objects.create(project=project, kind="webhook",
                                  config={"url": "http://example.invalid", "secret": "s"})
    ms = [make_monitor(channels=[hook], all_channels=all_channels) for _ in range(30)]
    for m in ms:
        ingest(m.pk, PingInput("success"), T0)
    monkeypatch.setattr(evaluator, "_last_beat", [])  # this tick records liveness
    # the evaluator's liveness (3) and the due ids; one batch: transaction, lock the
    # 30, their pending runs, insert the missed runs, update the monitors (one
    # statement), alerts' batch reads (open incidents, maintenance windows, recent
    # incidents, alerting, and the channels they follow: the ones their Alerting
    # lists, or their project's), the 3 inserts, end; then the tick's escalation,
    # flapping, channel-health (alerts.health: the channels whose check is due) and
    # housekeeping steps. PostgreSQL: the batch checks foreign keys per statement
    # (SET CONSTRAINTS ALL IMMEDIATE), and defers them again after it here, inside
    # the test's transaction (evaluator._batch_transaction)
    checks = 2 if connection.vendor == "postgresql" else 0
    with django_assert_num_queries(4 + 12 + 3 + 4 + checks) as ctx:
        assert evaluator.tick(T0 + s(4)) == 30
    assert Incident.objects.filter(cause="missed").count() == 30
    assert Delivery.objects.filter(channel=hook).count() == 30
    statements = [q["sql"] for q in ctx.captured_queries]
    for table in ("alerts_incident", "alerts_incidentevent", "alerts_delivery", "monitors_run"):
        assert sum(q.startswith(f'INSERT INTO "{table}"') for q in statements) == 1
    assert sum(q.startswith("UPDATE monitors_monitor") for q in statements) == 1
    assert sum("alerts_alerting_channels" in q for q in statements) == (not all_channels)
    assert sorted(Incident.objects.values_list("monitor_id", flat=True)) == sorted(
        m.pk for m in ms)
    opened = IncidentEvent.objects.filter(kind="opened", step="opened")
    assert opened.count() == 30 and all(
        e.detail["missed_count"] == 1 for e in opened)
    assert set(Delivery.objects.values_list("event__incident__monitor_id", flat=True)) == {
        m.pk for m in ms}


def test_a_monitor_that_cannot_be_evaluated_does_not_hold_back_its_batch(make_monitor,
                                                                          monkeypatch):
    good, bad = make_monitor(), make_monitor()
    for m in (good, bad):
        ingest(m.pk, PingInput("success"), T0)
    real = slots.overdue

    def overdue(monitor, until, alive=None, claimed=frozenset()):
        if monitor.pk == bad.pk:
            raise ValueError("cannot compute")
        return real(monitor, until, alive, claimed)

    monkeypatch.setattr(slots, "overdue", overdue)
    assert evaluator.tick(T0 + s(4)) == 1
    good.refresh_from_db()
    bad.refresh_from_db()
    assert Run.objects.filter(monitor=good, outcome="missed").count() == 1
    assert not Run.objects.filter(monitor=bad, outcome="missed").exists()
    assert (bad.evaluation_failures, bad.evaluation_error) == (1, "ValueError: cannot compute")
    assert bad.next_evaluation_at == T0 + s(4) + timedelta(minutes=1)


def test_a_batch_reads_an_escalation_policy_once(project, make_monitor,
                                                 django_assert_num_queries):
    """30 monitors of one policy missed at once: its tiers (with the policy, then
    their channels) are read once for the batch, not for each monitor."""
    from alerts.models import Alerting, EscalationPolicy, EscalationTier

    hook = Channel.objects.create(project=project, kind="webhook", config={"url": "x"})
    policy = EscalationPolicy.objects.create(project=project, name="on-call", repeat=1)
    EscalationTier.objects.create(policy=policy, position=0, delay=s(0)).channels.add(hook)
    ms = [make_monitor() for _ in range(30)]
    Alerting.objects.filter(monitor__in=ms).update(escalation_policy=policy)
    for m in ms:
        ingest(m.pk, PingInput("success"), T0)
    # transaction, lock, pending runs, insert runs, update monitors, open incidents,
    # windows, recent incidents, alerting, the tiers (with their policy) and their
    # channels, the 3 inserts, end; PostgreSQL: the foreign keys checked per
    # statement in the batch, deferred again after it (as in the tick's test above)
    checks = 2 if connection.vendor == "postgresql" else 0
    with django_assert_num_queries(15 + checks):
        assert evaluator.evaluate_many([m.pk for m in ms], T0 + s(4), ALIVE) == 30
    # one tier, repeat 1: the next step is the policy's second round, its delay (0) on
    assert set(Incident.objects.values_list("next_escalation_at", flat=True)) == {T0 + s(4)}
    assert Delivery.objects.filter(channel=hook).count() == 30


def test_a_claim_is_the_same_statements_whatever_its_size(project, make_monitor,
                                                        django_assert_num_queries):
    """delivery.claim_due(): [the lock and the transaction's settings,] the claims in
    flight per channel, the candidates, [a generic plan for the claim,] the claim
    UPDATE, in a transaction; on PostgreSQL each statement has one text whatever
    the number of full channels, candidates and picked ids (arrays, LIMIT %s), so
    psycopg prepares it."""
    from alerts import delivery
    from tests.alerts.conftest import new_delivery, new_incident, webhook

    pg = connection.vendor == "postgresql"
    hooks = [webhook(project, f"https://h{i}.example.com/h") for i in range(3)]
    m = make_monitor()
    for i, channel in enumerate(hooks):
        for _ in range(2 + 4 * i):  # 2, 6 and 10 rows: the last two reach the cap of 4
            new_delivery(new_incident(m), channel, at=T0)
    texts = []
    # 3 of the first two channels; then 7 (the cap of 4 a channel); then none (the
    # last two channels are full, the first has no more rows). Each: [SAVEPOINT,]
    # [the lock,] the claims in flight, the candidates, [the generic plan, the
    # claim UPDATE,] [RELEASE]
    for limit, claimed, statements in ((3, 3, 5), (100, 7, 5), (100, 0, 4)):
        with django_assert_num_queries(statements + pg * (1 + (claimed > 0))) as ctx:
            assert len(delivery.claim_due(T0, limit)) == claimed
        texts.append([q["sql"] for q in ctx.captured_queries[1:-1]])  # not the savepoint's
    if pg:  # one text each, whatever the window, the picked ids and the full channels
        assert texts[0] == texts[1] and texts[2] == texts[0][:3]


def test_writing_a_batch_of_delivery_outcomes(project, make_monitor,
                                              django_assert_num_queries):
    """delivery.record(): the outcomes of a batch (here 20 deliveries to two channels,
    ten delivered, ten to be retried) whatever its size: one UPDATE of every outcome
    whose claim holds (PostgreSQL: FROM UNNEST of an array per column, one text
    whatever the batch's size, so psycopg prepares it; SQLite: FROM (VALUES ...)),
    one insert of the attempt log, the channels' health."""
    import httpx

    from alerts import delivery
    from tests.alerts.conftest import new_delivery, new_incident, webhook

    ok = webhook(project, "https://ok.example.com/h")
    down = webhook(project, "https://down.example.com/h")
    m = make_monitor()
    for channel in (ok, down):
        for _ in range(10):
            new_delivery(new_incident(m), channel, at=T0)
    prepared = delivery.prepare(delivery.claim_due(T0, 100))
    assert len(prepared) == 8  # the channel cap (4 a channel)
    transport = httpx.MockTransport(
        lambda r: httpx.Response(200 if r.url.host == "ok.example.com" else 503))
    for a in prepared:
        delivery.attempt(a, transport, clock=lambda: T0 + s(1))
    # transaction, [synchronous_commit off,] the outcomes, the attempt log, the
    # delivered channels that were failing (to recover them), the failing channel's
    # last_error, its failing_since (if not failing yet), end transaction
    with django_assert_num_queries(7 + (connection.vendor == "postgresql")) as ctx:
        assert sorted(delivery.record(prepared)) == ["delivered"] * 4 + ["pending"] * 4
    [update] = [q["sql"] for q in ctx.captured_queries
                if q["sql"].startswith(("WITH v(", "UPDATE alerts_delivery SET status = v."))]
    assert "UPDATE alerts_delivery SET status = v.v_status" in update
    if connection.vendor == "postgresql":
        assert " FROM UNNEST(" in update
    assert Delivery.objects.filter(status="delivered").count() == 4
