# Delivery.receipt: what a service answered that a later delivery needs (Pushover's
# receipt of an emergency notification, cancelled on acknowledge and resolve).
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("alerts", "0021_channel_kinds"),
    ]

    operations = [
        migrations.AddField(
            model_name="delivery",
            name="receipt",
            field=models.CharField(blank=True, default="", max_length=64),
        ),
    ]
