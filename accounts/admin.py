from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm

from accounts import plans
from accounts.models import ApiKey, Membership, Organisation, Plan, Project
from accounts.throttle import ThrottledForm, refused


class AdminLoginForm(ThrottledForm, AdminAuthenticationForm):
    """The admin's sign-in, throttled as the dashboard's (:mod:`accounts.throttle`)."""


_site_login = admin.site.login


def login(request, extra_context=None):
    """``/admin/login/``: the admin's own view, answering ``429`` with ``Retry-After``
    while the sign-in cools off, as ``/login/`` does (the form records the wait)."""
    response = _site_login(request, extra_context)
    return refused(response, (getattr(response, "context_data", None) or {}).get("form"))


admin.site.login_form = AdminLoginForm
admin.site.login = login  # read by admin.site.urls, built after the admin modules load


@admin.register(Plan)
class PlanAdmin(admin.ModelAdmin):
    """Plans with their limits (empty: no limit); ``manage.py plan`` does the same."""

    list_display = ["name", *Plan.LIMITS, "created_at"]
    fields = ["name", *Plan.LIMITS]


@admin.register(Organisation)
class OrganisationAdmin(admin.ModelAdmin):
    """An organisation with its plan, shown and changed here (the change is recorded
    in the audit log as ``manage.py setplan`` records it)."""

    list_display = ["name", "plan", "created_at"]
    list_filter = ["plan"]
    fields = ["name", "plan"]

    def save_model(self, request, obj, form, change):
        if not change or "plan" not in form.changed_data:
            return super().save_model(request, obj, form, change)
        plan = obj.plan
        obj.plan = Organisation.objects.get(pk=obj.pk).plan  # set_plan records old -> new
        super().save_model(request, obj, form, change)
        plans.set_plan(obj, plan)
        return None


admin.site.register(Membership, list_display=["organisation", "user", "role"])
admin.site.register(Project, list_display=["name", "organisation", "created_at"])
admin.site.register(ApiKey, list_display=["project", "prefix", "name", "read_only", "created_at",
                                          "last_used_at", "revoked_at"],
                    exclude=["key_hash", "scheme"])
