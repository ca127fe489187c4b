"""The site's app: wires the site-floor parts that every process needs once
Django is set up (web, Celery worker and beat, management commands)."""
from django.apps import AppConfig


class CronRadarConfig(AppConfig):
    name = "cronradar"
    verbose_name = "CronRadar"

    def ready(self):
        from cronradar import watchdog  # here, not at the top: it imports models
        watchdog.connect()
