from django.apps import AppConfig


class InsightsConfig(AppConfig):
    """Run statistics, the overlap-policy advisor and the policy model (no models
    of its own: it reads the monitors' runs)."""

    name = "insights"

