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


def test_a_link_is_what_djangos_signer_makes_with_the_current_secret_key(settings, monkeypatch):
    monkeypatch.setattr(signing, "time", SimpleNamespace(time=lambda: 1_700_000_000))
    expected = signing.TimestampSigner(salt=links.SALT).sign_object({"i": 42, "a": "resolve"})
    assert links.make(42, "resolve") == f"{settings.CRONRADAR_BASE_URL}/incident-link/{expected}/"
    settings.SECRET_KEY = "another key, another signature"
    changed = signing.TimestampSigner(salt=links.SALT).sign_object({"i": 42, "a": "resolve"})
    assert changed != expected
    assert links.make(42, "resolve").endswith(f"/incident-link/{changed}/")
    assert links.read(changed) == (42, "resolve")
