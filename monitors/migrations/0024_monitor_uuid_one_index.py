"""The monitors' UUID keeps one index, ``monitor_uuid_unique`` (issue 24, CPU per
ping): the plain index ``Monitor.uuid``'s ``db_index`` made is dropped. Every read
by UUID is of undeleted monitors (the ping URL, the rate limit's lookup, the
Healthchecks API, imports, ``uuid_taken``), which the partial unique index serves;
and every ping's UPDATE of its monitor (``next_evaluation_at`` changes, so never a
HOT update) wrote an entry into each index of the table: one fewer now.

Runs on a populated table without holding the ping path: ``atomic = False``, and
on PostgreSQL the index is dropped (and made again backwards) ``CONCURRENTLY``. Its
name is read from the database (Django's, made from the table and column); on
SQLite plain statements.
"""
import uuid

from django.db import migrations, models

NAME = "monitors_monitor_uuid_967c9c19"  # Django's name for uuid's db_index index


def _drop(apps, schema_editor):
    monitor = apps.get_model("monitors", "Monitor")
    names = schema_editor._constraint_names(monitor, ["uuid"], index=True, unique=False)
    concurrently = "CONCURRENTLY " if schema_editor.connection.vendor == "postgresql" else ""
    for name in names:
        schema_editor.execute(f"DROP INDEX {concurrently}IF EXISTS "
                              f"{schema_editor.quote_name(name)}")


def _make(apps, schema_editor):
    concurrently = "CONCURRENTLY " if schema_editor.connection.vendor == "postgresql" else ""
    schema_editor.execute(f"CREATE INDEX {concurrently}IF NOT EXISTS {NAME} "
                          "ON monitors_monitor (uuid)")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("monitors", "0023_heartbeat_row"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(_drop, _make)],
            state_operations=[
                migrations.AlterField(
                    model_name="monitor", name="uuid",
                    field=models.UUIDField(default=uuid.uuid4),
                ),
            ],
        ),
    ]
