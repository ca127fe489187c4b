"""monitors.admin: the admin cannot save a schedule the evaluator cannot compute."""
import pytest

from monitors.models import Monitor

pytestmark = pytest.mark.django_db


def test_the_admin_cannot_save_a_schedule_the_evaluator_cannot_compute(admin_client, project):
    resp = admin_client.post("/admin/monitors/monitor/add/", {
        "project": project.pk, "name": "bad", "slug": "bad", "kind": "cron",
        "schedule": "61 * * * *", "timezone": "UTC", "cron_semantics": "debian",
        "grace": "00:01:00", "concurrency": "allow", "tags": "[]"})
    assert resp.status_code == 200  # the form again, with the error
    assert b"bad minute field &#x27;61&#x27;" in resp.content
    assert not Monitor.objects.exists()
