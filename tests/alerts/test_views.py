"""The signed-link page (alerts.views): GET shows, POST acts, once."""
import pytest

from alerts import links
from tests.alerts.conftest import path

pytestmark = pytest.mark.django_db


def test_opening_a_link_changes_nothing_and_the_button_acknowledges_once(client, incident):
    url = path(links.make(incident.pk, "ack"))
    page = client.get(url)
    assert page.status_code == 200
    assert b"Acknowledge this incident" in page.content
    assert b'<form method="post">' in page.content
    incident.refresh_from_db()
    assert incident.acknowledged_at is None  # a mail scanner's GET did nothing
    done = client.post(url)
    assert done.status_code == 200 and b"Acknowledged at" in done.content
    incident.refresh_from_db()
    assert incident.acknowledged_by == "a signed link"
    assert incident.events.get(kind="acknowledged").message == "acknowledged by a signed link"
    again = client.post(url)  # works once: the second time it only says what happened
    assert b"Acknowledged at" in again.content
    assert incident.events.filter(kind="acknowledged").count() == 1


def test_a_resolve_link(client, incident):
    client.post(path(links.make(incident.pk, "resolve")))
    incident.refresh_from_db()
    assert incident.resolution == "resolved by a signed link"
