from django.urls import path
from rest_framework.routers import SimpleRouter

from accounts import api

router = SimpleRouter()
router.register("organisations", api.OrganisationViewSet, basename="organisation")
router.register("projects", api.ProjectViewSet, basename="project")
router.register("api-keys", api.ApiKeyViewSet, basename="api-key")
router.register("members", api.MemberViewSet, basename="member")

urlpatterns = [*router.urls,
               path("audit-log/", api.AuditLogList.as_view(), name="audit-log")]
