"""Benchmark: bytes stored per heartbeat and per run on PostgreSQL (issue 24, target 2).

    BENCH_DATABASE_URL=postgres://... .venv/bin/python bench/storage.py heartbeats N [M]
    BENCH_DATABASE_URL=postgres://... .venv/bin/python bench/storage.py pairs RUNS [M]

(`bench/storage.sh` runs both on a scratch PostgreSQL, each on its own new database.)

``heartbeats``: N success pings without a run id, round-robin over M interval
monitors (default 100; period 60 s, grace 1 h, as bench/ping_http_db.py makes
them: every ping on time, no incident), one a minute a monitor, on a simulated
clock ending now. ``pairs``: RUNS start + success pairs with a run id (the
success 1 s after its start; 2 x RUNS pings). Each ping goes through
:func:`monitors.pings.ingest` (what the ping route stores: ``GET``, remote
address 127.0.0.1, no user agent or body, as bench/ping_http.sh's wrk sends), in
one process, the ``PingInput`` values built beforehand, 500 pings a transaction
(each ``ingest`` its own savepoint in it: one WAL flush a batch, not a ping).

Then ``CHECKPOINT``, and prints for ``monitors_run`` and ``monitors_ping`` (the
real tables, whatever views the schema adds; a partitioned table is summed over
its partitions, an index over its partitions' indexes; a table that does not
exist is reported as absent): rows, heap (main fork), the rest of the table
(free space and visibility maps, TOAST) and each index, in bytes per heartbeat
(or per run) and in total, less what the empty tables took before the first ping;
then the total against the target::

    bytes per heartbeat: 524 (target <= 150)

The database must be a scratch one: it is migrated and written to, and the
sizes measured are those of the whole tables.
"""
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta

import _django

_django.setup("bench")
from django.db import connection, transaction  # noqa: E402

from accounts.models import Organisation  # noqa: E402
from monitors.models import Monitor  # noqa: E402
from monitors.pings import PingInput, ingest  # noqa: E402

TABLES = ("monitors_run", "monitors_ping")
BATCH = 500
# the table itself, or its partitions (pg_partition_tree has no rows for a plain table)
LEAVES = """select relid from pg_partition_tree(%s::regclass) where isleaf
            union select c.oid from pg_class c where c.oid = %s::regclass and c.relkind <> 'p'"""
TARGET = {"heartbeats": ("heartbeat", 150), "pairs": ("run", None)}


def sizes() -> dict[str, dict]:
    """Per table of TABLES: {"rows", "heap", "other", "indexes": {name: bytes}} (bytes,
    summed over partitions), or None when the table does not exist."""
    out = {}
    with connection.cursor() as cur:
        for table in TABLES:
            cur.execute("select to_regclass(%s)", [table])
            if cur.fetchone()[0] is None:
                out[table] = None
                continue
            cur.execute(f"""
                with leaves as ({LEAVES})
                select coalesce(sum(pg_relation_size(relid)), 0),
                       coalesce(sum(pg_table_size(relid) - pg_relation_size(relid)), 0)
                from leaves""", [table, table])
            heap, other = cur.fetchone()
            cur.execute(f"""
                with leaves as ({LEAVES})
                select coalesce(pg_partition_root(i.indexrelid), i.indexrelid)::regclass::text,
                       sum(pg_relation_size(i.indexrelid))
                from pg_index i join leaves l on i.indrelid = l.relid
                group by 1 order by 1""", [table, table])
            indexes = dict(cur.fetchall())
            cur.execute(f"select count(*) from {connection.ops.quote_name(table)}")
            out[table] = {"rows": cur.fetchone()[0], "heap": int(heap), "other": int(other),
                          "indexes": {k: int(v) for k, v in indexes.items()}}
    return out


