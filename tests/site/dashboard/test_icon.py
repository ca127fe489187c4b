"""The site's icon (cronradar.dashboard.icon): /favicon.ico answers, and every page
frame links the same SVG."""
import pytest
from django.core.exceptions import PermissionDenied
from django.test import Client, RequestFactory
from django.views.defaults import permission_denied

from alerts import links
from cronradar.dashboard.icon import ICON
from tests.site.dashboard.conftest import text

pytestmark = pytest.mark.django_db

LINK = '<link rel="icon" href="/static/cronradar/favicon.svg" type="image/svg+xml">'


def test_favicon_ico_is_the_svg_icon_signed_in_or_not():
    answer = Client().get("/favicon.ico")
    assert (answer.status_code, answer["Content-Type"], answer["Cache-Control"]) == (
        200, "image/svg+xml", "public, max-age=86400")
    assert answer.content == ICON.read_bytes() and answer.content.startswith(b"<svg ")
    assert Client().head("/favicon.ico").status_code == 200
    assert Client().post("/favicon.ico").status_code == 405


def test_every_page_frame_links_the_icon(admin, world):
    assert LINK in text(admin.get("/"))  # the dashboard's frame
    assert LINK in text(Client().get("/login/"))
    assert LINK in text(Client().get(links.make(world["incident"].pk, "ack")))  # plain
    assert LINK in permission_denied(RequestFactory().get("/"), PermissionDenied()
                                     ).content.decode()  # templates/403.html
    assert Client().get("/static/cronradar/favicon.svg").status_code == 200
