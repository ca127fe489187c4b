"""System checks of the accounts settings: a malformed ``CRONRADAR_SIGNUP``
stops every ``manage.py`` command (``serve``, ``migrate``) with the reason, so a
typo never silently closes or opens sign-up. Parsed by :func:`accounts.signup.parse`,
the one place that reads it. A ``CRONRADAR_DEFAULT_PLAN`` that names no plan is
a warning at start (the plan may be created after ``migrate``)."""
from django.conf import settings
from django.core.checks import Error, Warning, register
from django.db import DatabaseError

from accounts import plans, signup


@register()
def signup_setting(app_configs=None, **kwargs) -> list[Error]:
    """Error ``cronradar.E004`` when ``CRONRADAR_SIGNUP`` cannot be parsed."""
    try:
        signup.parse(settings.CRONRADAR_SIGNUP)
    except ValueError as e:
        return [Error(f"CRONRADAR_SIGNUP={settings.CRONRADAR_SIGNUP!r} is not a sign-up mode",
                      hint=str(e), id="cronradar.E004")]
    return []


@register()
def default_plan_setting(app_configs=None, **kwargs) -> list[Warning]:
    """Warning ``accounts.W001`` when ``CRONRADAR_DEFAULT_PLAN`` names no plan: new
    organisations could not be made (:func:`accounts.plans.default_plan` raises
    then). Nothing when the database cannot be read yet (before ``migrate``)."""
    try:
        plans.default_plan()
    except plans.UnknownPlan as e:
        return [Warning(str(e), hint="manage.py plan NAME creates it; docs/multi-tenant.md",
                        id="accounts.W001")]
    except DatabaseError:
        return []
    return []
