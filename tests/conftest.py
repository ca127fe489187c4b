"""Shared fixtures: a project with an API key, a monitor factory, a clock."""
from datetime import UTC, datetime, timedelta

import pytest

from monitors.models import ApiKey, Monitor, Project

T0 = datetime(2026, 1, 5, 12, 0, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _local_receivers(settings):
    """Tests' receivers listen on loopback (or are mocked): let deliveries reach them."""
    settings.CRONRADAR_BLOCK_PRIVATE_ADDRESSES = False


def send_due(now=None, client=None) -> int:
    """Run the delivery engine (alerts.delivery: claim due rows, send, write the
    outcome) on this thread until nothing is due at ``now`` (default: the current
    time); returns how many attempts were made. Retries land after ``now``."""
    from django.utils import timezone

    from alerts.delivery import claim_due, send

    clock = (lambda: now) if now is not None else timezone.now
    made = 0
    while claims := claim_due(clock(), 100):
        for claim in claims:
            send(claim, client=client, clock=clock)
            made += 1
    return made


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
    from alerts.models import Alerting
    from monitors.evaluator import rearm

    def make(created=T0, channels=(), all_channels=False, **fields):
        fields.setdefault("name", f"job-{Monitor.objects.count() + 1}")
        fields.setdefault("slug", fields["name"])
        fields.setdefault("grace", timedelta(seconds=1))
        if fields.get("kind", "interval") == "interval":
            fields.setdefault("period", timedelta(seconds=3))
        m = Monitor(project=project, **fields)
        rearm(m, created)
        m.save()
        if not all_channels:
            Alerting.objects.create(monitor=m, all_channels=False).channels.set(channels)
        return m

    return make
