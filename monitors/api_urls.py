from django.urls import path
from rest_framework.routers import SimpleRouter

from monitors import accounts, api

router = SimpleRouter()
router.register("organisations", accounts.OrganisationViewSet, basename="organisation")
router.register("projects", accounts.ProjectViewSet, basename="project")
router.register("api-keys", accounts.ApiKeyViewSet, basename="api-key")
router.register("members", accounts.MemberViewSet, basename="member")

urlpatterns = [
    path("monitors/<int:pk>/runs/", api.RunList.as_view(), name="monitor-runs"),
    path("monitors/<int:pk>/pings/", api.PingList.as_view(), name="monitor-pings"),
    *router.urls,
]
