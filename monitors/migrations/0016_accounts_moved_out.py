"""The account models now belong to the accounts app (``accounts/0001``): monitors
and outage impacts point at ``accounts.Project`` and the monitors app forgets the
models. The tables stay; nothing changes in the database.
"""
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0001_initial'),
        ('alerts', '0015_project_in_accounts'),
        ('monitors', '0015_ping_and_slug_indexes'),
    ]

    operations = [
        # The tables stay where they are: only Django's idea of which app owns
        # the models changes, so no row is rewritten.
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.AlterField(
                model_name='monitor',
                name='project',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='monitors', to='accounts.project'),
            ),
            migrations.AlterField(
                model_name='outageimpact',
                name='project',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='outages', to='accounts.project'),
            ),
            migrations.DeleteModel(
                name='ApiKey',
            ),
            migrations.DeleteModel(
                name='Membership',
            ),
            migrations.DeleteModel(
                name='Organisation',
            ),
            migrations.DeleteModel(
                name='Profile',
            ),
            migrations.DeleteModel(
                name='Project',
            ),
        ], database_operations=[]),
    ]
