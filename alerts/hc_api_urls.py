"""``/api/v3/``: the Healthchecks-compatible Management API subset
(:mod:`alerts.hc_api`). Paths as Healthchecks' own: no trailing slash on a
check, one on its lists."""
from django.urls import path, re_path, register_converter

from alerts import hc_api


class UniqueKey:
    """A read-only key's check id: 40 hex digits (:func:`alerts.hc_api.unique_key`)."""

    regex = "[0-9a-f]{40}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(UniqueKey, "unique_key")

urlpatterns = [
    path("checks/", hc_api.checks),
    path("checks/<uuid:code>", hc_api.single),
    path("checks/<unique_key:key>", hc_api.single_by_unique_key),
    path("checks/<uuid:code>/pause", hc_api.pause),
    path("checks/<uuid:code>/resume", hc_api.resume),
    path("checks/<uuid:code>/pings/", hc_api.pings),
    path("checks/<uuid:code>/flips/", hc_api.flips_by_uuid),
    path("checks/<unique_key:key>/flips/", hc_api.flips_by_unique_key),
    path("channels/", hc_api.channels),
    re_path(r"^(?P<rest>.*)$", hc_api.not_found),
]
