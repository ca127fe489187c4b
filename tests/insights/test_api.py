"""insights.api: the stats endpoint's parameters, its default, and who may read it."""
import pytest

from accounts.models import ApiKey
from tests.helpers import as_key, as_person, person
from tests.insights.conftest import history

pytestmark = pytest.mark.django_db


def test_the_default_number_of_runs_is_a_setting(api, make_monitor, settings):
    settings.CRONRADAR_STATS_RUNS = 2
    m = make_monitor(name="job")
    history(m)
    got = api.get(f"/api/v1/monitors/{m.pk}/stats/").json()
    assert (got["selection"]["runs"], got["runs"]) == (2, 2)


@pytest.mark.parametrize(("query", "field", "message"), [
    ("runs=0", "runs", "must be an integer from 1 to 10000"),
    ("runs=10001", "runs", "must be an integer from 1 to 10000"),
    ("runs=ten", "runs", "must be an integer from 1 to 10000"),
    ("runs=-1", "runs", "must be an integer from 1 to 10000"),
    ("runs=5&since=2026-01-05T00:00:00Z", "runs", "give runs or since/until, not both"),
    ("since=2026-01-05T02:00:00Z&until=2026-01-05T01:00:00Z", "since", "must be before until"),
    ("since=yesterday", "since", "must be an ISO 8601 time with an offset"),
    ("until=2026-01-05T01:00:00", "until", "must be an ISO 8601 time with an offset"),
])
def test_bad_parameters_are_400s_that_say_why(api, make_monitor, query, field, message):
    m = make_monitor(name="job")
    resp = api.get(f"/api/v1/monitors/{m.pk}/stats/?{query}")
    assert resp.status_code == 400
    assert message in resp.json()[field][0]


def test_readers_may_read_stats_and_other_tenants_get_404(project, make_monitor):
    m = make_monitor(name="job")
    history(m)
    viewer = as_person(person("vera", project.organisation, "viewer"))
    ro = as_key(ApiKey.issue(project, "ro", read_only=True)[1])
    for client in (viewer, ro):
        resp = client.get(f"/api/v1/monitors/{m.pk}/stats/")
        assert (resp.status_code, resp.json()["runs"]) == (200, 12)
    from tests.conftest import new_project
    stranger = as_key(ApiKey.issue(new_project("bravo"))[1])
    assert stranger.get(f"/api/v1/monitors/{m.pk}/stats/").status_code == 404
