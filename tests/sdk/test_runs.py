"""``cronradar_sdk.monitor`` (sdk/python/cronradar_sdk/runs.py) against a live
``manage.py serve``: the decorator and the context manager (sync and async), the
pings and runs CronRadar stores, creation on first use through create-on-ping and
through the API's upsert, CronRadar refusing and CronRadar down. Standard library
only: also run under Python 3.8 (tests/sdk/test_python38.py)."""
from __future__ import annotations

import asyncio
import os
import time
import unittest
from unittest import mock

from cronradar_sdk import monitor, runs

from tests.sdk.service import LiveTestCase, Stub, closed_url, slug


class ReportError(Exception):
    pass


def clock(*readings: float):
    """The durations' clock giving ``readings`` in turn."""
    return mock.patch.object(runs, "_clock", side_effect=list(readings))


class Pinging(LiveTestCase):
    def setUp(self):
        super().setUp()
        self.m = self.live.create(period=3600, grace=60)
        self.keys = {"url": self.live.url, "ping_key": self.live.ping_key}

    def outcome(self):
        """[(kind, body)] of the monitor's pings, the rid they share, and
        [(outcome, exit_status)] of its runs."""
        got = self.live.pings(self.m)
        self.assertEqual(len({p["rid"] for p in got}), 1, got)
        return ([(p["kind"], p["body"]) for p in got], got[0]["rid"],
                [(r["outcome"], r["exit_status"]) for r in self.live.runs(self.m)])

    def test_a_decorated_job_is_a_start_and_a_success_with_one_rid(self):
        @monitor(self.m["slug"], **self.keys)
        def job(a, b=0):
            """The job."""
            return a + b

        with clock(100.0, 101.25):
            self.assertEqual(job(2, b=3), 5)
        pings, rid, ran = self.outcome()
        self.assertEqual(pings, [("start", ""), ("success", "duration: 1.250 s")])
        self.assertEqual(ran, [("succeeded", None)])
        self.assertEqual(len(rid), 36)
        self.assertEqual((job.__name__, job.__doc__), ("job", "The job."))

    def test_a_decorated_job_that_raises_is_a_failure_and_raises_on(self):
        error = ValueError("no rows for 2026-01-04")

        @monitor(self.m["slug"], **self.keys)
        def job():
            raise error

        with clock(10.0, 10.5), self.assertRaises(ValueError) as raised:
            job()
        self.assertIs(raised.exception, error)
        pings, _, ran = self.outcome()
        self.assertEqual(pings, [("start", ""), ("fail", "ValueError: no rows for 2026-01-04\n"
                                                         "duration: 0.500 s")])
        self.assertEqual(ran, [("failed", None)])

    def test_the_duration_is_the_jobs_not_the_pings(self):
        stub = Stub()
        # the clock reads how many pings were sent: the start ping is out of it
        with stub, mock.patch.object(runs, "_clock", lambda: float(len(stub.requests))), \
                monitor("x", url=stub.url, ping_key="k"):
            pass
        self.assertEqual([(path.split("?")[0], body) for _, path, body in stub.requests],
                         [("/ping/k/x/start", b""), ("/ping/k/x", b"duration: 0.000 s")])

    def test_each_call_is_a_run_of_its_own(self):
        job = monitor(self.m["slug"], **self.keys)(lambda: None)
        job()
        job()
        got = self.live.pings(self.m)
        self.assertEqual([p["kind"] for p in got], ["start", "success"] * 2)
        self.assertEqual(got[0]["rid"], got[1]["rid"])
        self.assertEqual(got[2]["rid"], got[3]["rid"])
        self.assertNotEqual(got[0]["rid"], got[2]["rid"])

    def test_the_context_manager_gives_the_run(self):
        with clock(0.0, 2.0), monitor(self.m["slug"], **self.keys) as run:
            pass
        pings, rid, ran = self.outcome()
        self.assertEqual((pings, rid), ([("start", ""), ("success", "duration: 2.000 s")],
                                        run.rid))
        self.assertEqual(ran, [("succeeded", None)])

    def test_the_context_manager_reports_the_exceptions_module_and_type(self):
        with clock(0.0, 0.25), self.assertRaises(ReportError), \
                monitor(self.m["slug"], **self.keys):
            raise ReportError("the mail server said 554")
        pings, _, ran = self.outcome()
        self.assertEqual(pings[1], ("fail", f"{__name__}.ReportError: the mail server said 554"
                                            "\nduration: 0.250 s"))
        self.assertEqual(ran, [("failed", None)])

    def test_an_exception_without_a_message_is_its_type(self):
        with clock(0.0, 1.0), self.assertRaises(KeyError), \
                monitor(self.m["slug"], **self.keys):
            raise KeyError
        self.assertEqual(self.outcome()[0][1], ("fail", "KeyError\nduration: 1.000 s"))

    def test_sys_exit_0_is_a_success_and_sys_exit_2_a_failure(self):
        job = monitor(self.m["slug"], **self.keys)
        with clock(0.0, 1.0, 5.0, 6.0):
            for code in (0, 2):
                with self.assertRaises(SystemExit), job:
                    raise SystemExit(code)
        self.assertEqual([(p["kind"], p["body"]) for p in self.live.pings(self.m)],
                         [("start", ""), ("success", "duration: 1.000 s"),
                          ("start", ""), ("fail", "SystemExit: 2\nduration: 1.000 s")])

    def test_nested_runs_of_one_monitor_end_their_own(self):
        job = monitor(self.m["slug"], **self.keys)
        with job as outer:
            with job as inner:
                pass
            self.assertEqual([p["rid"] for p in self.live.pings(self.m)],
                             [outer.rid, inner.rid, inner.rid])
        self.assertEqual([(p["kind"], p["rid"]) for p in self.live.pings(self.m)][-1],
                         ("success", outer.rid))

    def test_an_async_function(self):
        @monitor(self.m["slug"], **self.keys)
        async def job():
            await asyncio.sleep(0)
            raise ReportError("late")

        with clock(0.0, 3.0), self.assertRaises(ReportError):
            asyncio.run(job())
        self.assertEqual(self.outcome()[0], [
            ("start", ""), ("fail", f"{__name__}.ReportError: late\nduration: 3.000 s")])

    def test_async_with(self):
        async def job():
            async with monitor(self.m["slug"], **self.keys) as run:
                await asyncio.sleep(0)
            return run

        with clock(0.0, 0.5):
            run = asyncio.run(job())
        self.assertEqual(self.outcome()[:2], ([("start", ""), ("success", "duration: 0.500 s")],
                                              run.rid))

    def test_by_ping_url(self):
        with clock(0.0, 1.0), monitor(ping_url=self.m["ping_url"]):
            pass
        self.assertEqual(self.outcome()[0], [("start", ""), ("success", "duration: 1.000 s")])

    def test_settings_from_the_environment(self):
        env = {"CRONRADAR_URL": self.live.url + "/", "CRONRADAR_PING_KEY": self.live.ping_key}
        with mock.patch.dict("os.environ", env), monitor(self.m["slug"]):
            pass
        with mock.patch.dict("os.environ", {"CRONRADAR_PING_URL": self.m["ping_url"]}), \
                monitor():
            pass
        self.assertEqual([p["kind"] for p in self.live.pings(self.m)],
                         ["start", "success"] * 2)

    def test_arguments_override_the_environment(self):
        down = closed_url()
        with mock.patch.dict("os.environ", {"CRONRADAR_URL": down,
                                            "CRONRADAR_PING_KEY": "not-this-one",
                                            "CRONRADAR_PING_URL": down + "/ping/x"}):
            with monitor(self.m["slug"], **self.keys):
                pass
            with monitor(ping_url=self.m["ping_url"]):
                pass
        self.assertEqual([p["kind"] for p in self.live.pings(self.m)],
                         ["start", "success"] * 2)

    def test_by_slug_with_an_api_key_alone(self):
        with monitor(self.m["slug"], url=self.live.url, api_key=self.live.api_key):
            pass
        self.assertEqual([p["kind"] for p in self.live.pings(self.m)], ["start", "success"])


