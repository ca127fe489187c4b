"""Benchmark: from a missed deadline to the webhook arriving, embedded default.

D monitors (default 50) miss their slot at the same moment. Each has a webhook
channel pointing at a receiver in a separate process. The evaluator runs as in
``manage.py serve`` (a thread ticking every CRONRADAR_TICK_SECONDS) and
notifications go out through the embedded delivery loop and its sender threads
(alerts.delivery: each delivery a row, claimed and sent), on a scratch SQLite
file database (WAL). Prints how long after the deadline (slot + grace) the
evaluator wrote each incident and the receiver got each webhook.

Run: `.venv/bin/python bench/alert_latency.py [D]` (results in bench/README.md).
"""
import os
import subprocess
import sys
import threading
import time
from datetime import timedelta

import _django

_django.setup(REDIS_URL=None, LOG_LEVEL=os.environ.get("LOG_LEVEL", "WARNING"))
from django.conf import settings  # noqa: E402
from django.utils import timezone  # noqa: E402

from accounts.models import Organisation  # noqa: E402
from alerts.models import Channel, Delivery  # noqa: E402
from alerts.senders import delivery_loop  # noqa: E402
from cronradar.management.commands.serve import evaluator_loop  # noqa: E402
from monitors.models import Monitor  # noqa: E402

RECEIVER = r"""
import sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
lock = threading.Lock()
class H(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with lock:
            print(time.time(), flush=True)
        self.send_response(200); self.end_headers()
    def log_message(self, *a): pass
server = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(server.server_address[1], flush=True)
server.serve_forever()
"""

D = int(sys.argv[1]) if len(sys.argv) > 1 else 50
receiver = subprocess.Popen([sys.executable, "-c", RECEIVER], stdout=subprocess.PIPE, text=True)
arrivals: list[float] = []
try:
    port = int(receiver.stdout.readline())
    threading.Thread(target=lambda: arrivals.extend(float(x) for x in receiver.stdout),
                     daemon=True).start()
    project = Organisation.objects.create(name="bench-latency").projects.create(
        name="bench-latency")
    channel = Channel.objects.create(project=project, kind="webhook", name="receiver",
                                     config={"url": f"http://127.0.0.1:{port}/hook",
                                             "secret": Channel.new_secret()})
    now, s = timezone.now(), timedelta(seconds=1)
    slot = now + 2 * s  # the evaluator's first ticks find nothing due
    deadline = slot + s  # grace 1 s
    Monitor.objects.bulk_create([
        Monitor(project=project, name=f"d{i}", slug=f"d{i}", period=3600 * s, grace=s,
                last_ping_at=now, next_expected_at=slot, next_evaluation_at=deadline)
        for i in range(D)])
    stop = threading.Event()  # monitors follow the project's channels (the default)
    threading.Thread(target=evaluator_loop, args=(stop, settings.CRONRADAR_TICK_SECONDS),
                     daemon=True).start()
    threading.Thread(target=delivery_loop, args=(stop,), daemon=True).start()
    give_up = time.time() + 60
    while len(arrivals) < D and time.time() < give_up:
        time.sleep(0.05)
    stop.set()
    t0 = deadline.timestamp()
    # a delivery is due (created_at) at the time of the event that made it: the
    # time of the tick that found the miss
    opened = sorted(d.created_at.timestamp() - t0 for d in Delivery.objects.all())
    late = sorted(a - t0 for a in arrivals)
    print(f"{D} monitors due together, tick every {settings.CRONRADAR_TICK_SECONDS}s, "
          f"{len(late)} webhooks received")
    for what, xs in (("incident (tick)", opened), ("webhook received", late)):
        if xs:
            print(f"  {what:<17} after deadline: first {xs[0]:.2f}s, "
                  f"median {xs[len(xs) // 2]:.2f}s, last {xs[-1]:.2f}s")
finally:
    receiver.kill()
