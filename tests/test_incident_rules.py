"""Incident rules: failure and recovery thresholds, attempts per slot."""
from datetime import timedelta

import pytest

from alerts.models import Alerting, Incident
from monitors import evaluator
from monitors.models import Run
from monitors.pings import PingInput, ingest
from tests.conftest import T0

pytestmark = pytest.mark.django_db


def s(n):
    return timedelta(seconds=n)


def with_thresholds(make_monitor, failure=1, recovery=1, **fields):
    fields.setdefault("period", s(60))
    fields.setdefault("grace", s(5))
    m = make_monitor(**fields)
    Alerting.objects.filter(monitor=m).update(failure_threshold=failure,
                                              recovery_threshold=recovery)
    m.refresh_from_db()
    return m


def test_an_incident_opens_after_the_failure_threshold(make_monitor):
    m = with_thresholds(make_monitor, failure=3)
    ingest(m.pk, PingInput("fail"), T0)
    ingest(m.pk, PingInput("fail"), T0 + s(60))
    assert not Incident.objects.exists()  # under the threshold: history only
    assert Run.objects.filter(outcome="failed").count() == 2
    ingest(m.pk, PingInput("success"), T0 + s(120))  # a good run breaks the streak
    ingest(m.pk, PingInput("fail"), T0 + s(180))
    ingest(m.pk, PingInput("fail"), T0 + s(240))
    assert not Incident.objects.exists()
    ingest(m.pk, PingInput("fail"), T0 + s(300))
    assert Incident.objects.get().opened_at == T0 + s(300)


def test_missed_slots_count_towards_the_threshold(make_monitor):
    m = with_thresholds(make_monitor, failure=2)
    ingest(m.pk, PingInput("success"), T0)
    evaluator.tick(T0 + s(65))  # one missed slot
    assert not Incident.objects.exists()
    evaluator.tick(T0 + s(125))  # two in a row
    assert Incident.objects.get().cause == "missed"


def test_an_incident_resolves_after_the_recovery_threshold(make_monitor):
    m = with_thresholds(make_monitor, recovery=2)
    ingest(m.pk, PingInput("fail"), T0)
    ingest(m.pk, PingInput("success"), T0 + s(60))
    assert Incident.objects.get().resolved_at is None
    ingest(m.pk, PingInput("success"), T0 + s(120))
    assert Incident.objects.get().resolved_at == T0 + s(120)


def test_a_failed_attempt_a_retry_may_make_good_opens_nothing(make_monitor):
    m = make_monitor(kind="cron", schedule="0 * * * *", grace=s(300), max_attempts=3,
                     created=T0 - s(1))
    for i in range(2):  # two attempts of the T0 slot fail
        ingest(m.pk, PingInput("start"), T0 + s(10 + 100 * i))
        ingest(m.pk, PingInput("fail", exit_status=1), T0 + s(20 + 100 * i))
    assert not Incident.objects.exists()
    assert list(Run.objects.values_list("slot_at", "outcome")) == [(T0, "failed")] * 2
    ingest(m.pk, PingInput("start"), T0 + s(210))  # the last allowed attempt fails too
    ingest(m.pk, PingInput("fail", exit_status=1), T0 + s(220))
    incident = Incident.objects.get()
    assert incident.summary.endswith("run failed (exit status 1), attempt 3 of 3")


def test_a_retry_that_succeeds_keeps_the_slot_green(make_monitor):
    m = make_monitor(kind="cron", schedule="0 * * * *", grace=s(300), max_attempts=2,
                     created=T0 - s(1))
    ingest(m.pk, PingInput("start"), T0 + s(10))
    ingest(m.pk, PingInput("fail"), T0 + s(20))
    ingest(m.pk, PingInput("start"), T0 + s(30))
    ingest(m.pk, PingInput("success"), T0 + s(40))
    assert not Incident.objects.exists()


def test_rules_through_the_api(api):
    m = api.post("/api/v1/monitors/", {"name": "r", "period": 60, "grace": 5, "max_attempts": 3,
                                       "failure_threshold": 2, "recovery_threshold": 4},
                 format="json").json()
    assert (m["max_attempts"], m["failure_threshold"], m["recovery_threshold"]) == (3, 2, 4)
    for field in ("max_attempts", "failure_threshold", "recovery_threshold"):
        resp = api.patch(f"/api/v1/monitors/{m['id']}/", {field: 0}, format="json")
        assert resp.status_code == 400 and field in resp.json()


def test_attempts_of_an_interval_monitor_are_failures_in_a_row(make_monitor):
    m = make_monitor(period=s(3600), grace=s(60), max_attempts=2)
    ingest(m.pk, PingInput("fail"), T0)
    assert not Incident.objects.exists()
    ingest(m.pk, PingInput("fail"), T0 + s(30))  # the retry fails too
    assert Incident.objects.get().summary.endswith("attempt 2 of 2")
