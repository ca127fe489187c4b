"""Shared fixtures: a project with an API key, a monitor factory, a clock."""
from datetime import UTC, datetime, timedelta

import pytest

from monitors.models import ApiKey, Monitor, Project

T0 = datetime(2026, 1, 5, 12, 0, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _fast_inline_delivery(settings):
    """Deliver notifications synchronously at commit, with tiny backoff."""
    settings.CRONRADAR_DELIVERY_INLINE = True
    settings.CRONRADAR_DELIVERY_BACKOFF = 0.01
    settings.CRONRADAR_BLOCK_PRIVATE_ADDRESSES = False


@pytest.fixture
def project(db):
    return Project.objects.create(name="acme")


@pytest.fixture
def api_key(project):
    return ApiKey.issue(project)[1]


@pytest.fixture
def api(api_key):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key}")
    return client


@pytest.fixture
def make_monitor(project):
    """make_monitor(**fields) -> Monitor, armed as the API would at ``created`` (default T0).

    It notifies the ``channels`` given (none by default); pass ``all_channels=True``
    to follow every channel of the project as the API's default does."""
    from monitors.evaluator import rearm

    def make(created=T0, channels=(), **fields):
        fields.setdefault("name", f"job-{Monitor.objects.count() + 1}")
        fields.setdefault("slug", fields["name"])
        fields.setdefault("grace", timedelta(seconds=1))
        fields.setdefault("all_channels", False)
        if fields.get("kind", "interval") == "interval":
            fields.setdefault("period", timedelta(seconds=3))
        m = Monitor(project=project, **fields)
        rearm(m, created)
        m.save()
        m.channels.set(channels)
        return m

    return make
