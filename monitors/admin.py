from django.contrib import admin

from monitors.models import ApiKey, Membership, Monitor, Organisation, Ping, Project, Run

admin.site.register(Organisation)
admin.site.register(Membership, list_display=["organisation", "user", "role"])
admin.site.register(Project, list_display=["name", "organisation", "created_at"])
admin.site.register(ApiKey, list_display=["project", "prefix", "name", "read_only", "created_at",
                                          "last_used_at", "revoked_at"],
                    exclude=["key_hash", "scheme"])
admin.site.register(Monitor, list_display=["name", "project", "kind", "schedule", "period",
                                           "paused", "last_ping_at", "next_expected_at"])
admin.site.register(Run, list_display=["monitor", "slot_at", "started_at", "ended_at", "outcome"])
admin.site.register(Ping, list_display=["monitor", "received_at", "kind", "exit_status"])
