"""alerts.incidents: failure and recovery thresholds, one open incident per monitor,
and raising an incident's cause (slow to failed) with its severity, threshold and
maintenance windows."""
import pytest

from alerts.models import Alerting, Incident, IncidentEvent, MaintenanceWindow
from monitors import evaluator
from monitors.models import Run
from monitors.pings import PingInput, ingest
from tests.conftest import T0, hook_bodies, s
from tests.helpers import runs_of, slot, slow_monitor

pytestmark = pytest.mark.django_db


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


def test_one_open_incident_per_monitor(make_monitor):
    m = make_monitor(concurrency="forbid")
    ingest(m.pk, PingInput("fail"), T0 + s(1))
    ingest(m.pk, PingInput("start"), T0 + s(2))
    ingest(m.pk, PingInput("start"), T0 + s(3))
    inc = Incident.objects.get(monitor=m)
    assert [e.kind for e in inc.events.all()] == ["opened", "overlap"]


def test_a_slow_run_does_not_resolve_a_failure(make_monitor):
    m = slow_monitor(make_monitor)
    runs_of(m, [60] * 20 + [-10, 500])
    incident = Incident.objects.get()
    assert (incident.cause, incident.severity, incident.resolved_at) == ("failed", "critical",
                                                                        None)
    assert [e.kind for e in incident.events.order_by("at", "id")] == ["opened", "slow"]


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


def test_skipped_and_double_launch_rank_with_slow(make_monitor):
    """A double launch while a skipped incident is open is counted (the same, lowest
    rank); a failure raises it to failed, critical."""
    from alerts import incidents
    from monitors.detections import Detection

    m = make_monitor()
    incidents.apply(m, [Detection("skipped", T0, "the 12:00 run was skipped: …",
                                  detail={"last_slot": T0.isoformat()})])
    incidents.apply(m, [Detection("double_launch", T0 + s(1), "run 2 of the 12:00 slot …",
                                  detail={"slot": T0.isoformat()})])
    incident = Incident.objects.get()
    assert (incident.cause, incident.severity) == ("skipped", "warning")
    incidents.apply(m, [Detection("failed", T0 + s(2), "run failed")])
    incident.refresh_from_db()
    assert (incident.cause, incident.severity) == ("failed", "critical")
    assert [(e.kind, e.message) for e in incident.events.all()] == [
        ("opened", "the 12:00 run was skipped: …"),
        ("double_launch", "run 2 of the 12:00 slot …"), ("failed", "run failed"),
        ("escalated", "cause raised from skipped to failed, severity critical: run failed")]
    # raised, it still waits for a run after the skipped slot, of a later slot
    recovered = {"run": 1, "slot": T0.isoformat(), "first_ping": (T0 + s(5)).isoformat()}
    incidents.apply(m, [Detection("recovered", T0 + s(6), "a run succeeded", detail=recovered)])
    assert Incident.objects.get().resolved_at is None  # the double-launched slot's run
    later = {**recovered, "slot": (T0 + s(3600)).isoformat()}
    incidents.apply(m, [Detection("recovered", T0 + s(3601), "a run succeeded", detail=later)])
    assert Incident.objects.get().resolved_at == T0 + s(3601)
