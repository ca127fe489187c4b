"""alerts.backlog: how far behind the delivery engine is (only rows it could claim
now count), the active deliveries by status, the failing channels."""
import pytest

from alerts import backlog
from alerts.models import Delivery, IncidentEvent
from tests.alerts.conftest import NOW, new_delivery, new_incident, webhook
from tests.conftest import s

pytestmark = pytest.mark.django_db


def due(incident, channel, at, **fields):
    d = new_delivery(incident, channel, at=at)
    Delivery.objects.filter(pk=d.pk).update(**fields)
    return d


def test_the_oldest_claimable_is_the_earliest_due_active_row(monitor, project):
    hook = webhook(project)
    assert backlog.oldest_claimable(NOW) is None  # no delivery
    due(new_incident(monitor), hook, NOW - s(5))
    due(new_incident(monitor), hook, NOW - s(30), status="sending")  # an expired claim
    due(new_incident(monitor), hook, NOW + s(10), status="sending")  # a claim in flight
    due(new_incident(monitor), hook, NOW - s(90), status="delivered")
    due(new_incident(monitor), hook, NOW - s(80), status="failed")
    due(new_incident(monitor), hook, NOW + s(20))  # a retry not due yet
    assert backlog.oldest_claimable(NOW) == NOW - s(30)
    assert backlog.oldest_claimable(NOW - s(31)) is None  # nothing was due yet then


def test_a_rate_limited_retry_does_not_count(monitor, project):
    hook = webhook(project)
    due(new_incident(monitor), hook, NOW - s(600), rate_limited=True)
    assert backlog.oldest_claimable(NOW) is None
    due(new_incident(monitor), hook, NOW - s(2))
    assert backlog.oldest_claimable(NOW) == NOW - s(2)


def test_a_row_behind_an_earlier_one_of_its_incident_and_channel_does_not_count(monitor,
                                                                               project):
    hook, other = webhook(project), webhook(project, "https://other.example.com/h")
    incident = new_incident(monitor)
    first = due(incident, hook, NOW + s(60))  # a retry waiting
    due(incident, hook, NOW - s(400))  # the resolution, due long ago, must wait for it
    assert backlog.oldest_claimable(NOW) is None
    due(incident, other, NOW - s(100))  # the same incident to another channel goes on
    due(new_incident(monitor), hook, NOW - s(50))  # another incident to the same channel
    assert backlog.oldest_claimable(NOW) == NOW - s(100)
    Delivery.objects.filter(pk=first.pk).update(status="delivered")
    assert backlog.oldest_claimable(NOW) == NOW - s(400)  # no longer waiting


def test_a_row_to_a_failing_channel_does_not_count(monitor, project):
    hook, other = webhook(project), webhook(project, "https://other.example.com/h")
    hook.failing_since = NOW - s(3600)
    hook.save(update_fields=["failing_since"])
    due(new_incident(monitor), hook, NOW - s(3000))
    assert backlog.oldest_claimable(NOW) is None
    due(new_incident(monitor), other, NOW - s(7))
    assert backlog.oldest_claimable(NOW) == NOW - s(7)


def test_a_notice_of_no_incident_counts(project):
    event = IncidentEvent.objects.create(incident=None, kind="outage.summary", at=NOW)
    Delivery.objects.create(event=event, incident=None, channel=webhook(project),
                            created_at=NOW, next_attempt_at=NOW - s(9))
    assert backlog.oldest_claimable(NOW) == NOW - s(9)


def test_active_counts_are_pending_and_sending_only(monitor, project):
    hook = webhook(project)
    assert backlog.active_counts() == {"pending": 0, "sending": 0}
    for status in ("pending", "pending", "sending", "delivered", "failed", "failed"):
        due(new_incident(monitor), hook, NOW, status=status)
    assert backlog.active_counts() == {"pending": 2, "sending": 1}


def test_channels_failing_counts_those_not_deleted(project):
    assert backlog.channels_failing() == 0
    failing, gone, well = (webhook(project, f"https://{n}.example.com/h")
                           for n in ("failing", "gone", "well"))
    failing.failing_since = gone.failing_since = NOW
    failing.save()
    gone.deleted_at = NOW
    gone.save()
    assert backlog.channels_failing() == 1
