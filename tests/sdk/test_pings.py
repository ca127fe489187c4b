"""cronradar_sdk.pings.send against a live ``manage.py serve``: every state, rid,
slot, body and extra parameters as CronRadar stores them; bad states; what cannot
be sent. Standard library only: also run under Python 3.8
(tests/sdk/test_python38.py)."""
import contextlib
import datetime
import time
import unittest
import uuid

from cronradar_sdk import __version__, pings
from cronradar_sdk.config import resolve

from tests.sdk.service import LiveTestCase, Stub, slug


class Send(LiveTestCase):
    def setUp(self):
        super().setUp()
        self.m = self.live.create(period=3600, grace=60)
        self.settings = resolve(url=self.live.url, ping_key=self.live.ping_key, environ={})

    def test_every_state(self):
        for state in ("start", "log", "success", "fail", 0, "3", 255):
            self.assertIs(pings.send(self.settings, self.m["slug"], state), True)
        self.assertEqual([(p["kind"], p["exit_status"]) for p in self.live.pings(self.m)], [
            ("start", None), ("log", None), ("success", None), ("fail", None),
            ("success", 0), ("fail", 3), ("fail", 255)])

    def test_rid_body_and_the_sdks_user_agent(self):
        rid = str(uuid.uuid4())
        pings.send(self.settings, self.m["slug"], "start", rid=rid)
        pings.send(self.settings, self.m["slug"], 1, rid=rid, body="exit 1 ✗".encode())
        start, end = self.live.pings(self.m)
        self.assertEqual((start["rid"], end["rid"], end["body"], end["user_agent"]),
                         (rid, rid, "exit 1 ✗", f"cronradar-sdk/{__version__}"))
        [run] = self.live.runs(self.m)
        self.assertEqual((run["rid"], run["outcome"], run["exit_status"]), (rid, "failed", 1))

    def test_by_ping_url_with_a_slot(self):
        m = self.live.create(kind="cron", schedule="* * * * *", grace=600)
        minute = datetime.datetime.fromtimestamp(time.time() // 60 * 60 - 60,
                                                 datetime.timezone.utc)
        settings = resolve(ping_url=m["ping_url"], environ={})
        self.assertIs(pings.send(settings, None, "success", slot=minute.isoformat()), True)
        plus_one = datetime.timezone(datetime.timedelta(hours=1))  # a datetime in any zone
        earlier = (minute - datetime.timedelta(minutes=1)).astimezone(plus_one)
        self.assertIs(pings.send(settings, None, "fail", slot=earlier), True)
        self.assertEqual(sorted((r["slot_at"], r["outcome"]) for r in self.live.runs(m)),
                         [(_z(earlier), "failed"), (_z(minute), "succeeded")])

    def test_a_refused_slot_is_warned_and_the_ping_stored_without_it(self):
        m = self.live.create(kind="cron", schedule="0 3 * * *", grace=600)
        settings = resolve(ping_url=m["ping_url"], environ={})
        with self.assertLogs("cronradar_sdk", "WARNING") as logs:
            self.assertIs(pings.send(settings, None, "success",
                                     slot="2026-01-05T03:30:00+00:00"), True)
        self.assertEqual(logs.output, [
            "WARNING:cronradar_sdk:cronradar: slot 2026-01-05T03:30:00+00:00 refused (slot "
            "2026-01-05T03:30:00Z is not a fire time of '0 3 * * *' (UTC); the nearest are "
            "2026-01-05T03:00:00Z and 2026-01-06T03:00:00Z; nothing was stored); pinged "
            f"without it: {m['ping_url']}"])
        self.assertEqual([(p["kind"], p["exit_status"]) for p in self.live.pings(m)],
                         [("success", None)])

    def test_a_slotted_ping_refused_for_another_reason_is_not_sent_again(self):
        with self.assertLogs("cronradar_sdk", "WARNING") as logs:
            self.assertIs(pings.send(self.settings, "no-such-monitor", "start",
                                     slot="2026-01-05T03:00:00Z"), False)
        url = f"{self.live.url}/ping/{self.live.ping_key}/no-such-monitor/start"
        self.assertEqual(logs.output, [
            "WARNING:cronradar_sdk:cronradar: ping refused (HTTP 404: not found: no monitor "
            f"with this ping URL): {url}"])

    def test_params_create_the_monitor(self):
        name = slug()
        self.assertIs(pings.send(self.settings, name, "success",
                                 params={"create": "1", "period": "600", "grace": "30"}), True)
        made = self.live.by_slug(name)
        self.assertEqual((made["kind"], made["period"], made["grace"]), ("interval", 600, 30))

    def test_a_refusal_is_a_warning_and_false(self):
        with self.assertLogs("cronradar_sdk", "WARNING") as logs:
            self.assertIs(pings.send(self.settings, "no-such-monitor", "start"), False)
        url = f"{self.live.url}/ping/{self.live.ping_key}/no-such-monitor/start"
        self.assertEqual(logs.output, [
            "WARNING:cronradar_sdk:cronradar: ping refused (HTTP 404: not found: no monitor "
            f"with this ping URL): {url}"])

    def test_settings_that_cannot_name_the_monitor(self):
        with self.assertLogs("cronradar_sdk", "WARNING") as logs:
            self.assertIs(pings.send(resolve(environ={}), "x", "start"), False)
            self.assertIs(pings.send(resolve(environ={}), None, "start"), False)
        self.assertEqual(logs.output, [
            "WARNING:cronradar_sdk:cronradar: not pinging x: set CRONRADAR_URL and "
            "CRONRADAR_PING_KEY (or url=, ping_key=)",
            "WARNING:cronradar_sdk:cronradar: not pinging (no slug): set CRONRADAR_PING_URL "
            "(or ping_url=)"])


