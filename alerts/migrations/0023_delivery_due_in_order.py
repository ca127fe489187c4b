"""delivery_due gains ``id`` (issue 24, notifications): (next_attempt_at, id) of the
rows that may be claimed (pending, sending), the order claim_due() reads them in,
so a claim reads its window of due rows from the index and stops, where it read
and sorted every due row (a burst's rows share one next_attempt_at).

Runs on a populated table without holding the delivery path: ``atomic = False``,
and on PostgreSQL the new index is made ``CONCURRENTLY`` under a scratch name, the
old one dropped ``CONCURRENTLY``, and the new one renamed (a catalogue change). On
SQLite the same model state with plain statements.
"""
from django.db import migrations, models

CREATE = ("CREATE INDEX {how}{name} ON alerts_delivery ({fields}) "
          "WHERE status IN ('pending', 'sending')")
PG_FORWARDS = [
    CREATE.format(how="CONCURRENTLY IF NOT EXISTS ", name="delivery_due_new",
                  fields="next_attempt_at, id"),
    "DROP INDEX CONCURRENTLY IF EXISTS delivery_due",
    "ALTER INDEX delivery_due_new RENAME TO delivery_due",
]
PG_BACKWARDS = [
    CREATE.format(how="CONCURRENTLY IF NOT EXISTS ", name="delivery_due_old",
                  fields="next_attempt_at"),
    "DROP INDEX CONCURRENTLY IF EXISTS delivery_due",
    "ALTER INDEX delivery_due_old RENAME TO delivery_due",
]
SQLITE_FORWARDS = ["DROP INDEX IF EXISTS delivery_due",
                   CREATE.format(how="", name="delivery_due", fields="next_attempt_at, id")]
SQLITE_BACKWARDS = ["DROP INDEX IF EXISTS delivery_due",
                    CREATE.format(how="", name="delivery_due", fields="next_attempt_at")]


def _run(postgresql: list[str], sqlite: list[str]):
    def run(apps, schema_editor):
        vendor = schema_editor.connection.vendor
        for statement in postgresql if vendor == "postgresql" else sqlite:
            schema_editor.execute(statement)
    return run


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("alerts", "0022_pushover_receipt"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunPython(_run(PG_FORWARDS, SQLITE_FORWARDS),
                                     _run(PG_BACKWARDS, SQLITE_BACKWARDS)),
            ],
            state_operations=[
                migrations.RemoveIndex(model_name="delivery", name="delivery_due"),
                migrations.AddIndex(
                    model_name="delivery",
                    index=models.Index(condition=models.Q(("status__in", ["pending", "sending"])),
                                       fields=["next_attempt_at", "id"], name="delivery_due"),
                ),
            ],
        ),
    ]
