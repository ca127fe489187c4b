"""X-Frame-Options and the Content-Security-Policy (cronradar/settings.py,
cronradar.headers): every dashboard URL (each pattern of cronradar/dashboard/urls.py,
resolved with real objects), the signed acknowledge link, the docs, the API docs,
sign-in, sign-up, the first run and the admin answer with ``X-Frame-Options: DENY``
and the policy, with a fresh nonce on each HTML answer."""
import re
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator
from django.test import Client
from django.utils import timezone
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from accounts import invitations
from accounts import signup as accounts_signup
from accounts.models import ApiKey, Membership, Organisation
from alerts import links
from alerts.models import MaintenanceWindow
from cronradar.dashboard import urls as dashboard_urls
from tests.site.dashboard.conftest import signed_in

pytestmark = pytest.mark.django_db

POLICY = {"default-src": "'self'", "style-src": "'self'", "img-src": "'self' data:",
          "object-src": "'none'", "base-uri": "'none'", "form-action": "'self'",
          "frame-ancestors": "'none'"}
NONCED = re.compile(r"'self' 'nonce-(?P<nonce>[A-Za-z0-9+/]{22}==)'")
# the answers that are not HTML (they carry both headers too: not asserted)
NOT_HTML = {"recent_pings": "application/json", "monitors_file_export": "application/json",
            "organisation_export": "application/json", "badge": "image/svg+xml",
            "docs_screenshot": "image/png", "ping_body": "text/plain",
            "favicon": "image/svg+xml"}


def assert_framed_by_none(response, what: str) -> str:
    """The nonce of ``response``'s policy, after checking both headers."""
    assert response["X-Frame-Options"] == "DENY", what
    directives = dict(d.split(" ", 1) for d in response["Content-Security-Policy"].split("; "))
    script = directives.pop("script-src")
    assert directives == POLICY, what
    found = NONCED.fullmatch(script)
    assert found, (what, script)
    return found["nonce"]


FIRST_ACCOUNT = "olga.owner@operations.example-company.com"


@pytest.fixture
def urls(project, world, settings):
    """{route name: (client, path)} for every route of the dashboard, with objects
    so that each resolves to its page."""
    settings.CRONRADAR_SIGNUP = "open"
    # as the first account is made (the setup page): staff, named by a long email
    # address, so the header holds every link it can (QA: 412 px wide at 390)
    admin = signed_in(project, "owner", FIRST_ACCOUNT)
    get_user_model().objects.filter(username=FIRST_ACCOUNT).update(is_staff=True)
    anonymous = Client()
    m, incident = world["monitor"], world["incident"]
    now = timezone.now()
    window = MaintenanceWindow.objects.create(project=project, name="upgrade", tag="db",
                                              starts_at=now, ends_at=now + timedelta(hours=1))
    key, _ = ApiKey.issue(project)
    viewer = get_user_model().objects.create_user("vic", "vic@example.com", "pw-vic")
    member = Membership.objects.create(organisation=project.organisation, user=viewer,
                                       role="viewer")
    invitation = invitations.invite(Organisation.objects.create(name="other"),
                                    "new@example.com", "viewer", "olga")
    waiting = get_user_model().objects.create_user("wes", "wes@example.com", "pw-wes")
    uid = urlsafe_base64_encode(force_bytes(waiting.pk))
    return {
        "monitors": (admin, "/"),
        "welcome": (admin, "/welcome/"),
        "test_ping": (admin, f"/welcome/{m.pk}/test-ping/"),
        "recent_pings": (admin, f"/welcome/{m.pk}/pings.json"),
        "signup": (anonymous, "/signup/"),
        "signup_verify": (anonymous, f"/signup/verify/{uid}/"
                                     f"{accounts_signup.tokens.make_token(waiting)}/"),
        "invitation": (anonymous, urlsplit(invitations.link(invitation)).path),
        "monitor_new": (admin, "/monitors/new/"),
        "monitors_file": (admin, "/monitors/file/"),
        "monitors_file_export": (admin, "/monitors/file/export.json"),
        "monitor": (admin, f"/monitors/{m.pk}/"),
        "monitor_edit": (admin, f"/monitors/{m.pk}/edit/"),
        "monitor_pause": (admin, f"/monitors/{m.pk}/pause/"),
        "monitor_delete": (admin, f"/monitors/{m.pk}/delete/"),
        "monitor_events": (admin, f"/monitors/{m.pk}/events/"),
        "ping_body": (admin, f"/monitors/{m.pk}/pings/{m.pings.latest('pk').pk}/body/"),
        "import_healthchecks": (admin, "/import/healthchecks/"),
        "import_crontab": (admin, "/import/crontab/"),
        "import_k8s": (admin, "/import/k8s/"),
        "incidents": (admin, "/incidents/"),
        "incident": (admin, f"/incidents/{incident.pk}/"),
        "incident_act": (admin, f"/incidents/{incident.pk}/ack/"),
        "channels": (admin, "/channels/"),
        "channel": (admin, f"/channels/{world['hook'].pk}/"),
        "channel_new": (admin, "/channels/new/webhook/"),
        "channel_test": (admin, f"/channels/{world['hook'].pk}/test/"),
        "channel_delete": (admin, f"/channels/{world['hook'].pk}/delete/"),
        "policies": (admin, "/policies/"),
        "policy": (admin, f"/policies/{world['policy'].pk}/"),
        "policy_delete": (admin, f"/policies/{world['policy'].pk}/delete/"),
        "windows": (admin, "/maintenance/"),
        "window": (admin, f"/maintenance/{window.pk}/"),
        "window_delete": (admin, f"/maintenance/{window.pk}/delete/"),
        "keys": (admin, "/keys/"),
        "key_revoke": (admin, f"/keys/{key.pk}/revoke/"),
        "badge_key": (admin, "/keys/badge/"),
        "members": (admin, "/members/"),
        "member_remove": (admin, f"/members/{member.pk}/remove/"),
        "switch": (admin, "/switch/"),
        "project_new": (admin, "/projects/new/"),
        "profile": (admin, "/account/"),
        "account_delete": (admin, "/account/delete/"),
        "usage": (admin, "/usage/"),
        "audit_log": (admin, "/audit-log/"),
        "organisation_export": (admin, "/organisation/export/"),
        "organisation_delete": (admin, "/organisation/delete/"),
        "docs": (anonymous, "/docs/"),
        "docs_screenshot": (anonymous, "/docs/screenshots/monitors.png"),
        "docs_page": (anonymous, "/docs/multi-tenant/"),
        "badge": (anonymous, f"/badge/{project.badge_key}/nightly-backup.svg"),
        "favicon": (anonymous, "/favicon.ico"),
        "login": (anonymous, "/login/"),
        "logout": (admin, "/logout/"),
        "password_reset": (anonymous, "/password-reset/"),
        "password_reset_done": (anonymous, "/password-reset/sent/"),
        "password_reset_confirm": (anonymous, f"/password-reset/{uid}/"
                                              f"{default_token_generator.make_token(waiting)}/"),
        # beside the dashboard's routes: the signed acknowledge link (no sign-in), the
        # API docs page, the admin
        "incident-link": (anonymous, urlsplit(links.make(incident.pk, "ack")).path),
        "api-docs": (anonymous, "/api/v1/docs/"),
        "admin-login": (anonymous, "/admin/login/"),
        "admin": (signed_in_staff(), "/admin/"),
    }