def _z(moment: datetime.datetime) -> str:
    """``moment`` as the API writes it: UTC, ``Z``."""
    return moment.astimezone(datetime.timezone.utc).isoformat().replace("+00:00", "Z")


class Redirect(unittest.TestCase):
    def test_a_redirect_that_was_not_followed_is_not_a_stored_ping(self):
        with Stub(302, b"moved") as stub, self.assertLogs("cronradar_sdk", "WARNING") as logs:
            settings = resolve(ping_url=f"{stub.url}/ping/u", environ={})
            self.assertIs(pings.send(settings, None, "start"), False)
        self.assertEqual(logs.output, ["WARNING:cronradar_sdk:cronradar: ping refused "
                                       f"(HTTP 302: moved): {stub.url}/ping/u/start"])
        self.assertEqual(len(stub.requests), 1)  # not retried


class BadUrls(unittest.TestCase):
    def test_no_url_value_raises_a_warning_names_the_problem(self):
        cases = [  # (settings, slug, the warning)
            (resolve(url="notaurl", ping_key="x", environ={}), "down-deco",
             "not pinging down-deco, the URL must be http(s)://host/...: "
             "'notaurl/ping/x/down-deco'"),
            (resolve(ping_url="notaurl", environ={}), None,
             "not pinging (no slug), the URL must be http(s)://host/...: 'notaurl'"),
            (resolve(ping_url="file:///etc/passwd", environ={}), None,
             "not pinging (no slug), the URL must be http(s)://host/...: 'file:///etc/passwd'"),
            (resolve(ping_url="http://[::1/ping/u", environ={}), None,
             "not pinging (no slug), the URL is not valid (Invalid IPv6 URL): "
             "'http://[::1/ping/u'"),
            (resolve(ping_url="http://h:0x50/ping/u", environ={}), None,
             "not pinging (no slug), the URL is not valid (Port could not be cast to integer "
             "value as '0x50'): 'http://h:0x50/ping/u'"),
            (resolve(ping_url="http://h/ping/ü", environ={}), None,
             "not pinging (no slug), the URL has characters that are not ASCII "
             "(percent-encode them): 'http://h/ping/ü'"),
            (resolve(ping_url="http://h/ping/u\x00", environ={}), None,
             "not pinging (no slug), the URL has spaces or control characters: "
             "'http://h/ping/u\\x00'"),
        ]
        for settings, name, warning in cases:
            with self.subTest(warning), self.assertLogs("cronradar_sdk", "WARNING") as logs:
                self.assertIs(pings.send(settings, name, "start", rid=str(uuid.uuid4())), False)
            self.assertEqual(logs.output, [f"WARNING:cronradar_sdk:cronradar: {warning}"])

    def test_a_server_that_does_not_speak_http_is_given_up(self):
        import socket
        import threading

        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(5)
        self.addCleanup(server.close)

        def answer():  # as an SSH server would, to each connection
            with contextlib.suppress(OSError):
                while True:
                    conn, _ = server.accept()
                    with conn:
                        conn.recv(65536)
                        conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")

        threading.Thread(target=answer, daemon=True).start()
        url = f"http://127.0.0.1:{server.getsockname()[1]}/ping/u"
        with self.assertLogs("cronradar_sdk", "WARNING") as logs:
            self.assertIs(pings.send(resolve(ping_url=url, timeout=0.5, environ={}), None,
                                     "start"), False)
        [line] = logs.output
        self.assertTrue(line.startswith("WARNING:cronradar_sdk:cronradar: gave up pinging "
                                        "after 0.5s ("), line)
        self.assertTrue(line.endswith(f"): {url}/start"), line)


class Action(unittest.TestCase):
    def test_the_url_action_of_each_state(self):
        self.assertEqual([pings.action(s) for s in ("start", "success", "fail", "log", 0, "42")],
                         ["start", "", "fail", "log", "0", "42"])

    def test_a_naive_datetime_slot(self):
        with self.assertRaises(ValueError):
            pings.send(resolve(environ={}), None, "start",
                       slot=datetime.datetime(2026, 1, 5, 3, 0))

    def test_bad_states(self):
        for bad in ("stop", "", 256, -1, "-1", "٣", True, None, 1.0):
            with self.assertRaises(ValueError, msg=repr(bad)):
                pings.action(bad)


if __name__ == "__main__":
    unittest.main()
