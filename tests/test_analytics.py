"""Run analytics (monitors.analytics, GET /api/v1/monitors/<id>/stats/) on fixed
histories."""
from datetime import timedelta

import pytest

from monitors import analytics
from monitors.models import ApiKey, Run
from tests.conftest import T0
from tests.test_tenancy import as_key, as_person, person

pytestmark = pytest.mark.django_db
H = timedelta(hours=1)


def s(n):
    return timedelta(seconds=n)


def slot(i):
    return T0 + i * H


# --- pure parts -------------------------------------------------------------------------

@pytest.mark.parametrize(("values", "p", "expected"), [
    ([10, 20, 30, 40], 50, 20), ([10, 20, 30, 40], 95, 40), ([1, 2, 3], 50, 2),
    (list(range(1, 21)), 95, 19), (list(range(1, 101)), 95, 95), (list(range(1, 101)), 50, 50),
    (list(range(1, 22)), 95, 20), ([7], 50, 7), ([7], 95, 7), ([], 50, None),
])
def test_percentiles_are_nearest_rank(values, p, expected):
    assert analytics.percentile(values, p) == expected


def test_seconds_round_down_also_before_the_slot():
    assert [analytics.seconds(s(x)) for x in (59.9, 0.5, 0, -0.5, -2)] == [59, 0, 0, -1, -2]


def test_histogram_buckets_are_half_open_and_all_listed():
    assert [(b.from_, b.to, b.count) for b in analytics.histogram([-1, 0, 9, 10, 3600, 9999])] == [
        (None, 0, 1), (0, 10, 2), (10, 30, 1), (30, 60, 0), (60, 300, 0), (300, 900, 0),
        (900, 3600, 0), (3600, None, 2)]


# --- a fixed history --------------------------------------------------------------------

def history(monitor) -> dict[str, Run]:
    """Twelve runs of ``monitor``, one or two per hourly slot, created in this order
    (ids ascending). Durations 60 120 90 45 3600 50 60 s; late starts 5 10 30 -2 0
    20 30 1 61 3 s; overlaps G (F open), J (I ended as J started: replaced), K (J open)."""
    rows = {
        "A": (slot(0), s(5), s(65), "succeeded", 0),
        "B": (slot(1), s(10), s(130), "failed", 1),
        "C": (slot(2), None, s(30), "succeeded", None),  # pinged only at its end
        "D": (slot(3), None, None, "missed", None),
        "E": (slot(4), s(-2), s(88), "failed", 1),  # its host's clock runs 2 s fast
        "F": (slot(5), s(0.5), s(45.9), "succeeded", 0),  # 45.4 s: 45; 0.5 s late: 0
        "G": (slot(5), s(20), s(3620), "failed", 2),  # a retry while F ran
        "H": (slot(6), s(30), s(80), "failed", None),  # a /fail ping: no exit status
        "I": (slot(7), s(1), s(61), "replaced", None),
        "J": (slot(7), s(61), None, "stuck", None),
        "K": (slot(8), s(3), None, "running", None),
        "L": (slot(9), None, None, "unknown", None),
    }
    made = {}
    for name, (at, start, end, outcome, status) in rows.items():
        made[name] = Run.objects.create(
            monitor=monitor, slot_at=at, started_at=at + start if start is not None else None,
            ended_at=at + end if end is not None else None, outcome=outcome, exit_status=status)
    return made


def buckets(*counts):
    bounds = [None, *analytics.LATE_EDGES, None]
    return [{"from": bounds[i], "to": bounds[i + 1], "count": c} for i, c in enumerate(counts)]


NO_LATE = buckets(0, 0, 0, 0, 0, 0, 0, 0)
OUTCOMES = dict.fromkeys(analytics.OUTCOMES, 0)


def test_stats_of_a_fixed_history_exactly(api, make_monitor):
    m = make_monitor(name="job")
    history(m)
    resp = api.get(f"/api/v1/monitors/{m.pk}/stats/")
    assert resp.status_code == 200
    assert resp.json() == {
        "monitor": m.pk,
        "selection": {"runs": 100, "since": None, "until": None, "limited": False},
        "runs": 12,
        "outcomes": {"running": 1, "succeeded": 3, "failed": 4, "stuck": 1, "replaced": 1,
                     "missed": 1, "unknown": 1},
        # sorted 45 50 60 60 90 120 3600: p50 = the 4th, p95 = the 7th
        "duration": {"count": 7, "p50": 60, "p95": 3600, "max": 3600},
        "judged": 9, "succeeded": 3, "success_rate": 0.3333,
        "failures_by_exit_status": {"1": 2, "2": 1, "none": 1},
        "overlaps": 3,
        "missed": 1,
        # sorted -2 0 1 3 5 10 20 30 30 61: p50 = the 5th, p95 = the 10th
        "late_start": {"count": 10, "p50": 5, "p95": 61, "max": 61,
                       "histogram": buckets(1, 4, 2, 2, 1, 0, 0, 0)},
    }


