"""alerts.retention: old resolved incidents go with their events, deliveries and
attempts."""
import pytest

from alerts import retention as alert_retention
from alerts.models import Channel, Delivery, DeliveryAttempt, Incident, IncidentEvent
from tests.conftest import T0
from tests.helpers import (
    DAY,
    small,  # noqa: F401 (autouse)
)

pytestmark = pytest.mark.django_db


def incident(monitor, resolved_at, status="delivered"):
    inc = Incident.objects.create(monitor=monitor, cause="missed", summary="x",
                                  opened_at=resolved_at - DAY, resolved_at=resolved_at)
    event = IncidentEvent.objects.create(incident=inc, kind="opened", at=inc.opened_at)
    channel = Channel.objects.create(project=monitor.project, kind="webhook",
                                     config={"url": "http://example.invalid"})
    delivery = Delivery.objects.create(event=event, incident=inc, channel=channel,
                                       status=status)
    DeliveryAttempt.objects.create(delivery=delivery, number=1, at=inc.opened_at)
    return inc


def test_old_resolved_incidents_go_with_their_events_deliveries_and_attempts(make_monitor):
    m = make_monitor()
    old = incident(m, T0 - 40 * DAY)
    recent = incident(m, T0 - 20 * DAY)
    sending = incident(m, T0 - 50 * DAY, status="pending")
    still_open = Incident.objects.create(monitor=m, cause="missed", summary="y",
                                         opened_at=T0 - 100 * DAY)
    assert alert_retention.prune(T0) == 1
    assert set(Incident.objects.values_list("pk", flat=True)) == {
        recent.pk, sending.pk, still_open.pk}
    assert not IncidentEvent.objects.filter(incident_id=old.pk).exists()
    assert not Delivery.objects.filter(incident_id=old.pk).exists()
    assert DeliveryAttempt.objects.count() == 2


def test_a_plans_incident_retention_overrides_the_setting(make_monitor):
    from accounts.models import Organisation, Plan
    from monitors.models import Monitor
    from tests.conftest import new_project

    short = Plan.objects.create(name="free", incident_retention_days=7)
    Plan.objects.create(name="long", incident_retention_days=60)  # nobody on it
    on_plan, other = make_monitor(), make_monitor()
    Organisation.objects.filter(pk=on_plan.project.organisation_id).update(plan=short)
    Monitor.objects.filter(pk=other.pk).update(project=new_project("no-plan"))
    other.refresh_from_db()
    gone = incident(on_plan, T0 - 10 * DAY)
    kept = incident(on_plan, T0 - 5 * DAY)
    within_setting = incident(other, T0 - 10 * DAY)  # the setting's 30 days
    past_setting = incident(other, T0 - 31 * DAY)
    assert alert_retention.prune(T0) == 2
    assert set(Incident.objects.values_list("pk", flat=True)) == {kept.pk, within_setting.pk}
    assert not Incident.objects.filter(pk__in=[gone.pk, past_setting.pk]).exists()
