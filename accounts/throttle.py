"""Throttles on guessing: sign-in attempts and API key lookups, counted per client
address (:func:`core.edge.client_address`) in Django's cache (Redis in
production, this process's memory on the embedded default).

- Sign-in: a growing cool-off delay, never a lockout. Failed sign-ins are counted
  per account and address (the pair) and per address over all accounts. After
  the pair's :data:`PAIR_FREE`-th failure its next attempt waits 1 s, doubling
  with each further failure up to :data:`COOL_OFF_CAP`; the address over all
  accounts the same from its :data:`ADDRESS_FREE`-th failure. While a wait runs
  the password is not even checked (the right one does not sign in either), so
  no ``user_login_failed`` fires for the refused attempt. A sign-in resets its
  pair. An account guessed from elsewhere is never slowed here: nobody can keep
  its owner out. Counters are forgotten :data:`FORGET_AFTER` after their first
  failure. Failures are counted by Django's ``user_login_failed`` signal (every
  form that calls ``authenticate`` with the request: the dashboard's and the
  admin's); forms refuse with :class:`ThrottledForm`.
- API keys: :data:`KEY_FAILURES` unknown keys from one address within a
  :data:`KEY_WINDOW` (fixed windows) and that address's key lookups are refused
  (``429`` with ``Retry-After``) until the window ends, before the database is
  asked, so a good key from that address waits too.

A request without an address (neither ``REMOTE_ADDR`` nor the trusted
``X-Forwarded-For`` entry is an IP) is not throttled. The cache unreachable: the
throttles let everything through, one log line a minute (:data:`cache_down`),
and the cache is left alone for 5 s after each failure.
"""
from __future__ import annotations

import hashlib
import logging
import math
from datetime import datetime, timedelta

from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.utils import timezone
from redis.exceptions import RedisError

from core import logs
from core.edge import client_address

PAIR_FREE = 5  # failed sign-ins of one account from one address before the first wait
ADDRESS_FREE = 20  # failed sign-ins from one address (any accounts) before the first wait
COOL_OFF_CAP = timedelta(minutes=15)  # the longest wait
FORGET_AFTER = timedelta(days=1)  # a sign-in counter lives this long after its first failure
KEY_FAILURES = 20  # unknown API keys from one address per KEY_WINDOW
KEY_WINDOW = timedelta(minutes=1)

log = logging.getLogger(__name__)
cache_down = logs.Outage("cache", "sign-in or API key attempt(s) let through unthrottled",
                         level=logging.WARNING)
CACHE_ERRORS = (RedisError, OSError)


def count(key: str, timeout: timedelta) -> int:
    """Add one to the counter ``key`` (made with ``timeout`` when new); its value."""
    seconds = int(timeout.total_seconds())
    cache.add(key, 0, timeout=seconds)
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr: this is the first again
        cache.set(key, 1, timeout=seconds)
        return 1


def _guarded(step, default):
    """``step()``, or ``default`` while the cache is unreachable (logged by :data:`cache_down`)."""
    if cache_down.recent(5.0):
        return default
    try:
        result = step()
    except CACHE_ERRORS as exc:
        cache_down.failed(log, exc)
        return default
    cache_down.ok(log)
    return result


# --- sign-in ------------------------------------------------------------------------------

def _pair(username: str, address: str) -> str:
    account = hashlib.sha256(username.strip().lower().encode()).hexdigest()[:32]
    return f"throttle:signin:{account}:{address}"


def _counters(username: str, address: str) -> tuple[tuple[str, int], ...]:
    """The counters a sign-in of ``username`` from ``address`` is held by, with the
    failures each allows before its first wait."""
    return (_pair(username, address), PAIR_FREE), (f"throttle:signin:{address}", ADDRESS_FREE)


def cool_off(failures: int, free: int) -> timedelta:
    """The wait after ``failures`` failed sign-ins when ``free`` of them cost
    nothing: none below ``free``, 1 s at ``free``, doubling, at most :data:`COOL_OFF_CAP`."""
    if failures < free:
        return timedelta(0)
    return min(COOL_OFF_CAP, timedelta(seconds=2 ** min(failures - free, 20)))


