"""A database made by the last release migrates forward with its data."""
import json
import subprocess
import sys

import pytest

from tests.live import ROOT

pytestmark = pytest.mark.live

UPGRADE = r"""
import json, django
from datetime import timedelta
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone
django.setup()

RELEASED = [("monitors", "0002_run_deadline_unchecked_index"),
            ("alerts", "0003_delivery_claimed_at")]
for app, name in RELEASED:
    call_command("migrate", app, name, verbosity=0)
old = MigrationExecutor(connection).loader.project_state(RELEASED).apps
Project, Monitor = old.get_model("monitors", "Project"), old.get_model("monitors", "Monitor")
Channel, Incident = old.get_model("alerts", "Channel"), old.get_model("alerts", "Incident")
Event, Delivery = old.get_model("alerts", "IncidentEvent"), old.get_model("alerts", "Delivery")
p = Project.objects.create(name="acme", ping_key="k")
import hashlib
old.get_model("monitors", "ApiKey").objects.create(
    project=p, key_hash=hashlib.sha256(b"cr_oldkey0123456789").hexdigest(),
    prefix="cr_oldke")
a, b = (Channel.objects.create(project=p, kind="webhook", config={"url": "http://x", "secret": "s"})
        for _ in range(2))
every = Monitor.objects.create(project=p, name="e", slug="e", grace=timedelta(0),
                               period=timedelta(60))
one = Monitor.objects.create(project=p, name="o", slug="o", grace=timedelta(5),
                             period=timedelta(60))
every.channels.set([a, b]); one.channels.set([b])
none = Monitor.objects.create(project=p, name="n", slug="n", grace=timedelta(5),
                              period=timedelta(60))
inc = Incident.objects.create(monitor=one, cause="failed", summary="x", opened_at=timezone.now())
ev = Event.objects.create(incident=inc, kind="opened", at=inc.opened_at)
d = Delivery.objects.create(event=ev, channel=b, status="sending")

call_command("migrate", verbosity=0)
from alerts.models import Alerting, Delivery as NewDelivery
from accounts.models import ApiKey, Project as NewProject
from monitors.models import Monitor as NewMonitor
print(json.dumps({
    "old_key": ApiKey.find("cr_oldkey0123456789").project.name,
    "organisation": [(p.name, p.organisation.name) for p in NewProject.objects.all()],
    "grace": NewMonitor.objects.get(slug="e").grace.total_seconds(),
    "alerting": sorted([(x.monitor.slug, x.all_channels, sorted(c.pk for c in x.channels.all()))
                        for x in Alerting.objects.all()]),
    "delivery": [NewDelivery.objects.get(pk=d.pk).incident_id == inc.pk,
                 NewDelivery.objects.get(pk=d.pk).status,
                 NewDelivery.objects.get(pk=d.pk).next_attempt_at is not None],
    "channel_b": b.pk,
}))
"""


def test_a_database_of_the_last_release_migrates_forward_with_its_data(tmp_path):
    env = {"CRONRADAR_DATA_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "cronradar.settings",
           "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", UPGRADE], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["grace"] == 1.0  # grace is at least 1 s now
    # "every" had all channels and "none" had none: both follow the project's
    # channels (no row needed); "one" keeps its list, now in alerts.Alerting
    assert result["alerting"] == [["o", False, [result["channel_b"]]]]
    assert result["delivery"] == [True, "pending", True]  # due again, with its incident
    assert result["organisation"] == [["acme", "acme"]]  # each project got an organisation
    assert result["old_key"] == "acme"  # a key made before keyed hashing still works
