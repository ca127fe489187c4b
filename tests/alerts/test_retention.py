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
