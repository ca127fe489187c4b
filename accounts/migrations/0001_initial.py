"""Organisations, memberships, profiles, projects and API keys move from the
monitors app to this one, keeping their tables (``monitors_organisation`` …).
"""
import accounts.models
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("monitors", "0015_ping_and_slug_indexes"),  # the tables exist
    ]

    operations = [
        # The tables stay where they are: only Django's idea of which app owns
        # the models changes, so no row is rewritten.
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.CreateModel(
                name='Organisation',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('name', models.CharField(max_length=100, unique=True)),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                ],
                options={
                    'db_table': 'monitors_organisation',
                },
            ),
            migrations.CreateModel(
                name='Profile',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('timezone', models.CharField(blank=True, default='', max_length=64)),
                    ('user', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='profile', to=settings.AUTH_USER_MODEL)),
                ],
                options={
                    'db_table': 'monitors_profile',
                },
            ),
            migrations.CreateModel(
                name='Project',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('name', models.CharField(max_length=100)),
                    ('ping_key', models.CharField(default=accounts.models._ping_key, max_length=64, unique=True)),
                    ('badge_key', models.CharField(default=accounts.models._badge_key, max_length=64, unique=True)),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('organisation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='projects', to='accounts.organisation')),
                ],
                options={
                    'db_table': 'monitors_project',
                },
            ),
            migrations.CreateModel(
                name='ApiKey',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('name', models.CharField(blank=True, default='', max_length=100)),
                    ('key_hash', models.CharField(max_length=64, unique=True)),
                    ('scheme', models.CharField(default='hmac', max_length=10)),
                    ('prefix', models.CharField(db_index=True, max_length=12)),
                    ('read_only', models.BooleanField(default=False)),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('last_used_at', models.DateTimeField(blank=True, null=True)),
                    ('revoked_at', models.DateTimeField(blank=True, null=True)),
                    ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='api_keys', to='accounts.project')),
                ],
                options={
                    'db_table': 'monitors_apikey',
                },
            ),
            migrations.CreateModel(
                name='Membership',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('role', models.CharField(choices=[('viewer', 'Viewer'), ('member', 'Member'), ('admin', 'Admin'), ('owner', 'Owner')], default='member', max_length=10)),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to=settings.AUTH_USER_MODEL)),
                    ('organisation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to='accounts.organisation')),
                ],
                options={
                    'db_table': 'monitors_membership',
                    'constraints': [models.UniqueConstraint(fields=('organisation', 'user'), name='membership_unique')],
                },
            ),
            migrations.AddConstraint(
                model_name='project',
                constraint=models.UniqueConstraint(fields=('organisation', 'name'), name='project_name_unique'),
            ),
        ], database_operations=[]),
    ]
