"""Databases made by earlier releases migrate forward with their data; the
migrations go back and forth on an empty database."""
import json
import os
import subprocess
import sys
from urllib.parse import urlsplit, urlunsplit

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


# Before the house was reshaped (accounts/ moved out of monitors/, reasons coded):
# monitors 0015 and alerts 0014 were the heads.
BEFORE_ACCOUNTS = r"""
import json, django
from datetime import timedelta
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone
django.setup()

HEADS = [("monitors", "0015_ping_and_slug_indexes"), ("alerts", "0014_delivery_covered_indexes"),
         ("admin", "0003_logentry_add_action_flag_choices"), ("sessions", "0001_initial")]
for app, name in HEADS:
    call_command("migrate", app, name, verbosity=0)
old = MigrationExecutor(connection).loader.project_state(HEADS).apps
M = lambda app, name: old.get_model(app, name)
now = timezone.now().replace(microsecond=0)
user = M("auth", "User").objects.create(username="ann", email="ann@example.com")
org = M("monitors", "Organisation").objects.create(name="acme")
M("monitors", "Membership").objects.create(organisation=org, user=user, role="owner")
M("monitors", "Profile").objects.create(user=user, timezone="Europe/Berlin")
project = M("monitors", "Project").objects.create(organisation=org, name="ops", ping_key="pk1",
                                                  badge_key="bk1")
import hashlib
M("monitors", "ApiKey").objects.create(
    project=project, name="ci", key_hash=hashlib.sha256(b"cr_before0123456789").hexdigest(),
    prefix="cr_befor", scheme="sha256")
monitor = M("monitors", "Monitor").objects.create(
    project=project, name="backup", slug="backup", period=timedelta(hours=1),
    grace=timedelta(minutes=5), next_expected_at=now, next_evaluation_at=now)
run = M("monitors", "Run").objects.create(monitor=monitor, slot_at=now, started_at=now,
                                          ended_at=now, outcome="failed", exit_status=2)
M("monitors", "Ping").objects.create(monitor=monitor, run=run, received_at=now, kind="fail",
                                     method="POST", body=b"boom", body_size=4)
outage = M("monitors", "Outage").objects.create(started_at=now, ended_at=now, summarized_at=now)
impact = M("monitors", "OutageImpact").objects.create(outage=outage, project=project,
                                                      unknown_slots=3)
M("monitors", "LivenessSpan").objects.create(component="evaluator", started_at=now,
                                             last_seen_at=now)
hook = M("alerts", "Channel").objects.create(project=project, kind="webhook", name="hook",
                                            config={"url": "https://hooks.example.com/x"})
policy = M("alerts", "EscalationPolicy").objects.create(project=project, name="on-call")
tier = M("alerts", "EscalationTier").objects.create(policy=policy, position=0,
                                                   delay=timedelta(0))
tier.channels.set([hook])
alerting = M("alerts", "Alerting").objects.create(monitor=monitor, all_channels=False,
                                                 escalation_policy=policy)
alerting.channels.set([hook])
M("alerts", "MaintenanceWindow").objects.create(project=project, name="upgrade",
                                               monitor=monitor, starts_at=now,
                                               ends_at=now + timedelta(hours=1))
incident = M("alerts", "Incident").objects.create(monitor=monitor, cause="failed",
                                                 summary="backup: failed", opened_at=now)
opened = M("alerts", "IncidentEvent").objects.create(
    incident=incident, kind="opened", at=now, step="opened",
    detail={"suppressed": f"maintenance window 'upgrade' until {now.isoformat()}"})
M("alerts", "IncidentEvent").objects.create(
    incident=incident, kind="escalated", at=now, step="tier:1:0",
    detail={"tier": 2, "round": 1, "reason": "every notification of tier 1 failed"})
delivery = M("alerts", "Delivery").objects.create(event=opened, incident=incident, channel=hook,
                                                 next_attempt_at=now)
outage_delivery = M("alerts", "Delivery").objects.create(outage=impact, channel=hook,
                                                        next_attempt_at=now)
M("alerts", "DeliveryAttempt").objects.create(delivery=delivery, number=1, at=now,
                                             status_code=500, error="HTTP 500")
ContentType = M("contenttypes", "ContentType")
org_type = ContentType.objects.get(app_label="monitors", model="organisation")
M("admin", "LogEntry").objects.create(user=user, content_type=org_type, object_id=str(org.pk),
                                     object_repr="acme", action_flag=1)

def dump():
    tables = sorted(t for t in connection.introspection.table_names()
                    if t.split("_")[0] in ("monitors", "alerts", "auth", "django")
                    and t != "django_migrations")
    out = {}
    with connection.cursor() as cur:
        for table in tables:
            cur.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")
            cols = [c[0] for c in cur.description]
            rows = [dict(zip(cols, [v.hex() if isinstance(v, (bytes, memoryview)) and
                                    not isinstance(v, str) else v for v in
                                    (bytes(x) if isinstance(x, memoryview) else x for x in row)]))
                    for row in cur.fetchall()]
            out[table] = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))
    return out

before = dump()
call_command("migrate", verbosity=0)
after = dump()
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType as NewContentType
from accounts.models import ApiKey, Membership, Profile, Project
from alerts.models import Delivery, Incident, IncidentEvent
from alerts.reasons import Reason
moved = ("organisation", "membership", "profile", "project", "apikey")
as_dict = lambda v: json.loads(v) if isinstance(v, str) else v  # SQLite: JSON as text
by_id = lambda row: row["id"]
print(json.dumps({
    "tables_before": sorted(before), "tables_after": sorted(after),
    "same_rows": sorted(t for t in before if before[t] == after.get(t)),
    "changed": sorted(t for t in before if before[t] != after.get(t)),
    "rows": {t: len(r) for t, r in after.items() if r},
    "types": sorted((c["app_label"], c["model"], c["id"]) for c in after["django_content_type"]
                    if c["model"] in moved),
    "types_before": sorted((c["app_label"], c["model"], c["id"])
                           for c in before["django_content_type"] if c["model"] in moved),
    "type_count": [len(before["django_content_type"]), len(after["django_content_type"])],
    "permissions": Permission.objects.filter(content_type__app_label="accounts").count(),
    "log_entry_type": [NewContentType.objects.get_for_id(
        after["django_admin_log"][0]["content_type_id"]).app_label],
    "key": ApiKey.find("cr_before0123456789").project.organisation.name,
    "member": [(m.user.username, m.organisation.name, m.role) for m in Membership.objects.all()],
    "profile": Profile.objects.get().timezone,
    "project": [Project.objects.get().monitors.get().slug,
                Project.objects.get().channels.get().name],
    "incident": [Incident.objects.get().monitor.project.organisation.name,
                 Delivery.objects.filter(event__incident__isnull=False).get().incident_id
                 == incident.pk],
    "codes": sorted(e.detail.get("code")
                    for e in IncidentEvent.objects.filter(incident_id=incident.pk)),
    "codes_known": sorted(str(Reason(e.detail["code"]))
                          for e in IncidentEvent.objects.filter(incident_id=incident.pk)),
    "events_changed": [sorted(set(as_dict(a["detail"])) ^ set(as_dict(b["detail"])))
                       for a, b in zip(sorted(before["alerts_incidentevent"], key=by_id),
                                       sorted(after["alerts_incidentevent"], key=by_id))],
    "events_kept": [{k: v for k, v in row.items() if k not in ("detail", "project_id")}
                    for row in sorted(after["alerts_incidentevent"], key=by_id)][:2]
                   == [{k: v for k, v in row.items() if k != "detail"}
                       for row in sorted(before["alerts_incidentevent"], key=by_id)],
    "notice": [(e.kind, e.incident_id, e.project_id == project.pk, e.step, e.detail,
                e.at == now, sorted(e.deliveries.values_list("pk", flat=True)))
               for e in IncidentEvent.objects.filter(incident__isnull=True)],
    "outage_delivery": outage_delivery.pk,
    "impact": [impact.pk, outage.pk, now.isoformat().replace("+00:00", "Z")],
    "deliveries_kept": [{k: v for k, v in row.items() if k not in ("event_id", "outage_id")}
                        for row in sorted(before["alerts_delivery"], key=by_id)]
                       == [{k: v for k, v in row.items()
                            if k not in ("event_id", "rate_limited", "receipt")}
                           for row in sorted(after["alerts_delivery"], key=by_id)],
    "receipts_new": sorted({row["receipt"] for row in after["alerts_delivery"]}),
    "deliveries_new": sorted({str(row["rate_limited"]) for row in after["alerts_delivery"]}),
    # tables that only gained columns (monitors 0018, accounts 0003): the new
    # columns, and every old value as it was
    "columns_added": {t: sorted(set(after[t][0]) - set(before[t][0]))
                      for t in ("monitors_monitor", "monitors_profile", "monitors_organisation",
                                "monitors_run")},
    "columns_kept": all([{k: row[k] for k in before[t][0]}
                         for row in sorted(after[t], key=by_id)]
                        == sorted(before[t], key=by_id)
                        for t in ("monitors_monitor", "monitors_profile", "monitors_organisation",
                                  "monitors_run")),
    "organisation_new": [[row["plan_id"], row["deleted_at"]]
                         for row in after["monitors_organisation"]],
    "run_new": [[row["outcome"], row["reason"]] for row in after["monitors_run"]],
    "monitor_new": [[row["description"], row["methods"], row["n_pings"]]
                    for row in after["monitors_monitor"]],
    "verified": [row["email_verified_at"] is not None for row in after["monitors_profile"]],
    "new_types": sorted((c["app_label"], c["model"]) for c in after["django_content_type"]
                        if c["id"] not in {b["id"] for b in before["django_content_type"]}),
    "permissions_kept": all(row in after["auth_permission"]
                            for row in before["auth_permission"]),
    "channels_kept": sorted(before["alerts_channel"], key=by_id)
                     == [{k: v for k, v in row.items()
                          if k not in ("failing_check_at", "failing_notified_at", "uuid")}
                         for row in sorted(after["alerts_channel"], key=by_id)],
    "channels_new": [[row["failing_check_at"], row["failing_notified_at"], bool(row["uuid"])]
                     for row in after["alerts_channel"]],
}, default=str))
"""


