"""The API's edge, plugged into DRF settings: key authentication, the permission
that requires a key, and JSON parsing.

The key is sent as ``Authorization: Bearer <key>`` or ``X-Api-Key: <key>``.
``request.auth`` becomes the :class:`~monitors.models.ApiKey` (its ``project``
scopes every lookup); ``request.user`` is left for people, anonymous for now.
"""
from django.contrib.auth.models import AnonymousUser
from rest_framework import authentication, exceptions, parsers, permissions

from monitors.models import ApiKey


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """DRF authentication: returns ``(AnonymousUser, api_key)`` or raises 401."""

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
        api_key = ApiKey.objects.select_related("project").filter(key_hash=ApiKey.hash(key)).first()
        if api_key is None:
            raise exceptions.AuthenticationFailed("invalid API key")
        return AnonymousUser(), api_key

    def authenticate_header(self, request):
        return 'Bearer realm="api"'


class HasApiKey(permissions.BasePermission):
    """DRF permission: the request authenticated with a project API key."""

    def has_permission(self, request, view) -> bool:
        return isinstance(request.auth, ApiKey)


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, with absurdly nested documents answered by a 400."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError("JSON parse error - nested too deeply") from None
