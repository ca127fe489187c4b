"""The five models' content types follow them to the accounts app, renamed in place:
no new rows, so permissions and admin log entries keep pointing at them."""
from django.db import migrations

MODELS = ("organisation", "membership", "profile", "project", "apikey")


def _move(apps, schema_editor, old: str, new: str) -> None:
    ContentType = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    for model in MODELS:
        found = ContentType.objects.using(db).filter(app_label=old, model=model)
        if found.exists():
            # one made for the new label meanwhile (post_migrate) holds nothing of
            # the old one's: the old row, with its permissions, wins
            ContentType.objects.using(db).filter(app_label=new, model=model).delete()
            found.update(app_label=new)


def forward(apps, schema_editor):
    _move(apps, schema_editor, "monitors", "accounts")


def backward(apps, schema_editor):
    _move(apps, schema_editor, "accounts", "monitors")


class Migration(migrations.Migration):

    dependencies = [
        ("accounts", "0001_initial"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(forward, backward)]
