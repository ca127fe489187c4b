from django.urls import path

from alerts import api

urlpatterns = [
    path("channels/", api.ChannelList.as_view(), name="channels"),
    path("channels/<int:pk>/", api.ChannelDetail.as_view(), name="channel"),
    path("incidents/", api.IncidentList.as_view(), name="incidents"),
    path("deliveries/", api.DeliveryList.as_view(), name="deliveries"),
]
