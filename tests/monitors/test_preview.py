"""monitors.preview: the next fire times across Europe/Berlin's DST changes under both
semantics, the never-firing message, and GET /api/v1/schedule-preview/."""
from datetime import UTC, datetime

import pytest
from django.utils import timezone

from monitors import preview as p
from monitors.schedule import ScheduleError

SPRING = datetime(2026, 3, 27, 12, 0, tzinfo=UTC)  # Berlin skips 02:00-03:00 on 2026-03-29
AUTUMN = datetime(2026, 10, 23, 12, 0, tzinfo=UTC)  # Berlin repeats 02:00-03:00 on 2026-10-25


def shown(found):
    return [(f["at"], f["dst"], f["fold"]) for f in found.as_json()["fires"]]


def test_spring_forward_debian_moves_the_skipped_wall_time_to_the_gap_end():
    found = p.preview("30 2 * * *", "Europe/Berlin", "debian", "UTC", SPRING)
    assert shown(found) == [
        ("2026-03-28T02:30:00+01:00", [], None),
        ("2026-03-29T03:00:00+02:00", ["offset_changed", "gap_end"], None),
        ("2026-03-30T02:30:00+02:00", [], None),
        ("2026-03-31T02:30:00+02:00", [], None),
        ("2026-04-01T02:30:00+02:00", [], None)]
    assert found.fires[1].note() == "UTC offset changed; right after a skipped hour"


def test_spring_forward_kubernetes_skips_the_day():
    found = p.preview("30 2 * * *", "Europe/Berlin", "kubernetes", "UTC", SPRING)
    assert shown(found) == [
        ("2026-03-28T02:30:00+01:00", [], None),
        ("2026-03-30T02:30:00+02:00", ["offset_changed"], None),
        ("2026-03-31T02:30:00+02:00", [], None),
        ("2026-04-01T02:30:00+02:00", [], None),
        ("2026-04-02T02:30:00+02:00", [], None)]


def test_fall_back_debian_fires_the_repeated_wall_time_once():
    found = p.preview("30 2 * * *", "Europe/Berlin", "debian", "UTC", AUTUMN)
    assert shown(found) == [
        ("2026-10-24T02:30:00+02:00", [], None),
        ("2026-10-25T02:30:00+02:00", ["repeated"], 0),
        ("2026-10-26T02:30:00+01:00", ["offset_changed"], None),
        ("2026-10-27T02:30:00+01:00", [], None),
        ("2026-10-28T02:30:00+01:00", [], None)]
    assert found.fires[1].note() == "a repeated hour, first time"


def test_fall_back_kubernetes_fires_the_repeated_wall_time_twice():
    found = p.preview("30 2 * * *", "Europe/Berlin", "kubernetes", "UTC", AUTUMN)
    assert shown(found) == [
        ("2026-10-24T02:30:00+02:00", [], None),
        ("2026-10-25T02:30:00+02:00", ["repeated"], 0),
        ("2026-10-25T02:30:00+01:00", ["offset_changed", "repeated"], 1),
        ("2026-10-26T02:30:00+01:00", [], None),
        ("2026-10-27T02:30:00+01:00", [], None)]


def test_the_first_fire_compares_its_offset_with_now():
    found = p.preview("0 12 * * *", "Europe/Berlin", "debian", "UTC",
                      datetime(2026, 3, 29, 0, 30, tzinfo=UTC))  # 01:30 CET, before the change
    assert found.as_json()["fires"][0] == {"at": "2026-03-29T12:00:00+02:00",
                                           "caller_at": "2026-03-29T10:00:00+00:00",
                                           "dst": ["offset_changed"], "fold": None}


def test_words_zones_and_caller_times():
    found = p.preview("@daily", "Europe/Berlin", "debian", "America/New_York", SPRING, count=2)
    assert found.as_json() == {
        "schedule": "0 0 * * *", "description": "At 00:00", "timezone": "Europe/Berlin",
        "caller_timezone": "America/New_York", "cron_semantics": "debian",
        "fires": [{"at": "2026-03-28T00:00:00+01:00", "caller_at": "2026-03-27T19:00:00-04:00",
                   "dst": [], "fold": None},
                  {"at": "2026-03-29T00:00:00+01:00", "caller_at": "2026-03-28T19:00:00-04:00",
                   "dst": [], "fold": None}]}


