"""Maintenance windows: notifications held back, incidents still recorded, the
first notification when the window ends if the incident is still open."""
import httpx
import pytest

from alerts.models import Channel, EscalationPolicy, EscalationTier, Incident, MaintenanceWindow
from monitors import evaluator
from monitors.pings import PingInput, ingest
from tests.conftest import T0, hook_bodies, s

pytestmark = pytest.mark.django_db


def events(hook_http, now):
    return [b["event"] for b in hook_bodies(hook_http, now)]


def test_an_incident_in_a_window_is_notified_when_it_ends(project, hook, make_monitor, hook_http):
    m = make_monitor(period=s(3600), grace=s(60), channels=[hook], tags=["db"])
    MaintenanceWindow.objects.create(project=project, name="upgrade", tag="db",
                                     starts_at=T0 - s(60), ends_at=T0 + s(600))
    ingest(m.pk, PingInput("fail"), T0)
    incident = Incident.objects.get()  # recorded
    assert incident.events.get(kind="opened").detail["suppressed"] == (
        "maintenance window 'upgrade' until 2026-01-05T12:10:00+00:00")
    assert (incident.tier, incident.next_escalation_at) == (-1, T0 + s(600))
    evaluator.tick(T0 + s(599))
    assert events(hook_http, T0 + s(599)) == []  # held back
    evaluator.tick(T0 + s(600))
    assert events(hook_http, T0 + s(600)) == ["incident.escalated"]
    assert Incident.objects.get().events.get(step="tier:0:0").message == (
        "notified: its maintenance window ended")


def test_an_incident_resolved_inside_the_window_is_never_notified(project, hook, make_monitor,
                                                                  hook_http):
    m = make_monitor(period=s(3600), grace=s(60), channels=[hook])
    MaintenanceWindow.objects.create(project=project, name="w", monitor=m,
                                     starts_at=T0 - s(60), ends_at=T0 + s(600))
    ingest(m.pk, PingInput("fail"), T0)
    ingest(m.pk, PingInput("success"), T0 + s(100))
    evaluator.tick(T0 + s(700))
    assert events(hook_http, T0 + s(700)) == []
    assert Incident.objects.get().resolved_at == T0 + s(100)


def test_a_recurring_window_holds_escalation_steps(project, hook, make_monitor, hook_http):
    other = Channel.objects.create(project=project, kind="webhook",
                                   config={"url": "https://two.test/h", "secret": "k"})
    hook_http.post("https://two.test/h").mock(return_value=httpx.Response(200))
    policy = EscalationPolicy.objects.create(project=project, name="p")
    EscalationTier.objects.create(policy=policy, position=0, delay=s(0)).channels.set([hook])
    EscalationTier.objects.create(policy=policy, position=1, delay=s(300)).channels.set([other])
    m = make_monitor(period=s(3600), grace=s(60), all_channels=True)
    from alerts.models import Alerting

    Alerting.objects.create(monitor=m, escalation_policy=policy)
    m.refresh_from_db()
    ingest(m.pk, PingInput("fail"), T0)  # tier 1 at once; tier 2 due at T0+300
    # every day from 12:02 UTC for 30 minutes
    MaintenanceWindow.objects.create(project=project, name="daily", monitor=m,
                                     schedule="2 12 * * *", duration=s(1800))
    evaluator.tick(T0 + s(300))
    incident = Incident.objects.get()
    assert (incident.tier, incident.next_escalation_at) == (0, T0 + s(120 + 1800))
    evaluator.tick(T0 + s(1920))
    assert events(hook_http, T0 + s(1920)) == ["incident.opened", "incident.escalated"]
