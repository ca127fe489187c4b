"""Run analytics (insights.stats, GET /api/v1/monitors/<id>/stats/) on fixed
histories."""
import pytest

from insights import stats
from monitors.models import Run
from tests.conftest import s
from tests.helpers import slot
from tests.insights.conftest import history

pytestmark = pytest.mark.django_db


def test_histogram_buckets_are_half_open_and_all_listed():
    assert [(b.from_, b.to, b.count) for b in stats.histogram([-1, 0, 9, 10, 3600, 9999])] == [
        (None, 0, 1), (0, 10, 2), (10, 30, 1), (30, 60, 0), (60, 300, 0), (300, 900, 0),
        (900, 3600, 0), (3600, None, 2)]


def buckets(*counts):
    bounds = [None, *stats.LATE_EDGES, None]
    return [{"from": bounds[i], "to": bounds[i + 1], "count": c} for i, c in enumerate(counts)]


NO_LATE = buckets(0, 0, 0, 0, 0, 0, 0, 0)
OUTCOMES = dict.fromkeys(stats.OUTCOMES, 0)


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
                     "missed": 1, "skipped": 0, "unknown": 1},
        # sorted 45 50 60 60 90 120 3600: p50 = the 4th, p95 = the 7th
        "duration": {"count": 7, "p50": 60, "p95": 3600, "max": 3600},
        "judged": 9, "succeeded": 3, "success_rate": 0.3333,
        "failures_by_exit_status": {"1": 2, "2": 1, "none": 1},
        "overlaps": 3,
        "missed": 1,
        "skipped": 0,
        "double_launches": 2,  # G (F of its slot open), J (a second run, max_attempts 1)
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
    monkeypatch.setattr(stats, "MAX_RUNS", 3)
    rows, limited = stats.select_runs(m, since=slot(0))
    assert ([r.slot_at for r in rows], limited) == ([slot(4), slot(3), slot(2)], True)
    assert stats.select_runs(m, since=slot(2)) == (rows, False)


def test_stats_without_runs(api, make_monitor):
    m = make_monitor(name="job")
    assert api.get(f"/api/v1/monitors/{m.pk}/stats/").json() == {
        "monitor": m.pk,
        "selection": {"runs": 100, "since": None, "until": None, "limited": False},
        "runs": 0, "outcomes": OUTCOMES,
        "duration": {"count": 0, "p50": None, "p95": None, "max": None},
        "judged": 0, "succeeded": 0, "success_rate": None, "failures_by_exit_status": {},
        "overlaps": 0, "missed": 0, "skipped": 0, "double_launches": 0,
        "late_start": {"count": 0, "p50": None, "p95": None, "max": None,
                       "histogram": NO_LATE},
    }


def test_stats_of_open_runs_only():
    rows = [stats.RunRow(1, slot(0), slot(0) + s(7), None, "running", None),
            stats.RunRow(2, slot(0), slot(0) + s(9), None, "stuck", None),
            stats.RunRow(3, None, slot(1), None, "running", None)]  # no slot
    got = stats.summarize(rows)
    assert (got.runs, got.duration, got.judged, got.success_rate, got.overlaps) == (
        3, stats.Spread(), 1, 0.0, 2)
    assert (got.late_start.count, got.late_start.p50, got.late_start.max) == (2, 7, 9)
    assert got.failures_by_exit_status == {}


def test_stats_of_runs_without_a_start():
    rows = [stats.RunRow(i, slot(i), None, slot(i) + s(40 + i),  # pinged at the end only
                             "succeeded" if i else "failed", None if i else 3) for i in range(4)]
    got = stats.summarize(rows)
    assert (got.duration.count, got.overlaps, got.succeeded, got.judged) == (0, 0, 3, 4)
    assert got.success_rate == 0.75
    assert (got.late_start.p50, got.late_start.p95, got.late_start.max) == (41, 43, 43)
    assert got.failures_by_exit_status == {"3": 1}


def test_skipped_slots_and_double_launches_are_counted_and_never_judged():
    r = stats.RunRow
    rows = [r(1, slot(0), slot(0) + s(5), slot(2) + s(30), "succeeded", 0),  # a long run
            r(2, slot(1), None, None, "skipped", None),  # slots 1 and 2 came while it ran
            r(3, slot(2), None, None, "skipped", None),
            r(4, slot(3), slot(3) + s(2), slot(3) + s(9), "succeeded", 0),
            r(5, slot(3), slot(3) + s(20), slot(3) + s(25), "succeeded", 0),  # after 4's success
            r(6, slot(4), slot(4) + s(1), None, "running", None),
            r(7, slot(4), slot(4) + s(3), slot(4) + s(8), "failed", 1),  # while 6 is open
            r(8, slot(5), slot(5) + s(1), slot(5) + s(4), "failed", 1),
            r(9, slot(5), slot(5) + s(10), slot(5) + s(14), "failed", 1)]  # a second attempt
    got = stats.summarize(rows)
    assert (got.outcomes["skipped"], got.skipped, got.double_launches) == (2, 2, 3)
    assert (got.judged, got.succeeded, got.success_rate) == (6, 3, 0.5)
    # with two attempts a slot, the retry of slot 5 is none
    assert stats.summarize(rows, max_attempts=2).double_launches == 2


def test_stats_of_skipped_missed_and_double_launched_runs_together():
    r = stats.RunRow
    rows = [r(1, slot(0), slot(0) + s(5), slot(2) + s(30), "succeeded", 0),  # a long run
            r(2, slot(1), None, None, "skipped", None),
            r(3, slot(2), None, None, "skipped", None),
            r(4, slot(3), None, None, "missed", None),
            r(5, slot(4), None, slot(4) + s(30), "succeeded", None),  # pinged at its end
            r(6, slot(4), None, slot(4) + s(60), "succeeded", None),  # again: after 5's success
            r(7, slot(5), slot(5) + s(1), slot(5) + s(4), "failed", 1),
            r(8, slot(5), slot(5) + s(10), slot(5) + s(20), "succeeded", 0)]  # a second attempt
    got = stats.summarize(rows)
    assert got.outcomes == {"running": 0, "succeeded": 4, "failed": 1, "stuck": 0,
                            "replaced": 0, "missed": 1, "skipped": 2, "unknown": 0}
    assert (got.skipped, got.missed, got.double_launches) == (2, 1, 2)  # 6 and 8
    # judged: succeeded + failed + stuck + missed; skipped slots are not in it
    assert (got.judged, got.succeeded, got.success_rate) == (6, 4, 0.6667)
    # two attempts a slot: 8 is a retry; 6 still came after a success
    assert stats.summarize(rows, max_attempts=2).double_launches == 1