def signin_wait(username: str, address: str | None, now: datetime | None = None) -> int:
    """Whole seconds (rounded up) before ``username`` may try to sign in from
    ``address`` again; 0: now (also without an address, or the cache down)."""
    if not address:
        return 0
    now = now or timezone.now()
    keys = [f"{key}:until" for key, _ in _counters(username, address)]
    until = _guarded(lambda: cache.get_many(keys), {})
    latest = max(until.values(), default=0.0)
    return max(0, math.ceil(latest - now.timestamp()))


def signin_failed(username: str, address: str | None, now: datetime | None = None) -> None:
    """Count a failed sign-in of ``username`` from ``address`` and start the wait it earns."""
    if not address:
        return
    now = now or timezone.now()

    def step():
        for key, free in _counters(username, address):
            wait = cool_off(count(key, FORGET_AFTER), free)
            if wait:
                cache.set(f"{key}:until", now.timestamp() + wait.total_seconds(),
                          timeout=int(wait.total_seconds()) + 1)
    _guarded(step, None)


def signin_succeeded(username: str, address: str | None) -> None:
    """A sign-in of ``username`` from ``address``: its pair starts over (the
    address's count over all accounts stays)."""
    if address:
        key = _pair(username, address)
        _guarded(lambda: cache.delete_many([key, f"{key}:until"]), None)


def signin_message(wait: int) -> str:
    """What a refused sign-in says: ``too many failed sign-ins: try again in 8 seconds``."""
    return f"too many failed sign-ins: try again in {wait} second{'' if wait == 1 else 's'}"


class ThrottledForm:
    """Mixin for a Django ``AuthenticationForm``: while :func:`signin_wait` runs
    for the username and the request's address, ``clean`` raises
    ``ValidationError`` (code ``throttled``, :func:`signin_message`) before the
    password is checked, and :attr:`throttled_for` holds the wait in seconds."""

    throttled_for = 0

    def clean(self):
        username = self.cleaned_data.get("username")
        if username and self.request is not None:
            wait = signin_wait(username, client_address(self.request.META))
            if wait:
                self.throttled_for = wait
                raise ValidationError(signin_message(wait), code="throttled")
        return super().clean()


def refused(response, form):
    """``response`` (the sign-in page again, for ``form``) made ``429`` with
    ``Retry-After`` (:attr:`ThrottledForm.throttled_for` seconds) while that
    sign-in cools off; as it was otherwise."""
    wait = getattr(form, "throttled_for", 0)
    if wait:
        response.status_code = 429
        response["Retry-After"] = str(wait)
    return response


def _on_failed(sender, credentials, request=None, **kwargs):
    username = credentials.get("username")
    if request is not None and username:
        signin_failed(str(username), client_address(request.META))


def _on_signed_in(sender, request, user, **kwargs):
    if request is not None:
        signin_succeeded(user.get_username(), client_address(request.META))


def connect() -> None:
    """Count failed sign-ins and reset on sign-in (``AccountsConfig.ready``)."""
    user_login_failed.connect(_on_failed, dispatch_uid="accounts.throttle.failed")
    user_logged_in.connect(_on_signed_in, dispatch_uid="accounts.throttle.signed_in")


# --- API keys -----------------------------------------------------------------------------

def _key_window(address: str, now: datetime) -> tuple[str, float]:
    """The counter of ``address``'s unknown keys in the window of ``now``, and the
    window's end (epoch seconds)."""
    size = KEY_WINDOW.total_seconds()
    window = int(now.timestamp() // size)
    return f"throttle:apikey:{address}:{window}", (window + 1) * size


def key_wait(address: str | None, now: datetime | None = None) -> int:
    """Whole seconds (rounded up) before ``address`` may have API keys looked up
    again; 0: now (also without an address, or the cache down)."""
    if not address:
        return 0
    now = now or timezone.now()
    key, end = _key_window(address, now)
    if (_guarded(lambda: cache.get(key), None) or 0) < KEY_FAILURES:
        return 0
    return max(1, math.ceil(end - now.timestamp()))


def key_failed(address: str | None, now: datetime | None = None) -> None:
    """Count an unknown or revoked API key sent from ``address``."""
    if address:
        key, _ = _key_window(address, now or timezone.now())
        _guarded(lambda: count(key, KEY_WINDOW), None)
