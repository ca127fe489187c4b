from django.apps import AppConfig


class AccountsConfig(AppConfig):
    """Organisations, people, projects and API keys; who may do what (``tenancy``)."""

    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # registers the checks, the post_migrate hook, the default plan and the counts
        from accounts import checks, firstrun, invitations, plans, throttle  # noqa: F401

        firstrun.connect(self)
        throttle.connect()
