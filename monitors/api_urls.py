from django.urls import path

from monitors import api
from monitors.imports.api import ImportCrontab, ImportK8s
from monitors.preview import SchedulePreview

urlpatterns = [
    path("monitors/<int:pk>/runs/", api.RunList.as_view(), name="monitor-runs"),
    path("monitors/<int:pk>/pings/", api.PingList.as_view(), name="monitor-pings"),
    path("import/crontab/", ImportCrontab.as_view(), name="import-crontab"),
    path("schedule-preview/", SchedulePreview.as_view(), name="schedule-preview"),
    path("import/k8s/", ImportK8s.as_view(), name="import-k8s"),
]
