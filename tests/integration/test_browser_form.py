"""The monitor form in a real browser (Playwright on Debian's Chromium against a
running `manage.py serve`, as tests/integration/test_browser.py): create a cron
monitor through the form using the live schedule preview (the next five fire times
shown, as the engine computes them), the duration units and the zone list; edit
every field; read each back through the API, exactly.

Marked ``live`` and ``once`` (the SQLite pass only)."""
import re
from datetime import UTC, datetime

import pytest
from playwright.sync_api import expect

from monitors import schedule
from tests.integration.test_browser import (  # noqa: F401
    ARTIFACTS,
    browser_page,
    csp_violations,
    full_screenshot,
)
from tests.integration.test_browser import pytestmark as browser_marks
from tests.live import Service

pytestmark = [*browser_marks, pytest.mark.once]


def next_five(expr: str, tz: str, semantics: str) -> list[str]:
    """The five fire times the engine gives from now, as the preview shows them."""
    at, out = datetime.now(UTC), []
    for _ in range(5):
        at = schedule.next_fire(expr, tz, at, semantics)
        out.append(at.astimezone(schedule.validate_timezone(tz)).isoformat())
    return out


def fill_duration(page, name: str, number: str, unit: str) -> None:
    page.locator(f"#f-{name}").fill(number)
    page.locator(f"select[name={name}_unit]").select_option(unit)


