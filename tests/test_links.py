"""Signed acknowledge/resolve links: GET shows, POST acts, once; they expire."""
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.core import signing

from alerts import links
from alerts.models import Incident
from monitors.pings import PingInput, ingest
from tests.conftest import T0

pytestmark = pytest.mark.django_db


@pytest.fixture
def incident(make_monitor):
    m = make_monitor(period=timedelta(seconds=3600), grace=timedelta(seconds=60))
    ingest(m.pk, PingInput("fail"), T0)
    return Incident.objects.get()


def path(url):
    return url.removeprefix("http://127.0.0.1:8000")


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


def test_old_and_forged_links_are_refused(client, incident, settings, monkeypatch):
    url = path(links.make(incident.pk, "ack"))
    settings.CRONRADAR_LINK_MAX_AGE = 60
    real = signing.time.time
    monkeypatch.setattr(signing, "time", SimpleNamespace(time=lambda: real() + 61))
    expired = client.post(url)
    assert expired.status_code == 400 and b"This link has expired" in expired.content
    forged = client.get(url[:-5] + "xxxx/")
    assert forged.status_code == 400 and b"not valid" in forged.content
    other = signing.TimestampSigner(salt="something else").sign_object(
        {"i": incident.pk, "a": "ack"})
    assert client.post(f"/incident-link/{other}/").status_code == 400
    incident.refresh_from_db()
    assert incident.acknowledged_at is None
