"""Every dashboard page in Chromium (Playwright, Debian's /usr/bin/chromium) at
desktop width and at 390 px, in the light and the dark theme: no page scrolls
sideways at 390 px (``scrollWidth <= innerWidth``), axe-core finds no WCAG 2.2 AA
violation (tags wcag2a, wcag2aa, wcag21a, wcag21aa, wcag22aa), and the theme
switch of the profile and ``prefers-color-scheme`` make the page dark.

The pages are the routes of cronradar/dashboard/urls.py, with their objects, from
the ``urls`` fixture of tests/site/dashboard/test_headers.py (a monitor with runs,
pings and an open incident, a channel, a policy, a window, keys, members, the
invitation, sign-up and password-reset links …), served by pytest-django's live
server from the same test database; in the dark passes every page of docs/ and
every kind's channel setup page too. A route missing there fails that test and
this one ("page X is not walked"); a route answering GET with something else than
HTML is in that file's NOT_HTML; one that only takes POST is in POST_ONLY below.

axe-core is the npm package pinned in package.json / package-lock.json
(node_modules/axe-core/axe.min.js, installed by ``npm ci``: scripts/test and
.ci/run do it; CRONRADAR_AXE names another copy). Without it or Chromium the test
is skipped, unless CRONRADAR_REQUIRE_BROWSER=1 (.ci/run), which makes it a
failure. Marked ``live`` and ``once`` (SQLite pass only)."""
import os
from pathlib import Path

import pytest
from django.conf import settings

from accounts.models import Profile
from alerts.models import Channel
from cronradar.dashboard import urls as dashboard_urls
from tests.integration.test_browser import BROWSER, CHROMIUM, REQUIRED
from tests.live import ROOT
from tests.site.dashboard.conftest import world  # noqa: F401 (fixture used by urls)
from tests.site.dashboard.test_headers import NOT_HTML, urls  # noqa: F401 (fixture)

AXE = Path(os.environ.get("CRONRADAR_AXE", ROOT / "node_modules/axe-core/axe.min.js"))
pytestmark = [*BROWSER, pytest.mark.skipif(not AXE.exists() and not REQUIRED,
                                           reason=f"{AXE} not found (npm ci)")]
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
# routes that answer GET with 405: actions behind a POST form of another page
POST_ONLY = {"test_ping", "monitor_pause", "incident_act", "channel_test", "badge_key",
             "switch", "logout"}
# beside the dashboard's routes in the urls fixture: walked, or why not
EXTRA = {"incident-link": True,  # templates/incident_link.html (plain.css)
         "api-docs": False,  # drf-spectacular's Swagger UI, not the dashboard's markup
         "admin-login": False, "admin": False}  # Django's admin
# (viewport, Profile.theme of the signed-in people, the browser's prefers-color-scheme,
# whether every page of docs/ and every kind's setup page are walked too: in the dark
# ones, at both widths)
PASSES = [("desktop", {"width": 1280, "height": 900}, "light", "light", False),
          ("desktop", {"width": 1280, "height": 900}, "dark", "light", True),
          ("phone", {"width": 390, "height": 844}, "auto", "light", False),
          ("phone", {"width": 390, "height": 844}, "auto", "dark", True)]
DOCS = sorted(p.stem for p in (ROOT / "docs").glob("*.md") if p.stem != "index")
RUN_AXE = """async (tags) => {
  const result = await axe.run(document, {runOnly: {type: 'tag', values: tags}});
  return result.violations.map(v => v.id + ' (' + v.impact + '): ' + v.nodes.slice(0, 4)
    .map(n => n.target.join(' ') + ' ' + n.failureSummary.replace(/\\s+/g, ' ')).join(' | '));
}"""
# the page's background as one number: its relative luminance (0 black, 1 white)
LUMINANCE = """() => {
  const c = getComputedStyle(document.body).backgroundColor.match(/[\\d.]+/g).map(Number);
  const lin = v => (v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  return 0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2]);
}"""


@pytest.fixture
def chromium(monkeypatch):
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread: Django would refuse
    # the test's own queries (the live server answers from its own thread)
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


def context_for(browser, client, live_server, viewport, scheme):
    """A browser context signed in as the Django test ``client`` is (its session
    cookie). ``bypass_csp``: axe-core is injected as a script the policy refuses."""
    context = browser.new_context(viewport=viewport, color_scheme=scheme, bypass_csp=True,
                                  timezone_id="Europe/Berlin")
    cookies = [{"name": m.key, "value": m.value, "url": live_server.url}
               for m in client.cookies.values()]
    if cookies:
        context.add_cookies(cookies)
    return context


