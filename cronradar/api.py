"""The site's own endpoints: the 404 handler, the job wrapper's download, an
organisation's usage and the OpenAPI schema views. The plumbing the apps'
endpoints share is :mod:`core.api`.
"""
from pathlib import Path

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework import exceptions, permissions, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import plans, tenancy
from accounts.models import Membership
from cronradar import usage
from cronradar.dashboard.common import not_found as dashboard_not_found

EXEC_SCRIPT = Path(settings.BASE_DIR) / "sdk" / "python" / "cronradar_sdk" / "cronradar_exec.py"
MACHINE_PATHS = ("/ping/", "/badge/", "/cli/", "/incident-link/")


def not_found(request, exception=None):
    """404 for unmatched URLs and Http404: JSON under /api/, plain text where
    machines ask (pings, badges, the CLI), the dashboard's page with its navigation
    elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    if request.path.startswith(MACHINE_PATHS):
        return HttpResponse("not found\n", status=404,
                            content_type="text/plain; charset=utf-8")
    return dashboard_not_found(request)


def exec_script(request):
    """``GET /cli/cronradar_exec.py``: the job wrapper (the SDK's
    ``sdk/python/cronradar_sdk/cronradar_exec.py``, standard library only, one
    self-contained module) as one file, for hosts without CronRadar installed."""
    return HttpResponse(EXEC_SCRIPT.read_bytes(),
                        content_type="text/x-python; charset=utf-8")


def _counted(name: str):
    return inline_serializer(name, {
        "used": serializers.IntegerField(),
        "limit": serializers.IntegerField(allow_null=True, help_text="null: no limit")})


USAGE_SCHEMA = inline_serializer("Usage", {
    "organisation": serializers.IntegerField(),
    "plan": serializers.CharField(allow_null=True, help_text="the plan's name; null: none"),
    "month": serializers.CharField(help_text="the UTC month of the ping counts, YYYY-MM"),
    **{name: _counted(f"Usage{name.title().replace('_', '')}") for name in plans.COUNTED},
    "pings_this_month": serializers.IntegerField(
        help_text="pings accepted this UTC month (added up each minute)"),
    "pings_refused_this_month": serializers.IntegerField(
        help_text="pings refused (429) by a ping rate limit this UTC month"),
})


def organisation_for(request, given: str | None):
    """The organisation whose usage a caller asks for: ``given`` (an id among the
    caller's organisations), else the caller's only one (a key: its project's).
    Raises ValidationError (400) when a person in several gave none, NotFound
    (404) for one they cannot see, PermissionDenied (403) below ``member``."""
    who = tenancy.caller(request)
    organisations = who.organisations().select_related("plan")
    if given is None:
        found = list(organisations[:2])
        if len(found) != 1:
            raise exceptions.ValidationError(
                {"organisation": ["required: you are in several organisations; give the id "
                                  "of one"]})
        organisation = found[0]
    elif not (given.isascii() and given.isdigit()) or (
            organisation := organisations.filter(pk=int(given)).first()) is None:
        raise exceptions.NotFound("no organisation with this id that you can see")
    role = (tenancy.KEY_ROLE[who.key.read_only] if who.key is not None
            else who.org_role(organisation.pk))
    if not tenancy.at_least(role, Membership.Role.MEMBER):
        raise exceptions.PermissionDenied(
            "this API key is read-only" if who.key is not None
            else "this needs the member role in the organisation")
    return organisation


class Usage(APIView):
    """``GET /api/v1/usage/``: an organisation's usage against its plan (members and
    above; an API key or a session): :func:`cronradar.usage.usage`."""

    @extend_schema(responses=USAGE_SCHEMA, parameters=[OpenApiParameter(
        "organisation", int, description="whose usage (needed when you are in several)")])
    def get(self, request):
        organisation = organisation_for(request, request.query_params.get("organisation"))
        return Response(usage.usage(organisation, timezone.now()))


class Schema(SpectacularAPIView):
    """``GET /api/v1/schema/``: the OpenAPI 3 schema (YAML; ``?format=json`` for JSON)."""

    authentication_classes = []
    permission_classes = [permissions.AllowAny]
    throttle_classes = []


class Docs(SpectacularSwaggerSplitView):
    """``GET /api/v1/docs/``: the schema as a browsable page (Swagger UI, served from
    this server: no CDN). The split view: the page's own script is a URL
    (``?script``, JavaScript), not inline, so the Content-Security-Policy runs it."""

    authentication_classes = []
    permission_classes = [permissions.AllowAny]
    throttle_classes = []
    url_name = "schema"
    http_method_names = ["get", "head"]
    template_name = "api_docs.html"
