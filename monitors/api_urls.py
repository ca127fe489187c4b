from django.urls import path

from monitors import api

urlpatterns = [
    path("monitors/<int:pk>/runs/", api.RunList.as_view(), name="monitor-runs"),
    path("monitors/<int:pk>/pings/", api.PingList.as_view(), name="monitor-pings"),
]
