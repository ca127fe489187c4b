"""The API's edge, plugged into DRF settings: key authentication and JSON
parsing (who may do what is :mod:`accounts.tenancy`); and the sign-in's
second backend, which finds an email-shaped username without its letter case.

The key is sent as ``Authorization: Bearer <key>`` or ``X-Api-Key: <key>``.
``request.auth`` becomes the :class:`~accounts.models.ApiKey` (its ``project``
scopes every lookup); people sign in with a session instead (DRF's
SessionAuthentication, CSRF-checked) and act through their memberships.
"""
import logging
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import AnonymousUser
from django.db.models import Q
from django.utils import timezone
from redis.exceptions import RedisError
from rest_framework import authentication, exceptions, parsers, throttling

from accounts import throttle
from accounts.models import ApiKey
from core import logs
from core.edge import client_address

LAST_USED_RESOLUTION = timedelta(minutes=1)  # last_used_at is written at most this often


class KeyLookupsThrottled(exceptions.APIException):
    """429: this address sent too many unknown keys lately (:func:`accounts.throttle.key_wait`);
    ``wait``: whole seconds (DRF puts them in ``Retry-After``)."""

    status_code = 429
    default_code = "throttled"

    def __init__(self, wait: int):
        self.wait = wait
        super().__init__(f"too many invalid API keys from your address: try again in {wait} "
                         f"second{'' if wait == 1 else 's'}")


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """DRF authentication: returns ``(AnonymousUser, api_key)`` or raises 401;
    :class:`KeyLookupsThrottled` (429) before the lookup while the client's
    address is throttled for unknown keys (:mod:`accounts.throttle`)."""

    def authenticate(self, request):
        key = request.META.get("HTTP_X_API_KEY", "").strip()
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if not key and header:
            scheme, _, value = header.partition(" ")
            if scheme.lower() != "bearer" or not value.strip():
                raise exceptions.AuthenticationFailed("use 'Authorization: Bearer <api key>'")
            key = value.strip()
        if not key:
            return None
        address = client_address(request.META)
        if wait := throttle.key_wait(address):
            raise KeyLookupsThrottled(wait)
        api_key = ApiKey.find(key)
        if api_key is None:
            throttle.key_failed(address)
            raise exceptions.AuthenticationFailed("invalid or revoked API key")
        now = timezone.now()
        if api_key.last_used_at is None or api_key.last_used_at < now - LAST_USED_RESOLUTION:
            ApiKey.objects.filter(Q(last_used_at__isnull=True)
                                  | Q(last_used_at__lt=now - LAST_USED_RESOLUTION),
                                  pk=api_key.pk).update(last_used_at=now)
            api_key.last_used_at = now
        return AnonymousUser(), api_key

    def authenticate_header(self, request):
        return 'Bearer realm="api"'


log = logging.getLogger(__name__)
# The API rate limit's cache (Redis) unreachable: requests go on, unlimited.
cache_down = logs.Outage("cache", "API request(s) let through without their rate limit",
                         level=logging.WARNING)


class CallerRateThrottle(throttling.SimpleRateThrottle):
    """DRF throttle: ``CRONRADAR_API_RATE`` requests per API key, or per signed-in
    person, counted in the cache (Redis in production); over it, 429 with
    ``Retry-After``. Anonymous requests (the schema) are not counted."""

    scope = "api"

    def get_rate(self):
        return settings.CRONRADAR_API_RATE or None

    def allow_request(self, request, view) -> bool:
        """DRF's check, but a request is allowed while the cache (Redis) is
        unreachable: the API keeps answering, unlimited, and the outage is logged
        once a minute (:data:`cache_down`); after a failure the cache is left
        alone for 5 s, so no request waits out its timeout meanwhile."""
        if cache_down.recent(5.0):
            return True
        try:
            allowed = super().allow_request(request, view)
        except RedisError as exc:
            cache_down.failed(log, exc)
            return True
        cache_down.ok(log)
        return allowed

    def get_cache_key(self, request, view):
        if isinstance(request.auth, ApiKey):
            ident = f"key{request.auth.pk}"
        elif request.user is not None and request.user.is_authenticated:
            ident = f"user{request.user.pk}"
        else:
            return None
        return f"throttle_api_{ident}"


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, with absurdly nested documents answered by a 400."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError("JSON parse error - nested too deeply") from None


class EmailCaseBackend(ModelBackend):
    """Sign-in's fallback after Django's ``ModelBackend`` (which takes the exact
    username): an email-shaped username (``@`` in it) that is nobody's exactly
    signs in as the one person whose username it is without letter case
    (``Ana@Corp.test`` typed for ``ana@corp.test``). Never when the exact
    username exists (a wrong password there stays wrong) or when several
    usernames match without case (none of them is picked)."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        users = get_user_model()
        if username is None:
            username = kwargs.get(users.USERNAME_FIELD)
        if not username or password is None or "@" not in username:
            return None
        field = users.USERNAME_FIELD
        if users._default_manager.filter(**{field: username}).exists():
            return None  # ModelBackend answered for this one
        found = list(users._default_manager.filter(**{f"{field}__iexact": username})[:2])
        if len(found) != 1:
            users().set_password(password)  # the work a match costs: the time tells nothing
            return None
        user = found[0]
        if user.check_password(password) and self.user_can_authenticate(user):
            return user
        return None
