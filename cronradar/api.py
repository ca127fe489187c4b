"""The site's own endpoints: the 404 handler, the job wrapper's download and the
OpenAPI schema views. The plumbing the apps' endpoints share is :mod:`core.api`.
"""
from pathlib import Path

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework import permissions

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
