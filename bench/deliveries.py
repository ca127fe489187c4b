"""Benchmark: the delivery engine's own cost per notification, in one process.

N monitors become ``missed`` at once (bench/burst.py's setup: 100 webhook
channels) and the evaluator opens their incidents in-process; then the N
deliveries go to a local keep-alive receiver (a separate process), twice:

1. one batch at a time on this thread (``claim_due`` → ``prepare`` → ``attempt``
   → ``record``), printing the CPU each phase costs per delivery;
2. the same deliveries again (reset to due) through this process's engine
   (``alerts.senders``: sender threads and the recorder), printing deliveries per
   second and CPU per delivery.

Run: `bench/deliveries.sh [N]` (default 3000; starts a scratch PostgreSQL), or
`BENCH_DATABASE_URL=postgres://... .venv/bin/python bench/deliveries.py [N]`
against a scratch database. Results in bench/README.md ("The hour-start burst").
"""
import logging
import subprocess
import sys
import time
from datetime import timedelta

import _django

N = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
sys.argv[1:] = [str(N)]  # burst.py reads its own arguments
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


def main() -> None:
    receiver = subprocess.Popen([sys.executable, "-c", RECEIVER], stdout=subprocess.PIPE,
                                text=True)
    try:
        port = int(receiver.stdout.readline())
        burst.MONITORS = N
        due = burst.setup(f"http://127.0.0.1:{port}/hook")
        now = due + timedelta(seconds=1)
        while evaluator.tick(now):
            pass
        print(f"{Delivery.objects.filter(status='pending').count()} deliveries to "
              f"{burst.CHANNELS} channels")
        cpu = dict.fromkeys(("claim", "prepare", "attempt", "record"), 0.0)
        started, when = time.process_time(), now + timedelta(seconds=1)
        while True:
            t = time.process_time()
            claims = delivery.claim_due(when, 32)
            cpu["claim"] += time.process_time() - t
            if not claims:
                break
            t = time.process_time()
            batch = delivery.prepare(claims)
            cpu["prepare"] += time.process_time() - t
            t = time.process_time()
            for a in batch:
                delivery.attempt(a)
            cpu["attempt"] += time.process_time() - t
            t = time.process_time()
            delivery.record(batch)
            cpu["record"] += time.process_time() - t
        total = time.process_time() - started
        print("one thread, CPU ms per delivery: " + ", ".join(
            f"{k} {1000 * v / N:.2f}" for k, v in cpu.items()) + f"; total {1000 * total / N:.2f}")
        Delivery.objects.update(status="pending", next_attempt_at=now, attempts=0)
        t, c = time.monotonic(), time.process_time()
        while Delivery.objects.exclude(status="delivered").exists():
            senders.deliver_due(when)
            senders._wake.wait(senders.LOOP_SECONDS)
            senders._wake.clear()
        senders.drain(30)
        wall, total = time.monotonic() - t, time.process_time() - c
        print(f"engine ({settings.CRONRADAR_DELIVERY_THREADS} sender threads): "
              f"{N / wall:.0f} deliveries/s, CPU {1000 * total / N:.2f} ms per delivery")
    finally:
        receiver.terminate()


if __name__ == "__main__":
    main()
