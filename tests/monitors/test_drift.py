"""Duration drift (monitors.drift): slow_factor -> the ``slow`` incident; percentiles
and seconds as the runs list shows them."""
import pytest

from alerts.models import Incident
from monitors import drift
from monitors.models import Run
from tests.conftest import hook_bodies, s
from tests.helpers import H, runs_of, slot, slow_monitor

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("values", "p", "expected"), [
    ([10, 20, 30, 40], 50, 20), ([10, 20, 30, 40], 95, 40), ([1, 2, 3], 50, 2),
    (list(range(1, 21)), 95, 19), (list(range(1, 101)), 95, 95), (list(range(1, 101)), 50, 50),
    (list(range(1, 22)), 95, 20), ([7], 50, 7), ([7], 95, 7), ([], 50, None),
])
def test_percentiles_are_nearest_rank(values, p, expected):
    assert drift.percentile(values, p) == expected


def test_seconds_round_down_also_before_the_slot():
    assert [drift.seconds(s(x)) for x in (59.9, 0.5, 0, -0.5, -2)] == [59, 0, 0, -1, -2]


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
