"""core.tablestats: after a burst of inserts, the table is analysed once."""
import pytest
from django.db import connection, connections

from alerts.models import Incident
from core import sql, tablestats
from tests.conftest import T0


@pytest.mark.parametrize(("inserted", "reltuples", "expected"), [
    (999, -1, False),  # too few rows, even into a never analysed table
    (1000, -1, True),  # never analysed (reltuples -1 reads as 0)
    (1000, 0, True),
    (1000, 4999, True),  # more than 20 % of it
    (1000, 5000, False),  # exactly 20 %: not more
    (2001, 10_000, True),
    (150_000, 1_000_000, False),  # 15 % of a large table: autovacuum's business
])
def test_due(inserted, reltuples, expected):
    assert tablestats.due(inserted, reltuples) is expected


def test_due_takes_its_thresholds():
    assert tablestats.due(10, 0, min_rows=10)
    assert not tablestats.due(10, 100, min_rows=10, scale=0.1)
    assert tablestats.due(11, 100, min_rows=10, scale=0.1)


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(tablestats, "_pending", {})
    monkeypatch.setattr(tablestats, "_looked", {})


def _stats(table: str) -> tuple[float, int]:
    with connection.cursor() as cur:
        cur.execute("SELECT pg_stat_clear_snapshot()")
        cur.execute("SELECT c.reltuples, s.analyze_count FROM pg_class c JOIN "
                    "pg_stat_user_tables s ON s.relid = c.oid WHERE c.relname = %s", [table])
        return cur.fetchone()


@pytest.mark.django_db
def test_nothing_on_sqlite_and_nothing_below_min_rows(fresh, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks:
        tablestats.inserted(Incident, 5)
    assert len(callbacks) == (1 if connection.vendor == "postgresql" else 0)
    for fn in callbacks:
        assert fn() is False  # 5 rows: no look at all (no statement)
    assert tablestats._looked == {}


@pytest.mark.django_db
@pytest.mark.skipif("connection.vendor != 'postgresql'")
def test_a_burst_is_analysed_once_committed(fresh, make_monitor,
                                            django_capture_on_commit_callbacks):
    table = Incident._meta.db_table
    m = make_monitor()
    reltuples, analyses = _stats(table)
    assert reltuples <= 0  # never analysed: the state of a new installation's table
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        sql.insert_many(Incident, ("monitor_id", "cause", "summary", "opened_at", "resolved_at"),
                        [(m.pk, "missed", "", T0, T0) for _ in range(1200)])
        tablestats.inserted(Incident, 1200)
    assert _stats(table) == (reltuples, analyses)  # nothing before the commit
    assert callbacks[0]() is True
    assert _stats(table) == (1200, analyses + 1)
    assert tablestats._pending[table] == 0
    # within INTERVAL: counted, not looked at
    assert tablestats._committed(table, 5000) is False
    assert tablestats._pending[table] == 5000 and _stats(table) == (1200, analyses + 1)
    # looked at later: 300 rows of 1,200 counted are not MIN_ROWS, so none
    tablestats._looked[table] -= tablestats.INTERVAL
    tablestats._pending[table] = 0
    assert tablestats._committed(table, 300) is False
    assert tablestats.analyze_if_due(table, 300) is None
    assert tablestats.analyze_if_due(table, 1000) is True  # 1,000 > 20 % of 1,200
    assert _stats(table) == (1200, analyses + 2)


@pytest.mark.django_db
@pytest.mark.skipif("connection.vendor != 'postgresql'")
def test_another_analyser_is_left_alone(fresh):
    table = Incident._meta.db_table
    with connection.cursor() as cur:
        cur.execute("SELECT oid::int FROM pg_class WHERE relname = %s", [table])
        oid = cur.fetchone()[0]
    other = connections.create_connection("default")
    try:
        with other.cursor() as cur:
            cur.execute("SELECT pg_advisory_lock(%s, %s)", [tablestats._LOCK, oid])
        assert tablestats.analyze_if_due(table, 1000) is False
        # the rows are its business now: not pending here
        assert tablestats._committed(table, 1000) is False
        assert tablestats._pending[table] == 0
    finally:
        other.close()