def signed_in_staff() -> Client:
    staff = get_user_model().objects.create_superuser("root", "root@example.com", "pw-root")
    client = Client()
    client.force_login(staff)
    return client


def test_every_dashboard_url_is_framed_by_none_with_a_nonce(urls):
    routes = {p.name for p in dashboard_urls.urlpatterns}
    assert routes <= set(urls), f"add to the walk: {sorted(routes - set(urls))}"
    nonces, kinds = set(), {}
    for name, (client, path) in urls.items():
        response = client.get(path)
        kind = response["Content-Type"].split(";")[0]
        kinds[name] = kind
        if kind != "text/html":
            continue
        assert response.status_code in (200, 302, 400, 405), (name, path, response.status_code)
        nonces.add(assert_framed_by_none(response, f"{name} {path}"))
    assert {n: k for n, k in kinds.items() if k != "text/html"} == NOT_HTML
    html = [n for n, k in kinds.items() if k == "text/html"]
    assert len(nonces) == len(html)  # a fresh nonce per answer


def test_the_pages_scripts_carry_the_answers_nonce(admin, world):
    response = admin.get("/")
    nonce = assert_framed_by_none(response, "/")
    page = response.content.decode()
    scripts = re.findall(r"<script[^>]*>", page)
    assert scripts == [
        f'<script src="/static/cronradar/dashboard.js" nonce="{nonce}">',
        f'<script src="/static/cronradar/monitors.js" nonce="{nonce}">']
    assert "style=" not in page and "<style" not in page and "onchange=" not in page


def test_the_api_docs_page_has_no_inline_script_or_style(client):
    page = client.get("/api/v1/docs/").content.decode()
    assert '<script src="/api/v1/docs/?script="></script>' in page
    assert "<style" not in page and re.search(r"<script>", page) is None
    script = client.get("/api/v1/docs/?script=")
    assert script["Content-Type"] == "application/javascript"
    assert "SwaggerUIBundle" in script.content.decode()


def test_the_first_run_page_is_framed_by_none(db):
    response = Client().get("/")
    assert "Create the first account" in response.content.decode()
    assert_framed_by_none(response, "first run")