def walked(urls) -> dict:  # noqa: F811 (the fixture's value)
    """{name: (client, path)} of the pages to walk; fails on a route of the
    dashboard that is neither walked nor accounted for."""
    routes = {p.name for p in dashboard_urls.urlpatterns}
    missing = sorted(routes - set(urls))
    assert not missing, f"page {', '.join(missing)} is not walked: add it to the urls " \
                        "fixture of tests/site/dashboard/test_headers.py"
    assert set(urls) - routes == set(EXTRA), "say whether to walk it: EXTRA"
    pages = {n: urls[n][0].get(urls[n][1]).status_code for n in sorted(POST_ONLY)}
    assert pages == dict.fromkeys(pages, 405), "a page now: take it out of POST_ONLY"
    return {n: v for n, v in urls.items()
            if (n in routes and n not in NOT_HTML and n not in POST_ONLY) or EXTRA.get(n)}


def test_every_page_fits_a_phone_and_has_no_axe_violation_in_both_themes(
        urls, live_server, chromium):  # noqa: F811 (a fixture)
    assert AXE.exists(), f"{AXE} not found: run `npm ci` (package-lock.json pins axe-core)"
    pages = walked(urls)
    problems = []
    every_doc = {f"docs_page {d}": (urls["docs"][0], f"/docs/{d}/") for d in DOCS}
    every_doc |= {f"channel_new {k}": (urls["channel_new"][0], f"/channels/new/{k}/")
                  for k in Channel.Kind.values}
    for width, viewport, theme, scheme, with_docs in PASSES:
        Profile.objects.update(theme=theme)
        contexts = {}
        for name, (client, path) in {**pages, **(every_doc if with_docs else {})}.items():
            if id(client) not in contexts:
                contexts[id(client)] = context_for(chromium, client, live_server, viewport,
                                                   scheme)
            page = contexts[id(client)].new_page()
            where = f"{name} {path} ({width}, theme {theme}, prefers {scheme})"
            answer = page.goto(live_server.url + path)
            if answer.status == 405:
                problems.append(f"{where}: answers GET with 405: add it to POST_ONLY")
                page.close()
                continue
            if width == "phone":
                scroll, inner = page.evaluate(
                    "[document.documentElement.scrollWidth, innerWidth]")
                if scroll > inner:
                    problems.append(f"{where}: scrolls sideways ({scroll} px > {inner} px)")
            page.add_script_tag(path=str(AXE))
            problems += [f"{where}: {v}" for v in page.evaluate(RUN_AXE, TAGS)]
            # a signed-in person's theme, else (auto) the browser's preference
            chosen = theme if client.cookies.get(settings.SESSION_COOKIE_NAME) else "auto"
            dark = chosen == "dark" or (chosen == "auto" and scheme == "dark")
            if answer.ok and (page.evaluate(LUMINANCE) < 0.05) != dark:
                problems.append(f"{where}: the background is not {'dark' if dark else 'light'}")
            page.close()
        for context in contexts.values():
            context.close()
    assert problems == [], "\n".join(problems)


def test_the_profile_switch_and_the_browser_preference_make_the_page_dark(
        urls, live_server, chromium):  # noqa: F811 (a fixture)
    admin, _ = urls["profile"]
    for scheme, before in (("light", "light"), ("dark", "dark")):
        Profile.objects.update(theme="auto")
        context = context_for(chromium, admin, live_server, {"width": 390, "height": 844},
                              scheme)
        page = context.new_page()
        page.goto(live_server.url + "/account/")
        assert (page.evaluate(LUMINANCE) < 0.05) == (before == "dark"), scheme
        # the switch wins over the browser's preference, both ways
        for theme in ("dark", "light"):
            page.get_by_label(theme.capitalize(), exact=True).check()
            page.get_by_role("button", name="Save").click()
            page.wait_for_url("**/account/")
            assert page.locator("html").get_attribute("data-theme") == theme
            assert (page.evaluate(LUMINANCE) < 0.05) == (theme == "dark"), (scheme, theme)
            page.goto(live_server.url + "/")
            assert (page.evaluate(LUMINANCE) < 0.05) == (theme == "dark"), (scheme, theme)
            page.goto(live_server.url + "/account/")
        context.close()
