"""cronradar.urls: every API route's ``Allow`` header (on OPTIONS and on a 405)
lists exactly the methods the route serves, walked over the URL conf so a new
route is checked without being named here."""
import re
import uuid
from datetime import timedelta

import pytest
from django.apps import apps
from django.urls import URLPattern, URLResolver, get_resolver

from accounts.models import ApiKey
from monitors.models import Monitor
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


ROLES = ("owner", "viewer", "read-only key")


@pytest.fixture(params=ROLES)
def callers(request, project):
    """A person of ``project``'s organisation (an owner, or a viewer whom every write
    refuses) or a read-only key of the project for /api/v1/; the project's key for
    /api/v3/ (keys only: read-only for the read-only case)."""
    role = request.param
    key = ApiKey.issue(project, read_only=role == "read-only key")[1]
    v1 = as_key(key) if role == "read-only key" else as_person(
        person("olga", project.organisation, role))
    return lambda path: as_key(key) if path.startswith("/api/v3/") else v1


def test_allow_lists_exactly_the_methods_each_api_route_serves(callers, settings):
    """Whatever the caller's role, a method a route does not serve is a 405 (never a
    403 first), and a method it serves is not."""
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


def test_an_unserved_method_is_a_405_before_the_role_is_looked_at(project):
    viewer = as_person(person("vera", project.organisation, "viewer"))
    for method in ("POST", "PUT", "PATCH"):
        resp = viewer.generic(method, "/api/v1/organisation/", '{"confirm": "acme"}',
                              content_type="application/json")
        assert (resp.status_code, resp.get("Allow")) == (405, "DELETE, OPTIONS")
        assert resp.json() == {"detail": f'Method "{method}" not allowed.'}


def _rows() -> dict[str, int]:
    return {m._meta.label: m._default_manager.count() for m in apps.get_models()}


@pytest.mark.parametrize("role", ROLES)
def test_head_answers_as_get_on_every_v1_route_and_never_writes(project, make_monitor,
                                                                role, settings):
    """HEAD on /api/v1/ is GET without a body, for every role: same status, and not
    a row more or less (/api/v3/ serves no HEAD, as Healthchecks)."""
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_CLASSES": []}
    make_monitor(slug="no-such-slug", grace=timedelta(seconds=60))
    key = ApiKey.issue(project, read_only=True)[1]
    client = as_key(key) if role == "read-only key" else as_person(
        person("olga", project.organisation, role))
    paths = [p for p in api_paths() if p.startswith("/api/v1/")]
    wrong = []
    for path in paths:
        got = client.get(path).status_code
        before = _rows()
        head = client.generic("HEAD", path, '{"grace": 4242, "name": "x"}',
                              content_type="application/json")
        body = b"".join(head.streaming_content) if head.streaming else head.content
        if (head.status_code, body) != (got, b""):
            wrong.append(f"HEAD {path}: {head.status_code} (GET {got}), {len(body)} bytes")
        if _rows() != before:
            wrong.append(f"HEAD {path} changed rows")
    assert wrong == []
    assert Monitor.objects.get().grace == timedelta(seconds=60)
