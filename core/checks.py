"""System checks for a deployment: with ``CRONRADAR_ENV=production`` CronRadar
refuses to start (``manage.py`` commands, ``serve``, the docker web service's
``migrate``) with the default secret key, ``ALLOWED_HOSTS=*`` or the SSRF guard off.
"""
from django.conf import settings
from django.core.checks import Error, register


@register()
def production_settings(app_configs=None, **kwargs) -> list[Error]:
    """Errors ``cronradar.E001``-``E003`` under ``CRONRADAR_ENV=production``."""
    if not settings.PRODUCTION:
        return []
    errors = []
    if settings.SECRET_KEY == settings.DEFAULT_SECRET_KEY:
        errors.append(Error("SECRET_KEY is the built-in development key",
                            hint="set SECRET_KEY to a long random value", id="cronradar.E001"))
    if "*" in settings.ALLOWED_HOSTS:
        errors.append(Error("ALLOWED_HOSTS allows every host name (*)",
                            hint="set ALLOWED_HOSTS to the names CronRadar is reached by",
                            id="cronradar.E002"))
    if not settings.CRONRADAR_BLOCK_PRIVATE_ADDRESSES:
        errors.append(Error("the SSRF guard is off (CRONRADAR_BLOCK_PRIVATE_ADDRESSES=false)",
                            hint="leave it on; allow internal receivers with "
                                 "CRONRADAR_ALLOWED_DESTINATIONS", id="cronradar.E003"))
    return errors
