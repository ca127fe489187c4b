"""A monitor's event log (cronradar.dashboard.events): pings, runs, incident events
and notifications merged newest first, each kind filter, keyset paging across
equal times, what retention keeps, and a ping's body (the project's own only)."""
import re
from datetime import UTC

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import Plan
from alerts.models import Channel, Delivery, Incident, IncidentEvent
from cronradar.dashboard import events
from cronradar.dashboard.events import Event
from monitors.models import Monitor, Ping, Run
from tests.conftest import T0, S, new_project
from tests.site.dashboard.conftest import text

pytestmark = pytest.mark.django_db


def ping(m, at, kind="success", **fields):
    return Ping.objects.create(monitor=m, received_at=at, kind=kind,
                               method=fields.pop("method", "POST"), **fields)


@pytest.fixture
def history(project, make_monitor):
    """A failed run with its pings, the incident it opened (opened, acknowledged)
    and the notification of its opening: three rows at T0 + 30 s."""
    m = make_monitor(name="backup")
    hook = Channel.objects.create(project=project, kind="webhook", name="ops-hook",
                                  config={"url": "https://hook.test/h"})
    start = ping(m, T0, "start", method="GET")
    run = Run.objects.create(monitor=m, slot_at=T0 - 5 * S, started_at=T0,
                             ended_at=T0 + 30 * S, outcome="failed", exit_status=3)
    fail = ping(m, T0 + 30 * S, "fail", exit_status=3, remote_addr="192.0.2.7",
                body=b"disk full", body_size=9)
    incident = Incident.objects.create(monitor=m, cause="failed", summary="backup failed",
                                       opened_at=T0 + 30 * S)
    opened = IncidentEvent.objects.create(incident=incident, kind="opened", at=T0 + 30 * S,
                                          message="exit status 3")
    sent = Delivery.objects.create(event=opened, incident=incident, channel=hook,
                                   status="delivered", attempts=1, created_at=T0 + 30 * S,
                                   delivered_at=T0 + 31 * S)
    ack = IncidentEvent.objects.create(incident=incident, kind="acknowledged", at=T0 + 60 * S,
                                       message="by olga")
    return {"monitor": m, "start": start, "run": run, "fail": fail, "incident": incident,
            "opened": opened, "sent": sent, "ack": ack}


def test_a_mixed_timeline_newest_first_equal_times_in_kind_order(history):
    h, m = history, history["monitor"]
    i = h["incident"].pk
    # as the page reads it (events._monitor): with its plan, which says how many
    # pings it keeps
    m = Monitor.objects.select_related("project__organisation__plan").get(pk=m.pk)
    with CaptureQueriesContext(connection) as queries:
        page = events.timeline(m, zone=UTC)
    assert page.older is None
    assert page.events == [
        Event(T0 + 60 * S, "incident", h["ack"].pk, "acknowledged", f"incident #{i}: by olga",
              href=f"/incidents/{i}/"),
        Event(T0 + 30 * S, "notification", h["sent"].pk, "delivered",
              f"ops-hook (webhook): opened of incident #{i}, 1 attempt, delivered "
              "2026-01-05 12:00:31 UTC", href=f"/incidents/{i}/"),
        Event(T0 + 30 * S, "incident", h["opened"].pk, "opened",
              f"incident #{i}: exit status 3", href=f"/incidents/{i}/"),
        Event(T0 + 30 * S, "ping", h["fail"].pk, "fail",
              "exit 3, 9 bytes, POST from 192.0.2.7",
              body=f"/monitors/{m.pk}/pings/{h['fail'].pk}/body/"),
        Event(T0, "run", h["run"].pk, "failed",
              "slot 2026-01-05 11:59:55 UTC, took 30 s, exit 3"),
        Event(T0, "ping", h["start"].pk, "start", "GET"),
    ]
    assert len(queries) == 4  # one per kind, whatever the history holds


