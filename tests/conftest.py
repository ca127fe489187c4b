"""Shared fixtures: a project with an API key, a monitor factory, a clock; the
Hypothesis profile; a guard that turns a hang into a failure. More helpers that
test modules of several folders share are in tests/helpers.py; what one folder's
tests share is in its own conftest.py."""
import contextlib
import os
import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import respx.mocks
from hypothesis import settings as hypothesis_settings

from accounts.models import ApiKey, Organisation
from core.transport import Urllib3Transport
from monitors.models import Monitor

T0 = datetime(2026, 1, 5, 12, 0, 0, tzinfo=UTC)
S = timedelta(seconds=1)
DATA = Path(__file__).parent / "data"


def s(n):
    return timedelta(seconds=n)


# In CI (CI or HYPOTHESIS_PROFILE=ci) property tests draw the same examples every
# run, so a red build can be reproduced; locally they explore.
hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
hypothesis_settings.register_profile("dev")
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE")
                                 or ("ci" if os.environ.get("CI") else "dev"))


class _SenderMocker(respx.mocks.HTTPCoreMocker):
    """respx's default mocker (httpcore's pools, which httpx's own transport uses),
    and also the sender's transport (core.transport.Urllib3Transport, no httpcore
    under it): a ``respx.mock`` answers notifications too, behind the SSRF guard
    as before."""

    name = "cronradar"
    targets = [*respx.mocks.HTTPCoreMocker.targets, "core.transport.Urllib3Transport"]

    @classmethod
    def prepare_sync_request(cls, httpx_request, **kwargs):
        if isinstance(kwargs["request"], httpx.Request):
            httpx_request.read()
            return httpx_request, kwargs
        return super().prepare_sync_request(httpx_request, **kwargs)

    @classmethod
    def to_httpx_request(cls, **kwargs):
        if isinstance(kwargs["request"], httpx.Request):
            return kwargs["request"]
        return super().to_httpx_request(**kwargs)

    @classmethod
    def from_sync_httpx_response(cls, httpx_response, target, **kwargs):
        if isinstance(target, Urllib3Transport):
            return httpx_response
        return super().from_sync_httpx_response(httpx_response, target, **kwargs)


respx.mocks.DEFAULT_MOCKER = _SenderMocker.name


@contextlib.contextmanager
def hang_guard(seconds: float):
    """Raise TimeoutError if the block runs longer than ``seconds`` (wall clock,
    main thread only): a reference implementation that hangs fails the test
    instead of hanging the run. Not a time limit on the code under test."""
    def expire(signum, frame):
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(autouse=True)
def _local_receivers(settings):
    """Tests' receivers listen on loopback (or are mocked): let deliveries reach them."""
    settings.CRONRADAR_BLOCK_PRIVATE_ADDRESSES = False


@pytest.fixture(autouse=True)
def _probe_reads_inline(settings):
    """The probes' database reads run on the test's thread (cronradar.guard): the
    test's transaction, and its rows, are that thread's. Tests of the bounded
    wait set CRONRADAR_READY_TIMEOUT themselves."""
    settings.CRONRADAR_READY_TIMEOUT = 0


@pytest.fixture(autouse=True)
def _fresh_cache(settings):
    """Rate-limit counters start at zero in every test (ids repeat across tests): a
    cache namespace of its own (Redis is never flushed: Celery's broker is there)."""
    import uuid

    from monitors import ratelimit

    ratelimit.MEMORY.clear()  # the embedded default's counters, and what pings count against
    ratelimit.forget()
    fresh = uuid.uuid4().hex
    settings.CACHES = {"default": {**settings.CACHES["default"], "KEY_PREFIX": fresh,
                                   "LOCATION": settings.CACHES["default"].get("LOCATION",
                                                                              fresh)}}


def send_due(now=None, transport=None) -> int:
    """Run the delivery engine (alerts.delivery: claim due rows, send, write the
    outcome) on this thread until nothing is due at ``now`` (default: the current
    time); returns how many attempts were made. Retries land after ``now``."""
    from django.utils import timezone

    from alerts.delivery import claim_due, send

    clock = (lambda: now) if now is not None else timezone.now
    made = 0
    while claims := claim_due(clock(), 100):
        for claim in claims:
            send(claim, transport=transport, clock=clock)
            made += 1
    return made


HOOK = "https://hook.test/h"


@pytest.fixture
def hook(project):
    """A webhook channel of ``project`` to :data:`HOOK` (secret "k")."""
    from alerts.models import Channel

    return Channel.objects.create(project=project, kind="webhook",
                                  config={"url": HOOK, "secret": "k"})


@pytest.fixture
def hook_http():
    """respx router answering 200 at :data:`HOOK`; add routes for other receivers."""
    import httpx
    import respx

    with respx.mock(assert_all_called=False) as router:
        router.post(HOOK).mock(return_value=httpx.Response(200))
        yield router


def hook_bodies(router, now) -> list[dict]:
    """Send what is due at ``now``, then every JSON body the router received so far."""
    import json

    send_due(now)
    return [json.loads(c.request.content) for c in router.calls]


def new_project(name: str):
    """A project ``name`` in an organisation of its own (another tenant)."""
    return Organisation.objects.create(name=name).projects.create(name=name)


@pytest.fixture
def project(db):
    return new_project("acme")


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
    from monitors.runs import rearm

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
