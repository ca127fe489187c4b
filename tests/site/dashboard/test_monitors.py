"""The monitor pages (cronradar.dashboard.monitors): the list, a monitor, create, edit,
pause and delete, form errors, and a bounded number of queries."""
import html
import re
from datetime import UTC, date, datetime
from html.parser import HTMLParser
from zoneinfo import ZoneInfo

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from alerts.models import Incident
from cronradar.dashboard import events, monitorlist
from monitors import slots
from monitors.models import Monitor, Run
from tests.conftest import T0, S
from tests.site.dashboard.conftest import text

pytestmark = pytest.mark.django_db


def test_the_monitors_list(admin, world):
    page = text(admin.get("/"))
    assert '<span class="status status-down">down</span>' in page
    assert "nightly-backup" in page and "#db" in page
    assert "At 03:00 (Europe/Berlin)" in page
    assert re.search(r'<time title="\d{4}-\d\d-\d\d \d\d:\d\d:\d\d CE[S]?T">4\d s ago</time>',
                     page)  # 40 s before the request, and a loaded machine
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


def _many(project, n: int, now, runs: int = 25, prefix: str = "job") -> list[Monitor]:
    monitors = Monitor.objects.bulk_create(
        Monitor(project=project, name=f"{prefix}-{i:04}", slug=f"{prefix}-{i:04}", period=60 * S,
                grace=S, last_ping_at=now, next_expected_at=now + 60 * S, tags=["t"])
        for i in range(n))
    Run.objects.bulk_create(Run(monitor=m, slot_at=now - k * 60 * S, started_at=now,
                                ended_at=now, outcome="succeeded")
                            for m in monitors[:200] for k in range(runs))
    return monitors


