from django.contrib import admin

from monitors.models import Monitor, Ping, Run

admin.site.register(Monitor, list_display=["name", "project", "kind", "schedule", "period",
                                           "paused", "last_ping_at", "next_expected_at"])


class HistoryAdmin(admin.ModelAdmin):
    """Runs and pings, read-only: they are written by the ping path and the evaluator
    holding the monitor's row lock and updating that row in the same transaction
    (monitors.pings relies on it to know the runs it read are current); an edit
    here would do neither."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


admin.site.register(Run, HistoryAdmin,
                    list_display=["monitor", "slot_at", "started_at", "ended_at", "outcome"])
admin.site.register(Ping, HistoryAdmin, list_display=["monitor", "received_at", "kind",
                                                      "exit_status"])
