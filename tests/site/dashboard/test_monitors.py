"""The monitor pages (cronradar.dashboard.monitors): the list, a monitor, create, edit,
pause and delete, form errors, and a bounded number of queries."""
import html
import re
from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from cronradar.dashboard import events
from monitors.models import Monitor, Run
from tests.conftest import S
from tests.site.dashboard.conftest import text

pytestmark = pytest.mark.django_db


def test_the_monitors_list(admin, world):
    page = text(admin.get("/"))
    assert '<span class="status status-down">down</span>' in page
    assert "nightly-backup" in page and "#db" in page
    assert "At 03:00 (Europe/Berlin)" in page
    assert re.search(r'<time title="\d{4}-\d\d-\d\d \d\d:\d\d:\d\d CE[S]?T">40 s ago</time>',
                     page)
    assert 'aria-label="last runs: failed"' in page
    assert "New monitor" in page
    assert "nightly-backup" not in text(admin.get("/?status=up"))
    assert "nightly-backup" in text(admin.get("/?tag=db&q=NIGHT"))
    rows = admin.get("/?fragment=rows")
    assert rows.content.decode().lstrip().startswith("<tr>")


def test_the_monitor_page(admin, world):
    m = world["monitor"]
    page = text(admin.get(f"/monitors/{m.pk}/"))
    assert f'value="{m.ping_url}"' in page
    assert f"/ping/{m.project.ping_key}/nightly-backup" in page
    assert "cronradar exec --url" in page and "kind: CronJob" in page and "ExecStopPost" in page
    assert "<svg" in page and "max_runtime 60 min" in page and "✕" not in page.split("<svg")[0]
    assert "disk full" in page and "exit_status" not in page
    assert f'href="/incidents/{world["incident"].pk}/"' in page
    assert admin.get(f"/monitors/{m.pk + 1000}/").status_code == 404


def test_create_edit_pause_delete_a_monitor(admin, project):
    bad = admin.post("/monitors/new/", {"name": "job", "kind": "cron", "schedule": "61 * * * *",
                                        "timezone": "UTC", "grace": "60", "all_channels": "1"})
    assert bad.status_code == 400
    assert "bad minute field &#x27;61&#x27;" in bad.content.decode()
    made = admin.post("/monitors/new/", {"name": "job", "kind": "interval", "period": "300",
                                         "grace": "60", "tags": "a, b", "all_channels": "1",
                                         "timezone": "UTC", "concurrency": "forbid",
                                         "max_attempts": "1", "urgency": "high"})
    m = Monitor.objects.get(name="job")
    assert made.url == f"/monitors/{m.pk}/"
    assert (m.period, m.grace, m.tags, m.concurrency) == (300 * S, 60 * S, ["a", "b"], "forbid")
    admin.post(f"/monitors/{m.pk}/edit/", {"name": "job", "kind": "interval", "period": "600",
                                           "grace": "60", "timezone": "UTC",
                                           "all_channels": "1", "max_runtime": ""})
    m.refresh_from_db()
    assert m.period == 600 * S
    admin.post(f"/monitors/{m.pk}/pause/")
    assert Monitor.objects.get(pk=m.pk).paused is True
    admin.post(f"/monitors/{m.pk}/pause/", {"paused": "0"})
    assert Monitor.objects.get(pk=m.pk).paused is False
    assert "Delete monitor job?" in text(admin.get(f"/monitors/{m.pk}/delete/"))
    admin.post(f"/monitors/{m.pk}/delete/")
    assert Monitor.objects.get(pk=m.pk).deleted_at is not None


def test_the_monitors_list_takes_a_bounded_number_of_queries(admin, project):
    now = timezone.now()
    monitors = Monitor.objects.bulk_create(
        Monitor(project=project, name=f"job-{i:04}", slug=f"job-{i:04}", period=60 * S,
                grace=S, last_ping_at=now, next_expected_at=now + 60 * S) for i in range(1000))
    Run.objects.bulk_create(Run(monitor=m, slot_at=now - k * 60 * S, started_at=now,
                                ended_at=now, outcome="succeeded")
                            for m in monitors[:200] for k in range(25))
    with CaptureQueriesContext(connection) as queries:
        resp = admin.get("/")
    assert resp.status_code == 200 and resp.content.decode().count("<tr>") == 1001
    assert len(queries) <= 12, [q["sql"][:80] for q in queries.captured_queries]


