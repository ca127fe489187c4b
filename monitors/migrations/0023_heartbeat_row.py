"""A heartbeat stores one row (issue 24, bytes per heartbeat): the run keeps its
ping (three new columns), pings and runs share one id sequence on PostgreSQL, the
view ``monitors_pinglog`` reads both as pings, and the runs' indexes shrink.

Runs on a populated table without holding the ping path: ``atomic = False``, and
on PostgreSQL every index is made and dropped ``CONCURRENTLY`` (the new ones first,
so no read is left without its index meanwhile); the new columns are nullable
without a default (a catalogue change). Index changes on PostgreSQL:

- ``run_monitor_hour`` (new, outside the model state): (monitor_id, the UTC hour of
  COALESCE(started_at, ended_at, slot_at)), the time-ordered reads' index
  (:mod:`monitors.history`), replacing ``run_monitor_time``, ``run_monitor_latest``
  and ``run_monitor_outcome`` (dropped);
- ``run_started_end`` (runs with a start and an end) replaces ``run_succeeded_end``;
- ``run_rid_unique`` becomes a partial unique index (rid not null);
- the primary key's pages are filled to 100 % (appended in id order).

On SQLite (the embedded default: no byte target) the same model state with plain
statements; ``run_monitor_time`` stays there (outside the model state), as SQLite's
time index.
"""
from django.db import migrations, models, transaction
from django.db.models import Q

RUN_TIME = "COALESCE(started_at, ended_at, slot_at)"
HOUR = f"date_trunc('hour', {RUN_TIME} AT TIME ZONE 'UTC')"

# the view's columns: id, monitor_id, run_id, received_at, kind, exit_status, rid,
# method, remote_addr, user_agent, body, body_size, body_truncated, duplicate, hour
PG_VIEW = f"""
CREATE VIEW monitors_pinglog AS
SELECT id, monitor_id, run_id, received_at, kind, exit_status, rid, method, remote_addr,
       user_agent, body, body_size, body_truncated, duplicate,
       date_trunc('hour', received_at AT TIME ZONE 'UTC') AS hour
  FROM monitors_ping
UNION ALL
SELECT id, monitor_id, id, ended_at,
       CASE WHEN outcome = 'failed' THEN 'fail' ELSE 'success' END,
       exit_status, NULL::uuid, ping_method, ping_remote_addr, COALESCE(ping_user_agent, ''),
       ''::bytea, 0, false, false, {HOUR}
  FROM monitors_run WHERE ping_method IS NOT NULL
"""
SQLITE_VIEW = """
CREATE VIEW monitors_pinglog AS
SELECT id, monitor_id, run_id, received_at, kind, exit_status, rid, method, remote_addr,
       user_agent, body, body_size, body_truncated, duplicate,
       strftime('%Y-%m-%d %H:00:00', received_at) AS hour
  FROM monitors_ping
UNION ALL
SELECT id, monitor_id, id, ended_at,
       CASE WHEN outcome = 'failed' THEN 'fail' ELSE 'success' END,
       exit_status, NULL, ping_method, ping_remote_addr, COALESCE(ping_user_agent, ''),
       X'', 0, 0, 0, strftime('%Y-%m-%d %H:00:00', COALESCE(started_at, ended_at, slot_at))
  FROM monitors_run WHERE ping_method IS NOT NULL
"""

