"""cronradar_sdk.api against a live ``manage.py serve``: reading a monitor by
slug, and ensure_monitor creating, changing and leaving alone. Standard library
only: also run under Python 3.8 (tests/sdk/test_python38.py)."""
import unittest

from cronradar_sdk import api
from cronradar_sdk.config import resolve

from tests.sdk.service import LiveTestCase, Stub, closed_url, slug

CRON = {"kind": "cron", "schedule": "0 3 * * *", "timezone": "Europe/Berlin", "grace": 900}


class Monitors(LiveTestCase):
    def setUp(self):
        super().setUp()
        self.settings = resolve(url=self.live.url, api_key=self.live.api_key, environ={})

    def read_only(self):
        status, key = self.live.api("POST", "/api-keys/", {"name": "ro", "read_only": True})
        self.assertEqual(status, 201, key)
        return self.settings.replace(api_key=key["key"])

    def test_get_monitor(self):
        m = self.live.create(period=60, grace=60)
        self.assertEqual(api.get_monitor(self.settings, m["slug"])["ping_url"], m["ping_url"])

    def test_get_monitor_that_is_not_there(self):
        with self.assertLogs("cronradar_sdk", "WARNING") as logs:
            self.assertIsNone(api.get_monitor(self.settings, "no-such-one"))
        self.assertEqual(logs.output, [
            "WARNING:cronradar_sdk:cronradar: the API answered GET of monitor no-such-one with "
            'HTTP 404, not the monitor: {"detail": "Not found."}'])

    def test_ensure_creates_named_by_the_slug(self):
        name = slug()
        made = api.ensure_monitor(self.settings, name, CRON)
        self.assertEqual(made, self.live.by_slug(name))
        self.assertEqual({k: made[k] for k in ("name", "slug", *CRON)},
                         {"name": name, "slug": name, **CRON})

    def test_a_new_monitor_gets_create_on_pings_grace(self):
        made = api.ensure_monitor(self.settings, slug(), {"kind": "cron",
                                                          "schedule": "0 3 * * *"})
        self.assertEqual((made["schedule"], made["timezone"], made["grace"]),
                         ("0 3 * * *", "UTC", 3600))

    def test_ensure_with_a_name_of_its_own(self):
        name = slug()
        made = api.ensure_monitor(self.settings, name, {**CRON, "name": "Nightly report"})
        self.assertEqual((made["name"], made["slug"]), ("Nightly report", name))

    def test_ensure_changes_only_what_differs(self):
        m = self.live.create(kind="cron", schedule="0 3 * * *", grace=60, tags=["db"])
        changed = api.ensure_monitor(self.settings, m["slug"], CRON)
        self.assertEqual({k: changed[k] for k in ("name", "tags", *CRON)},
                         {"name": m["name"], "tags": ["db"], **CRON})

    def test_ensure_leaves_a_monitor_that_matches_alone(self):
        m = self.live.create(**CRON)
        # a read-only key can read it: nothing is written when nothing differs
        self.assertEqual(api.ensure_monitor(self.read_only(), m["slug"], CRON)["id"], m["id"])

    def test_a_refused_write_is_a_warning(self):
        m = self.live.create(period=60, grace=60)
        with self.assertLogs("cronradar_sdk", "WARNING") as logs:
            self.assertIsNone(api.ensure_monitor(self.read_only(), m["slug"], CRON))
        [line] = logs.output
        self.assertTrue(line.startswith(
            f"WARNING:cronradar_sdk:cronradar: the API answered PUT of monitor {m['slug']} "
            "with HTTP 403, not the monitor: "), line)

    def test_a_refused_field_is_a_warning(self):
        with self.assertLogs("cronradar_sdk", "WARNING") as logs:
            self.assertIsNone(api.ensure_monitor(self.settings, slug(), {"grace": 0}))
        self.assertIn('with HTTP 400, not the monitor: {"grace": [', logs.output[0])

    def test_an_answer_that_is_not_a_monitor(self):
        with Stub(200, b"[1]") as stub, self.assertLogs("cronradar_sdk", "WARNING") as logs:
            self.assertIsNone(api.get_monitor(self.settings.replace(url=stub.url), "x"))
            self.assertIsNone(api.ensure_monitor(self.settings.replace(url=stub.url), "x", CRON))
        self.assertEqual(logs.output, [
            "WARNING:cronradar_sdk:cronradar: the API answered GET of monitor x with HTTP 200, "
            "not the monitor: [1]"] * 2)

    def test_cronradar_down(self):
        down = self.settings.replace(url=closed_url(), timeout=0.5)
        with self.assertLogs("cronradar_sdk", "WARNING") as logs:
            self.assertIsNone(api.ensure_monitor(down, "x", CRON))
        [line] = logs.output
        self.assertTrue(line.startswith(
            "WARNING:cronradar_sdk:cronradar: gave up calling the API after 0.5s ("), line)
        self.assertTrue(line.endswith(f"): {down.url}/api/v1/monitors/by-slug/x/"), line)

    def test_no_api_key(self):
        with self.assertLogs("cronradar_sdk", "WARNING") as logs:
            self.assertIsNone(api.call(self.settings.replace(api_key=""), "GET", "/monitors/"))
        self.assertEqual(logs.output, [
            "WARNING:cronradar_sdk:cronradar: not calling the API (GET /monitors/): set "
            "CRONRADAR_URL and CRONRADAR_API_KEY (or url=, api_key=)"])


class BadUrls(unittest.TestCase):
    def test_a_bad_url_is_a_warning_not_an_exception(self):
        for url, problem in (
                ("notaurl", "the URL must be http(s)://host/..."),
                ("mailto:ops@example.com", "the URL must be http(s)://host/..."),
                ("http://h:65536", "the URL is not valid (Port out of range 0-65535)"),
                ("http://h/ä", "the URL has characters that are not ASCII (percent-encode "
                               "them)")):
            with self.subTest(url), self.assertLogs("cronradar_sdk", "WARNING") as logs:
                settings = resolve(url=url, api_key="cr_k", environ={})
                self.assertIsNone(api.ensure_monitor(settings, "x", CRON))
            self.assertEqual(logs.output, [
                f"WARNING:cronradar_sdk:cronradar: not calling the API, {problem}: "
                f"'{url}/api/v1/monitors/by-slug/x/'"])


if __name__ == "__main__":
    unittest.main()
