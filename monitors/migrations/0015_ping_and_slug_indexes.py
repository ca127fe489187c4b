# Drops indexes no query needs that every ping paid for (models.py says why). Only
# DROP INDEX on the database: AlterField would also drop and re-add the pings'
# foreign key on PostgreSQL, validating every ping row while pings wait.
import django.db.models.deletion
from django.db import migrations, models

INDEXES = {  # Django's names for them (the same on PostgreSQL and SQLite)
    "monitors_monitor_slug_cb345352": 'ON "monitors_monitor" ("slug")',
    "monitors_monitor_slug_cb345352_like": None,  # PostgreSQL's LIKE twin of the above
    "monitors_ping_monitor_id_0de3336f": 'ON "monitors_ping" ("monitor_id")',
    "monitors_ping_received_at_fb13513d": 'ON "monitors_ping" ("received_at")',
}


class Migration(migrations.Migration):

    dependencies = [
        ('monitors', '0014_run_pending_indexes'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='monitor',
                    name='slug',
                    field=models.SlugField(db_index=False, max_length=100),
                ),
                migrations.AlterField(
                    model_name='ping',
                    name='monitor',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='pings', to='monitors.monitor'),
                ),
                migrations.AlterField(
                    model_name='ping',
                    name='received_at',
                    field=models.DateTimeField(),
                ),
            ],
            database_operations=[
                migrations.RunSQL(f'DROP INDEX IF EXISTS "{name}"',
                                  f'CREATE INDEX "{name}" {on}' if on else "")
                for name, on in INDEXES.items()
            ],
        ),
    ]