# (forwards, backwards) statements of each database, in order
PG = [
    ("CREATE INDEX CONCURRENTLY IF NOT EXISTS run_monitor_hour ON monitors_run "
     f"(monitor_id, ({HOUR}))", "DROP INDEX CONCURRENTLY IF EXISTS run_monitor_hour"),
    ("CREATE INDEX CONCURRENTLY IF NOT EXISTS run_started_end ON monitors_run "
     "(monitor_id, ended_at DESC) WHERE started_at IS NOT NULL AND ended_at IS NOT NULL",
     "DROP INDEX CONCURRENTLY IF EXISTS run_started_end"),
    ("CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS run_rid_unique_partial ON monitors_run "
     "(monitor_id, rid) WHERE rid IS NOT NULL",
     "DROP INDEX CONCURRENTLY IF EXISTS run_rid_unique_partial"),
    ("ALTER TABLE monitors_run DROP CONSTRAINT IF EXISTS run_rid_unique",
     "ALTER TABLE monitors_run ADD CONSTRAINT run_rid_unique UNIQUE (monitor_id, rid)"),
    ("ALTER INDEX run_rid_unique_partial RENAME TO run_rid_unique",
     "ALTER INDEX run_rid_unique RENAME TO run_rid_unique_partial"),
    ("DROP INDEX CONCURRENTLY IF EXISTS run_succeeded_end",
     "CREATE INDEX CONCURRENTLY IF NOT EXISTS run_succeeded_end ON monitors_run "
     "(monitor_id, ended_at DESC) WHERE outcome = 'succeeded'"),
    ("DROP INDEX CONCURRENTLY IF EXISTS run_monitor_time",
     "CREATE INDEX CONCURRENTLY IF NOT EXISTS run_monitor_time ON monitors_run "
     f"(monitor_id, {RUN_TIME} DESC, id DESC)"),
    ("DROP INDEX CONCURRENTLY IF EXISTS run_monitor_latest",
     "CREATE INDEX CONCURRENTLY IF NOT EXISTS run_monitor_latest ON monitors_run "
     "(monitor_id, id DESC)"),
    ("DROP INDEX CONCURRENTLY IF EXISTS run_monitor_outcome",
     "CREATE INDEX CONCURRENTLY IF NOT EXISTS run_monitor_outcome ON monitors_run "
     "(monitor_id, outcome)"),
    # runs are appended in id order, so the primary key's leaf pages split at the
    # right end; filled to 100 % (not 90) they save a tenth of the index
    # (bench/storage.sh). An update's new version of a recent run goes to a recent
    # page, where bottom-up deletion makes room.
    ("ALTER INDEX monitors_run_pkey SET (fillfactor = 100)",
     "ALTER INDEX monitors_run_pkey RESET (fillfactor)"),
    (PG_VIEW, "DROP VIEW IF EXISTS monitors_pinglog"),
]
SQLITE = [(SQLITE_VIEW, "DROP VIEW IF EXISTS monitors_pinglog")]


class ElsewhereThanPostgreSQL(migrations.operations.base.Operation):
    """``operation`` (state and database) on every database but PostgreSQL, whose
    statements (``PG``, concurrent) are run by hand; state only there."""

    reversible = True

    def __init__(self, operation):
        self.operation = operation

    def state_forwards(self, app_label, state):
        self.operation.state_forwards(app_label, state)

    def database_forwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor != "postgresql":
            self.operation.database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label, schema_editor, from_state, to_state):
        if schema_editor.connection.vendor != "postgresql":
            self.operation.database_backwards(app_label, schema_editor, from_state, to_state)

    def describe(self):
        return f"{self.operation.describe()} (PostgreSQL: by hand, concurrently)"


def _run(statements):
    def run(apps, schema_editor):
        for sql in statements:
            schema_editor.execute(sql, params=None)
    return run


def _indexes(forwards: bool):
    def run(apps, schema_editor):
        pairs = PG if schema_editor.connection.vendor == "postgresql" else SQLITE
        _run([f if forwards else b for f, b in (pairs if forwards else reversed(pairs))])(
            apps, schema_editor)
    return run


