"""The monitor pages (cronradar.dashboard.monitors): the list, a monitor, create, edit,
pause and delete, form errors, and a bounded number of queries."""
import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from alerts.models import Incident
from cronradar.dashboard import monitorlist
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
                      "paused")])
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
    assert len(buttons) == 6 and all(" hidden" in b for b in buttons)
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
