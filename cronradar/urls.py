from django.contrib import admin
from django.urls import include, path

from cronradar.api import Schema

handler404 = "cronradar.api.not_found"

urlpatterns = [
    path("ping/", include("monitors.ping_urls")),
    path("api/v1/schema/", Schema.as_view(), name="schema"),
    path("api/v1/", include("monitors.api_urls")),
    path("api/v1/", include("alerts.api_urls")),
    path("admin/", admin.site.urls),
]
