from django.contrib import admin

from monitors.models import ApiKey, Monitor, Ping, Project, Run

admin.site.register(Project)
admin.site.register(ApiKey, list_display=["project", "prefix", "created_at"])
admin.site.register(Monitor, list_display=["name", "project", "kind", "schedule", "period",
                                           "paused", "last_ping_at", "next_expected_at"])
admin.site.register(Run, list_display=["monitor", "slot_at", "started_at", "ended_at", "outcome"])
admin.site.register(Ping, list_display=["monitor", "received_at", "kind", "exit_status"])
