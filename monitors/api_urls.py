from django.urls import path
from rest_framework.routers import SimpleRouter

from monitors import api

router = SimpleRouter()
router.register("monitors", api.MonitorViewSet, basename="monitor")

urlpatterns = [
    path("monitors/<int:pk>/runs/", api.RunList.as_view(), name="monitor-runs"),
    path("monitors/<int:pk>/pings/", api.PingList.as_view(), name="monitor-pings"),
    *router.urls,
]
