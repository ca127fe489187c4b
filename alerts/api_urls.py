from django.urls import path
from rest_framework.routers import SimpleRouter

from alerts import api

router = SimpleRouter()
router.register("escalation-policies", api.EscalationPolicyViewSet, basename="escalation-policy")
router.register("maintenance-windows", api.MaintenanceWindowViewSet,
                basename="maintenance-window")

urlpatterns = [
    path("channels/", api.ChannelList.as_view(), name="channels"),
    path("channels/<int:pk>/", api.ChannelDetail.as_view(), name="channel"),
    path("channels/test/", api.ChannelTestConfig.as_view(), name="channel-test-config"),
    path("channels/<int:pk>/test/", api.ChannelTest.as_view(), name="channel-test"),
    # by name: a name may hold any character, "/" included (path, not str)
    path("channels/by-name/<path:name>/", api.ChannelByName.as_view(), name="channel-by-name"),
    path("escalation-policies/by-name/<path:name>/", api.EscalationPolicyByName.as_view(),
         name="escalation-policy-by-name"),
    path("incidents/", api.IncidentList.as_view(), name="incidents"),
    path("incidents/<int:pk>/", api.IncidentDetail.as_view(), name="incident"),
    path("incidents/<int:pk>/ack/", api.IncidentAcknowledge.as_view(), name="incident-ack"),
    path("incidents/<int:pk>/resolve/", api.IncidentResolve.as_view(), name="incident-resolve"),
    path("deliveries/", api.DeliveryList.as_view(), name="deliveries"),
    *router.urls,
]
