"""API plumbing shared by the apps' endpoints (``monitors.api``, ``alerts.api``):
lookups scoped to the caller's project that answer 404, query-parameter parsing
with 400s that name the parameter, the 404 handler and the OpenAPI schema view.
"""
from django.http import Http404, HttpResponse, JsonResponse
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiParameter
from drf_spectacular.views import SpectacularAPIView
from rest_framework import permissions, serializers

MAX_LIMIT = 1000
MAX_PK = 2**63 - 1
LIMIT = OpenApiParameter("limit", int, description=f"at most this many, 1-{MAX_LIMIT} "
                         "(default 100)")


def not_found(request, exception=None):
    """404 for unmatched URLs: JSON under /api/, plain text elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return HttpResponse("not found\n", status=404, content_type="text/plain; charset=utf-8")


def exec_script(request):
    """``GET /cli/cronradar_exec.py``: the job wrapper (:mod:`cronradar.cronradar_exec`,
    standard library only) as one file, for hosts without CronRadar installed."""
    from pathlib import Path

    from cronradar import cronradar_exec

    return HttpResponse(Path(cronradar_exec.__file__).read_bytes(),
                        content_type="text/x-python; charset=utf-8")


def exception_handler(exc, context):
    """DRF's handler, with every 404 saying only ``{"detail": "Not found."}``: the
    answer for another tenant's object is the same as for one that never existed."""
    from rest_framework.views import exception_handler as drf_handler

    if isinstance(exc, Http404):
        exc = Http404()
    return drf_handler(exc, context)


def get_or_404(queryset, pk, **filters):
    """Row ``pk`` of ``queryset`` (already limited to the caller's projects by
    :func:`monitors.tenancy.visible`) matching ``filters``, or 404 (also for
    out-of-range ids)."""
    if not 0 < int(pk) <= MAX_PK:
        raise Http404
    obj = queryset.filter(pk=pk, **filters).first()
    if obj is None:
        raise Http404
    return obj


def limit(request) -> int:
    """``?limit=``: 1-1000, default 100; anything else is a 400."""
    raw = request.query_params.get("limit", "100")
    if not (raw.isascii() and raw.isdigit() and 1 <= int(raw) <= MAX_LIMIT):
        raise serializers.ValidationError({"limit": [f"must be an integer from 1 to {MAX_LIMIT}"]})
    return int(raw)


def flag(request, name: str) -> bool | None:
    """A boolean query parameter (1/true/yes, 0/false/no), None when absent."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    if raw.lower() in ("1", "true", "yes"):
        return True
    if raw.lower() in ("0", "false", "no"):
        return False
    raise serializers.ValidationError({name: ["must be true or false"]})


def object_id(request, name: str) -> int | None:
    """An id query parameter (``?monitor=3``), None when absent; 400 otherwise."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    if not (raw.isascii() and raw.isdigit() and 0 < int(raw) <= MAX_PK):
        article = "an" if name[0] in "aeiou" else "a"
        raise serializers.ValidationError({name: [f"must be {article} {name} id"]})
    return int(raw)


class ApiKeyScheme(OpenApiAuthenticationExtension):
    """Describes :class:`monitors.auth.ApiKeyAuthentication` in the OpenAPI schema."""

    target_class = "monitors.auth.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer",
                "description": "Project API key (also accepted as `X-Api-Key`)."}


class Schema(SpectacularAPIView):
    """``GET /api/v1/schema/``: the OpenAPI 3 schema (YAML; ``?format=json`` for JSON)."""

    authentication_classes = []
    permission_classes = [permissions.AllowAny]
