"""TEMPORARY (not committed): bytes per heartbeat on PostgreSQL."""

import pytest
from django.db import connection

from monitors.pings import PingInput, ingest
from tests.conftest import T0, s

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.skipif("connection.vendor != 'postgresql'")
def test_size(make_monitor):
    ms = [make_monitor(period=s(60), grace=s(30)) for _ in range(100)]
    for i in range(20):  # 2,000 through ingest
        for m in ms:
            ingest(m.pk, PingInput("success", user_agent="curl/8.5.0", remote_addr="10.1.2.3"),
                   T0 + i * s(60) + s(1))
    with connection.cursor() as c:
        # 198,000 more of the same shape, minute after minute, monitors interleaved
        c.execute("""INSERT INTO monitors_run (monitor_id, rid, slot_at, started_at, ended_at,
            outcome, exit_status, timeout_at, deadline_at, deadline_checked, reason, ping_method,
            ping_remote_addr, ping_user_agent)
            SELECT r.monitor_id, NULL, r.slot_at + k * interval '20 minutes', NULL,
                   r.ended_at + k * interval '20 minutes', r.outcome, r.exit_status, NULL, NULL,
                   false, '', r.ping_method, r.ping_remote_addr, r.ping_user_agent
              FROM generate_series(1, 99) k, monitors_run r ORDER BY k, r.ended_at, r.id""")
        c.execute("SELECT count(*) FROM monitors_run")
        n = c.fetchone()[0]
        c.execute("SELECT count(*) FROM monitors_ping")
        np_ = c.fetchone()[0]
        c.execute("VACUUM ANALYZE monitors_run") if False else None
        c.execute("CHECKPOINT")
        c.execute("""SELECT relname, pg_relation_size(oid) FROM pg_class WHERE relname IN
            (SELECT indexrelid::regclass::text FROM pg_index WHERE indrelid IN
             ('monitors_run'::regclass, 'monitors_ping'::regclass))
            OR relname IN ('monitors_run', 'monitors_ping')""")
        parts = c.fetchall()
        c.execute("SELECT pg_total_relation_size('monitors_run') + "
                  "pg_total_relation_size('monitors_ping')")
        total = c.fetchone()[0]
    report = {name: round(size / n, 1) for name, size in parts}
    print(f"\nSIZE runs={n} pings={np_} total/heartbeat={total / n:.1f} B parts={report}")
    with open("/tmp/wtstore/size.txt", "w") as f:
        f.write(f"runs={n} pings={np_} total/heartbeat={total / n:.1f} B parts={report}\n")
