"""``manage.py prune``."""
from io import StringIO

import pytest
from django.core.management import call_command

from monitors.models import Ping, PruneCursor
from tests.helpers import (
    heartbeats,
    small,  # noqa: F401 (autouse)
)

pytestmark = pytest.mark.django_db


def test_the_prune_command_with_all_looks_at_every_monitor(make_monitor):
    a = make_monitor()
    heartbeats(a, 9, body=b"x")  # ping rows on both databases
    PruneCursor.objects.update_or_create(name="pings", defaults={"position": 10**9})
    PruneCursor.objects.update_or_create(name="runs", defaults={"position": 10**9})
    out = StringIO()
    call_command("prune", stdout=out)
    assert Ping.objects.filter(monitor=a).count() == 9  # past the cursor: not looked at
    call_command("prune", "--all", stdout=out)
    assert Ping.objects.filter(monitor=a).count() == 5
    assert "deleted 4 pings, 5 runs and 0 incidents/outages" in out.getvalue()
