from django.contrib import admin

from alerts.models import Channel, Delivery, Incident, IncidentEvent

admin.site.register(Channel, list_display=["name", "kind", "project"])
admin.site.register(Incident, list_display=["monitor", "cause", "opened_at", "resolved_at"])
admin.site.register(IncidentEvent, list_display=["incident", "kind", "at"])
admin.site.register(Delivery, list_display=["event", "channel", "status", "attempts"])
