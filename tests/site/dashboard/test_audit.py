"""cronradar.dashboard.audit: the audit log page: admins only, the API's filters
in a GET form (since and until in the person's zone), paged, no inline styles or
scripts."""
import re

import pytest

from accounts import audit
from accounts.models import AuditEntry
from tests.conftest import T0, S, new_project
from tests.site.dashboard.conftest import signed_in, text

pytestmark = pytest.mark.django_db


def _entries(org, n):
    return [audit.record("pause" if i % 2 else "update", org, target_type="monitor",
                         target_id=str(i), target_repr=f"job-{i}", at=T0 + i * S,
                         actor=audit.Actor("ana", None, "10.0.0.1"),
                         changes={"grace": [i, i + 1], "config.url": ["***", "***"]})
            for i in range(n)]


def test_admins_read_the_log_filtered_and_paged(project, monkeypatch):
    from cronradar.dashboard import audit as page

    monkeypatch.setattr(page, "PER_PAGE", 2)
    admin = signed_in(project)
    made = _entries(project.organisation, 5)
    _entries(new_project("other").organisation, 1)  # another tenant's: not shown
    AuditEntry.objects.filter(action="signin").delete()  # signed_in's own
    first = admin.get("/audit-log/")
    body = text(first)
    assert first.status_code == 200
    assert 'href="/audit-log/"' in body and "Audit log of acme" in body  # in the nav
    assert "job-4" in body and "job-3" in body and "job-2" not in body
    assert "<code>grace</code>: 4 → 5" in body and "<code>config.url</code>: *** → ***" in body
    assert f'href="?cursor={made[3].pk}"' in body
    older = text(admin.get(f"/audit-log/?cursor={made[3].pk}"))
    assert "job-2" in older and "job-1" in older and "job-3" not in older
    paused = text(admin.get("/audit-log/?action=pause&object=monitor:3"))
    assert "job-3" in paused and "job-1" not in paused
    since = text(admin.get("/audit-log/?since=2026-01-05T12:00:03%2B00:00"))
    assert "job-3" in since and "job-2" not in since
    bad = admin.get("/audit-log/?object=monitor&since=soon")
    assert bad.status_code == 400
    assert "object: must be &lt;type&gt;:&lt;id&gt;, e.g. monitor:12" in text(bad)
    mine = first.content.decode().split("<main", 1)[1].split("</main>", 1)[0]
    assert 'style="' not in mine and "<script" not in mine


def shown(page: str) -> list[str]:
    """The entries a page lists, by their object's name, newest first."""
    return re.findall(r"<td>(job-\d+) <span", page)


def test_since_and_until_are_date_time_inputs_in_the_persons_zone(project):
    """The person is in Berlin (CET, UTC+1): 13:00:03 there is 12:00:03 UTC, as the
    API reads it with an offset; a value with an offset is shown in Berlin."""
    admin = signed_in(project)
    _entries(project.organisation, 5)  # job-i at 12:00:0i UTC
    AuditEntry.objects.filter(action="signin").delete()
    form = text(admin.get("/audit-log/"))
    assert ('<label for="a-since">Since <span class="muted small">(in your time zone, '
            'Europe/Berlin)</span></label><input id="a-since" type="datetime-local" step="1" '
            'name="since" value="">') in form
    assert '<input id="a-until" type="datetime-local" step="1" name="until" value="">' in form
    page = text(admin.get("/audit-log/?since=2026-01-05T13:00:01&until=2026-01-05T13:00:04"))
    assert shown(page) == ["job-3", "job-2", "job-1"]
    assert 'name="since" value="2026-01-05T13:00:01">' in page
    assert shown(text(admin.get("/audit-log/?since=2026-01-05T13:00"))) == [
        "job-4", "job-3", "job-2", "job-1", "job-0"]  # no seconds: 13:00:00
    api = admin.get("/api/v1/audit-log/?since=2026-01-05T12:00:01Z&until=2026-01-05T12:00:04Z")
    assert [e["target"]["repr"] for e in api.json()] == ["job-3", "job-2", "job-1"]
    offset = text(admin.get("/audit-log/?since=2026-01-05T12:00:03Z"))
    assert shown(offset) == ["job-4", "job-3"]
    assert 'name="since" value="2026-01-05T13:00:03">' in offset  # in Berlin


@pytest.mark.parametrize("typed", ["soon", "0001-01-01T00:00"])  # year 1 in Berlin: year 0 UTC
def test_a_since_that_is_no_time_is_a_400_kept_as_typed(project, typed):
    admin = signed_in(project)
    resp = admin.get(f"/audit-log/?since={typed}")
    assert resp.status_code == 400
    page = text(resp)
    assert ('<p class="alert" role="alert">since: a date and time, e.g. 2026-01-05T12:00 </p>'
            in page)
    assert f'name="since" value="{typed}">' in page


@pytest.mark.parametrize("role", ["member", "viewer"])
def test_members_and_viewers_are_refused(project, role):
    client = signed_in(project, role)
    resp = client.get("/audit-log/")
    assert resp.status_code == 403
    assert "the audit log needs the admin role in the organisation" in text(resp)
    assert 'href="/audit-log/"' not in text(client.get("/"))


def test_a_new_badge_key_is_recorded_masked(project):
    admin = signed_in(project)
    old = project.badge_key
    admin.post("/keys/badge/")
    project.refresh_from_db()
    entry = AuditEntry.objects.exclude(action="signin").get()
    assert (entry.actor, entry.action, entry.target_type, entry.target_id, entry.changes) == (
        "admin", "update", "project", str(project.pk), {"badge_key": ["***", "***"]})
    assert old not in str(entry.changes) and project.badge_key not in str(entry.changes)
