from django.urls import path
from rest_framework.routers import SimpleRouter

from monitors import api

router = SimpleRouter()
router.register("monitors", api.MonitorViewSet, basename="monitor")

urlpatterns = [
    path("monitors/<int:pk>/runs/", api.RunList.as_view(), name="monitor-runs"),
    path("monitors/<int:pk>/pings/", api.PingList.as_view(), name="monitor-pings"),
    path("channels/", api.ChannelList.as_view(), name="channels"),
    path("channels/<int:pk>/", api.ChannelDetail.as_view(), name="channel"),
    path("incidents/", api.IncidentList.as_view(), name="incidents"),
    path("schema/", api.Schema.as_view(), name="schema"),
    *router.urls,
]
