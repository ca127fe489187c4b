"""One sequence of event ids: every notice is an ``IncidentEvent`` row.

Notices of no incident (outage summaries, test notifications, a channel's
health) are events with ``incident`` null and a ``project``; a delivery always
has an ``event``. Each outage summary delivered before this release becomes one
``outage.summary`` notice per ``OutageImpact`` (its facts in ``detail``, as
``alerts.notices`` writes them), and its deliveries point at it; ``Delivery.outage``
goes. Backwards, outage deliveries point at their impact again and the other
notices (with their deliveries) are deleted. Written without importing the
application's code (which may change after this migration)."""
from datetime import UTC

import django.db.models.deletion
from django.db import migrations, models


def _iso(value):
    return None if value is None else value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def forward(apps, schema_editor):
    Delivery = apps.get_model("alerts", "Delivery")
    IncidentEvent = apps.get_model("alerts", "IncidentEvent")
    OutageImpact = apps.get_model("monitors", "OutageImpact")
    db = schema_editor.connection.alias
    impacts = (Delivery.objects.using(db).filter(event__isnull=True, outage__isnull=False)
               .values_list("outage_id", flat=True).distinct())
    for impact in OutageImpact.objects.using(db).filter(pk__in=list(impacts)).select_related(
            "outage").order_by("pk"):
        outage = impact.outage
        notice = IncidentEvent.objects.using(db).create(
            incident=None, project_id=impact.project_id, kind="outage.summary",
            at=outage.summarized_at or outage.ended_at or outage.started_at,
            step=f"outage:{impact.pk}",
            detail={"impact": impact.pk, "outage": outage.pk,
                    "started_at": _iso(outage.started_at), "ended_at": _iso(outage.ended_at),
                    "unknown_slots": impact.unknown_slots})
        Delivery.objects.using(db).filter(outage_id=impact.pk, event__isnull=True).update(
            event=notice)
    if schema_editor.connection.vendor == "postgresql":
        # the updates' deferred foreign-key checks run now, so that the table can be
        # altered in this transaction
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def backward(apps, schema_editor):
    Delivery = apps.get_model("alerts", "Delivery")
    IncidentEvent = apps.get_model("alerts", "IncidentEvent")
    db = schema_editor.connection.alias
    for notice in IncidentEvent.objects.using(db).filter(kind="outage.summary",
                                                          incident__isnull=True):
        Delivery.objects.using(db).filter(event=notice).update(
            event=None, outage_id=notice.detail.get("impact"))
    IncidentEvent.objects.using(db).filter(incident__isnull=True).delete()
    Delivery.objects.using(db).filter(event__isnull=True, outage__isnull=True).delete()
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0002_content_types'),
        ('alerts', '0017_skipped_double_launch'),
    ]

    operations = [
        migrations.AddField(
            model_name='incidentevent',
            name='project',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='notices', to='accounts.project'),
        ),
        migrations.AlterField(
            model_name='incidentevent',
            name='incident',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='events', to='alerts.incident'),
        ),
        migrations.AlterField(
            model_name='incidentevent',
            name='kind',
            field=models.CharField(choices=[('opened', 'Opened'), ('missed', 'Missed'), ('stuck', 'Stuck'), ('deadline', 'Deadline'), ('failed', 'Failed'), ('overlap', 'Overlap'), ('too_fast', 'Too Fast'), ('slow', 'Slow'), ('skipped', 'Skipped'), ('double_launch', 'Double Launch'), ('escalated', 'Escalated'), ('renotified', 'Renotified'), ('acknowledged', 'Acknowledged'), ('resolved', 'Resolved'), ('channel_removed', 'Channel Removed'), ('stable', 'Stable'), ('outage.summary', 'Outage Summary'), ('test', 'Test'), ('channel.failing', 'Channel Failing'), ('channel.recovered', 'Channel Recovered')], max_length=24),
        ),
        migrations.AlterField(
            model_name='incidentevent',
            name='step',
            field=models.CharField(blank=True, max_length=64, null=True),
        ),
        migrations.RemoveConstraint(
            model_name='delivery',
            name='delivery_of_event_or_outage',
        ),
        migrations.RunPython(forward, backward),
        migrations.RemoveConstraint(
            model_name='delivery',
            name='one_outage_delivery',
        ),
        migrations.RemoveField(
            model_name='delivery',
            name='outage',
        ),
        migrations.AlterField(
            model_name='delivery',
            name='event',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='deliveries', to='alerts.incidentevent'),
        ),
        migrations.AddConstraint(
            model_name='incidentevent',
            constraint=models.UniqueConstraint(condition=models.Q(('incident__isnull', True), ('step__isnull', False)), fields=('step',), name='one_notice_per_step'),
        ),
    ]
