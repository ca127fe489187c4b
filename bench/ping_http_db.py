"""Helper of bench/ping_http.sh: prepare the database and count what was stored.

    ping_http_db.py setup CODES_FILE [N]   migrate; make N monitors (default 100), write their
                                         ping UUIDs to CODES_FILE, one a line
    ping_http_db.py count                print: pings runs (rows stored so far)
    ping_http_db.py check UUID           the paired-pings correctness figures of one monitor
    ping_http_db.py reset UUID           delete that monitor's pings and runs

Uses the database of ``DATABASE_URL`` (else the embedded SQLite file under
``CRONRADAR_DATA_DIR``). Monitors are interval monitors (period 60 s, grace 1 h),
so every ping is on time and none raises an incident.
"""
import sys
from datetime import timedelta
from pathlib import Path

import _django

_django.setup("env", migrate=False)  # setup() below migrates
from django.core.management import call_command  # noqa: E402
from django.db.models import Count  # noqa: E402

from accounts.models import Organisation, Plan  # noqa: E402
from monitors.models import Monitor, Ping, PingLog, Run  # noqa: E402


def setup(codes_file: str, n: int) -> None:
    call_command("migrate", verbosity=0)
    # a plan with rate limits on, as the documented production configuration has
    # them (bench/ping_http.sh), high enough to refuse nothing
    plan, _ = Plan.objects.get_or_create(name="bench", defaults={
        "pings_per_minute": 1_000_000, "org_pings_per_minute": 10_000_000})
    org, _ = Organisation.objects.get_or_create(name="bench", defaults={"plan": plan})
    project, _ = org.projects.get_or_create(name="bench")
    have = list(Monitor.objects.filter(project=project).order_by("pk"))
    for i in range(len(have), n):
        have.append(Monitor.objects.create(project=project, name=f"m{i}", slug=f"m{i}",
                                           period=timedelta(seconds=60),
                                           grace=timedelta(hours=1)))
    Path(codes_file).write_text("\n".join(str(m.uuid) for m in have[:n]) + "\n")


def check(code: str) -> None:
    """Pings, runs and how they pair on the monitor with ping UUID ``code``: each
    run id must be exactly one run, closed; a success that overtook its start made
    a run without a start, and that start is then a duplicate."""
    pings = PingLog.objects.filter(monitor__uuid=code)  # ping rows and pings kept in runs
    runs = Run.objects.filter(monitor__uuid=code)
    rids = pings.exclude(rid=None).values("rid").distinct().count()
    by_kind = dict(pings.values_list("kind").annotate(n=Count("id")))
    dup = pings.filter(duplicate=True).count()
    open_runs = runs.filter(ended_at__isnull=True).count()
    overtaken = runs.filter(started_at__isnull=True).count()
    # wrk stops mid-pair on each of its 16 connections: a start whose success was
    # never sent stays open; a success whose start was cut off has no duplicate
    cut = open_runs + (overtaken - dup)
    ok = runs.count() == rids and dup <= overtaken and cut <= 16
    print(f"   pings {pings.count()} {by_kind}, run ids {rids}, runs {runs.count()}, "
          f"overtaken {overtaken} (their starts: {dup} duplicates), cut off by wrk's stop "
          f"{cut}: {'consistent' if ok else 'INCONSISTENT'}")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "setup":
        setup(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 100)
    elif cmd == "count":
        # every stored ping: ping rows and heartbeats kept in their runs (PingLog)
        print(PingLog.objects.count(), Run.objects.count())
    elif cmd == "check":
        check(sys.argv[2])
    elif cmd == "reset":
        Ping.objects.filter(monitor__uuid=sys.argv[2]).delete()
        Run.objects.filter(monitor__uuid=sys.argv[2]).delete()
    else:
        sys.exit(f"unknown command {cmd}")
