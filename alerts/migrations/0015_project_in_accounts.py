"""Channels, escalation policies and maintenance windows point at
``accounts.Project`` (the same table as before: nothing changes in the database).
"""
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0001_initial'),
        ('alerts', '0014_delivery_covered_indexes'),
    ]

    operations = [
        # The tables stay where they are: only Django's idea of which app owns
        # the models changes, so no row is rewritten.
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.AlterField(
                model_name='channel',
                name='project',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='channels', to='accounts.project'),
            ),
            migrations.AlterField(
                model_name='escalationpolicy',
                name='project',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='escalation_policies', to='accounts.project'),
            ),
            migrations.AlterField(
                model_name='maintenancewindow',
                name='project',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='maintenance_windows', to='accounts.project'),
            ),
        ], database_operations=[]),
    ]
