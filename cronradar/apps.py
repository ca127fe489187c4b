"""The site's app: wires the site-floor parts that every process needs once
Django is set up (web, Celery worker and beat, management commands)."""
from django.apps import AppConfig

from cronradar import observability


class CronRadarConfig(AppConfig):
    name = "cronradar"
    verbose_name = "CronRadar"

    def ready(self):
        observability.setup()  # SENTRY_DSN, OTEL_EXPORTER_OTLP_ENDPOINT (both optional)
        from cronradar import orgdata, watchdog  # here, not at the top: they import models
        watchdog.connect()
        orgdata.connect()
