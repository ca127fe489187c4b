from django.urls import path

from insights import api

urlpatterns = [
    path("monitors/<int:pk>/stats/", api.MonitorStats.as_view(), name="monitor-stats"),
    path("monitors/<int:pk>/advice/", api.MonitorAdvice.as_view(), name="monitor-advice"),
]
