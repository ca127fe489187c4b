"""monitors.history: a monitor's runs and pings in time order, by index, on both
databases (the pings kept in runs on PostgreSQL only)."""
import uuid
from datetime import timedelta

import pytest
from django.db import connection

from monitors import history, pings
from monitors.models import Ping, PingLog, Run
from monitors.pings import PingInput, ingest
from tests.conftest import T0, s
from tests.helpers import heartbeats

pytestmark = pytest.mark.django_db
PG = pytest.mark.skipif("connection.vendor != 'postgresql'",
                        reason="pings kept in runs, run_monitor_hour: PostgreSQL only")


def test_runs_newest_first_is_by_time_then_id(make_monitor):
    m = make_monitor(period=s(60), grace=s(30))
    rid = uuid.uuid4()
    ingest(m.pk, PingInput("start", rid=rid), T0 + s(10))     # run A: time T0+10s
    ingest(m.pk, PingInput("success"), T0 + s(20))            # closes A
    ingest(m.pk, PingInput("success"), T0 + s(5000))          # run B: end only
    ingest(m.pk, PingInput("start"), T0 + s(4000))            # run C, started earlier
    got = [(r.at, r.outcome) for r in history.runs_newest_first(m)]
    assert got == [(T0 + s(5000), "succeeded"), (T0 + s(4000), "running"),
                   (T0 + s(10), "succeeded")]


def test_older_than_pages_without_repeats_across_hours(make_monitor):
    m = make_monitor(period=s(600), grace=s(30))
    heartbeats(m, 7, step=timedelta(minutes=25))
    all_runs = list(history.runs_newest_first(m))
    first, rest = all_runs[:3], all_runs[3:]
    page = list(history.older_than(history.runs_newest_first(m), first[-1].at, first[-1].pk))
    assert [r.pk for r in page] == [r.pk for r in rest]
    assert [r.at for r in all_runs] == [T0 + timedelta(minutes=25 * i) for i in range(6, -1, -1)]


def test_kept_pings_are_the_newest_kept_of_both_kinds(make_monitor):
    m = make_monitor(period=s(60), grace=s(30))
    heartbeats(m, 4, step=s(60))                                   # 4 heartbeats
    ingest(m.pk, PingInput("log", body=b"x", body_size=1), T0 + s(250))
    ingest(m.pk, PingInput("start"), T0 + s(300))
    ingest(m.pk, PingInput("success"), T0 + s(310))
    got = [(p.received_at, p.kind) for p in history.kept_pings(m, keep=4)]
    assert got == [(T0 + s(310), "success"), (T0 + s(300), "start"),
                   (T0 + s(250), "log"), (T0 + s(180), "success")]
    assert history.latest_ping(m).received_at == T0 + s(310)
    assert {p.monitor_id: p.received_at for p in history.newest_pings_of([m.pk]).values()} == {
        m.pk: T0 + s(310)}


def test_newest_runs_of_several_monitors_in_one_statement(make_monitor,
                                                           django_assert_num_queries):
    a = make_monitor(period=s(60), grace=s(30))
    b = make_monitor(period=s(60), grace=s(30))
    heartbeats(a, 5, step=s(60))
    heartbeats(b, 2, step=s(60))
    with django_assert_num_queries(1):
        rows = history.newest_runs_of([a.pk, b.pk], 3, ("monitor_id", "at"))
    assert sorted(rows) == sorted([(a.pk, T0 + s(240)), (a.pk, T0 + s(180)), (a.pk, T0 + s(120)),
                                   (b.pk, T0 + s(60)), (b.pk, T0)])


def test_newest_of_any_number_of_monitors_is_one_statement_text(make_monitor,
                                                                django_assert_num_queries):
    """On PostgreSQL one text whatever the number of monitors (a LATERAL subquery of
    unnest of their ids), so psycopg prepares it; the newest ping of each, a
    monitor's ping body and address as Django reads them."""
    ms = [make_monitor(period=s(60), grace=s(30)) for _ in range(3)]
    ingest(ms[0].pk, PingInput("log", body=b"hello", body_size=5, remote_addr="10.0.0.1"),
           T0 + s(5))
    heartbeats(ms[1], 2, step=s(60))
    texts = []
    for ids in ([ms[0].pk], [m.pk for m in ms]):
        with django_assert_num_queries(1) as ctx:
            got = history.newest_pings_of(ids)
        texts.append(ctx.captured_queries[0]["sql"])
    assert {pk: p.received_at for pk, p in got.items()} == {ms[0].pk: T0 + s(5),
                                                            ms[1].pk: T0 + s(60)}
    assert (bytes(got[ms[0].pk].body), got[ms[0].pk].remote_addr) == (b"hello", "10.0.0.1")
    if connection.vendor == "postgresql":
        assert texts[0] == texts[1] and "LATERAL" in texts[0]