class CreatedOnFirstUse(LiveTestCase):
    SCHEDULE = {"schedule": "0 3 * * *", "tz": "Europe/Berlin", "grace": 900}

    def shape(self, name):
        m = self.live.by_slug(name)
        return (m["name"], m["kind"], m["schedule"], m["timezone"], m["grace"],
                [p["kind"] for p in self.live.pings(m)],
                [r["outcome"] for r in self.live.runs(m)])

    def test_with_a_ping_key_through_create_on_ping(self):
        name = slug()
        job = monitor(name, url=self.live.url, ping_key=self.live.ping_key, **self.SCHEDULE)
        self.assertIsNone(self.live.by_slug(name))
        with job:
            pass
        with job:
            pass
        self.assertEqual(self.shape(name), (name, "cron", "0 3 * * *", "Europe/Berlin", 900,
                                            ["start", "success"] * 2, ["succeeded"] * 2))

    def test_with_an_api_key_through_the_upsert(self):
        name = slug()
        keys = {"url": self.live.url, "api_key": self.live.api_key}
        with monitor(name, **keys, **self.SCHEDULE):
            pass
        self.assertEqual(self.shape(name), (name, "cron", "0 3 * * *", "Europe/Berlin", 900,
                                            ["start", "success"], ["succeeded"]))
        # a changed schedule in the code changes the monitor; its name stays
        self.live.api("PUT", f"/monitors/by-slug/{name}/", {"name": "Nightly report"})
        with monitor(name, schedule="30 4 * * 1-5", **keys):
            pass
        self.assertEqual(self.shape(name)[:5], ("Nightly report", "cron", "30 4 * * 1-5",
                                                "Europe/Berlin", 900))

    def test_an_existing_monitor_is_pinged_as_it_is(self):
        m = self.live.create(kind="cron", schedule="0 3 * * *", grace=60)
        with monitor(m["slug"], url=self.live.url, ping_key=self.live.ping_key,
                     schedule="0 5 * * *", grace=900):
            pass
        self.assertEqual(self.shape(m["slug"])[1:], ("cron", "0 3 * * *", "UTC", 60,
                                                     ["start", "success"], ["succeeded"]))

    def test_a_schedule_cronradar_refuses_is_a_warning_and_the_job_runs(self):
        name, ran = slug(), []
        with self.assertLogs("cronradar_sdk", "WARNING") as logs, \
                monitor(name, url=self.live.url, ping_key=self.live.ping_key,
                        schedule="61 * * * *"):
            ran.append(True)
        self.assertEqual(ran, [True])
        self.assertEqual(len(logs.output), 2)
        self.assertTrue(logs.output[0].startswith(
            "WARNING:cronradar_sdk:cronradar: ping refused (HTTP 400: "), logs.output)
        self.assertTrue(logs.output[0].endswith(f"/ping/{self.live.ping_key}/{name}/start"))
        self.assertIsNone(self.live.by_slug(name))


