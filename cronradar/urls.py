from django.contrib import admin
from django.urls import include, path
from rest_framework.routers import SimpleRouter

from alerts.api import MonitorViewSet
from alerts.views import incident_link
from cronradar.api import Docs, Schema, Usage, exec_script
from cronradar.metrics import Metrics
from cronradar.orgapi import Delete as OrganisationDelete
from cronradar.orgapi import Export as OrganisationExport

handler404 = "cronradar.api.not_found"

# /api/v1/monitors/ is the monitors side's endpoint as the alerting side extends it.
router = SimpleRouter()
router.register("monitors", MonitorViewSet, basename="monitor")

urlpatterns = [
    path("ping/", include("monitors.ping_urls")),
    path("cli/cronradar_exec.py", exec_script, name="exec-script"),
    path("incident-link/<str:token>/", incident_link, name="incident-link"),
    path("api/v1/schema/", Schema.as_view(), name="schema"),
    path("api/v1/docs/", Docs.as_view(), name="docs"),
    path("api/v1/metrics/", Metrics.as_view(), name="metrics"),
    path("api/v1/organisation/", OrganisationDelete.as_view(), name="organisation-delete"),
    path("api/v1/organisation/export/", OrganisationExport.as_view(),
         name="organisation-export"),
    path("api/v1/usage/", Usage.as_view(), name="usage"),
    path("api/v1/", include("monitors.api_urls")),
    path("api/v1/", include("insights.api_urls")),
    path("api/v1/", include("accounts.api_urls")),
    path("api/v1/", include("alerts.api_urls")),
    path("api/v1/", include(router.urls)),
    path("api/v3/", include("alerts.hc_api_urls")),  # Healthchecks' Management API subset
    path("admin/", admin.site.urls),
    path("", include("cronradar.dashboard.urls")),
]