def test_of_slots_finds_the_slots_runs(make_monitor):
    m = make_monitor(kind="cron", schedule="* * * * *", grace=s(30))
    ingest(m.pk, PingInput("success"), T0 + s(65))
    ingest(m.pk, PingInput("success"), T0 + s(125))
    assert [r.slot_at for r in history.of_slots(m, [T0 + s(60)])] == [T0 + s(60)]


@PG
def test_a_heartbeat_stores_its_run_alone_read_as_a_ping(make_monitor):
    m = make_monitor(period=s(60), grace=s(30))
    stored = ingest(m.pk, PingInput("fail", exit_status=3, method="POST", remote_addr="10.0.0.1",
                                    user_agent="curl/8"), T0 + s(5))
    run = Run.objects.get(monitor=m)
    assert not Ping.objects.filter(monitor=m).exists()
    assert isinstance(stored, PingLog) and stored.pk == run.pk
    (read,) = PingLog.objects.filter(monitor=m)
    assert [(p.pk, p.run_id, p.received_at, p.kind, p.exit_status, p.rid, p.method, p.remote_addr,
             p.user_agent, bytes(p.body), p.body_size, p.duplicate) for p in (stored, read)] == [
        (run.pk, run.pk, T0 + s(5), "fail", 3, None, "POST", "10.0.0.1", "curl/8", b"", 0,
         False)] * 2
    # kept_ping gives its values in the model's column order; its hour is the view's
    assert tuple(f.attname for f in PingLog._meta.concrete_fields) == pings._PINGLOG_COLUMNS
    assert (stored.hour, stored.body_truncated, stored.run.pk) == (
        read.hour, False, run.pk)


@PG
def test_pings_and_runs_share_ids(make_monitor):
    m = make_monitor(period=s(60), grace=s(30))
    kept = ingest(m.pk, PingInput("success"), T0)
    row = ingest(m.pk, PingInput("log"), T0 + s(1))
    kept2 = ingest(m.pk, PingInput("success"), T0 + s(61))
    assert kept.pk < row.pk < kept2.pk
    assert len({p.pk for p in PingLog.objects.filter(monitor=m)}) == 3


@PG
def test_time_ordered_reads_use_run_monitor_hour(make_monitor):
    m = make_monitor(period=s(60), grace=s(30))
    heartbeats(m, 50, step=s(600))
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        for qs in (history.runs_newest_first(m)[:10],
                   history.older_than(history.runs_newest_first(m), T0 + s(6000), 10**9)[:10]):
            plan = _plan(cursor, qs)
            assert "run_monitor_hour" in plan, plan
            assert "Sort" not in (plan.replace("Incremental Sort", "").replace("Sort Key", "")
                                  .replace("Presorted Key", "")), plan
        # pings: each table by its index, the runs' bounded below by hour (an index
        # condition), then the few rows within the bound sorted
        plan = _plan(cursor, history.newest_pings(m, 10))
        assert "ping_monitor_time" in plan and "run_monitor_hour" in plan, plan
        assert "Index Cond: ((monitor_id" in plan and "date_trunc" in plan, plan


def _plan(cursor, qs) -> str:
    sql, params = qs.query.sql_with_params()
    cursor.execute("EXPLAIN " + sql, params)
    return " ".join(str(r) for r in cursor.fetchall())


@PG
@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_newest_pings_of_a_monitor_with_fewer_ping_rows_reads_every_hour(make_monitor):
    """Fewer than ``n`` ping rows: the hour's lower bound is PostgreSQL's
    -infinity, not a naive Python datetime (Django warned on every such read)."""
    m = make_monitor(period=s(60), grace=s(30))
    heartbeats(m, 3, step=s(3600))  # kept in their runs: no ping row
    ingest(m.pk, PingInput("log"), T0 + s(3 * 3600))
    got = [p.received_at for p in history.newest_pings(m, 10)]
    assert got == [T0 + s(3 * 3600), T0 + s(7200), T0 + s(3600), T0]