class Unreachable(LiveTestCase):
    def test_cronradar_down_the_job_runs_with_a_warning_in_bounded_time(self):
        down, name = closed_url(), slug()
        job = monitor(name, url=down, ping_key="k", timeout=1)(lambda: 42)
        started = time.monotonic()
        with self.assertLogs("cronradar_sdk", "WARNING") as logs:
            self.assertEqual(job(), 42)
        self.assertLess(time.monotonic() - started, 4)  # two pings of about 1 s each
        self.assertEqual([line.split(" (", 1)[0] for line in logs.output],
                         ["WARNING:cronradar_sdk:cronradar: gave up pinging after 1s"] * 2)
        self.assertTrue(logs.output[0].endswith(f"): {down}/ping/k/{name}/start"))
        self.assertTrue(logs.output[1].endswith(f"): {down}/ping/k/{name}"))

    def test_cronradar_down_the_jobs_exception_still_goes_on(self):
        with self.assertLogs("cronradar_sdk", "WARNING"), self.assertRaises(ReportError), \
                monitor(slug(), url=closed_url(), ping_key="k", timeout=0.5):
            raise ReportError("the job's own failure")

    def test_cronradar_down_with_an_api_key(self):
        down, name = closed_url(), slug()
        started = time.monotonic()
        with self.assertLogs("cronradar_sdk", "WARNING") as logs, \
                monitor(name, url=down, api_key="cr_x", schedule="0 3 * * *", timeout=0.5):
            pass
        self.assertLess(time.monotonic() - started, 3)
        self.assertEqual([line.split(" (", 1)[0] for line in logs.output], [
            "WARNING:cronradar_sdk:cronradar: gave up calling the API after 0.5s",
            f"WARNING:cronradar_sdk:cronradar: not pinging {name}: the API did not give its "
            "ping URL"] * 2)

    def test_an_unknown_slug_is_a_warning(self):
        name = slug()
        with self.assertLogs("cronradar_sdk", "WARNING") as logs, \
                monitor(name, url=self.live.url, ping_key=self.live.ping_key):
            pass
        base = f"{self.live.url}/ping/{self.live.ping_key}/{name}"
        refused = ("WARNING:cronradar_sdk:cronradar: ping refused (HTTP 404: not found: no "
                   "monitor with this ping URL): ")
        self.assertEqual(logs.output, [refused + base + "/start", refused + base])

    def test_nothing_configured_is_a_warning(self):
        with self.assertLogs("cronradar_sdk", "WARNING") as logs, monitor("nightly"):
            pass
        self.assertEqual(logs.output, [
            "WARNING:cronradar_sdk:cronradar: not pinging nightly: set CRONRADAR_URL and "
            "CRONRADAR_PING_KEY (or url=, ping_key=)"] * 2)


