"""Signed links in notifications: acknowledge or resolve an incident without a login.

A link carries the incident id and the action, signed with ``SECRET_KEY``
(Django's ``TimestampSigner``) and valid for ``CRONRADAR_LINK_MAX_AGE`` seconds
(24 h by default). Opening it (GET) only shows a page with a button; the button's
POST acts, so mail scanners and link previews that fetch it change nothing. An
incident is acknowledged or resolved once: the link works once, later visits say
what happened and when, and the timeline records that a link did it.
"""
from __future__ import annotations

import functools
import re

from django.conf import settings
from django.core import signing

SALT = "cronradar.incident-link"
ACTIONS = ("ack", "resolve")
# a link's token in a text: what follows /incident-link/ up to the next slash,
# quote, space or percent-encoded slash (a receiver that echoes the request body
# may quote it encoded)
_TOKEN = re.compile(r"(/|%2[fF])incident-link(/|%2[fF])[^/\s\"'<>\\%]+")


def make(incident_id: int, action: str) -> str:
    """The absolute URL of a signed ``action`` (``ack`` or ``resolve``) link."""
    token = _signer(settings.SECRET_KEY).sign_object({"i": incident_id, "a": action})
    return f"{settings.CRONRADAR_BASE_URL}/incident-link/{token}/"


@functools.cache
def _signer(key: str) -> signing.TimestampSigner:
    """The signer of links with ``key`` (``SECRET_KEY``), made once: a notification
    signs two links."""
    return signing.TimestampSigner(key=key, salt=SALT)


def hide(text: str) -> str:
    """``text`` with every signed link's token read as ``***`` (a delivery's error,
    where a receiver quoted the notification: people who may read the error may not
    be allowed to acknowledge or resolve)."""
    return _TOKEN.sub(lambda m: f"{m[1]}incident-link{m[2]}***", text)


def read(token: str) -> tuple[int, str]:
    """(incident id, action) of a link's token. Raises ``signing.SignatureExpired``
    for an old link and ``signing.BadSignature`` for anything else not made here."""
    data = signing.TimestampSigner(salt=SALT).unsign_object(
        token, max_age=settings.CRONRADAR_LINK_MAX_AGE)
    if not isinstance(data, dict) or data.get("a") not in ACTIONS or not isinstance(
            data.get("i"), int):
        raise signing.BadSignature("not an incident link")
    return data["i"], data["a"]
