from django.urls import re_path

from monitors.views import ping

urlpatterns = [re_path(r"^(?P<path>.+)$", ping, name="ping")]
