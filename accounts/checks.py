"""System checks of the accounts settings: a malformed ``CRONRADAR_SIGNUP``
stops every ``manage.py`` command (``serve``, ``migrate``) with the reason, so a
typo never silently closes or opens sign-up. Parsed by :func:`accounts.signup.parse`,
the one place that reads it."""
from django.conf import settings
from django.core.checks import Error, register

from accounts import signup


@register()
def signup_setting(app_configs=None, **kwargs) -> list[Error]:
    """Error ``cronradar.E004`` when ``CRONRADAR_SIGNUP`` cannot be parsed."""
    try:
        signup.parse(settings.CRONRADAR_SIGNUP)
    except ValueError as e:
        return [Error(f"CRONRADAR_SIGNUP={settings.CRONRADAR_SIGNUP!r} is not a sign-up mode",
                      hint=str(e), id="cronradar.E004")]
    return []
