"""Organisations and memberships; every existing project gets an organisation of
its own (named after it); project names become unique per organisation; API keys
gain read-only, revocation, last use and a keyed hash (existing keys keep their
plain SHA-256 until their first use, see ApiKey.find)."""
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def organisation_per_project(apps, schema_editor):
    Organisation = apps.get_model("monitors", "Organisation")
    Project = apps.get_model("monitors", "Project")
    for project in Project.objects.filter(organisation__isnull=True).order_by("pk"):
        name = project.name
        if Organisation.objects.filter(name=name).exists():
            name = f"{project.name} ({project.pk})"
        project.organisation = Organisation.objects.create(name=name)
        project.save(update_fields=["organisation"])


class Migration(migrations.Migration):

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("monitors", "0008_incident_rules"),
    ]

    operations = [
        migrations.CreateModel(
            name="Organisation",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True,
                                           serialize=False, verbose_name="ID")),
                ("name", models.CharField(max_length=100, unique=True)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
            ],
        ),
        migrations.CreateModel(
            name="Membership",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True,
                                           serialize=False, verbose_name="ID")),
                ("role", models.CharField(choices=[("viewer", "Viewer"), ("member", "Member"),
                                                   ("admin", "Admin"), ("owner", "Owner")],
                                          default="member", max_length=10)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("organisation", models.ForeignKey(
                    on_delete=django.db.models.deletion.CASCADE, related_name="memberships",
                    to="monitors.organisation")),
                ("user", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                           related_name="memberships",
                                           to=settings.AUTH_USER_MODEL)),
            ],
            options={"constraints": [models.UniqueConstraint(
                fields=("organisation", "user"), name="membership_unique")]},
        ),
        migrations.AddField(
            model_name="project", name="organisation",
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.CASCADE,
                                    related_name="projects", to="monitors.organisation"),
        ),
        migrations.RunPython(organisation_per_project, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="project", name="organisation",
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                    related_name="projects", to="monitors.organisation"),
        ),
        migrations.AlterField(model_name="project", name="name",
                              field=models.CharField(max_length=100)),
        migrations.AddConstraint(
            model_name="project",
            constraint=models.UniqueConstraint(fields=("organisation", "name"),
                                               name="project_name_unique"),
        ),
        migrations.AddField(model_name="apikey", name="scheme",
                            field=models.CharField(default="sha256", max_length=10)),
        migrations.AlterField(model_name="apikey", name="scheme",
                              field=models.CharField(default="hmac", max_length=10)),
        migrations.AlterField(model_name="apikey", name="prefix",
                              field=models.CharField(db_index=True, max_length=12)),
        migrations.AddField(model_name="apikey", name="read_only",
                            field=models.BooleanField(default=False)),
        migrations.AddField(model_name="apikey", name="last_used_at",
                            field=models.DateTimeField(blank=True, null=True)),
        migrations.AddField(model_name="apikey", name="revoked_at",
                            field=models.DateTimeField(blank=True, null=True)),
    ]
