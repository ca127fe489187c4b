"""Email verification (``Profile.email_verified_at``), the first account's setup
token and invitations. Every person who exists already is verified: a profile is
made for anyone without one, and every profile is marked verified now."""
import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


def verify_everyone(apps, schema_editor):
    db = schema_editor.connection.alias
    User = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    Profile = apps.get_model("accounts", "Profile")
    now = django.utils.timezone.now()
    Profile.objects.using(db).bulk_create(
        [Profile(user_id=pk, email_verified_at=now) for pk in
         User.objects.using(db).filter(profile__isnull=True).values_list("pk", flat=True)])
    Profile.objects.using(db).update(email_verified_at=now)


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0002_content_types'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='SetupToken',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('token', models.CharField(max_length=64)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
            ],
        ),
        migrations.AddField(
            model_name='profile',
            name='email_verified_at',
            field=models.DateTimeField(blank=True, default=django.utils.timezone.now, null=True),
        ),
        migrations.CreateModel(
            name='Invitation',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('email', models.EmailField(max_length=254)),
                ('username', models.CharField(blank=True, default='', max_length=150)),
                ('role', models.CharField(choices=[('viewer', 'Viewer'), ('member', 'Member'), ('admin', 'Admin'), ('owner', 'Owner')], default='member', max_length=10)),
                ('invited_by', models.CharField(blank=True, default='', max_length=150)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('accepted_at', models.DateTimeField(blank=True, null=True)),
                ('organisation', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='invitations', to='accounts.organisation')),
            ],
        ),
        migrations.RunPython(verify_everyone, migrations.RunPython.noop),
    ]