def _shared_ids(apps, schema_editor):
    """PostgreSQL: pings take their ids from the runs' sequence (a ping kept in its
    run is read with the run's id: the two never collide), past both tables'
    ids. In one short transaction, so no ping is given an id in between."""
    if schema_editor.connection.vendor != "postgresql":
        return
    with transaction.atomic(), schema_editor.connection.cursor() as c:
        c.execute("ALTER TABLE monitors_ping ALTER COLUMN id DROP IDENTITY IF EXISTS, "
                  "ALTER COLUMN id SET DEFAULT nextval('monitors_run_id_seq')")
        c.execute("SELECT setval('monitors_run_id_seq', GREATEST("
                  "(SELECT COALESCE(max(id), 0) FROM monitors_ping), "
                  "(SELECT COALESCE(max(id), 0) FROM monitors_run), "
                  "(SELECT last_value FROM monitors_run_id_seq)))")


def _own_ids(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with transaction.atomic(), schema_editor.connection.cursor() as c:
        c.execute("ALTER TABLE monitors_ping ALTER COLUMN id DROP DEFAULT, "
                  "ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY")
        c.execute("SELECT setval(pg_get_serial_sequence('monitors_ping', 'id'), "
                  "(SELECT last_value FROM monitors_run_id_seq))")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ('monitors', '0022_event_index'),
    ]

    operations = [
        migrations.AddField(model_name='run', name='ping_method',
                            field=models.CharField(blank=True, max_length=8, null=True)),
        migrations.AddField(model_name='run', name='ping_remote_addr',
                            field=models.GenericIPAddressField(blank=True, null=True)),
        migrations.AddField(model_name='run', name='ping_user_agent',
                            field=models.CharField(blank=True, max_length=300, null=True)),
        ElsewhereThanPostgreSQL(migrations.RemoveConstraint(model_name='run',
                                                            name='run_rid_unique')),
        ElsewhereThanPostgreSQL(migrations.AddConstraint(
            model_name='run',
            constraint=models.UniqueConstraint(condition=Q(rid__isnull=False),
                                               fields=('monitor', 'rid'), name='run_rid_unique'),
        )),
        ElsewhereThanPostgreSQL(migrations.RemoveIndex(model_name='run',
                                                       name='run_monitor_outcome')),
        ElsewhereThanPostgreSQL(migrations.RemoveIndex(model_name='run',
                                                       name='run_succeeded_end')),
        ElsewhereThanPostgreSQL(migrations.RemoveIndex(model_name='run',
                                                       name='run_monitor_latest')),
        ElsewhereThanPostgreSQL(migrations.AddIndex(
            model_name='run',
            index=models.Index(condition=Q(started_at__isnull=False, ended_at__isnull=False),
                               fields=['monitor', '-ended_at'], name='run_started_end'),
        )),
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunPython(_indexes(True), _indexes(False)),
                migrations.RunPython(_shared_ids, _own_ids),
            ],
            state_operations=[
                migrations.CreateModel(
                    name='PingLog',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('received_at', models.DateTimeField()),
                        ('kind', models.CharField(choices=[('success', 'Success'), ('start', 'Start'), ('fail', 'Fail'), ('log', 'Log')], max_length=8)),
                        ('exit_status', models.SmallIntegerField(null=True)),
                        ('rid', models.UUIDField(null=True)),
                        ('method', models.CharField(max_length=8)),
                        ('remote_addr', models.GenericIPAddressField(null=True)),
                        ('user_agent', models.CharField(max_length=300)),
                        ('body', models.BinaryField()),
                        ('body_size', models.PositiveIntegerField()),
                        ('body_truncated', models.BooleanField()),
                        ('duplicate', models.BooleanField()),
                        ('hour', models.DateTimeField()),
                        ('monitor', models.ForeignKey(db_constraint=False, on_delete=models.DO_NOTHING, related_name='+', to='monitors.monitor')),
                        ('run', models.ForeignKey(db_constraint=False, null=True, on_delete=models.DO_NOTHING, related_name='+', to='monitors.run')),
                    ],
                    options={'db_table': 'monitors_pinglog', 'managed': False},
                ),
                # SQLite keeps it (its time index), outside the model state
                migrations.RemoveIndex(model_name='run', name='run_monitor_time'),
            ],
        ),
    ]