def test_a_cron_monitor_made_and_edited_through_the_form(tmp_path, browser_page):  # noqa: F811
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    service = Service(tmp_path, tick=0.2)
    page, api = browser_page, service.api
    try:
        page.goto(service.url + "/")
        page.get_by_label("Email").fill("op@example.com")
        page.get_by_label("Password").fill("a long passphrase 42")
        page.get_by_role("button", name="Create the first account").click()
        page.wait_for_url(service.url + "/welcome/")
        page.wait_for_load_state("networkidle")  # the browser's zone becomes the person's
        one = api.post("/channels/", json={"kind": "webhook", "name": "one", "config": {
            "url": "http://127.0.0.1:9/one"}}).json()
        two = api.post("/channels/", json={"kind": "webhook", "name": "two", "config": {
            "url": "http://127.0.0.1:9/two"}}).json()
        policy = api.post("/escalation-policies/", json={"name": "on-call", "tiers": [
            {"delay": 0, "channels": [one["id"]]}]}).json()

        page.goto(service.url + "/monitors/new/")
        assert page.locator("#f-timezone").input_value() == "Europe/Berlin"  # the person's
        assert page.locator("#zones option[value='America/New_York']").count() == 1
        page.get_by_label("Name", exact=True).fill("ledger export")
        page.get_by_label("Kind", exact=True).select_option("cron")
        page.locator("#f-schedule").fill("30 2 * * *")
        page.locator("#f-semantics").select_option("kubernetes")
        page.locator("#f-timezone").fill("America/New_York")
        # the preview follows the typing: the last values asked, the five times shown
        want = next_five("30 2 * * *", "America/New_York", "kubernetes")
        preview = page.locator("#schedule-preview")
        preview.locator("li time").nth(4).wait_for()
        page.wait_for_function("document.querySelector('#schedule-preview time')"
                               ".getAttribute('datetime').endsWith('-04:00') || "
                               "document.querySelector('#schedule-preview time')"
                               ".getAttribute('datetime').endsWith('-05:00')")
        assert preview.locator("strong").first.inner_text() == "At 02:30"
        assert [preview.locator("li time").nth(i).get_attribute("datetime")
                for i in range(5)] == want
        assert preview.get_attribute("aria-live") == "polite"
        page.locator("#f-schedule").fill("0 0 31 2 *")
        preview.locator(".error").wait_for()
        assert preview.locator(".error").inner_text() == (
            "schedule '0 0 31 2 *' never fires: no date matches its day-of-month, month and "
            "day-of-week fields")
        page.locator("#f-schedule").fill("30 2 * * *")
        preview.locator("li time").nth(4).wait_for()
        fill_duration(page, "grace", "1.5", "hours")
        fill_duration(page, "max_runtime", "2", "hours")
        page.locator("#f-description").fill("Nightly ledger: https://wiki.example/ledger")
        full_screenshot(page, "form-new-cron.png")
        page.get_by_role("button", name="Save").click()
        page.wait_for_url("**/monitors/*/")
        assert page.locator("a[href='https://wiki.example/ledger']").count() == 1
        pk = int(page.url.rstrip("/").rsplit("/", 1)[1])
        made = api.get(f"/monitors/{pk}/").json()
        assert {k: made[k] for k in ("name", "kind", "schedule", "timezone", "cron_semantics",
                                     "grace", "max_runtime", "description")} == {
            "name": "ledger export", "kind": "cron", "schedule": "30 2 * * *",
            "timezone": "America/New_York", "cron_semantics": "kubernetes", "grace": 5400,
            "max_runtime": 7200, "description": "Nightly ledger: https://wiki.example/ledger"}

        page.goto(f"{service.url}/monitors/{pk}/edit/")
        assert page.locator("#f-grace").input_value() == "90"  # 5400 s: 90 minutes exactly
        assert page.locator("select[name=grace_unit]").input_value() == "minutes"
        page.get_by_label("Name", exact=True).fill("ledger export v2")
        page.locator("#f-slug").fill("ledger-v2")
        page.locator("#f-description").fill("v2 <b>bold</b> https://wiki.example/v2")
        page.locator("#f-schedule").fill("15 4 * * 1-5")
        page.locator("#f-timezone").fill("Asia/Tokyo")
        page.locator("#f-semantics").select_option("debian")
        fill_duration(page, "grace", "10", "minutes")
        fill_duration(page, "max_runtime", "1", "days")
        fill_duration(page, "min_runtime", "45", "seconds")
        fill_duration(page, "deadline", "3", "hours")
        page.locator("#f-slow").fill("2.5")
        page.locator("#f-conc").select_option("forbid")
        page.locator("#f-attempts").fill("3")
        page.locator("#f-methods").select_option("POST")
        page.locator("#f-paused").select_option("true")
        page.locator("#f-tags").fill("ledger, nightly")
        page.locator("input[name=all_channels]").uncheck()
        page.locator(f"input[name=channels][value='{two['id']}']").check()
        page.locator("#f-policy").select_option(str(policy["id"]))
        page.locator("#f-sev").select_option("warning")
        page.locator("#f-urg").select_option("low")
        fill_duration(page, "renotify", "2", "hours")
        page.locator("#f-fail").fill("2")
        page.locator("#f-recover").fill("4")
        expect(preview.locator("li time").first).to_have_attribute(
            "datetime", re.compile(r"\+09:00$"))
        full_screenshot(page, "form-edit-every-field.png")
        page.get_by_role("button", name="Save").click()
        page.wait_for_url(f"**/monitors/{pk}/")
        body = api.get(f"/monitors/{pk}/").json()
        assert {k: body[k] for k in (
            "name", "slug", "description", "kind", "schedule", "timezone", "cron_semantics",
            "period", "grace", "max_runtime", "min_runtime", "deadline", "slow_factor",
            "concurrency", "max_attempts", "methods", "paused", "tags", "channels",
            "escalation_policy", "severity", "urgency", "renotify", "failure_threshold",
            "recovery_threshold")} == {
            "name": "ledger export v2", "slug": "ledger-v2",
            "description": "v2 <b>bold</b> https://wiki.example/v2", "kind": "cron",
            "schedule": "15 4 * * 1-5", "timezone": "Asia/Tokyo", "cron_semantics": "debian",
            "period": None, "grace": 600, "max_runtime": 86400, "min_runtime": 45,
            "deadline": 10800, "slow_factor": 2.5, "concurrency": "forbid", "max_attempts": 3,
            "methods": "POST", "paused": True, "tags": ["ledger", "nightly"],
            "channels": [two["id"]], "escalation_policy": policy["id"], "severity": "warning",
            "urgency": "low", "renotify": 7200, "failure_threshold": 2, "recovery_threshold": 4}
        assert page.locator("a[href='https://wiki.example/v2']").count() == 1
        assert page.locator("main b").count() == 0  # the description's tags are text
        assert csp_violations(page) == []
    finally:
        service.stop()
