"""Benchmark: the delivery engine's own cost per notification, in one process.

For each backlog size N (default 2,000 then 10,000), N monitors become
``missed`` at once (bench/burst.py's setup: 100 webhook channels) and the
evaluator opens their incidents in-process; then the N deliveries go to a local
keep-alive receiver (a separate process), twice:

1. one batch at a time on this thread (``claim_due`` → ``prepare`` → ``attempt``
   → ``record``), printing the CPU each phase costs per delivery;
2. the same deliveries again (reset to due) through this process's engine
   (``alerts.senders``: sender threads and the recorder), printing deliveries per
   second and CPU per delivery.

Each phase prints this process's CPU and PostgreSQL's (every backend of the
scratch server, from /proc: bench/deliveries.sh passes its directory in
``BENCH_SCRATCH``) per delivery, so the two sizes show whether the database's
share grows with the backlog (issue 24: it must stay flat), and the load average.

Run: `bench/deliveries.sh [N ...]` (default 2000 10000; starts a scratch
PostgreSQL), or `BENCH_DATABASE_URL=postgres://... .venv/bin/python
bench/deliveries.py [N ...]` against a scratch database (no PostgreSQL CPU then).
Results in bench/README.md ("The hour-start burst").
"""
import logging
import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import _django

SIZES = [int(a) for a in sys.argv[1:]] or [2000, 10_000]
sys.argv[1:] = [str(SIZES[0])]  # burst.py reads its own arguments
_django.setup("bench", migrate=False, CRONRADAR_LIVENESS_INTERVAL="0")  # burst.setup migrates
import burst  # noqa: E402
from django.conf import settings  # noqa: E402

from alerts import delivery, senders  # noqa: E402
from alerts.models import Delivery  # noqa: E402
from monitors import evaluator  # noqa: E402

logging.disable(logging.INFO)  # one log line per delivery otherwise

RECEIVER = """
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class R(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *a): pass
ThreadingHTTPServer.request_queue_size = 1024
s = ThreadingHTTPServer(("127.0.0.1", 0), R); s.daemon_threads = True
print(s.server_address[1], flush=True); s.serve_forever()
"""


def postgres() -> dict[str, int]:
    """The scratch PostgreSQL's postmaster, for burst.cpu_seconds ({} without it)."""
    pid = Path(os.environ.get("BENCH_SCRATCH", "/nonexistent")) / "pg" / "postmaster.pid"
    return {"postgres": int(pid.read_text().split()[0])} if pid.exists() else {}


def cpu() -> tuple[float, float]:
    """(this process's CPU seconds, PostgreSQL's) so far."""
    used = burst.cpu_seconds(postgres())
    return time.process_time(), used.get("postgres", 0.0)


def per(n: int, start: tuple[float, float]) -> str:
    (app, pg), (app0, pg0) = cpu(), start
    return (f"sender {1000 * (app - app0) / n:.2f} + PostgreSQL {1000 * (pg - pg0) / n:.2f} "
            f"= {1000 * (app - app0 + pg - pg0) / n:.2f} ms per delivery")


def run(n: int, url: str) -> None:
    burst.MONITORS = n
    due = burst.setup(url)
    now = due + timedelta(seconds=1)
    while evaluator.tick(now):
        pass
    ids = list(Delivery.objects.filter(status="pending").values_list("id", flat=True))
    print(f"backlog {len(ids)} deliveries to {burst.CHANNELS} channels "
          f"(load {Path('/proc/loadavg').read_text().split()[0]})")
    phases = dict.fromkeys(("claim", "prepare", "attempt", "record"), 0.0)
    started, when = cpu(), now + timedelta(seconds=1)
    while True:
        t = time.process_time()
        claims = delivery.claim_due(when, 32)
        phases["claim"] += time.process_time() - t
        if not claims:
            break
        t = time.process_time()
        batch = delivery.prepare(claims)
        phases["prepare"] += time.process_time() - t
        t = time.process_time()
        for a in batch:
            delivery.attempt(a)
        phases["attempt"] += time.process_time() - t
        t = time.process_time()
        delivery.record(batch)
        phases["record"] += time.process_time() - t
    print("  one thread, sender CPU ms per delivery: " + ", ".join(
        f"{k} {1000 * v / n:.2f}" for k, v in phases.items()) + f"; {per(n, started)}")
    Delivery.objects.filter(pk__in=ids).update(status="pending", next_attempt_at=now,
                                                attempts=0)
    # as delivery_loop does: claim when woken (a thread got free, outcomes were
    # written) or every LOOP_SECONDS; every attempt is answered 200, so each row is
    # claimed once (no query per wake-up: one over 10,000 ids cost more than a claim)
    t, started, claimed = time.monotonic(), cpu(), 0
    while claimed < len(ids):
        claimed += senders.deliver_due(when)
        senders._wake.wait(senders.LOOP_SECONDS)
        senders._wake.clear()
    senders.drain(30)
    wall = time.monotonic() - t
    print(f"  engine ({settings.CRONRADAR_DELIVERY_THREADS} sender threads): "
          f"{n / wall:.0f} deliveries/s, {per(n, started)} "
          f"(load {Path('/proc/loadavg').read_text().split()[0]})")


def main() -> None:
    receiver = subprocess.Popen([sys.executable, "-c", RECEIVER], stdout=subprocess.PIPE,
                                text=True)
    try:
        url = f"http://127.0.0.1:{int(receiver.stdout.readline())}/hook"
        for n in SIZES:
            run(n, url)
    finally:
        receiver.terminate()


if __name__ == "__main__":
    main()
