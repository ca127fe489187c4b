"""Run analytics (insights.stats, GET /api/v1/monitors/<id>/stats/) on fixed
histories, and duration drift (slow_factor -> the ``slow`` incident)."""
import json
from datetime import timedelta
from decimal import Decimal

import pytest

from accounts.models import ApiKey
from alerts.integrations import pagerduty
from alerts.models import Channel, Incident, IncidentEvent, MaintenanceWindow
from insights import stats
from monitors import drift
from monitors.models import Monitor, Run
from monitors.pings import PingInput, ingest
from tests.conftest import T0, hook_bodies
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
    assert drift.percentile(values, p) == expected


def test_seconds_round_down_also_before_the_slot():
    assert [drift.seconds(s(x)) for x in (59.9, 0.5, 0, -0.5, -2)] == [59, 0, 0, -1, -2]


def test_histogram_buckets_are_half_open_and_all_listed():
    assert [(b.from_, b.to, b.count) for b in stats.histogram([-1, 0, 9, 10, 3600, 9999])] == [
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
        "overlaps": 0, "missed": 0,
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


# --- duration drift: slow_factor ----------------------------------------------------------

def runs_of(monitor, seconds_each, start_at=0):
    """A run per hour from hour ``start_at``: started on the hour, ended after each of
    ``seconds_each`` (a negative one fails with exit status 1 after its magnitude)."""
    for i, secs in enumerate(seconds_each, start=start_at):
        ingest(monitor.pk, PingInput("start"), slot(i))
        end = PingInput("fail", exit_status=1) if secs < 0 else PingInput("success")
        ingest(monitor.pk, end, slot(i) + s(abs(secs)))


def slow_monitor(make_monitor, **fields):
    return make_monitor(name="backup", period=H, grace=s(600), slow_factor=Decimal("2.0"),
                        **fields)


def test_nothing_is_slow_before_twenty_succeeded_runs(make_monitor):
    m = slow_monitor(make_monitor)
    runs_of(m, [60] * 19 + [1000])
    assert not Incident.objects.exists()


def test_nothing_is_slow_without_a_slow_factor(make_monitor):
    m = make_monitor(name="backup", period=H, grace=s(600))
    runs_of(m, [60] * 20 + [1000])
    assert not Incident.objects.exists()


def test_a_run_at_the_threshold_is_not_slow(make_monitor):
    m = slow_monitor(make_monitor)
    runs_of(m, [60] * 20 + [120])  # 2.0 x p95 60 s is 120 s: not more
    assert not Incident.objects.exists()


def test_a_slow_run_opens_raises_and_resolves(make_monitor, hook, hook_http):
    m = slow_monitor(make_monitor, channels=[hook.pk])
    runs_of(m, [60] * 20 + [130])
    incident = Incident.objects.get()
    assert (incident.cause, incident.severity, incident.opened_at) == (
        "slow", "warning", slot(20) + s(130))
    assert incident.summary == ("backup: run succeeded after 130s, more than 2x the p95 "
                                "duration of the last 20 succeeded runs (60s)")
    opened = hook_bodies(hook_http, slot(21))
    assert [(b["event"], b["incident"]["severity"]) for b in opened] == [
        ("incident.opened", "warning")]

    runs_of(m, [-30], start_at=21)  # a failure: the cause becomes failed, critical
    incident.refresh_from_db()
    assert (incident.cause, incident.severity, incident.failure_count) == (
        "failed", "critical", 1)
    timeline = [(e.kind, e.at, e.count, e.message) for e in incident.events.order_by("at", "id")]
    assert timeline == [
        ("opened", slot(20) + s(130), 1, "run succeeded after 130s, more than 2x the p95 "
                                         "duration of the last 20 succeeded runs (60s)"),
        ("failed", slot(21) + s(30), 1, "run failed (exit status 1)"),
        ("escalated", slot(21) + s(30), 1, "cause raised from slow to failed, severity "
                                           "critical: run failed (exit status 1)")]
    raised = incident.events.get(kind="escalated")
    assert (raised.step, raised.detail) == ("raised", {"from": "slow", "cause": "failed",
                                                       "severity": "critical"})
    sent = hook_bodies(hook_http, slot(22))[1:]
    assert [(b["event"], b["incident"]["cause"], b["incident"]["severity"]) for b in sent] == [
        ("incident.escalated", "failed", "critical")]

    runs_of(m, [60], start_at=22)  # under the threshold again: recovered
    incident.refresh_from_db()
    assert (incident.resolved_at, incident.resolution) == (slot(22) + s(60), "a run succeeded")
    assert [b["event"] for b in hook_bodies(hook_http, slot(23))[2:]] == ["incident.resolved"]


def test_slow_resolves_by_the_next_run_under_the_threshold(make_monitor):
    m = slow_monitor(make_monitor)
    runs_of(m, [60] * 20 + [300, 200])  # 200 s: still more than 2 x p95 (60 s)
    incident = Incident.objects.get()
    assert incident.events.get(kind="slow").count == 1 and incident.resolved_at is None
    runs_of(m, [100], start_at=22)
    incident.refresh_from_db()
    assert incident.resolved_at == slot(22) + s(100)


def test_a_slow_run_does_not_resolve_a_failure(make_monitor):
    m = slow_monitor(make_monitor)
    runs_of(m, [60] * 20 + [-10, 500])
    incident = Incident.objects.get()
    assert (incident.cause, incident.severity, incident.resolved_at) == ("failed", "critical",
                                                                        None)
    assert [e.kind for e in incident.events.order_by("at", "id")] == ["opened", "slow"]


def test_the_baseline_is_the_last_fifty_succeeded_runs_with_a_start(make_monitor):
    m = slow_monitor(make_monitor)
    runs_of(m, [1000] * 10 + [60] * 50)  # the long ones are more than 50 runs back
    for i in range(60, 63):  # runs without a start, and failures, are no baseline
        Run.objects.create(monitor=m, slot_at=slot(i), ended_at=slot(i) + s(10),
                           outcome="succeeded")
        Run.objects.create(monitor=m, slot_at=slot(i), started_at=slot(i) + s(20),
                           ended_at=slot(i) + s(3000), outcome="failed", exit_status=1)
    assert not Incident.objects.exists()
    runs_of(m, [121], start_at=63)
    assert Incident.objects.get().summary == (
        "backup: run succeeded after 121s, more than 2x the p95 duration of the last 50 "
        "succeeded runs (60s)")


def test_the_monitors_severity_applies_to_slow_and_its_raise(make_monitor):
    from alerts.models import Alerting

    m = slow_monitor(make_monitor)
    Alerting.objects.filter(monitor=m).update(severity="error")
    runs_of(m, [60] * 20 + [200, -1])
    incident = Incident.objects.get()
    assert (incident.cause, incident.severity) == ("failed", "error")


def test_a_problem_under_the_failure_threshold_does_not_raise(make_monitor):
    from alerts.models import Alerting

    m = slow_monitor(make_monitor)
    runs_of(m, [60] * 20 + [200])
    Alerting.objects.filter(monitor=m).update(failure_threshold=2)
    runs_of(m, [-1], start_at=21)  # one failure: counted, not raised
    incident = Incident.objects.get()
    assert (incident.cause, incident.severity, incident.failure_count) == ("slow", "warning", 1)
    runs_of(m, [-1], start_at=22)  # the second in a row would open an incident: raised
    incident.refresh_from_db()
    assert (incident.cause, incident.severity, incident.failure_count) == (
        "failed", "critical", 2)


def test_a_raise_inside_a_maintenance_window_is_recorded_not_sent(make_monitor, hook,
                                                                 hook_http):
    m = slow_monitor(make_monitor, channels=[hook.pk])
    runs_of(m, [60] * 20 + [200])
    assert len(hook_bodies(hook_http, slot(21))) == 1
    MaintenanceWindow.objects.create(project=m.project, name="upgrade", monitor=m,
                                     starts_at=slot(21), ends_at=slot(23))
    runs_of(m, [-5], start_at=21)
    raised = IncidentEvent.objects.get(kind="escalated")
    assert raised.detail["suppressed"] == (
        f"maintenance window 'upgrade' until {slot(23).isoformat()}")
    assert len(hook_bodies(hook_http, slot(22))) == 1  # nothing new was sent


def test_pagerduty_gets_a_new_trigger_with_the_raised_severity(make_monitor, project):
    m = slow_monitor(make_monitor)
    runs_of(m, [60] * 20 + [200, -1])
    incident = Incident.objects.get()
    ch = Channel.objects.create(project=project, kind="pagerduty", config={"routing_key": "k"})
    docs = [json.loads(pagerduty.build_request(ch, incident.events.get(kind=k)).body)
            for k in ("opened", "escalated")]
    assert {d["event_action"] for d in docs} == {"trigger"}
    assert {d["dedup_key"] for d in docs} == {str(incident.dedup_key)}
    assert (docs[1]["payload"]["severity"], docs[1]["payload"]["class"]) == ("critical",
                                                                            "failed")


@pytest.mark.parametrize(("value", "ok"), [
    (2.5, True), ("3", True), (100, True), (None, True), (1.01, True),
    (1, False), (1.0, False), (0.5, False), (-2, False), (100.01, False), (1000, False),
    (1.001, False), ("fast", False),
])
def test_slow_factor_through_the_api(api, value, ok):
    made = api.post("/api/v1/monitors/", {"name": "j", "period": 60, "grace": 5},
                    format="json").json()
    assert made["slow_factor"] is None
    resp = api.patch(f"/api/v1/monitors/{made['id']}/", {"slow_factor": value}, format="json")
    assert resp.status_code == (200 if ok else 400), resp.json()
    if ok:
        expected = None if value is None else float(value)
        assert resp.json()["slow_factor"] == expected
        assert Monitor.objects.get(pk=made["id"]).slow_factor == (
            None if value is None else Decimal(str(value)))
    else:
        expected = {1.001: "at most 2 decimal places", "fast": "A valid number is required."}
        assert resp.json()["slow_factor"] == [
            expected.get(value, "must be more than 1 and at most 100 (or null: off)")]
