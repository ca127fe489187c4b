"""Public status badges (cronradar.dashboard.badges)."""
import pytest
from django.utils import timezone

from tests.conftest import S
from tests.site.dashboard.conftest import signed_in, text

pytestmark = pytest.mark.django_db


def test_badges(client, project, world, make_monitor):
    key = project.badge_key
    make_monitor(name="fine", tags=["db"], period=3600 * S, grace=60 * S,
                 created=timezone.now())
    one = client.get(f"/badge/{key}/nightly-backup.svg")
    assert one["Content-Type"] == "image/svg+xml" and 'aria-label="nightly-backup: down"' in (
        one.content.decode())
    assert client.get(f"/badge/{key}/db.json").json() == {
        "name": "db", "status": "down", "total": 2, "down": 1, "late": 0}
    assert client.get(f"/badge/{key}/fine.json").json()["status"] == "up"
    assert client.get(f"/badge/{key}/nothing.svg").status_code == 404
    assert client.get("/badge/wrong-key/db.svg").status_code == 404
    admin = signed_in(project, "admin", "boss")
    admin.post("/keys/badge/")
    assert client.get(f"/badge/{key}/db.svg").status_code == 404  # the old key is revoked


def test_badges_for_tags_with_any_character(client, project, make_monitor, admin):
    m = make_monitor(name="odd", tags=["team a:db", "x/y"], period=3600 * S, grace=60 * S,
                     created=timezone.now())
    page = text(admin.get(f"/monitors/{m.pk}/"))
    key = project.badge_key
    assert f"/badge/{key}/team%20a%3Adb.svg" in page and f"/badge/{key}/x%2Fy.svg" in page
    assert client.get(f"/badge/{key}/team%20a%3Adb.json").json() == {
        "name": "team a:db", "status": "up", "total": 1, "down": 0, "late": 0}
    assert client.get(f"/badge/{key}/x%2Fy.json").json()["total"] == 1
    assert 'aria-label="team a:db: up"' in client.get(
        f"/badge/{key}/team%20a%3Adb.svg").content.decode()
