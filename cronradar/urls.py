from django.contrib import admin
from django.urls import include, path

handler404 = "monitors.api.not_found"

urlpatterns = [
    path("ping/", include("monitors.ping_urls")),
    path("api/v1/", include("monitors.api_urls")),
    path("admin/", admin.site.urls),
]
