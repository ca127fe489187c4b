"""Benchmark: CPU per ping through the WSGI ping route on PostgreSQL, in process.

N heartbeats (``GET /ping/<uuid>``: a success ping without start or run id) spread
round-robin over M interval monitors (period 60 s, grace 1 h, as
bench/ping_http_db.py makes them for bench/ping_http.sh), then N/2 start + success
pairs with a run id, each request a WSGI call of ``PingRoute`` around Django's
application (what gunicorn calls), one process, one persistent connection.
Prints, per ping, this process's CPU (``time.process_time``: the Python side)
and, when PostgreSQL runs on this machine, its server backend's CPU (from
``/proc/<backend pid>/stat``), and the statements of one such ping
(``CaptureQueriesContext``). Repeats R times (default 3) and prints each.

The heartbeats are measured three ways, interleaved: ``PingRoute`` alone
(``heartbeat``), inside ``cronradar.probes.Probes`` as wsgi.py serves it (request
id; ``+probes``), and that with ``CRONRADAR_ACCESS_LOG`` on, its lines in JSON
written to /dev/null (``+probes+access json``): the cost of the operator's layer.
On a busy machine those differences drown in the noise, so the layer is also
timed alone, around a WSGI app that answers at once (``layer alone``: CPU µs per
request of ``Probes`` minus the bare app, lowest of R runs of N requests).

Run: ``BENCH_DATABASE_URL=postgres://... .venv/bin/python bench/ping_cpu.py [N] [M] [R]``
(default N=2000, M=100, R=3). The database is a scratch one: it is migrated and
written to; each run adds its own organisation.
"""
import io
import logging
import os
import sys
import time
import uuid
from datetime import timedelta

import _django

_django.setup("bench")
from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from accounts.models import Organisation  # noqa: E402
from core import logs  # noqa: E402
from cronradar.probes import Probes  # noqa: E402
from monitors.models import Monitor  # noqa: E402
from monitors.views import PingRoute  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
M = int(sys.argv[2]) if len(sys.argv) > 2 else 100
R = int(sys.argv[3]) if len(sys.argv) > 3 else 3
name = f"bench-cpu-{uuid.uuid4().hex[:8]}"
project = Organisation.objects.create(name=name).projects.create(name=name)
codes = [str(Monitor.objects.create(project=project, name=f"m{i}", slug=f"m{i}",
                                    period=timedelta(seconds=60),
                                    grace=timedelta(hours=1)).uuid) for i in range(M)]
bare = PingRoute(get_wsgi_application())
app = bare
probed = Probes(bare)
logged = Probes(bare)
logged.access_log = True
_sink = logging.StreamHandler(open(os.devnull, "w"))  # noqa: SIM115  (for the whole run)
_sink.addFilter(logs.ContextFilter())
_sink.setFormatter(logs.JsonFormatter())
_access = logging.getLogger("cronradar.access")
_access.addHandler(_sink)
_access.setLevel(logging.INFO)
_access.propagate = False


def through(wsgi_app, fn):
    """``fn`` with the pings going to ``wsgi_app``."""
    def run(k: int) -> None:
        global app
        app = wsgi_app
        try:
            fn(k)
        finally:
            app = bare
    return run


def request(path: str, query: str = "") -> None:
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": path, "QUERY_STRING": query,
               "SERVER_NAME": "bench", "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1",
               "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(b""),
               "REMOTE_ADDR": "192.0.2.1", "HTTP_USER_AGENT": "wrk", "HTTP_HOST": "bench"}
    status = []
    body = b"".join(app(environ, lambda s, headers: status.append(s)))
    assert status == ["200 OK"], (status, body)


def heartbeat(k: int) -> None:
    request(f"/ping/{codes[k % M]}")


def pair(k: int) -> None:
    rid = f"rid={uuid.uuid4()}"
    request(f"/ping/{codes[k % M]}/start", rid)
    request(f"/ping/{codes[k % M]}", rid)


def backend_cpu() -> float | None:
    """CPU seconds the PostgreSQL backend of this connection used so far (None
    when the server is not on this machine)."""
    try:
        with open(f"/proc/{connection.connection.info.backend_pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return None


def measure(label: str, fn, count: int, pings_each: int) -> None:
    with CaptureQueriesContext(connection) as ctx:
        fn(0)
    wall, cpu, db = time.perf_counter(), time.process_time(), backend_cpu()
    for k in range(1, count + 1):
        fn(k)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    n = count * pings_each
    db_ms = f"{(backend_cpu() - db) / n * 1000:.3f}" if db is not None else "?"
    print(f"{label:<22} {n:>6} {len(ctx.captured_queries) / pings_each:>10.1f} "
          f"{cpu / n * 1000:>9.3f} {db_ms:>9} {wall / n * 1000:>9.3f}")


for k in range(M):  # warm-up: every monitor's first ping, the connection, caches
    heartbeat(k)
print(f"PostgreSQL {connection.pg_version}, {M} monitors; per ping:")
print(f"{'ping':<22} {'pings':>6} {'statements':>10} {'app CPU ms':>9} {'db CPU ms':>9} "
      f"{'wall ms':>9}")
def layer_alone() -> None:
    """CPU µs per request that Probes adds (request id; with the JSON access line)."""
    def instant(environ, start_response):
        start_response("200 OK", [("Content-Length", "3")])
        return [b"OK\n"]

    def cpu(wsgi_app) -> float:
        environ = {"REQUEST_METHOD": "GET", "PATH_INFO": f"/ping/{codes[0]}",
                   "QUERY_STRING": "", "REMOTE_ADDR": "192.0.2.1", "HTTP_USER_AGENT": "wrk"}
        best = float("inf")
        for _ in range(R):
            started = time.process_time()
            for _ in range(N * 10):
                wsgi_app(environ, lambda status, headers: None)
            best = min(best, time.process_time() - started)
        return best / (N * 10) * 1e6

    bare_us = cpu(instant)
    layer = Probes(instant)
    with_log = Probes(instant)
    with_log.access_log = True
    print(f"layer alone, CPU µs per request: request id {cpu(layer) - bare_us:.1f}, "
          f"request id + JSON access line {cpu(with_log) - bare_us:.1f}")


layer_alone()
for _ in range(R):
    measure("heartbeat", heartbeat, N, 1)
    measure("heartbeat +probes", through(probed, heartbeat), N, 1)
    measure("  +access json", through(logged, heartbeat), N, 1)
    measure("start+success with rid", pair, N // 2, 2)
