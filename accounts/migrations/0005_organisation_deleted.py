# accounts: Organisation.deleted_at (issue 22, export and deletion)

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0004_plan_audit'),
    ]

    operations = [
        migrations.AddField(
            model_name='organisation',
            name='deleted_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddIndex(
            model_name='organisation',
            index=models.Index(condition=models.Q(('deleted_at__isnull', False)), fields=['deleted_at'], name='organisation_deleted'),
        ),
    ]
