"""Signed acknowledge/resolve links (alerts.links): they expire, and a forged or
foreign one is refused."""
from types import SimpleNamespace

import pytest
from django.core import signing

from alerts import links
from tests.alerts.conftest import path

pytestmark = pytest.mark.django_db


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
