"""The SDK's settings: where CronRadar is and which keys to use.

Each setting comes from a keyword argument when given (not None), else from the
environment:

==============  ======================  ==============================================
argument        environment             meaning
==============  ======================  ==============================================
``url``         ``CRONRADAR_URL``       the service's base URL (``https://cronradar.example``)
``ping_key``    ``CRONRADAR_PING_KEY``  the project's ping key: slug pings, create-on-ping
``api_key``     ``CRONRADAR_API_KEY``   an API key of the project: upserts, apply, export
``ping_url``    ``CRONRADAR_PING_URL``  one monitor's ping URL (``…/ping/<uuid>``)
``timeout``     (none)                  seconds per request, retries included (default 10)
==============  ======================  ==============================================
"""
from __future__ import annotations

import dataclasses
import os
import urllib.parse
from typing import Mapping

DEFAULT_TIMEOUT = 10.0
ENVIRONMENT = {"url": "CRONRADAR_URL", "ping_key": "CRONRADAR_PING_KEY",
               "api_key": "CRONRADAR_API_KEY", "ping_url": "CRONRADAR_PING_URL"}


@dataclasses.dataclass(frozen=True)
class Settings:
    """Resolved settings ("" when not set); build them with :func:`resolve`."""

    url: str = ""  # base URL, no trailing slash
    ping_key: str = ""
    api_key: str = ""
    ping_url: str = ""  # no trailing slash
    timeout: float = DEFAULT_TIMEOUT  # seconds per request, retries included

    def ping_base(self, slug: str | None = None) -> str:
        """The ping URL (its success form, no action) of monitor ``slug``
        (``<url>/ping/<ping key>/<slug>``), or of ``ping_url`` when ``slug`` is
        None; "" when the settings cannot name it (no ``url`` or ``ping_key`` for a
        slug, no ``ping_url`` without one)."""
        if slug is None:
            return self.ping_url
        if not (self.url and self.ping_key):
            return ""
        return f"{self.url}/ping/{urllib.parse.quote(self.ping_key, safe='')}/" \
               f"{urllib.parse.quote(slug, safe='')}"

    def api_url(self, path: str) -> str:
        """The URL of API ``path`` (``/monitors/by-slug/x/``) under ``<url>/api/v1``;
        "" without ``url``."""
        return f"{self.url}/api/v1/{path.lstrip('/')}" if self.url else ""

    def replace(self, **changes) -> Settings:
        """A copy with ``changes`` (same names as the fields)."""
        return dataclasses.replace(self, **changes)


def resolve(url: str | None = None, ping_key: str | None = None,
            api_key: str | None = None, ping_url: str | None = None,
            timeout: float | None = None,
            environ: Mapping[str, str] | None = None) -> Settings:
    """The settings from the arguments given (not None), else from ``environ``
    (default ``os.environ``, read now). Trailing slashes of the URLs are dropped.
    Raises ValueError for a ``timeout`` that is not more than 0."""
    env = os.environ if environ is None else environ
    given = {"url": url, "ping_key": ping_key, "api_key": api_key, "ping_url": ping_url}
    values = {name: (value if value is not None else env.get(ENVIRONMENT[name], "")).strip()
              for name, value in given.items()}
    values["url"] = values["url"].rstrip("/")
    values["ping_url"] = values["ping_url"].rstrip("/")
    if timeout is None:
        timeout = DEFAULT_TIMEOUT
    if not timeout > 0:
        raise ValueError(f"timeout must be more than 0 seconds, not {timeout!r}")
    return Settings(timeout=float(timeout), **values)
