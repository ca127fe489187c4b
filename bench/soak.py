"""Benchmark: a real-time soak with retention on, in either shape.

Embedded (default): starts ``manage.py serve`` (SQLite in a scratch data dir).
Production: ``bench/soak.sh`` starts the documented production shape (granian,
a Celery worker and beat, PostgreSQL, Redis) and runs this script with
``SOAK_URL`` (the web server's base URL), ``SOAK_CODES`` (a file of ping UUIDs)
and ``SOAK_TREES`` (``NAME=PID-or-pidfile ...``, the process trees to watch);
``DATABASE_URL`` then names the database whose rows are counted.

Retention in both: each monitor keeps 100 pings, runs go after 5 minutes, a
prune step every 30 s. It sends RATE pings per second (paired start/success
with a rid, round-robin over 100 monitors) for MINUTES minutes. Every minute it
prints the row counts of pings (ping rows and pings kept in runs) and runs, the
p50/p99 latency of that minute's pings, and RSS / PSS (MB) of each process tree
(``bench/_proctree.py``); the sizes must stop growing once the first runs are 5
minutes old, the latency must not jump when a prune runs, and the memory must
stay flat.

Run: `.venv/bin/python bench/soak.py [MINUTES] [RATE]` (defaults 30 and 100), or
`bench/soak.sh [MINUTES] [RATE]`. Results in bench/README.md.
"""
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import _proctree  # noqa: E402

MINUTES = float(sys.argv[1]) if len(sys.argv) > 1 else 30
RATE = int(sys.argv[2]) if len(sys.argv) > 2 else 100
server = None
if os.environ.get("SOAK_URL"):  # the production shape, started by bench/soak.sh
    base = os.environ["SOAK_URL"].rstrip("/") + "/ping/"
    uuids = Path(os.environ["SOAK_CODES"]).read_text().split()
    trees = {name: _proctree.root_pid(spec) for name, _, spec in
             (word.partition("=") for word in os.environ["SOAK_TREES"].split())}
    shape = "production (granian, Celery worker and beat, PostgreSQL, Redis)"
else:
    data = tempfile.mkdtemp()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env.update(CRONRADAR_DATA_DIR=data, CRONRADAR_RUN_RETENTION_DAYS=str(5 / 1440),
               CRONRADAR_PRUNE_INTERVAL="30")
    py = sys.executable
    codes = Path(data) / "codes.txt"
    subprocess.run([py, "bench/ping_http_db.py", "setup", str(codes), "100"], cwd=ROOT,
                   env=env, check=True)
    uuids = codes.read_text().split()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([py, "manage.py", "serve", "--port", str(port)], cwd=ROOT,
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/ping/"
    trees = {"serve": server.pid}
    shape = "embedded (manage.py serve, SQLite)"
client = httpx.Client(timeout=30, limits=httpx.Limits(max_connections=32))
for _ in range(100):
    try:
        client.get(base + uuids[0])
        break
    except httpx.TransportError:
        time.sleep(0.2)

latencies: list[float] = []
errors = [0]
lock = threading.Lock()


def send(url: str) -> None:
    t = time.perf_counter()
    try:
        ok = client.get(url).status_code == 200
    except httpx.HTTPError:
        ok = False
    with lock:
        latencies.append((time.perf_counter() - t) * 1000)
        errors[0] += not ok


def sizes() -> tuple[int, int]:
    """(pings, runs) stored now: ping rows and pings kept in runs, and runs."""
    if server is None:
        import psycopg
        with psycopg.connect(os.environ["DATABASE_URL"]) as db:
            return tuple(db.execute(f"select count(*) from {t}").fetchone()[0]
                         for t in ("monitors_pinglog", "monitors_run"))
    db = sqlite3.connect(f"file:{data}/cronradar.sqlite3?mode=ro", uri=True, timeout=30)
    try:
        return (db.execute("select count(*) from monitors_ping").fetchone()[0],
                db.execute("select count(*) from monitors_run").fetchone()[0])
    finally:
        db.close()


def mem() -> str:
    """RSS / PSS (MB) of each watched process tree, as table cells."""
    cells = []
    for root in trees.values():
        parts = [m for pid in _proctree.tree(root) if (m := _proctree.memory(pid))]
        rss, pss = (sum(m[i] for m in parts) / 1024 for i in (0, 1))
        cells.append(f"{rss:5.0f}/{pss:<5.0f}")
    return " | ".join(cells)


print(f"{shape}: {RATE} pings/s for {MINUTES} min; keep 100 pings per monitor, runs 5 min, "
      "prune every 30 s")
print("minute | pings | runs  | p50 ms | p99 ms | errors | "
      + " | ".join(f"{name} RSS/PSS MB" for name in trees))
print(f"     0 |       |       |        |        |        | {mem()}", flush=True)
start, n, rids, minute = time.monotonic(), 0, {}, 1
pool: list[threading.Thread] = []
try:
    while time.monotonic() - start < MINUTES * 60:
        due = start + n / RATE
        if (wait := due - time.monotonic()) > 0:
            time.sleep(wait)
        m = uuids[(n // 2) % len(uuids)]
        if n % 2 == 0:
            rids[m] = uuid.uuid4()
            url = f"{base}{m}/start?rid={rids[m]}"
        else:
            url = f"{base}{m}?rid={rids[m]}"
        t = threading.Thread(target=send, args=(url,))
        t.start()
        pool = [p for p in pool if p.is_alive()] + [t]
        n += 1
        if time.monotonic() - start >= minute * 60:
            with lock:
                got, latencies[:] = list(latencies), []
                bad, errors[0] = errors[0], 0
            pings, runs = sizes()
            q = statistics.quantiles(got, n=100) if len(got) > 1 else [0] * 99
            print(f"{minute:6d} | {pings:5d} | {runs:5d} | {statistics.median(got):6.1f} | "
                  f"{q[98]:6.1f} | {bad:6d} | {mem()}", flush=True)
            minute += 1
finally:
    for t in pool:
        t.join(30)
    if server is not None:
        server.terminate()
        server.wait(30)
