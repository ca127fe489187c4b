"""A person's profile (their time zone) and each project's badge key (existing
projects get a random one each)."""
import secrets

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

import accounts.models


def badge_keys(apps, schema_editor):
    Project = apps.get_model("monitors", "Project")
    for project in Project.objects.all():
        project.badge_key = secrets.token_urlsafe(18)
        project.save(update_fields=["badge_key"])


class Migration(migrations.Migration):

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("monitors", "0010_dropped_pings"),
    ]

    operations = [
        migrations.CreateModel(
            name="Profile",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True,
                                           serialize=False, verbose_name="ID")),
                ("timezone", models.CharField(blank=True, default="", max_length=64)),
                ("user", models.OneToOneField(on_delete=django.db.models.deletion.CASCADE,
                                              related_name="profile",
                                              to=settings.AUTH_USER_MODEL)),
            ],
        ),
        migrations.AddField(model_name="project", name="badge_key",
                            field=models.CharField(max_length=64, null=True)),
        migrations.RunPython(badge_keys, migrations.RunPython.noop),
        migrations.AlterField(model_name="project", name="badge_key",
                              field=models.CharField(default=accounts.models._badge_key,
                                                     max_length=64, unique=True)),
    ]
