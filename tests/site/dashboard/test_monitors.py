"""The monitor pages (cronradar.dashboard.monitors): the list, a monitor, create, edit,
pause and delete, form errors, and a bounded number of queries."""
import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

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
