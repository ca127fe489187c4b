"""alerts.integrations.common: event kinds that do not notify are refused by every
kind."""
import pytest

from alerts.integrations import KINDS
from alerts.models import IncidentEvent
from tests.alerts.integrations.conftest import OPENED, SECRET, channel


@pytest.mark.parametrize("kind", ["webhook", "slack", "pagerduty"])
def test_non_notifying_event_kinds_are_refused(project, incident, kind):
    event = IncidentEvent.objects.create(incident=incident, kind="missed", at=OPENED)
    ch = channel(project, kind, url="https://x.test/", secret=SECRET, routing_key="k")
    with pytest.raises(ValueError, match="event kind 'missed' does not notify"):
        KINDS[kind].build_request(ch, event)