MUST_BE_HTTP = "the URL must be http(s)://host/..."
# a CRONRADAR_URL that cannot work, the reason given, the ping URL shown
BAD_URLS = [
    ("notaurl", MUST_BE_HTTP, "notaurl/ping/k/x"),
    ("ftp://cronradar.example", MUST_BE_HTTP, "ftp://cronradar.example/ping/k/x"),
    ("file:///etc", MUST_BE_HTTP, "file:///etc/ping/k/x"),
    ("http://[::1", "the URL is not valid (Invalid IPv6 URL)", "http://[::1/ping/k/x"),
    ("http://h:99999", "the URL is not valid (Port out of range 0-65535)",
     "http://h:99999/ping/k/x"),
    ("http://h/crönradar", "the URL has characters that are not ASCII (percent-encode them)",
     "http://h/crönradar/ping/k/x"),
    ("http://h/a b", "the URL has spaces or control characters", "http://h/a b/ping/k/x"),
]


class BadUrls(unittest.TestCase):
    """No URL value makes the decorator or the context manager raise: a warning
    naming the problem, and the job runs."""

    def test_a_malformed_cronradar_url_never_stops_the_decorated_job(self):
        @monitor("down-deco")
        def job():
            return "ran"

        env = {"CRONRADAR_URL": "notaurl", "CRONRADAR_PING_KEY": "x"}
        with mock.patch.dict(os.environ, env), \
                self.assertLogs("cronradar_sdk", "WARNING") as logs:
            self.assertEqual(job(), "ran")
        self.assertEqual(logs.output, [
            "WARNING:cronradar_sdk:cronradar: not pinging down-deco, the URL must be "
            "http(s)://host/...: 'notaurl/ping/x/down-deco'"] * 2)

    def test_the_context_manager_with_each_bad_url(self):
        for url, problem, shown in BAD_URLS:
            ran = []
            with self.subTest(url), self.assertLogs("cronradar_sdk", "WARNING") as logs, \
                    monitor("x", url=url, ping_key="k", timeout=0.5):
                ran.append(1)
            self.assertEqual(ran, [1])
            self.assertEqual(logs.output, [
                f"WARNING:cronradar_sdk:cronradar: not pinging x, {problem}: {shown!r}"] * 2)

    def test_a_huge_url_is_warned_and_the_job_runs(self):
        started = time.monotonic()
        with self.assertLogs("cronradar_sdk", "WARNING") as logs, \
                monitor("x", url=f"{closed_url()}/{'a' * 100000}", ping_key="k", timeout=0.5):
            pass
        self.assertLess(time.monotonic() - started, 3)
        self.assertEqual(len(logs.output), 2)
        for line in logs.output:  # the URL shown is cut to 300 characters
            self.assertTrue(line.startswith("WARNING:cronradar_sdk:cronradar: gave up pinging "
                                            "after 0.5s ("), line)
            self.assertTrue(line.endswith("a…"), line[-50:])
            self.assertLess(len(line), 500)

    def test_with_an_api_key_the_api_call_is_warned_too(self):
        with self.assertLogs("cronradar_sdk", "WARNING") as logs, \
                monitor("x", url="notaurl", api_key="cr_k", schedule="0 3 * * *"):
            pass
        self.assertEqual(logs.output, [
            "WARNING:cronradar_sdk:cronradar: not calling the API, the URL must be "
            "http(s)://host/...: 'notaurl/api/v1/monitors/by-slug/x/'",
            "WARNING:cronradar_sdk:cronradar: not pinging x: the API did not give its ping "
            "URL"] * 2)

    def test_an_async_job_with_a_bad_url(self):
        @monitor("x", url="notaurl", ping_key="k")
        async def job():
            return "ran"

        with self.assertLogs("cronradar_sdk", "WARNING") as logs:
            self.assertEqual(asyncio.run(job()), "ran")
        self.assertEqual(len(logs.output), 2)


