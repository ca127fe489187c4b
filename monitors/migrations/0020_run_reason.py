"""Ping rate limits (issue 22): ``Run.reason`` (why a run is ``unknown``: every
unknown run written before this was an outage's), the monitor's refusal streak
(``refused_since``, ``refused_until``) and the per-month ping counts (``PingUsage``)."""

import django.db.models.deletion
from django.db import migrations, models


def outage_reason(apps, schema_editor):
    """Unknown runs so far were all written during an outage of the ping endpoint."""
    Run = apps.get_model("monitors", "Run")
    Run.objects.using(schema_editor.connection.alias).filter(outcome="unknown").update(
        reason="outage")


class Migration(migrations.Migration):

    dependencies = [
        ('monitors', '0019_chore'),
    ]

    operations = [
        migrations.AddField(
            model_name='monitor',
            name='refused_since',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='monitor',
            name='refused_until',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='run',
            name='reason',
            field=models.CharField(blank=True, choices=[('', 'none'), ('outage', 'Outage'), ('rate_limited', 'Rate Limited')], default='', max_length=16),
        ),
        migrations.CreateModel(
            name='PingUsage',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('month', models.DateField()),
                ('pings', models.PositiveBigIntegerField(default=0)),
                ('refused', models.PositiveBigIntegerField(default=0)),
                ('monitor', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='usage', to='monitors.monitor')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('monitor', 'month'), name='ping_usage_month')],
            },
        ),
        migrations.RunPython(outage_reason, migrations.RunPython.noop),
    ]