def test_copy_buttons_are_hidden_until_javascript_shows_them(admin, world):
    page = admin.get(f"/monitors/{world['monitor'].pk}/").content.decode()
    buttons = re.findall(r"<button[^>]*data-copy[^>]*>", page)
    assert len(buttons) == 2 + 11 and all(" hidden" in b for b in buttons)  # URLs, snippets
    # their script is a static file (the Content-Security-Policy runs no inline script)
    assert '<script src="/static/cronradar/dashboard.js" nonce="' in page
    script = b"".join(admin.get("/static/cronradar/dashboard.js").streaming_content).decode()
    assert "document.execCommand(\"copy\")" in script and "Select and copy" in script


def test_the_refreshed_rows_say_when_in_the_persons_zone(admin, world):
    page = text(admin.get("/"))
    assert re.search(r'As of <span id="as-of">\d\d:\d\d:\d\d Europe/Berlin</span>', page)
    rows = admin.get("/?fragment=rows")
    assert re.fullmatch(r"\d\d:\d\d:\d\d Europe/Berlin", rows["X-As-Of"])
    assert "toLocaleTimeString" not in page
    signed_out = Client().get("/?fragment=rows")  # what the refresh gets after the session
    assert signed_out.status_code == 302 and "X-As-Of" not in signed_out


@pytest.mark.parametrize("field, value", [
    ("kind", "weekly"), ("concurrency", "sometimes"), ("severity", "apocalyptic"),
    ("urgency", "whenever"), ("cron_semantics", "bsd")])
def test_every_monitor_form_error_is_shown(admin, field, value):
    form = {"name": "job", "kind": "cron", "schedule": "0 3 * * *", "timezone": "UTC",
            "grace": "60", "all_channels": "1", field: value}
    resp = admin.post("/monitors/new/", form)
    assert resp.status_code == 400
    page = text(resp)
    assert f"&quot;{value}&quot; is not a valid choice." in page
    assert page.count(f"&quot;{value}&quot; is not a valid choice.") == 2  # the list, the field


def test_nested_errors_read_as_text(admin):
    resp = admin.post("/monitors/new/", {"name": "job", "kind": "interval", "period": "60",
                                         "grace": "60", "timezone": "UTC", "all_channels": "1",
                                         "tags": "ok, " + "x" * 51})
    assert resp.status_code == 400
    page = text(resp)
    assert "Tags: item 2: Ensure this field has no more than 50 characters." in page
    assert "ErrorDetail" not in page and "{" not in page.split("<main")[1].split("<form")[0]


def test_the_list_keeps_every_column_on_a_phone(admin, world):
    page = admin.get("/").content.decode()
    assert "hide-narrow" not in page.split('<table id="monitors"')[1]
    assert 'class="cards"' in page and 'data-label="Next expected"' in page
    css = b"".join(admin.get("/static/cronradar/dashboard.css").streaming_content).decode()
    assert '<link rel="stylesheet" href="/static/cronradar/dashboard.css">' in page
    assert "table.cards td[data-label]::before" in css


def test_the_monitor_page_shows_refused_pings_and_why_a_run_is_unknown(admin, world):
    from monitors.models import PingUsage
    from monitors.usage import month_of

    m = world["monitor"]
    Monitor.objects.filter(pk=m.pk).update(dropped_pings=9)
    PingUsage.objects.create(monitor=m, month=month_of(timezone.now()), pings=3, refused=4)
    Run.objects.create(monitor=m, slot_at=timezone.now() - 86400 * S, outcome="unknown",
                       reason="rate_limited")
    page = text(admin.get(f"/monitors/{m.pk}/"))
    assert ("<dt>Refused pings</dt><dd>4 this month, 9 ever (over a ping rate limit: answered "
            "429, not stored)</dd>") in page
    assert ('<span class="status status-unknown">unknown</span> <span class="small muted" '
            'title="its first ping was refused by a ping rate limit (429)">rate_limited: its '
            'first ping was refused by a ping rate limit (429)</span>') in page


