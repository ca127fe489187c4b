"""core.checks: production refuses the default key, any host and no SSRF guard."""
import pytest

from tests.helpers import _settings_env

pytestmark = pytest.mark.django_db


def test_production_refuses_the_default_key_any_host_and_no_ssrf_guard(tmp_path):
    rc, out = _settings_env(CRONRADAR_ENV="production", CRONRADAR_DATA_DIR=str(tmp_path),
                            CRONRADAR_BLOCK_PRIVATE_ADDRESSES="false")
    assert rc != 0
    assert "cronradar.E001" in out and "cronradar.E002" in out and "cronradar.E003" in out
    rc, out = _settings_env(CRONRADAR_ENV="production", CRONRADAR_DATA_DIR=str(tmp_path),
                            SECRET_KEY="x" * 50, ALLOWED_HOSTS="cron.example.com")
    assert rc == 0, out
