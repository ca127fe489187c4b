"""cronradar.urls: every API route's ``Allow`` header (on OPTIONS and on a 405)
lists exactly the methods the route serves, walked over the URL conf so a new
route is checked without being named here."""
import re
import uuid

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from tests.helpers import as_key, as_person, person

pytestmark = pytest.mark.django_db

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
# a value for each path parameter of the API's routes: ids that exist nowhere, so
# an allowed method answers 404 (or 400) and changes nothing
VALUES = {"pk": "999999", "slug": "no-such-slug", "name": "no-such-name",
          "code": str(uuid.UUID(int=7)), "key": "a" * 40}


def api_paths(resolver=None, prefix="") -> list[str]:
    """Every concrete path under /api/ of the URL conf, its parameters filled from
    ``VALUES`` (routes with other parameters left out: the v3 catch-all that
    answers 404 for any path)."""
    found = []
    for entry in (resolver or get_resolver()).url_patterns:
        route = str(entry.pattern)
        route = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda g: VALUES.get(g[1], "\0"), route)
        route = re.sub(r"<(?:\w+:)?(\w+)>", lambda g: VALUES.get(g[1], "\0"), route)
        route = prefix + route.lstrip("^").rstrip("$").replace("\\.", ".")
        if isinstance(entry, URLResolver):
            found += api_paths(entry, route)
        elif isinstance(entry, URLPattern) and route.startswith("api/") and "\0" not in route:
            found.append("/" + route)
    return found


def test_the_walk_finds_every_api_route():
    paths = api_paths()
    assert {"/api/v1/monitors/", "/api/v1/monitors/999999/",
            "/api/v1/monitors/by-slug/no-such-slug/", "/api/v1/organisation/",
            "/api/v1/usage/", "/api/v1/audit-log/", "/api/v1/monitors/999999/stats/",
            "/api/v3/checks/", f"/api/v3/checks/{VALUES['code']}"} <= set(paths)
    assert len(paths) == len(set(paths)) >= 45


@pytest.fixture
def callers(project, api_key):
    """A person owning ``project``'s organisation for /api/v1/ (a key may be below
    an endpoint's role, which answers 403 before the method is looked at), the
    project's key for /api/v3/ (keys only)."""
    owner = as_person(person("olga", project.organisation, "owner"))
    return lambda path: as_key(api_key) if path.startswith("/api/v3/") else owner


def test_allow_lists_exactly_the_methods_each_api_route_serves(callers, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_CLASSES": []}
    wrong = []
    for path in api_paths():
        client = callers(path)
        allow = client.options(path).get("Allow", "(none)")
        allowed = {m.strip() for m in allow.split(",")}
        for method in METHODS:
            resp = client.generic(method, path)
            if (resp.status_code == 405) == (method in allowed):
                wrong.append(f"{method} {path}: {resp.status_code}, Allow: {allow}")
            if resp.status_code == 405 and resp.get("Allow") != allow:
                wrong.append(f"{method} {path}: 405 with Allow: {resp.get('Allow')}")
    assert wrong == []
