from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm

from accounts.models import ApiKey, Membership, Organisation, Project
from accounts.throttle import ThrottledForm


class AdminLoginForm(ThrottledForm, AdminAuthenticationForm):
    """The admin's sign-in, throttled as the dashboard's (:mod:`accounts.throttle`)."""


admin.site.login_form = AdminLoginForm

admin.site.register(Organisation)
admin.site.register(Membership, list_display=["organisation", "user", "role"])
admin.site.register(Project, list_display=["name", "organisation", "created_at"])
admin.site.register(ApiKey, list_display=["project", "prefix", "name", "read_only", "created_at",
                                          "last_used_at", "revoked_at"],
                    exclude=["key_hash", "scheme"])