@pytest.fixture
def clock(monkeypatch):
    """The pages' clock (django.utils.timezone.now): 2026-03-10 12:00 UTC."""
    at = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
    monkeypatch.setattr("django.utils.timezone.now", lambda: at)
    return at


def test_downtime_per_month_splits_at_midnight_of_the_1st_in_the_zone():
    berlin = ZoneInfo("Europe/Berlin")
    now = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
    # 23:30 on 28 February to 00:45 on 1 March in Berlin (UTC+1): all of February in UTC
    across = (datetime(2026, 2, 28, 22, 30, tzinfo=UTC), datetime(2026, 2, 28, 23, 45,
                                                                    tzinfo=UTC))
    still_open = (datetime(2026, 3, 10, 11, 0, tzinfo=UTC), None)
    assert events.downtime([across, still_open], now, berlin) == [
        events.Month(date(2026, 3, 1), 1, 105 * 60 * S),  # 45 min of it, the open hour
        events.Month(date(2026, 2, 1), 1, 30 * 60 * S),  # where it opened: counted here
        events.Month(date(2026, 1, 1), 0, 0 * S), events.Month(date(2025, 12, 1), 0, 0 * S),
        events.Month(date(2025, 11, 1), 0, 0 * S), events.Month(date(2025, 10, 1), 0, 0 * S)]
    assert events.downtime([across], now, UTC, months=2) == [
        events.Month(date(2026, 3, 1), 0, 0 * S), events.Month(date(2026, 2, 1), 1, 75 * 60 * S)]


def test_the_monitor_page_shows_downtime_per_month_in_the_persons_zone(admin, world, clock):
    from alerts.models import Incident

    m = world["monitor"]
    Incident.objects.filter(monitor=m).delete()
    for cause, opened, resolved in [
            ("failed", datetime(2026, 2, 28, 22, 30, tzinfo=UTC),
             datetime(2026, 2, 28, 23, 45, tzinfo=UTC)),
            ("missed", datetime(2026, 1, 3, 8, 0, tzinfo=UTC),
             datetime(2026, 1, 3, 10, 0, tzinfo=UTC)),
            ("slow", datetime(2026, 3, 2, 8, 0, tzinfo=UTC),  # the job did its work
             datetime(2026, 3, 2, 9, 0, tzinfo=UTC)),
            # opened in September (23:00 in Berlin), before the six months: October gets
            # its hour after midnight, without the count
            ("deadline", datetime(2025, 9, 30, 21, 0, tzinfo=UTC),
             datetime(2025, 9, 30, 23, 0, tzinfo=UTC))]:
        Incident.objects.create(monitor=m, cause=cause, summary=cause, opened_at=opened,
                                resolved_at=resolved)
    page = text(admin.get(f"/monitors/{m.pk}/"))
    rows = re.findall(r"<tr><td>(\w+ \d{4})</td><td>(\d+)</td><td>([^<]+)</td></tr>", page)
    assert rows == [("March 2026", "0", "45 min"), ("February 2026", "1", "30 min"),
                    ("January 2026", "1", "2 h"), ("December 2025", "0", "0"),
                    ("November 2025", "0", "0"), ("October 2025", "0", "1 h")]
    assert ("Incidents whose cause means the job did not do its work (missed, stuck, deadline, "
            "failed; not overlap, too fast, slow, skipped, double launch), by calendar month "
            "in your time zone. An incident counts in the month it opened; its time is split "
            "at midnight of the 1st") in page


