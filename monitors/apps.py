from django.apps import AppConfig


class MonitorsConfig(AppConfig):
    name = "monitors"
    default_auto_field = "django.db.models.BigAutoField"
