"""Django management commands as monitored jobs.

    from django.core.management.base import BaseCommand
    from cronradar_sdk.django import monitored

    @monitored(schedule="0 3 * * *", tz="Europe/Berlin")
    class Command(BaseCommand):
        def handle(self, *args, **options): ...

Each ``manage.py <command>`` is then a run of the monitor named after the command
(``manage.py nightly_report``: slug ``nightly_report``; ``slug=`` names another): ``start``,
then success or ``fail`` with the exception's type and message (a
``CommandError`` included) and the duration, through
:class:`cronradar_sdk.monitor`, which it takes its arguments from (``schedule=``,
``tz=``, ``grace=``: the monitor is created on first use; ``url=``,
``ping_key=``, ``api_key=``, ``ping_url=``, ``timeout=``). A setting not given
comes from the Django settings of the same name as the environment variable
(``CRONRADAR_URL``, ``CRONRADAR_PING_KEY``, ``CRONRADAR_API_KEY``,
``CRONRADAR_PING_URL``), else from the environment. CronRadar being unreachable
never fails the command. Django is imported only here, and only when a command
runs.
"""
from __future__ import annotations

import functools

from cronradar_sdk import config, runs
from cronradar_sdk.schedulers import slugify

SETTINGS = tuple(config.ENVIRONMENT)  # url, ping_key, api_key, ping_url


def command_slug(command_class) -> str:
    """The slug of a command class's monitor: its module's last name (the name
    ``manage.py`` runs it by) made a slug."""
    return slugify(command_class.__module__.rsplit(".", 1)[-1])


def _from_django(given: dict) -> dict:
    """``given`` with each setting left out (None) taken from the Django settings
    when they have it."""
    from django.conf import settings

    found = dict(given)
    for name, variable in config.ENVIRONMENT.items():
        if found.get(name) is None:
            found[name] = getattr(settings, variable, None) or None
    return found


def monitored(command_class=None, *, slug: str | None = None, **monitor_kwargs):
    """Class decorator for a ``BaseCommand`` subclass (``@monitored`` or
    ``@monitored(...)``): each call of its ``handle()`` is a run of monitor ``slug``
    (default :func:`command_slug`). ``monitor_kwargs``: as
    :class:`cronradar_sdk.monitor`'s (a bad ``grace`` or ``timeout`` raises
    ValueError here). Returns the class, its ``handle`` wrapped."""
    given = {name: monitor_kwargs.pop(name, None) for name in SETTINGS}

    def decorate(cls):
        handle = cls.handle
        name = slug or command_slug(cls)
        runs.monitor(name, **given, **monitor_kwargs)  # bad arguments fail at import

        @functools.wraps(handle)
        def monitored_handle(self, *args, **options):
            # the Django settings are read when the command runs (they are set up by then)
            with runs.monitor(name, **_from_django(given), **monitor_kwargs):
                return handle(self, *args, **options)

        cls.handle = monitored_handle
        return cls

    return decorate if command_class is None else decorate(command_class)