def pings(mode: str, n: int, monitors: list[int]) -> list[tuple[int, PingInput, datetime]]:
    """The (monitor id, ping, arrival time) to ingest, in order, on a clock ending now:
    ``n`` heartbeats, or ``n`` start + success pairs with a run id."""
    m = len(monitors)
    step = timedelta(seconds=60) / m  # each monitor pinged once a minute
    t0 = datetime.now(UTC) - step * n - timedelta(seconds=5)
    # what `curl -fsS -m 10 --retry 5 https://.../ping/<uuid>` in a crontab sends
    heartbeat = PingInput(kind="success", remote_addr="127.0.0.1", user_agent="curl/8.5.0")
    out = []
    for i in range(n):
        at = t0 + step * i
        mid = monitors[i % m]
        if mode == "heartbeats":
            out.append((mid, heartbeat, at))
        else:
            rid = uuid.uuid4()
            for kind, later in (("start", 0), ("success", 1)):
                out.append((mid, PingInput(kind=kind, rid=rid, remote_addr="127.0.0.1",
                                           user_agent="curl/8.5.0"),
                            at + timedelta(seconds=later)))
    return out


def report(mode: str, n: int, n_pings: int, before: dict, after: dict) -> None:
    """Print the sizes of ``after`` less ``before``, per heartbeat or per run (``n``),
    and per ping (``n_pings``) for runs."""
    unit, target = TARGET[mode]
    total = 0
    for table in TABLES:
        a, b = after[table], before[table]
        if a is None:
            print(f"{table}: absent")
            continue
        parts = [("heap", a["heap"] - b["heap"]), ("fsm, vm, toast", a["other"] - b["other"])]
        parts += [(f"index {k}", v - b["indexes"].get(k, 0)) for k, v in a["indexes"].items()]
        size = sum(v for _, v in parts)
        total += size
        print(f"{table}: {a['rows']:,} rows, {size / 2**20:.1f} MiB, "
              f"{size / n:.0f} bytes per {unit}")
        for name, v in parts:
            print(f"    {name:<48} {v / 2**20:8.2f} MiB {v / n:7.1f} B/{unit}")
    goal = f" (target <= {target})" if target else f" (no target; {total / n_pings:.0f} per ping)"
    print(f"bytes per {unit}: {total / n:.0f}{goal}")


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode not in TARGET:
        sys.exit(__doc__)
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 200_000
    m = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    project = Organisation.objects.create(name=f"storage-{mode}").projects.create(name=mode)
    monitors = [Monitor.objects.create(project=project, name=f"m{i}", slug=f"m{i}",
                                       period=timedelta(seconds=60),
                                       grace=timedelta(hours=1)).pk for i in range(m)]
    todo = pings(mode, n, monitors)
    with connection.cursor() as cur:
        cur.execute("checkpoint")
    before = sizes()
    with connection.cursor() as cur:
        cur.execute("select pg_current_wal_lsn()")
        lsn = cur.fetchone()[0]
    t0, c0 = time.monotonic(), time.process_time()
    for i in range(0, len(todo), BATCH):
        with transaction.atomic():
            for mid, ping, at in todo[i:i + BATCH]:
                ingest(mid, ping, at)
    wall, cpu = time.monotonic() - t0, time.process_time() - c0
    with connection.cursor() as cur:
        cur.execute("select pg_wal_lsn_diff(pg_current_wal_lsn(), %s)", [lsn])
        wal = int(cur.fetchone()[0])
        cur.execute("checkpoint")
    what = f"{n:,} heartbeats" if mode == "heartbeats" else f"{n:,} runs ({len(todo):,} pings)"
    print(f"--- {what} over {m} monitors through monitors.pings.ingest: {wall:.0f} s, "
          f"{len(todo) / wall:.0f} pings/s, Python CPU {cpu * 1000 / len(todo):.2f} ms a ping")
    print(f"WAL written: {wal / len(todo):.0f} bytes per ping ({BATCH} pings to a "
          "transaction; full-page images after the first checkpoint included)")
    report(mode, n, len(todo), before, sizes())


if __name__ == "__main__":
    main()
