"""The dashboard in a real browser: Playwright drives Debian's Chromium headless
against a running `manage.py serve`. Sign in, create a monitor, ping it with curl,
see it go up, let it go down, acknowledge the incident from its page, pause it;
the list at phone width, the live refresh after the session ends, copy buttons on
plain http under a name that is not localhost; on an empty installation, the
first account and its welcome page's test ping shown live; every kind of page
under the Content-Security-Policy with no violation reported.
A screenshot of each step goes to test-artifacts/browser/ (CRONRADAR_ARTIFACTS
moves it).

Marked ``live`` and ``once``: it runs in the SQLite pass only. Without /usr/bin/chromium it is
skipped, unless CRONRADAR_REQUIRE_BROWSER=1 (.ci/run sets it after installing
chromium with apt), which makes a missing browser a failure."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.live import ROOT, Service

CHROMIUM = "/usr/bin/chromium"
REQUIRED = os.environ.get("CRONRADAR_REQUIRE_BROWSER") == "1"
# the marks of every browser test (tests/integration/test_browser_a11y.py too)
BROWSER = [
    pytest.mark.live, pytest.mark.once,
    pytest.mark.skipif(bool(os.environ.get("DATABASE_URL")), reason="runs in the SQLite pass"),
    pytest.mark.skipif(not Path(CHROMIUM).exists() and not REQUIRED,
                       reason=f"{CHROMIUM} not found (apt-get install chromium)"),
]
pytestmark = BROWSER
ARTIFACTS = Path(os.environ.get("CRONRADAR_ARTIFACTS", ROOT / "test-artifacts")) / "browser"


@pytest.fixture
def browser_page():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        # cronradar.test: the same server under a name that is not localhost, so plain
        # http is not a secure context there (no Clipboard API), as on a LAN install
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--host-resolver-rules=MAP cronradar.test 127.0.0.1"])
        page = browser.new_page(viewport={"width": 1280, "height": 900},
                                timezone_id="Europe/Berlin")
        page.set_default_timeout(15000)
        # every Content-Security-Policy violation of every page, as the page reports it
        # (the listener is Playwright's, run before the page's own scripts, outside it)
        page.add_init_script("window.__csp = []; document.addEventListener("
                             "'securitypolicyviolation', e => window.__csp.push("
                             "e.violatedDirective + ' ' + (e.blockedURI || 'inline')));")
        page.csp_console = []
        page.on("console", lambda m: "Content Security Policy" in m.text
                and page.csp_console.append(m.text))
        yield page
        browser.close()


def full_screenshot(page, name: str) -> None:
    """The whole page into ARTIFACTS/name. After a full-page capture Chromium scrolled
    the page on the next mouse press (seen: 91 px between the press on the monitor
    form's Save and its release, so the click went to the form and nothing was
    sent); scrolling to the top afterwards lets the next click scroll its target into
    view afresh."""
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)
    page.evaluate("() => window.scrollTo(0, 0)")


def csp_violations(page) -> list[str]:
    """What broke the page's Content-Security-Policy since it loaded, and what the
    console said of it since the test began."""
    return page.evaluate("window.__csp") + page.csp_console


def test_a_person_watches_a_job_go_up_then_down_and_acknowledges(tmp_path, browser_page):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    service = Service(tmp_path, tick=0.2)
    page = browser_page
    shot = iter(range(1, 100))

    def snap(name: str) -> None:
        full_screenshot(page, f"{next(shot):02}-{name}.png")

    try:
        env = {**service.env, "CRONRADAR_PASSWORD": "a long passphrase 42"}
        # a new organisation (the service's own "live" has a project already)
        subprocess.run([sys.executable, "manage.py", "createuser", "ana", "--organisation",
                        "acme"], cwd=ROOT, env=env, check=True, capture_output=True)
        page.goto(service.url + "/")
        assert page.url.endswith("/login/?next=/")
        page.get_by_label("Username").fill("ana")
        page.get_by_label("Password").fill("a long passphrase 42")
        snap("sign-in")
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(service.url + "/")
        page.wait_for_load_state("networkidle")  # the browser's zone is taken on first visit
        # a new organisation has no project yet: its owner creates one from this page
        assert page.get_by_role("heading", name="No project yet").is_visible()
        page.get_by_label("Project name").fill("production")
        snap("no-project")
        page.get_by_role("button", name="Create project").click()
        page.wait_for_url(service.url + "/")
        assert page.get_by_role("heading", name="Monitors").is_visible()
        assert page.locator("#zone-name").inner_text() == "times in Europe/Berlin"
        snap("signed-in")

        page.get_by_role("link", name="New monitor").click()
        page.get_by_label("Name", exact=True).fill("nightly backup")
        page.get_by_label("Kind", exact=True).select_option("interval")
        page.locator("#f-period").fill("3")
        page.locator("#f-grace").fill("2")
        page.locator("#f-tags").fill("db, nightly")
        snap("new-monitor")
        page.get_by_role("button", name="Save").click()
        page.wait_for_url("**/monitors/*/")
        assert page.locator("h1 .status").inner_text() == "new"
        ping_url = page.locator("#url-uuid").input_value()
        snap("monitor-new")

        subprocess.run(["curl", "-fsS", "-m", "10", ping_url + "/start"], check=True,
                       capture_output=True)
        subprocess.run(["curl", "-fsS", "-m", "10", "--data-binary", "backup ok", ping_url],
                       check=True, capture_output=True)
        page.reload()
        assert page.locator("h1 .status").inner_text() == "up"
        assert page.get_by_text("backup ok").count() == 1
        snap("monitor-up")

        page.goto(service.url + "/")
        row = page.locator("#monitor-rows tr", has_text="nightly backup")
        assert row.locator(".status").inner_text() == "up"
        # no new ping: after 3 s + 2 s grace the slot is missed; the list refreshes itself
        row.locator(".status-down").wait_for(timeout=20000)
        snap("list-down")

        page.get_by_role("link", name="Incidents").click()
        page.locator("a", has_text="#").first.click()
        page.get_by_label("Note").fill("looking at the backup host")
        snap("incident-open")
        page.get_by_role("button", name="Acknowledge").click()
        assert page.locator("h1 .status").inner_text() == "acknowledged"
        assert page.locator("dt:has-text('Acknowledged') + dd").inner_text().endswith("by ana")
        snap("incident-acknowledged")

        page.get_by_role("link", name="nightly backup").click()
        page.get_by_role("button", name="Pause").click()
        assert page.locator("h1 .status").inner_text() == "paused"
        assert page.get_by_role("button", name="Resume").is_visible()
        snap("monitor-paused")
        monitor_path = page.url.split(str(service.port), 1)[1]

        # a phone: every column of the list is still there, one card per monitor
        page.set_viewport_size({"width": 375, "height": 800})
        page.goto(service.url + "/")
        card = page.locator("#monitor-rows tr", has_text="nightly backup")
        for label in ("Schedule", "Next expected", "Last 20 runs"):
            assert card.locator(f"td[data-label='{label}']").is_visible(), label
        assert card.locator(".strip span").first.is_visible()
        snap("list-phone")
        page.set_viewport_size({"width": 1280, "height": 900})

        # the session ends: the live refresh goes to the sign-in page, not into the table
        page.context.clear_cookies()
        page.wait_for_url("**/login/?next=/", timeout=25000)
        assert page.locator("#monitor-rows").count() == 0

        # plain http on a name that is not localhost: copy falls back to execCommand
        other = f"http://cronradar.test:{service.port}"
        page.goto(other + "/login/")
        page.get_by_label("Username").fill("ana")
        page.get_by_label("Password").fill("a long passphrase 42")
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(other + "/")
        page.goto(other + monitor_path)
        assert page.evaluate("window.isSecureContext") is False
        button = page.locator("button[data-copy='url-uuid']")
        assert button.is_visible()
        button.click()
        assert button.inner_text() in ("Copied", "Select and copy")
        snap("copy-insecure")
    finally:
        service.stop()


def test_the_first_account_sends_a_test_ping_and_sees_it_arrive(tmp_path, browser_page):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    service = Service(tmp_path, tick=0.2)  # its createapikey made the organisation "live"
    page = browser_page
    try:
        page.goto(service.url + "/")
        assert page.get_by_role("heading", name="Create the first account").is_visible()
        page.get_by_label("Email").fill("op@example.com")
        page.get_by_label("Password").fill("a long passphrase 42")
        page.get_by_role("button", name="Create the first account").click()
        page.wait_for_url(service.url + "/welcome/")
        page.wait_for_load_state("networkidle")  # the browser's zone is taken on first visit
        page.get_by_role("link", name="Create a monitor").wait_for()
        made = service.api.post("/monitors/", json={"name": "nightly", "period": 3600,
                                                    "grace": 60})
        made.raise_for_status()
        page.goto(service.url + "/welcome/")
        page.wait_for_load_state("networkidle")
        assert page.locator("#pings").inner_text() == "No ping yet."
        page.evaluate("window.sameDocument = true")  # gone if the page reloaded
        page.get_by_role("button", name="Send a test ping").click()
        page.locator("#pings li", has_text="CronRadar test ping (dashboard)").wait_for()
        assert page.evaluate("window.sameDocument === true")  # the script showed it
        full_screenshot(page, "welcome-test-ping.png")
        # a ping a job sends shows too: the list polls
        subprocess.run(["curl", "-fsS", "-m", "10", "-A", "the-real-job",
                        made.json()["ping_url"]],
                       check=True, capture_output=True)
        page.locator("#pings li", has_text="the-real-job").wait_for(timeout=10000)
    finally:
        service.stop()


def test_no_page_breaks_the_content_security_policy(tmp_path, browser_page):
    """Every kind of page in Chromium under the policy (settings.CONTENT_SECURITY_POLICY):
    the dashboard's pages with their scripts (the list's refresh, copy buttons, the
    chart), the docs with screenshots, the API docs (Swagger UI), the admin and the
    signed acknowledge link: none reports a violation, and each page's script ran."""
    service = Service(tmp_path, tick=0.2)
    page = browser_page
    try:
        env = {**service.env, "CRONRADAR_PASSWORD": "a long passphrase 42"}
        subprocess.run([sys.executable, "manage.py", "createuser", "ana", "--organisation",
                        "live"], cwd=ROOT, env=env, check=True, capture_output=True)
        service.manage("shell", "-c", "from django.contrib.auth.models import User; "
                       "User.objects.filter(username='ana').update(is_staff=True, "
                       "is_superuser=True)")
        made = service.api.post("/monitors/", json={"name": "nightly", "period": 3600,
                                                    "grace": 60})
        made.raise_for_status()
        monitor = made.json()
        for body in ("ok", "ok again"):
            subprocess.run(["curl", "-fsS", "-m", "10", monitor["ping_url"] + "/start"],
                           check=True, capture_output=True)
            subprocess.run(["curl", "-fsS", "-m", "10", "--data-binary", body,
                            monitor["ping_url"]], check=True, capture_output=True)
        subprocess.run(["curl", "-fsS", "-m", "10", monitor["ping_url"] + "/fail"],
                       check=True, capture_output=True)
        incident = service.api.get("/incidents/").json()[0]["id"]
        link = service.manage("shell", "-c", "from alerts import links; "
                              f"print(links.make({incident}, 'ack'))").strip().splitlines()[-1]
        page.goto(service.url + "/login/")
        page.get_by_label("Username").fill("ana")
        page.get_by_label("Password").fill("a long passphrase 42")
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(service.url + "/")
        page.wait_for_load_state("networkidle")  # zone.js stored the zone and reloaded
        assert page.locator("#zone-name").inner_text() == "times in Europe/Berlin"
        pk = page.locator("#monitor-rows a", has_text="nightly").get_attribute("href")
        for path in ("/", pk, f"{pk}edit/", "/monitors/new/", "/monitors/file/",
                     "/incidents/", f"/incidents/{incident}/", "/channels/", "/policies/",
                     "/maintenance/", "/keys/", "/members/", "/account/", "/welcome/",
                     "/docs/", "/docs/dashboard/", "/admin/", "/admin/monitors/monitor/"):
            answer = page.goto(service.url + path)
            assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
            page.wait_for_load_state("networkidle")
            assert csp_violations(page) == [], path
        page.goto(service.url + pk)
        assert page.locator("svg.chart rect").count() >= 2  # the chart, drawn
        assert page.locator("button[data-copy='url-uuid']").is_visible()  # dashboard.js ran
        page.goto(service.url + "/api/v1/docs/")
        page.locator(".swagger-ui .info .title", has_text="CronRadar API").wait_for()
        assert csp_violations(page) == [], "/api/v1/docs/"
        page.context.clear_cookies()
        page.goto(link)
        page.get_by_role("button", name="Acknowledge this incident").click()
        page.get_by_role("status").wait_for()
        assert csp_violations(page) == [], "incident link"
        # what the policy refuses is reported: an inline style, added by a script
        page.evaluate("document.body.insertAdjacentHTML('beforeend', "
                      "'<span style=\"color: red\">x</span>')")
        page.wait_for_function("window.__csp.length > 0")
        assert csp_violations(page)[0] == "style-src-attr inline"
    finally:
        service.stop()
