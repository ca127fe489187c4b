"""The dashboard tests' people and world: signed-in clients of each role, a monitor
that failed (an open incident, a delivery), a channel and a policy."""
import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from accounts.models import Membership, Profile
from alerts.models import Channel, EscalationPolicy, EscalationTier, Incident
from monitors.pings import PingInput, ingest
from tests.conftest import S


def signed_in(project, role="admin", name=None) -> Client:
    name = name or role
    user = get_user_model().objects.create_user(name, f"{name}@example.com", "pw-" + name)
    Membership.objects.create(organisation=project.organisation, user=user, role=role)
    Profile.objects.create(user=user, timezone="Europe/Berlin")
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def admin(project):
    return signed_in(project)


@pytest.fixture
def world(project, make_monitor):
    """A monitor that failed (an open incident, a delivery), a channel, a policy."""
    hook = Channel.objects.create(project=project, kind="webhook", name="ops-hook",
                                  config={"url": "https://hook.test/h", "secret": "s3cret"})
    now = timezone.now()
    m = make_monitor(name="nightly-backup", kind="cron", schedule="0 3 * * *",
                     timezone="Europe/Berlin", grace=600 * S, max_runtime=3600 * S,
                     created=now - timedelta(days=2), channels=[hook], tags=["db"])
    ingest(m.pk, PingInput("start"), now - 100 * S)
    ingest(m.pk, PingInput("fail", exit_status=3, body=b"disk full"), now - 40 * S)
    policy = EscalationPolicy.objects.create(project=project, name="on-call")
    EscalationTier.objects.create(policy=policy, position=0, delay=0 * S).channels.set([hook])
    return {"monitor": m, "hook": hook, "policy": policy,
            "incident": Incident.objects.get(monitor=m)}


def text(resp) -> str:
    return re.sub(r"\s+", " ", resp.content.decode())