class Arguments(unittest.TestCase):
    def test_a_generator_function_is_refused_at_decoration(self):
        def rows():
            yield 1

        with self.assertRaises(TypeError) as refused:
            monitor("export")(rows)
        self.assertEqual(str(refused.exception), (
            "@monitor('export') cannot decorate the generator function "
            "Arguments.test_a_generator_function_is_refused_at_decoration.<locals>.rows: "
            "calling it only makes the generator, so the run would end before any of its "
            "work; use `with monitor('export'):` inside it (`async with` in an async "
            "generator)"))

    def test_an_async_generator_function_is_refused_too(self):
        async def rows():
            yield 1

        with self.assertRaises(TypeError):
            monitor("export")(rows)

    def test_a_generator_with_the_context_manager_inside_is_one_run_of_its_work(self):
        stub = Stub()

        def rows():
            with monitor("x", url=stub.url, ping_key="k"):
                yield 1
                yield 2

        with stub, mock.patch.object(runs, "_clock", lambda: float(len(stub.requests))):
            self.assertEqual(list(rows()), [1, 2])
        self.assertEqual([(path.split("?")[0], body) for _, path, body in stub.requests],
                         [("/ping/k/x/start", b""), ("/ping/k/x", b"duration: 0.000 s")])

    def test_bad_grace_and_timeout_fail_at_once(self):
        for kwargs in ({"grace": 0}, {"grace": True}, {"timeout": 0}):
            with self.assertRaises(ValueError):
                monitor("x", **kwargs)

    def test_grace_as_a_timedelta(self):
        import datetime

        self.assertEqual(monitor("x", grace=datetime.timedelta(minutes=15)).grace, 900)


if __name__ == "__main__":
    unittest.main()