def _fresh_database(tmp_path) -> tuple[dict, callable]:
    """The environment of a process that uses a database of its own, empty: a new
    SQLite file in ``tmp_path``, or with DATABASE_URL set (the PostgreSQL run) a new
    database on that server; and the function that drops it."""
    env = {"CRONRADAR_DATA_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "cronradar.settings",
           "PATH": "/usr/bin:/bin"}
    url = os.environ.get("DATABASE_URL")
    if not url:
        return env, lambda: None
    import psycopg

    name = f"cronradar_migrate_{os.getpid()}"
    parts = urlsplit(url)
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")

    def drop():
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    return {**env, "DATABASE_URL": urlunsplit(parts._replace(path=f"/{name}"))}, drop


def _run(script: str, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", script, *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_a_populated_database_moves_its_accounts_without_losing_a_row(tmp_path):
    """From the heads before accounts/ had an app of its own: every row of every
    table stays as it was (ids, foreign keys, values), but for the five content
    types, renamed in place, and the events' new reason codes."""
    env, drop = _fresh_database(tmp_path)
    try:
        proc = _run(BEFORE_ACCOUNTS, env)
    finally:
        drop()
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    # none dropped; made: monitors 0019's chores (the watchdog's claim row) and
    # monitors 0020's ping usage (the accounts app's new tables are accounts_*, not
    # among the ones dumped)
    assert sorted(set(got["tables_after"]) - set(got["tables_before"])) == [
        "monitors_chore", "monitors_pingusage"]
    assert set(got["tables_before"]) <= set(got["tables_after"])
    assert got["changed"] == ["alerts_channel", "alerts_delivery", "alerts_incidentevent",
                              "auth_permission", "django_content_type", "monitors_monitor",
                              "monitors_organisation", "monitors_profile", "monitors_run"]
    assert {"monitors_membership", "monitors_project", "monitors_apikey",
            "monitors_ping", "alerts_deliveryattempt",
            "django_admin_log"} <= set(got["same_rows"])
    # monitors 0018, 0020 and accounts 0003-0006 add columns and keep every value
    # (no plan, not deleted, a failed run has no reason); every person
    # there was is verified; the permissions there were stay, the new models' join
    assert got["columns_added"] == {"monitors_monitor": ["description", "methods", "n_pings",
                                                         "refused_since", "refused_until"],
                                    "monitors_profile": ["email_verified_at", "theme"],
                                    "monitors_organisation": ["deleted_at", "plan_id"],
                                    # monitors 0023: a heartbeat's ping kept in its run
                                    "monitors_run": ["ping_method", "ping_remote_addr",
                                                     "ping_user_agent", "reason"]}
    assert got["columns_kept"] and got["monitor_new"] == [["", "", 0]]
    assert got["organisation_new"] == [[None, None]]
    assert got["run_new"] == [["failed", ""]]
    assert got["verified"] == [True] and got["permissions_kept"]
    assert got["new_types"] == [["accounts", "auditentry"], ["accounts", "invitation"],
                                ["accounts", "plan"], ["accounts", "setuptoken"],
                                ["monitors", "chore"], ["monitors", "pinglog"],
                                ["monitors", "pingusage"]]
    assert got["rows"]["monitors_apikey"] == got["rows"]["alerts_deliveryattempt"] == 1
    assert got["rows"]["alerts_delivery"] == 2
    # the same content type rows, relabelled: permissions and the admin log follow
    assert [(label, model) for label, model, _ in got["types"]] == [
        ("accounts", m) for m in ("apikey", "membership", "organisation", "profile", "project")]
    assert [i for *_, i in got["types"]] == [i for *_, i in got["types_before"]]
    assert got["type_count"][0] + 7 == got["type_count"][1]  # the seven new_types
    assert got["permissions"] == 9 * 4 and got["log_entry_type"] == ["accounts"]
    assert got["key"] == "acme"  # an old key still finds its project
    assert got["member"] == [["ann", "acme", "owner"]] and got["profile"] == "Europe/Berlin"
    assert got["project"] == ["backup", "hook"] and got["incident"] == ["acme", True]
    assert got["codes"] == ["all_failed", "maintenance"] == got["codes_known"]
    assert got["events_changed"] == [["code"], ["code"]]  # only the code was added
    assert got["events_kept"] and got["deliveries_kept"]  # every other value as it was
    # alerts 0018, 0019: channels and deliveries gain columns (a channel its uuid),
    # nothing else of them changes
    assert got["channels_kept"] and got["channels_new"] == [[None, None, True]]
    assert got["deliveries_new"] in (["False"], ["0"])  # not held back by a 429
    assert got["receipts_new"] == [""]  # alerts 0022: no Pushover receipt to cancel
    # the outage delivery (alerts 0017): one outage.summary notice of its impact, from
    # the one sequence of event ids, and the delivery points at it
    impact, outage, at = got["impact"]
    assert got["notice"] == [["outage.summary", None, True, f"outage:{impact}", {
        "impact": impact, "outage": outage, "started_at": at, "ended_at": at,
        "unknown_slots": 3}, True, [got["outage_delivery"]]]]


ZERO_AND_BACK = """
import sys, django
from django.core.management import call_command
from django.db import connection
django.setup()
call_command("migrate", verbosity=0)
from datetime import timedelta
from django.db.migrations.executor import MigrationExecutor
tables = lambda: set(connection.introspection.table_names())
for app in sys.argv[1:]:
    before = tables()
    call_command("migrate", app, "zero", verbosity=0)
    dropped = before - tables()
    call_command("migrate", verbosity=0)
    executor = MigrationExecutor(connection)
    left = executor.migration_plan(executor.loader.graph.leaf_nodes())
    print(app, sorted({t.split("_")[0] for t in dropped}), tables() == before, len(left))
from accounts.models import Organisation, Project
from monitors.models import Monitor
p = Project.objects.create(organisation=Organisation.objects.create(name="o"), name="p")
print("monitor", Monitor.objects.create(project=p, name="m", slug="m", period=timedelta(60),
                                        grace=timedelta(5)).project.organisation.name)
"""


def test_each_app_migrates_to_zero_and_back_on_an_empty_database(tmp_path):
    env, drop = _fresh_database(tmp_path)
    try:
        proc = _run(ZERO_AND_BACK, env, "accounts", "alerts", "monitors")
    finally:
        drop()
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split("\n")
    # accounts' moved models keep the monitors_* tables: its zero drops its own
    # (accounts 0003's invitations and setup tokens) and monitors 0019's chores
    # (after monitors 0018, which needs accounts); the monitors and alerts
    # migrations interleave (monitors/0004 copies a relation into alerts/0007), so
    # either one's zero takes both, and accounts (0001 needs monitors' tables); each
    # comes back whole
    assert lines[:4] == ["accounts ['accounts', 'monitors'] True 0",
                         "alerts ['accounts', 'alerts', 'monitors'] True 0",
                         "monitors ['accounts', 'alerts', 'monitors'] True 0", "monitor o"]
