import contextlib

from django.apps import AppConfig
from django.conf import settings

from core import checks  # noqa: F401  (registers the production checks)


class MonitorsConfig(AppConfig):
    name = "monitors"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from monitors import creation  # noqa: F401  (registers the plan's monitor count)

        # The embedded default keeps its SQLite file in the data directory, and
        # whitenoise looks for collected static files: make sure both exist.
        with contextlib.suppress(OSError):
            if settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"):
                settings.DATA_DIR.mkdir(parents=True, exist_ok=True)
            settings.STATIC_ROOT.mkdir(parents=True, exist_ok=True)
