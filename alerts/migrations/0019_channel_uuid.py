"""Channel.uuid: a stable public id for every channel (Healthchecks' channel "id" in
/api/v3/channels/). Added nullable, filled one per row, then made unique."""
import uuid

from django.db import migrations, models


def fill(apps, schema_editor):
    Channel = apps.get_model("alerts", "Channel")
    for pk in Channel.objects.filter(uuid__isnull=True).values_list("pk", flat=True):
        Channel.objects.filter(pk=pk).update(uuid=uuid.uuid4())


class Migration(migrations.Migration):

    dependencies = [
        ('alerts', '0018_channel_failing'),
    ]

    operations = [
        migrations.AddField(
            model_name='channel',
            name='uuid',
            field=models.UUIDField(null=True, editable=False),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
        migrations.AlterField(
            model_name='channel',
            name='uuid',
            field=models.UUIDField(default=uuid.uuid4, editable=False, unique=True),
        ),
    ]
