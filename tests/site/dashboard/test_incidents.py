"""The incident pages (cronradar.dashboard.incidents): acknowledge and resolve."""
import pytest

from tests.site.dashboard.conftest import text

pytestmark = pytest.mark.django_db


def test_acknowledge_and_resolve_from_the_incident_page(admin, world):
    i = world["incident"]
    page = text(admin.get(f"/incidents/{i.pk}/"))
    assert "opened" in page and "ops-hook" in page and "Acknowledge" in page
    admin.post(f"/incidents/{i.pk}/ack/", {"note": "on it"})
    i.refresh_from_db()
    assert (i.acknowledged_by, i.resolved_at) == ("admin", None)
    admin.post(f"/incidents/{i.pk}/resolve/")
    i.refresh_from_db()
    assert i.resolution and i.resolved_at is not None
    listed = text(admin.get("/incidents/"))
    assert '<span class="status status-resolved">resolved</span>' in listed


def test_a_note_over_the_limit_is_refused_not_cut(admin, world):
    i = world["incident"]
    resp = admin.post(f"/incidents/{i.pk}/ack/", {"note": "n" * 501})
    assert resp.status_code == 400
    assert "The note is 501 characters; the limit is 500." in text(resp)
    i.refresh_from_db()
    assert i.acknowledged_at is None
    admin.post(f"/incidents/{i.pk}/ack/", {"note": "n" * 500})
    i.refresh_from_db()
    assert i.acknowledged_at is not None


@pytest.mark.parametrize(("query", "message"), [
    ("page=abc", "page must be a whole number from 1 to 1000000, not &#x27;abc&#x27;"),
    ("page=0", "page must be a whole number from 1 to 1000000, not &#x27;0&#x27;")])
def test_a_bad_page_of_the_incident_list_is_a_400_with_the_message(admin, world, query,
                                                                   message):
    resp = admin.get(f"/incidents/?{query}")
    assert resp.status_code == 400 and message in resp.content.decode()
    assert admin.get("/incidents/?page=1").status_code == 200
