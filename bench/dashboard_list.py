"""Benchmark: the dashboard's monitors list with 5,000 monitors renders its first
page (50 monitors) in under 100 ms of server time on the embedded default, in a
number of queries that does not grow with the monitors.

Creates 5,000 monitors (a quarter of them with 20+ runs, some with open
incidents, tags on all) in a scratch SQLite file database (WAL, as the embedded
default), then requests `/` as a signed-in admin through Django's test client
(the whole server side: middleware, view, template) 15 times, and prints the
median and worst times and the query count. `?fragment=rows` (the live refresh)
is timed the same way.
Run: `.venv/bin/python bench/dashboard_list.py` (results in bench/README.md).
"""
import os
import statistics
import time
from datetime import timedelta

import _django

_django.setup()
from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from django.utils import timezone  # noqa: E402

from accounts.models import Membership, Organisation, Profile  # noqa: E402
from alerts.models import Incident  # noqa: E402
from monitors.models import Monitor, Run  # noqa: E402

N, RUNS = 5000, 25
org = Organisation.objects.create(name="bench")
project = org.projects.create(name="bench")
now, s = timezone.now(), timedelta(seconds=1)
monitors = Monitor.objects.bulk_create([
    Monitor(project=project, name=f"job {i:04}", slug=f"job-{i:04}",
            kind="cron" if i % 2 else "interval", schedule="*/5 * * * *" if i % 2 else "",
            period=None if i % 2 else 300 * s, grace=60 * s, tags=[f"team-{i % 7}", "bench"],
            last_ping_at=now - (i % 50) * s, next_expected_at=now + 60 * s)
    for i in range(N)], batch_size=500)
Run.objects.bulk_create([Run(monitor=m, slot_at=now - k * 300 * s, started_at=now - k * 300 * s,
                             ended_at=now - k * 300 * s + 40 * s,
                             outcome="failed" if k % 9 == 0 else "succeeded")
                         for m in monitors[: N // 4] for k in range(RUNS)], batch_size=2000)
Incident.objects.bulk_create([Incident(monitor=m, cause="failed", summary="x",
                                       opened_at=now) for m in monitors[::40]])
user = get_user_model().objects.create_user("bench", "b@example.com", "pw")
Membership.objects.create(organisation=org, user=user, role="admin")
Profile.objects.create(user=user, timezone="Europe/Berlin")
client = Client()
client.force_login(user)


def measure(url: str, times: int = 15) -> tuple[float, float, float, int]:
    """Median and worst wall time and median CPU time of this process (ms; the
    server side only: the test client calls the WSGI handler in process, so the
    CPU time is the server's, whatever else the machine runs), and the queries."""
    client.get(url)  # warm: template loading, cron-descriptor's cache
    spent, cpu = [], []
    for _ in range(times):
        start, start_cpu = time.perf_counter(), time.process_time()
        resp = client.get(url)
        spent.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        assert resp.status_code == 200
    with CaptureQueriesContext(connection) as queries:
        client.get(url)
    return (statistics.median(spent) * 1000, max(spent) * 1000,
            statistics.median(cpu) * 1000, len(queries))


print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
for url in ("/", "/?fragment=rows", "/?sort=status&tag=bench", "/?tag=team-3&tag=bench&status=up",
            "/?page=40"):
    median, worst, cpu, queries = measure(url)
    print(f"{url:36} {N} monitors: median {median:6.1f} ms, worst {worst:6.1f} ms, "
          f"CPU {cpu:6.1f} ms, {queries} queries")
