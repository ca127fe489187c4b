from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """Organisations, people, projects and API keys; who may do what (``tenancy``)."""

    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from accounts import audit, checks, firstrun  # noqa: F401  (registers the check, the post_migrate hook)

        firstrun.connect(self)
        audit.connect()
