"""``/favicon.ico``: the site's icon for a browser that asks there without reading a
page's ``<link rel="icon">`` (an API answer, a JSON file opened in a tab). The
pages link the same file, ``static/cronradar/favicon.svg``; it is SVG whatever the
path says (browsers go by the Content-Type)."""
from __future__ import annotations

import functools
from pathlib import Path

from django.http import HttpResponse
from django.views.decorators.http import require_safe

ICON = Path(__file__).resolve().parent.parent / "static" / "cronradar" / "favicon.svg"
MAX_AGE = 86400  # seconds a browser may keep it


@functools.cache
def _svg() -> bytes:
    return ICON.read_bytes()


@require_safe
def favicon(request):
    """GET or HEAD: the icon (``image/svg+xml``, cacheable for a day); other methods 405."""
    response = HttpResponse(_svg(), content_type="image/svg+xml")
    response["Cache-Control"] = f"public, max-age={MAX_AGE}"
    return response