def test_the_page_shows_the_timeline_in_the_persons_zone(admin, history):
    m = history["monitor"]
    page = text(admin.get(f"/monitors/{m.pk}/events/"))
    whens = re.findall(r"<tr><td>([^<]+)</td><td>(\w+)</td>", page)
    assert whens == [("2026-01-05 13:01:00 CET", "incident"),
                     ("2026-01-05 13:00:30 CET", "notification"),
                     ("2026-01-05 13:00:30 CET", "incident"),
                     ("2026-01-05 13:00:30 CET", "ping"),
                     ("2026-01-05 13:00:00 CET", "run"), ("2026-01-05 13:00:00 CET", "ping")]
    assert "delivered 2026-01-05 13:00:31 CET" in page
    assert (f'exit 3, 9 bytes, POST from 192.0.2.7 <a href="/monitors/{m.pk}/pings/'
            f'{history["fail"].pk}/body/">body</a>') in page
    assert "Older →" not in page and "← Newest" not in page
    monitor_page = admin.get(f"/monitors/{m.pk}/").content.decode()
    assert f'<a href="/monitors/{m.pk}/events/">Event log</a>' in monitor_page


@pytest.mark.parametrize("kinds, expected", [
    (["ping"], [("ping", "fail"), ("ping", "start")]),
    (["run"], [("run", "failed")]),
    (["incident"], [("incident", "acknowledged"), ("incident", "opened")]),
    (["notification"], [("notification", "delivered")]),
    (["notification", "ping"], [("notification", "delivered"), ("ping", "fail"),
                                ("ping", "start")]),
])
def test_each_kind_filter(admin, history, kinds, expected):
    m = history["monitor"]
    assert [(e.kind, e.what) for e in events.timeline(m, kinds).events] == expected
    query = "&".join(f"kind={k}" for k in kinds)
    page = text(admin.get(f"/monitors/{m.pk}/events/?{query}"))
    assert re.findall(r"</td><td>(\w+)</td><td><strong>(\w+)</strong>", page) == expected
    for k in events.KINDS:  # the form shows what is chosen
        checked = ' checked' if k in kinds else ''
        assert f'<input type="checkbox" name="kind" value="{k}"{checked}>' in page


@pytest.mark.parametrize("query, message", [
    ("kind=pings", "kind: &#x27;pings&#x27; is not one of ping, run, incident, notification"),
    ("before=yesterday", "before: not a position in the log: &#x27;yesterday&#x27;"),
    ("before=1_ping_x", "before: not a position in the log: &#x27;1_ping_x&#x27;"),
    ("before=1_page_1", "before: not a position in the log: &#x27;1_page_1&#x27;"),
    ("before=9999999999999999999_ping_1",
     "before: not a position in the log: &#x27;9999999999999999999_ping_1&#x27;"),
    ("before=1_ping_9223372036854775808",  # past the largest id: the database refuses it
     "before: not a position in the log: &#x27;1_ping_9223372036854775808&#x27;"),
])
def test_a_bad_kind_or_position_is_a_400_saying_which(admin, history, query, message):
    resp = admin.get(f"/monitors/{history['monitor'].pk}/events/?{query}")
    assert resp.status_code == 400
    assert message in resp.content.decode()


def test_paging_across_equal_times_loses_and_repeats_nothing(history):
    m = history["monitor"]
    # eleven more rows at T0 + 30 s beside the three there already, and at T0
    Ping.objects.bulk_create(Ping(monitor=m, received_at=T0 + 30 * S, kind="log",
                                  method="POST") for _ in range(7))
    Run.objects.bulk_create(Run(monitor=m, started_at=T0 + 30 * S, outcome="running")
                            for _ in range(4))
    whole = events.timeline(m, size=100).events
    assert len(whole) == 17 and len({(e.kind, e.pk) for e in whole}) == 17
    pages, before = [], None
    while True:
        page = events.timeline(m, before=before, size=4)
        pages.append(page.events)
        if page.older is None:
            break
        before = events.parse_cursor(page.older)
    assert [len(p) for p in pages] == [4, 4, 4, 4, 1]
    assert [e for p in pages for e in p] == whole


