"""An organisation's usage against its plan (cronradar.usage) and GET /api/v1/usage/."""
from datetime import UTC, date, datetime

import pytest
from django.utils import timezone

from accounts.models import ApiKey, Plan
from alerts.models import Channel
from cronradar import usage
from monitors.models import Monitor, PingUsage
from tests.conftest import T0, S, new_project
from tests.helpers import as_key, as_person, person

pytestmark = pytest.mark.django_db


@pytest.fixture
def populated(project, make_monitor):
    """Organisation acme on plan free: 3 monitors (one deleted), 1 channel (and a
    deleted one), 2 members, 2 keys (and a revoked one), and ping counts of this
    month, last month and another organisation's."""
    org = project.organisation
    org.plan = Plan.objects.create(name="free", max_monitors=20, max_channels=5,
                                   max_api_keys=3, pings_per_minute=60)
    org.save()
    a, b = make_monitor(), make_monitor()
    gone = make_monitor()
    Monitor.objects.filter(pk=gone.pk).update(deleted_at=T0)
    Channel.objects.create(project=project, kind="webhook", config={"url": "https://a.test"})
    Channel.objects.create(project=project, kind="webhook", config={"url": "https://b.test"},
                           deleted_at=T0)
    owner, viewer = person("olga", org, "owner"), person("vic", org, "viewer")
    ApiKey.issue(project, "one")
    ApiKey.objects.filter(pk=ApiKey.issue(project, "old")[0].pk).update(revoked_at=T0)
    month = date(timezone.now().year, timezone.now().month, 1)
    PingUsage.objects.create(monitor=a, month=month, pings=120, refused=7)
    PingUsage.objects.create(monitor=b, month=month, pings=3, refused=0)
    PingUsage.objects.create(monitor=gone, month=month, pings=5, refused=1)
    PingUsage.objects.create(monitor=a, month=date(2000, 1, 1), pings=999, refused=99)
    stranger = Monitor.objects.create(project=new_project("other"), name="x", slug="x",
                                      period=60 * S, grace=S)
    PingUsage.objects.create(monitor=stranger, month=month, pings=50, refused=50)
    return {"org": org, "owner": owner, "viewer": viewer}


def test_usage_counts_against_the_plan(populated):
    now = datetime.now(UTC)
    assert usage.usage(populated["org"], now) == {
        "organisation": populated["org"].pk, "plan": "free",
        "month": f"{now.year:04d}-{now.month:02d}",
        "monitors": {"used": 2, "limit": 20}, "channels": {"used": 1, "limit": 5},
        "members": {"used": 2, "limit": None}, "api_keys": {"used": 1, "limit": 3},
        "pings_this_month": 128, "pings_refused_this_month": 8,
    }


def test_without_a_plan_every_limit_is_null(project):
    got = usage.usage(project.organisation, T0)
    assert got == {"organisation": project.organisation.pk, "plan": None, "month": "2026-01",
                   "monitors": {"used": 0, "limit": None},
                   "channels": {"used": 0, "limit": None},
                   "members": {"used": 0, "limit": None},
                   "api_keys": {"used": 0, "limit": None},
                   "pings_this_month": 0, "pings_refused_this_month": 0}


def test_the_usage_api_for_members_and_above_by_key_or_session(populated, api,
                                                               django_assert_max_num_queries):
    expected = usage.usage(populated["org"], timezone.now())
    with django_assert_max_num_queries(12):
        got = api.get("/api/v1/usage/")
    assert (got.status_code, got.json()) == (200, expected)
    assert as_person(populated["owner"]).get("/api/v1/usage/").json() == expected
    refused = as_person(populated["viewer"]).get("/api/v1/usage/")
    assert (refused.status_code, refused.json()) == (
        403, {"detail": "this needs the member role in the organisation"})
    read_only = as_key(ApiKey.issue(new_project("ro"), "ro", read_only=True)[1])
    assert read_only.get("/api/v1/usage/").json() == {"detail": "this API key is read-only"}
    assert api.get("/api/v1/usage/", {"organisation": "999999"}).status_code == 404


def test_a_person_in_several_organisations_names_one(populated):
    from accounts.models import Membership

    owner = populated["owner"]
    other = new_project("second").organisation
    Membership.objects.create(organisation=other, user=owner, role="member")
    client = as_person(owner)
    assert client.get("/api/v1/usage/").json() == {
        "organisation": ["required: you are in several organisations; give the id of one"]}
    got = client.get("/api/v1/usage/", {"organisation": other.pk})
    assert (got.status_code, got.json()["plan"], got.json()["members"]) == (
        200, None, {"used": 1, "limit": None})
    assert client.get("/api/v1/usage/").status_code == 400
    assert client.get("/api/v1/usage/", {"organisation": "x"}).status_code == 404


def test_the_usage_api_is_in_the_schema(client):
    schema = client.get("/api/v1/schema/?format=json").json()
    assert "/api/v1/usage/" in schema["paths"]
    props = schema["components"]["schemas"]["Usage"]["properties"]
    assert sorted(props) == sorted(["organisation", "plan", "month", "monitors", "channels",
                                    "members", "api_keys", "pings_this_month",
                                    "pings_refused_this_month"])