@pytest.mark.parametrize("expr,tz,message", [
    ("0 0 31 2 *", "UTC", "schedule '0 0 31 2 *' never fires: no date matches its "
     "day-of-month, month and day-of-week fields"),
    ("* 2 25-31 3 */7", "Europe/Berlin", "schedule '* 2 25-31 3 */7' never fires in time zone "
     "Europe/Berlin: every matching time falls into a daylight-saving gap"),
    ("", "UTC", "required: a 5-field cron expression or @daily …"),
])
def test_never_firing_and_invalid_raise_the_engine_message(expr, tz, message):
    with pytest.raises(ScheduleError) as e:
        p.preview(expr, tz, "debian", "UTC", SPRING)
    assert str(e.value) == message


# ---------------------------------------------------------------- the endpoint

URL = "/api/v1/schedule-preview/"


@pytest.fixture
def frozen(monkeypatch):
    monkeypatch.setattr(timezone, "now", lambda: SPRING)


@pytest.mark.django_db
def test_endpoint_for_a_key_shows_utc_as_the_caller_zone(api, frozen):
    resp = api.get(URL, {"schedule": "30 2 * * *", "timezone": "Europe/Berlin",
                         "cron_semantics": "kubernetes"})
    assert resp.status_code == 200, resp.json()
    body = resp.json()
    assert body["caller_timezone"] == "UTC"
    assert body["description"] == "At 02:30"
    assert [f["caller_at"] for f in body["fires"]] == [
        "2026-03-28T01:30:00+00:00", "2026-03-30T00:30:00+00:00", "2026-03-31T00:30:00+00:00",
        "2026-04-01T00:30:00+00:00", "2026-04-02T00:30:00+00:00"]


@pytest.mark.django_db
def test_endpoint_for_a_person_uses_their_profile_zone(client, project, frozen):
    from django.contrib.auth.models import User

    from accounts.models import Membership, Profile
    user = User.objects.create_user("ana", password="pw")
    Membership.objects.create(user=user, organisation=project.organisation, role="member")
    Profile.objects.update_or_create(user=user, defaults={"timezone": "Asia/Tokyo"})
    client.force_login(user)
    resp = client.get(URL, {"schedule": "0 9 * * *"})
    assert resp.status_code == 200
    assert resp.json()["caller_timezone"] == "Asia/Tokyo"
    assert resp.json()["fires"][0] == {"at": "2026-03-28T09:00:00+00:00",
                                       "caller_at": "2026-03-28T18:00:00+09:00",
                                       "dst": [], "fold": None}


@pytest.mark.django_db
@pytest.mark.parametrize("query,body", [
    ({"schedule": "0 0 31 2 *"}, {"schedule": ["schedule '0 0 31 2 *' never fires: no date "
                                               "matches its day-of-month, month and "
                                               "day-of-week fields"]}),
    ({"schedule": "0 0 * * *", "timezone": "Mars/Olympus"},
     {"timezone": ["unknown time zone 'Mars/Olympus'"]}),
    ({"schedule": "0 0 * * *", "cron_semantics": "bsd"},
     {"cron_semantics": ["must be one of debian, kubernetes"]}),
])
def test_endpoint_refuses_with_the_message(api, frozen, query, body):
    resp = api.get(URL, query)
    assert resp.status_code == 400
    assert resp.json() == body


@pytest.mark.django_db
def test_endpoint_needs_a_caller(client):
    assert client.get(URL, {"schedule": "0 0 * * *"}).status_code in (401, 403)


@pytest.mark.django_db
def test_endpoint_is_in_the_openapi_schema(api):
    schema = api.get("/api/v1/schema/", HTTP_ACCEPT="application/json")
    assert "/api/v1/schedule-preview/" in schema.content.decode()