def test_the_older_link_keeps_the_filter(admin, history):
    m = history["monitor"]
    Ping.objects.bulk_create(Ping(monitor=m, received_at=T0 + 30 * S, kind="log",
                                  method="POST") for _ in range(53))
    first = admin.get(f"/monitors/{m.pk}/events/?kind=ping&kind=run").content.decode()
    assert first.count("<td>ping</td>") == 50 and "<td>run</td>" not in first
    older = re.search(r'<a class="button secondary" href="\?([^"]+)">Older', first)[1]
    fiftieth = events.timeline(m, ["ping", "run"]).events[-1]
    assert older == f"kind=ping&amp;kind=run&amp;before={fiftieth.cursor}"
    second = admin.get(f"/monitors/{m.pk}/events/?{older.replace('&amp;', '&')}")
    page = second.content.decode()
    # 54 pings at T0 + 30 s: 4 left (the lower ids), then the run and the start at T0
    assert page.count("<td>ping</td>") == 5 and page.count("<td>run</td>") == 1
    assert "Older →" not in page
    assert '<a href="?kind=ping&amp;kind=run">← Newest</a>' in page


def test_the_page_says_how_far_back_data_is_kept(admin, history, project):
    m = history["monitor"]
    assert events.kept(m) == [
        "pings: the newest 100", "runs: the newest 100, and every run of the last 90 days",
        "incidents, with their timeline and notifications: until 365 days after they are "
        "resolved"]
    project.organisation.plan = Plan.objects.create(name="small", pings_kept=10,
                                                    run_retention_days=1,
                                                    incident_retention_days=30)
    project.organisation.save()
    m.refresh_from_db()
    assert events.kept(m) == [
        "pings: the newest 10", "runs: the newest 100, and every run of the last 1 day",
        "incidents, with their timeline and notifications: until 30 days after they are "
        "resolved"]
    page = text(admin.get(f"/monitors/{m.pk}/events/"))
    assert ("Kept as far back as retention keeps them: pings: the newest 10; runs: the newest "
            "100, and every run of the last 1 day; incidents") in page


def test_a_pings_body_is_for_the_project_only(admin, history, make_monitor):
    m, fail = history["monitor"], history["fail"]
    resp = admin.get(f"/monitors/{m.pk}/pings/{fail.pk}/body/")
    assert resp.status_code == 200
    assert resp["Content-Type"] == "text/plain; charset=utf-8"
    assert resp.content == b"disk full"
    invalid = ping(m, T0 + 90 * S, body=b"caf\xe9", body_size=4)
    assert admin.get(f"/monitors/{m.pk}/pings/{invalid.pk}/body/").content == \
        "caf\ufffd".encode()
    other = new_project("other")
    theirs_m = other.monitors.create(name="theirs", slug="theirs", period=60 * S, grace=S)
    theirs = ping(theirs_m, T0, body=b"secret", body_size=6)
    assert admin.get(f"/monitors/{theirs_m.pk}/pings/{theirs.pk}/body/").status_code == 404
    assert admin.get(f"/monitors/{m.pk}/pings/{theirs.pk}/body/").status_code == 404
    assert admin.get(f"/monitors/{theirs_m.pk}/events/").status_code == 404


def test_a_page_of_runs_reads_the_run_time_index(history):
    """run_monitor_time (monitors/0022_event_index; run_monitor_hour on PostgreSQL,
    0023): a page of runs is a range of the index, not a sort of the monitor's
    history (bench: 130,000 runs, 0.2-0.4 s a page on SQLite without it, 15 ms
    with it)."""
    m = history["monitor"]
    before = events.parse_cursor(events.timeline(m, ["run"]).events[0].cursor)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # a tiny table: a scan, or another index and a sort of its few rows, would
            # be cheaper (CI's planner took run_rid_unique and a Sort once)
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute("SET LOCAL enable_sort = off")
        for cut in (None, before):
            with CaptureQueriesContext(connection) as queries:
                events.timeline(m, ["run"], cut)
            sql = queries.captured_queries[0]["sql"]
            prefix = "EXPLAIN QUERY PLAN " if connection.vendor == "sqlite" else "EXPLAIN "
            cursor.execute(prefix + sql)
            plan = " ".join(str(row) for row in cursor.fetchall())
            if connection.vendor == "postgresql":
                # run_monitor_hour (monitors/0023): a range of hours, sorted within each
                assert "run_monitor_hour" in plan and "Incremental Sort" in plan, plan
                assert "Sort" not in (plan.replace("Incremental Sort", "").replace("Sort Key", "")
                                  .replace("Presorted Key", "")), plan
            else:
                assert "run_monitor_time" in plan, plan
                assert "TEMP B-TREE" not in plan and "Sort" not in plan, plan