def _queries(client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        resp = client.get(url)
    rows = 10 if "per_page=10" in url else 50
    assert resp.status_code == 200 and resp.content.decode().count("<tr>") == rows + 1
    return len(queries)


def test_the_monitors_list_takes_the_same_queries_whatever_the_number_of_monitors(admin,
                                                                                  project):
    _many(project, 60, timezone.now())
    few = [_queries(admin, url) for url in ("/", "/?tag=t&sort=status", "/?page=2&per_page=10")]
    _many(project, 1000, timezone.now(), prefix="more")
    assert [_queries(admin, url) for url in ("/", "/?tag=t&sort=status")] == few[:2]
    # the tags, the counts, the page and its runs; the rest is the session, the person
    # and the base template's (project switcher, role, zone)
    assert few[0] == 12, few


def _shaped(project, now) -> dict[str, list[Monitor]]:
    """Monitors of every status but running (5 up, 3 late, 2 down, 1 new, 1 paused),
    tagged a (the first of each), b (all up and late) and c (the down ones)."""
    def shape(prefix, n, **fields):
        return Monitor.objects.bulk_create(
            Monitor(project=project, name=f"{prefix}-{i}", slug=f"{prefix}-{i}",
                    period=60 * S, **fields) for i in range(n))
    made = {"up": shape("up", 5, grace=S, last_ping_at=now, next_expected_at=now + 3600 * S),
            "late": shape("late", 3, grace=3600 * S, last_ping_at=now,
                          next_expected_at=now - 10 * S),
            "down": shape("down", 2, grace=S, last_ping_at=now,
                          next_expected_at=now - 3600 * S),
            "new": shape("new", 1, grace=S), "paused": shape("paused", 1, grace=S, paused=True,
                                                             last_ping_at=now)}
    for status, monitors in made.items():
        for i, m in enumerate(monitors):
            m.tags = (["a"] if i == 0 else []) + (["b"] if status in ("up", "late") else []) + (
                ["c"] if status == "down" else [])
            m.save(update_fields=["tags"])
    return made


def _counts(page: str) -> dict[str, int]:
    return {s: int(n) for s, n in re.findall(
        r'<span class="status status-(\w+)">\1</span> '
        r'<strong data-count="\1">(\d+)</strong></a>', page)}


def test_the_counts_cover_every_monitor_the_search_and_tags_match(admin, project):
    _shaped(project, timezone.now())
    page = text(admin.get("/?per_page=2"))
    assert _counts(page) == {"new": 1, "up": 5, "running": 0, "late": 3, "down": 2,
                             "paused": 1}
    assert 'all <strong data-count="all">12</strong>' in page
    assert "Page 1 of 6 (12 monitors, 2 a page)" in page
    assert "<title>Monitors (2 down) · CronRadar</title>" in page
    tagged = text(admin.get("/?tag=b&per_page=2&status=late&sort=status"))
    assert _counts(tagged) == {"new": 0, "up": 5, "running": 0, "late": 3, "down": 0,
                               "paused": 0}
    assert "<title>Monitors · CronRadar</title>" in tagged
    assert "Page 1 of 2 (3 monitors, 2 a page)" in tagged
    assert re.findall(r'href="/monitors/\d+/">([\w-]+)</a>', tagged) == ["late-0", "late-1"]
    # every link keeps the other filters: the next page, each count, each tag
    assert 'rel="next" href="?tag=b&amp;per_page=2&amp;status=late&amp;sort=status&amp;page=2"' \
        in tagged
    assert 'href="?tag=b&amp;per_page=2&amp;status=down&amp;sort=status" class="count-down"' \
        in tagged
    assert 'href="?tag=b&amp;tag=a&amp;per_page=2&amp;status=late&amp;sort=status"' in tagged
    last = text(admin.get("/?tag=b&per_page=2&status=late&sort=status&page=2"))
    assert re.findall(r'href="/monitors/\d+/">([\w-]+)</a>', last) == ["late-2"]
    assert 'rel="prev"' in last and 'rel="next"' not in last
    rows = admin.get("/?tag=b&per_page=2&status=late&sort=status&page=2&fragment=rows")
    assert re.findall(r'href="/monitors/\d+/">([\w-]+)</a>', rows.content.decode()) == [
        "late-2"]
    # the refresh brings the counts and the title with the rows
    assert (rows["X-Counts"], rows["X-Title"]) == (
        "new=0,up=5,running=0,late=3,down=0,paused=0", "Monitors")
    assert admin.get("/?fragment=rows")["X-Title"] == "Monitors (2 down)"


def test_several_tags_filter_by_all_of_them_and_each_can_be_removed(admin, project):
    _shaped(project, timezone.now())
    page = text(admin.get("/?tag=a&tag=b"))
    assert re.findall(r'href="/monitors/\d+/">([\w-]+)</a>', page) == ["late-0", "up-0"]
    assert _counts(page)["up"] == 1 and 'all <strong data-count="all">2</strong>' in page
    assert 'Tagged with all of: <a class="tag-remove" href="?tag=b">remove #a</a>' in page
    assert '<a class="tag-remove" href="?tag=a">remove #b</a>' in page
    assert '<input type="hidden" name="tag" value="a"><input type="hidden" name="tag" ' \
           'value="b">' in page
    assert "No monitors match" in text(admin.get("/?tag=a&tag=b&tag=c"))


def test_an_acknowledged_incident_is_marked_in_words(admin, world):
    assert "acknowledged</span>" not in text(admin.get("/"))
    Incident.objects.filter(pk=world["incident"].pk).update(acknowledged_at=timezone.now())
    page = text(admin.get("/"))
    assert ('<span class="status status-down">down</span> <span class="ack small">'
            'acknowledged</span>') in page
    assert '<span class="swatch status-missed" aria-hidden="true"></span> missed (no ping)' \
        in page


@pytest.mark.parametrize(("query", "message"), [
    ("page=0", "page must be a whole number from 1 to 1000000, not &#x27;0&#x27;"),
    ("per_page=500", "per_page must be a whole number from 1 to 200, not &#x27;500&#x27;"),
    ("status=broken", "unknown status &#x27;broken&#x27;: use new, up, running, late, down, "
                      "paused"),
    ("sort=bogus", "unknown sort &#x27;bogus&#x27;: use name, status, last_ping")])
def test_a_bad_list_query_is_a_400_with_the_message(admin, project, query, message):
    resp = admin.get(f"/?{query}")
    assert resp.status_code == 400 and message in resp.content.decode()


def test_a_page_past_the_last_shows_the_last(admin, project):
    _shaped(project, timezone.now())
    assert "Page 3 of 3 (12 monitors, 5 a page)" in text(admin.get("/?per_page=5&page=9"))


def test_the_status_in_sql_is_the_status_of_slots(project, make_monitor):
    now = T0 + 3600 * S
    cases = {"paused": dict(paused=True, last_ping_at=now),
             "new": dict(),
             "down-incident": dict(last_ping_at=now),
             "running": dict(last_ping_at=now),
             "late": dict(last_ping_at=now, grace=600 * S),
             "down-overdue": dict(last_ping_at=now, grace=60 * S),
             "late-edge": dict(last_ping_at=now, grace=300 * S + S),
             "down-edge": dict(last_ping_at=now, grace=300 * S),
             "up": dict(last_ping_at=now)}
    for name, fields in cases.items():
        m = make_monitor(name=name, **fields)
        Monitor.objects.filter(pk=m.pk).update(
            next_expected_at=now + 60 * S if name in ("up", "running", "down-incident")
            else now - 300 * S)
    Incident.objects.create(monitor=Monitor.objects.get(name="down-incident"), cause="failed",
                            summary="x", opened_at=now)
    Run.objects.create(monitor=Monitor.objects.get(name="running"), started_at=now,
                       outcome="running")
    got = {m.name: (m.status, slots.status(m, now, running=m.is_running,
                                           incident_open=m.incident_open))
           for m in monitorlist.project_monitors(project, now)}
    assert got == {name: (name.split("-")[0],) * 2 for name in cases}


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
    # 18: session, user, project, zone, role, the monitor, its runs, refused pings, its
    # pings, its incidents, its alerting settings; the statistics' runs, downtime's
    # incidents, the advisor's two; the navigation's roles, zone and projects
    assert len(many) == len(few) == 18, [q["sql"][:80] for q in many.captured_queries]


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


# ---------------------------------------------------------------- every field in the form

class _Form(HTMLParser):
    """What a browser submits for the page's #monitor-form as it is shown (the first
    submit button aside): text and number inputs, checked boxes, each select's
    selected option (else its first), each textarea's text (its first newline
    dropped, as HTML does)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.fields, self.inside, self.select, self.options, self.area = [], False, None, [], None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            self.inside = a.get("id") == "monitor-form"
        elif not self.inside:
            return
        elif tag == "input" and a.get("name"):
            if a.get("type") not in ("checkbox", "radio") or "checked" in a:
                self.fields.append((a["name"], a.get("value", "")))
        elif tag == "select":
            self.select, self.options = a["name"], []
        elif tag == "option" and self.select:
            self.options.append((a.get("value"), "selected" in a))
        elif tag == "textarea":
            self.area = [a["name"], ""]

    def handle_data(self, data):
        if self.area is not None:
            self.area[1] += data

    def handle_endtag(self, tag):
        if tag == "form":
            self.inside = False
        elif tag == "select" and self.select:
            chosen = [v for v, s in self.options if s] or [self.options[0][0]]
            self.fields.append((self.select, chosen[0]))
            self.select = None
        elif tag == "textarea" and self.area is not None:
            self.fields.append((self.area[0], self.area[1].removeprefix("\n")))
            self.area = None


def submitted(page: str) -> dict[str, list[str]]:
    parser = _Form()
    parser.feed(page)
    out: dict[str, list[str]] = {}
    for name, value in parser.fields:
        out.setdefault(name, []).append(value)
    return out


EVERY_FIELD = {"name": "Nightly export", "slug": "export", "kind": "cron",
               "description": "Exports the ledger.\nRunbook: https://wiki.example/runbook?a=1&b=2",
               "schedule": "15 3 * * 1-5", "timezone": "Europe/Berlin",
               "cron_semantics": "kubernetes", "grace": 5400, "max_runtime": 7200,
               "deadline": 90, "min_runtime": 61, "slow_factor": 2.5, "concurrency": "forbid",
               "max_attempts": 3, "tags": ["db", "nightly"], "paused": True, "methods": "POST",
               "urgency": "low", "severity": "warning", "renotify": 86400,
               "failure_threshold": 2, "recovery_threshold": 3}


def test_a_monitor_set_through_the_api_saves_unchanged_through_the_form(admin, api, world):
    hook, policy = world["hook"], world["policy"]
    made = api.post("/api/v1/monitors/", {**EVERY_FIELD, "channels": [hook.pk],
                                          "escalation_policy": policy.pk}, format="json")
    assert made.status_code == 201, made.json()
    before = api.get(f"/api/v1/monitors/{made.json()['id']}/").json()
    page = admin.get(f"/monitors/{before['id']}/edit/").content.decode()
    form = submitted(page)
    assert (form["grace"], form["grace_unit"]) == (["90"], ["minutes"])
    assert (form["renotify"], form["renotify_unit"]) == (["1"], ["days"])
    assert (form["max_runtime"], form["max_runtime_unit"]) == (["2"], ["hours"])
    assert (form["deadline"], form["deadline_unit"]) == (["90"], ["seconds"])
    assert form["channels"] == [str(hook.pk)] and "all_channels" not in form
    saved = admin.post(f"/monitors/{before['id']}/edit/", form)
    assert saved.status_code == 302, text(saved)
    after = api.get(f"/api/v1/monitors/{before['id']}/").json()
    assert after == before
    assert {k: after[k] for k in EVERY_FIELD} == EVERY_FIELD
    assert (after["channels"], after["escalation_policy"]) == ([hook.pk], policy.pk)


def test_the_form_shows_and_takes_every_field(admin, api, world):
    policy = world["policy"]
    form = {"name": "job", "slug": "job", "description": "see https://x.example/a", "kind": "cron",
            "schedule": "0 3 * * *", "timezone": "America/New_York",
            "cron_semantics": "debian", "grace": "1.5", "grace_unit": "hours",
            "max_runtime": "2", "max_runtime_unit": "days", "min_runtime": "90",
            "min_runtime_unit": "seconds", "deadline": "", "deadline_unit": "minutes",
            "period": "", "period_unit": "seconds", "slow_factor": "3",
            "concurrency": "replace", "max_attempts": "2", "methods": "", "paused": "false",
            "tags": "a, b", "severity": "", "urgency": "high",
            "escalation_policy": str(policy.pk), "renotify": "30", "renotify_unit": "minutes",
            "failure_threshold": "4", "recovery_threshold": "5", "all_channels": "1"}
    made = admin.post("/monitors/new/", form)
    assert made.status_code == 302, text(made)
    m = Monitor.objects.get(slug="job")
    body = api.get(f"/api/v1/monitors/{m.pk}/").json()
    assert {k: body[k] for k in ("description", "timezone", "grace", "max_runtime",
                                 "min_runtime", "deadline", "slow_factor", "concurrency",
                                 "max_attempts", "methods", "paused", "tags", "severity",
                                 "urgency", "escalation_policy", "renotify",
                                 "failure_threshold", "recovery_threshold", "channels")} == {
        "description": "see https://x.example/a", "timezone": "America/New_York",
        "grace": 5400, "max_runtime": 172800, "min_runtime": 90, "deadline": None,
        "slow_factor": 3.0, "concurrency": "replace", "max_attempts": 2, "methods": "",
        "paused": False, "tags": ["a", "b"], "severity": None, "urgency": "high",
        "escalation_policy": policy.pk, "renotify": 1800, "failure_threshold": 4,
        "recovery_threshold": 5, "channels": "all"}
    page = text(admin.get(f"/monitors/{m.pk}/"))
    assert ('<dt>Description</dt><dd>see <a href="https://x.example/a" rel="nofollow">'
            'https://x.example/a</a></dd>') in page.replace("> <", "><")
    assert "<dt>Renotify</dt> <dd>30 min</dd>" in page or "<dt>Renotify</dt><dd>30 min</dd>" \
        in page


def test_a_description_is_plain_text_with_links(admin, api, world):
    m = world["monitor"]
    api.patch(f"/api/v1/monitors/{m.pk}/", {"description": "<b>x</b> & http://a.example/?q=1"},
              format="json")
    page = admin.get(f"/monitors/{m.pk}/").content.decode()
    assert ('&lt;b&gt;x&lt;/b&gt; &amp; <a href="http://a.example/?q=1" rel="nofollow">'
            'http://a.example/?q=1</a>') in page
    assert "<b>x</b>" not in page


@pytest.mark.parametrize("number, unit, seconds", [
    ("1", "hours", 3600), ("90", "seconds", 90), ("1.5", "minutes", 90), ("2", "days", 172800),
    ("0.25", "hours", 900)])
def test_durations_take_a_unit_and_show_the_stored_seconds_exactly(admin, number, unit,
                                                                    seconds):
    made = admin.post("/monitors/new/", {"name": "job", "kind": "interval", "period": number,
                                         "period_unit": unit, "grace": "1",
                                         "grace_unit": "minutes", "timezone": "UTC",
                                         "all_channels": "1"})
    assert made.status_code == 302, text(made)
    m = Monitor.objects.get(name="job")
    assert m.period == seconds * S
    shown = submitted(admin.get(f"/monitors/{m.pk}/edit/").content.decode())
    assert (shown["period"], shown["period_unit"]) == {
        3600: (["1"], ["hours"]), 90: (["90"], ["seconds"]), 172800: (["2"], ["days"]),
        900: (["15"], ["minutes"])}[seconds]


@pytest.mark.parametrize("number, unit, message", [
    ("1.5", "seconds", "1.5 seconds is not a whole number of seconds"),
    ("1", "weeks", "unknown unit &#x27;weeks&#x27;: use days, hours, minutes, seconds")])
def test_a_duration_that_is_not_whole_seconds_is_refused(admin, number, unit, message):
    resp = admin.post("/monitors/new/", {"name": "job", "kind": "interval", "period": number,
                                         "period_unit": unit, "grace": "60",
                                         "timezone": "UTC", "all_channels": "1"})
    assert resp.status_code == 400
    assert text(resp).count(message) == 2  # the list, the field
    assert not Monitor.objects.exists()


def test_a_new_monitor_defaults_to_the_persons_zone_from_the_list(admin):
    form = submitted(admin.get("/monitors/new/").content.decode())
    assert form["timezone"] == ["Europe/Berlin"]
    page = admin.get("/monitors/new/").content.decode()
    assert '<input id="f-timezone" type="text" name="timezone" list="zones"' in page
    assert '<option value="Pacific/Auckland">' in page and '<option value="localtime">' not in page


def test_an_unknown_zone_is_refused_by_the_server(admin):
    resp = admin.post("/monitors/new/", {"name": "job", "kind": "cron", "schedule": "0 3 * * *",
                                         "timezone": "Europe/Atlantis", "grace": "60",
                                         "all_channels": "1"})
    assert resp.status_code == 400
    assert "unknown time zone &#x27;Europe/Atlantis&#x27;" in text(resp)


def test_the_preview_button_shows_the_next_fire_times_and_saves_nothing(admin, monkeypatch):
    from datetime import UTC, datetime
    monkeypatch.setattr(timezone, "now", lambda: datetime(2026, 10, 23, 12, tzinfo=UTC))
    resp = admin.post("/monitors/new/", {"name": "job", "kind": "cron",
                                         "schedule": "30 2 * * *", "timezone": "Europe/Berlin",
                                         "cron_semantics": "kubernetes", "preview": "1"})
    assert resp.status_code == 200 and not Monitor.objects.exists()
    page = text(resp)
    assert "<strong>At 02:30</strong>" in page
    assert re.findall(r'<time datetime="([^"]+)">', page) == [
        "2026-10-24T02:30:00+02:00", "2026-10-25T02:30:00+02:00", "2026-10-25T02:30:00+01:00",
        "2026-10-26T02:30:00+01:00", "2026-10-27T02:30:00+01:00"]
    assert "2026-10-25 02:30 CET +01:00</time> · <span class=\"muted\">2026-10-25 02:30 CET " \
           "+01:00</span> <strong class=\"dst\">DST: UTC offset changed; a repeated hour, " \
           "second time</strong>" in page
    never = admin.post("/monitors/new/", {"name": "job", "kind": "cron",
                                          "schedule": "0 0 31 2 *", "timezone": "UTC",
                                          "preview": "1"})
    assert ("schedule &#x27;0 0 31 2 *&#x27; never fires: no date matches its day-of-month, "
            "month and day-of-week fields") in text(never)