def test_stats_of_the_newest_runs_as_the_runs_list_has_them(api, make_monitor):
    m = make_monitor(name="job")
    runs = history(m)
    got = api.get(f"/api/v1/monitors/{m.pk}/stats/?runs=5").json()
    listed = api.get(f"/api/v1/monitors/{m.pk}/runs/?limit=5").json()
    assert [r["id"] for r in listed] == [runs[n].pk for n in "LKJIH"]
    assert got["selection"] == {"runs": 5, "since": None, "until": None, "limited": False}
    assert (got["runs"], got["overlaps"], got["judged"], got["success_rate"]) == (5, 2, 2, 0.0)
    assert got["failures_by_exit_status"] == {"none": 1}
    assert got["duration"] == {"count": 2, "p50": 50, "p95": 60, "max": 60}


def test_stats_of_a_time_range_by_the_runs_time(api, make_monitor):
    m = make_monitor(name="job")
    history(m)
    # a run's time is its start, else its end, else its slot: F, G and H are in
    # [slot 5, slot 7); I starts 1 s after slot 7
    url = f"/api/v1/monitors/{m.pk}/stats/?since=2026-01-05T17:00:00Z&until=2026-01-05T19:00:00Z"
    got = api.get(url).json()
    assert got["selection"] == {"runs": None, "since": "2026-01-05T17:00:00Z",
                                "until": "2026-01-05T19:00:00Z", "limited": False}
    assert (got["runs"], got["overlaps"], got["outcomes"]["failed"]) == (3, 1, 2)
    assert got["duration"] == {"count": 3, "p50": 50, "p95": 3600, "max": 3600}
    assert got["success_rate"] == 0.3333
    listed = api.get(f"/api/v1/monitors/{m.pk}/runs/?since=2026-01-05T17:00:00Z"
                     "&until=2026-01-05T19:00:00Z").json()
    assert len(listed) == 3  # the same runs as the runs list's since/until
    since_only = api.get(f"/api/v1/monitors/{m.pk}/stats/?since=2026-01-05T19:00:00Z").json()
    assert (since_only["runs"], since_only["outcomes"]["unknown"]) == (4, 1)  # I J K L


def test_a_range_with_more_runs_than_the_maximum_is_limited(make_monitor, monkeypatch):
    m = make_monitor(name="job")
    Run.objects.bulk_create(Run(monitor=m, slot_at=slot(i), outcome="missed") for i in range(5))
    monkeypatch.setattr(analytics, "MAX_RUNS", 3)
    rows, limited = analytics.select_runs(m, since=slot(0))
    assert ([r.slot_at for r in rows], limited) == ([slot(4), slot(3), slot(2)], True)
    assert analytics.select_runs(m, since=slot(2)) == (rows, False)


def test_stats_without_runs(api, make_monitor):
    m = make_monitor(name="job")
    assert api.get(f"/api/v1/monitors/{m.pk}/stats/").json() == {
        "monitor": m.pk,
        "selection": {"runs": 100, "since": None, "until": None, "limited": False},
        "runs": 0, "outcomes": OUTCOMES,
        "duration": {"count": 0, "p50": None, "p95": None, "max": None},
        "judged": 0, "succeeded": 0, "success_rate": None, "failures_by_exit_status": {},
        "overlaps": 0, "missed": 0,
        "late_start": {"count": 0, "p50": None, "p95": None, "max": None,
                       "histogram": NO_LATE},
    }


def test_stats_of_open_runs_only():
    rows = [analytics.RunRow(1, slot(0), slot(0) + s(7), None, "running", None),
            analytics.RunRow(2, slot(0), slot(0) + s(9), None, "stuck", None),
            analytics.RunRow(3, None, slot(1), None, "running", None)]  # no slot
    got = analytics.summarize(rows)
    assert (got.runs, got.duration, got.judged, got.success_rate, got.overlaps) == (
        3, analytics.Spread(), 1, 0.0, 2)
    assert (got.late_start.count, got.late_start.p50, got.late_start.max) == (2, 7, 9)
    assert got.failures_by_exit_status == {}


def test_stats_of_runs_without_a_start():
    rows = [analytics.RunRow(i, slot(i), None, slot(i) + s(40 + i),  # pinged at the end only
                             "succeeded" if i else "failed", None if i else 3) for i in range(4)]
    got = analytics.summarize(rows)
    assert (got.duration.count, got.overlaps, got.succeeded, got.judged) == (0, 0, 3, 4)
    assert got.success_rate == 0.75
    assert (got.late_start.p50, got.late_start.p95, got.late_start.max) == (41, 43, 43)
    assert got.failures_by_exit_status == {"3": 1}


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