def test_the_monitor_page_shows_the_run_statistics_and_the_advice(admin, make_monitor, clock):
    from insights.api import monitor_advice

    m = make_monitor(name="every-minute", period=60 * S, grace=S)
    first = clock - 30 * 60 * S
    Run.objects.bulk_create(
        Run(monitor=m, slot_at=first + i * 60 * S, started_at=first + (i * 60 + 5) * S,
            ended_at=first + (i * 60 + 95) * S, outcome="failed" if i == 7 else "succeeded",
            exit_status=2 if i == 7 else 0) for i in range(20))
    page = text(admin.get(f"/monitors/{m.pk}/"))
    assert ("Over the last 20 runs: success rate 95.0% (19 of 20 judged: succeeded, failed, "
            "stuck or missed); duration p50 1 min 30 s, p95 1 min 30 s, max 1 min 30 s; late "
            "start p50 5 s, p95 5 s; 0 missed, 0 skipped, 19 overlapping, 0 double launches."
            ) in page
    assert f'<a href="/api/v1/monitors/{m.pk}/stats/">' in page
    advice = monitor_advice(m, clock)
    reason = advice.recommendation.reason
    assert reason.startswith("20 of 20 runs are longer than the interval; the job cannot lose")
    assert ("Recommended: <strong>queue</strong> (no concurrency setting gives it); the current "
            "setting is allow, which does not give it.") in page
    assert f"Why: {html.escape(reason)}." in page
    assert "Warning: the queue does not empty: " in page
    assert f'<a href="/api/v1/monitors/{m.pk}/advice/">' in page
    Run.objects.filter(monitor=m).delete()
    page = text(admin.get(f"/monitors/{m.pk}/"))
    assert "Over the last 0 runs: success rate –; duration p50 –, p95 –, max –;" in page
    assert ("No recommendation: too little data to advise: 0 finished runs with a start and an "
            "end, advice needs at least 20 (CRONRADAR_ADVICE_MIN_RUNS).") in page


def test_the_monitor_page_takes_a_bounded_number_of_queries(admin, world, clock):
    from alerts.models import Delivery, Incident, IncidentEvent
    from monitors.models import Ping

    m = world["monitor"]
    with CaptureQueriesContext(connection) as few:
        assert admin.get(f"/monitors/{m.pk}/").status_code == 200
    Run.objects.bulk_create(Run(monitor=m, slot_at=clock - k * 60 * S, started_at=clock,
                                ended_at=clock, outcome="succeeded") for k in range(300))
    Ping.objects.bulk_create(Ping(monitor=m, received_at=clock, kind="success", method="GET",
                                  body=b"ok", body_size=2) for _ in range(300))
    for k in range(1, 31):
        incident = Incident.objects.create(monitor=m, cause="failed", summary="x",
                                           opened_at=clock - k * 3600 * S,
                                           resolved_at=clock - k * 3600 * S + 60 * S)
        event = IncidentEvent.objects.create(incident=incident, kind="opened", at=clock)
        Delivery.objects.create(event=event, incident=incident, channel=world["hook"])
    with CaptureQueriesContext(connection) as many:
        assert admin.get(f"/monitors/{m.pk}/").status_code == 200
    # 17: session, user, project, zone, role, the monitor, its runs, refused pings, its
    # pings, its incidents; the statistics' runs, downtime's incidents, the advisor's two;
    # the navigation's roles, zone and projects
    assert len(many) == len(few) == 17, [q["sql"][:80] for q in many.captured_queries]


def test_at_the_plans_limit_the_list_and_the_form_say_so(admin, project, make_monitor):
    import html

    from accounts.models import Organisation, Plan

    plan = Plan.objects.create(name="free", max_monitors=1)
    Organisation.objects.filter(pk=project.organisation_id).update(plan=plan)
    assert 'href="/monitors/new/"' in text(admin.get("/"))
    make_monitor(name="one")
    sentence = "this organisation's plan (free) allows 1 monitor"
    page = html.unescape(text(admin.get("/")))
    assert f'<p class="plan-limit small" role="status">{sentence}</p>' in page
    assert 'href="/monitors/new/"' not in page
    form = html.unescape(text(admin.get("/monitors/new/")))
    assert f'<p class="alert plan-limit" role="alert">{sentence}</p>' in form
    refused = admin.post("/monitors/new/", {"name": "two", "kind": "interval", "period": "60",
                                            "grace": "60"})
    assert refused.status_code == 403
    assert f"<li>Monitor: {sentence}</li>" in html.unescape(text(refused))
    assert Monitor.objects.count() == 1
