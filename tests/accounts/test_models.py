"""accounts.models: API keys from before keyed hashing, and keys across a rotated
SECRET_KEY."""
import hashlib

import pytest

from accounts.models import ApiKey
from tests.helpers import as_key

pytestmark = pytest.mark.django_db


def test_a_key_from_before_keyed_hashing_works_and_is_rehashed(project):
    key = "cr_" + "x" * 40
    row = ApiKey.objects.create(project=project, name="old", scheme="sha256",
                                key_hash=hashlib.sha256(key.encode()).hexdigest(),
                                prefix=key[:8])
    assert as_key(key).get("/api/v1/monitors/").status_code == 200
    row.refresh_from_db()
    assert (row.scheme, row.prefix, row.key_hash) == ("hmac", key[:12], ApiKey.keyed_hash(key))
    assert as_key(key).get("/api/v1/monitors/").status_code == 200
    assert as_key(key[:-1] + "y").get("/api/v1/monitors/").status_code == 401


def test_a_rotated_secret_key_keeps_keys_working_through_the_fallbacks(project, settings):
    _, key = ApiKey.issue(project)
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "a-new-secret-key-" + "z" * 40
    assert as_key(key).get("/api/v1/monitors/").status_code == 200
