"""core.metrics: the process metrics' helpers (values read as deltas: the default
registry is global to the test process)."""
import pytest
from prometheus_client import REGISTRY

from core import metrics


def sample(name, **labels) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_a_stored_ping_counts_for_its_kind_only():
    before = {k: sample("cronradar_pings_total", kind=k) for k in metrics.PING_KINDS}
    metrics.ping_stored("fail")
    metrics.ping_stored("fail")
    assert {k: sample("cronradar_pings_total", kind=k) - before[k]
            for k in metrics.PING_KINDS} == {"start": 0, "success": 0, "fail": 2, "log": 0}
    with pytest.raises(KeyError):
        metrics.ping_stored("bogus")


def test_ping_buckets_are_millisecond_scale():
    before = sample("cronradar_ping_duration_seconds_bucket", le="0.002")
    below = sample("cronradar_ping_duration_seconds_bucket", le="0.001")
    metrics.PING_DURATION.observe(0.0015)
    assert sample("cronradar_ping_duration_seconds_bucket", le="0.002") == before + 1
    assert sample("cronradar_ping_duration_seconds_bucket", le="0.001") == below


def test_incidents_opened_by_cause():
    before = sample("cronradar_incidents_opened_total", cause="failed")
    metrics.incident_opened("failed", 3)
    assert sample("cronradar_incidents_opened_total", cause="failed") == before + 3


@pytest.mark.parametrize("result,finished", [("delivered", "delivered"), ("retry", None),
                                             ("failed", "failed")])
def test_a_delivery_attempt(result, finished):
    def read():
        return (sample("cronradar_delivery_attempts_total", kind="slack", result=result),
                sample("cronradar_delivery_duration_seconds_count", kind="slack"),
                sample("cronradar_delivery_duration_seconds_sum", kind="slack"),
                {s: sample("cronradar_deliveries_finished_total", status=s)
                 for s in ("delivered", "failed")})

    attempts, count, total, done = read()
    metrics.delivery_attempted("slack", result, 0.25)
    attempts2, count2, total2, done2 = read()
    assert (attempts2 - attempts, count2 - count, total2 - total) == (1, 1, 0.25)
    assert {s: done2[s] - done[s] for s in done} == {
        s: (1 if s == finished else 0) for s in done}
