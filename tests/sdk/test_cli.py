"""The ``cronradar`` command (sdk/python/cronradar_sdk/cli.py) run as ``python -m
cronradar_sdk.cli`` by this interpreter against a live ``manage.py serve``: under
Python 3.8 too (tests/sdk/test_python38.py). ``cronradar exec`` itself is tested
in depth by tests/site/test_cronradar_exec.py; ``apply`` and ``export`` against a
live service by tests/sdk/test_declarative.py. Here: ``exec`` goes to
cronradar_exec.main with its arguments as they were, ``apply``'s refusals exit 1
with the reason, bad arguments exit 2."""
import contextlib
import io
import os
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

from cronradar_sdk import cli, cronradar_exec

from tests.sdk.service import SDK, LiveTestCase, slug


class Exec(LiveTestCase):
    def test_exec_creates_its_monitor_and_reports_the_job(self):
        name = slug()
        env = {**os.environ, "PYTHONPATH": str(SDK), "CRONRADAR_URL": self.live.url,
               "CRONRADAR_PING_KEY": self.live.ping_key}
        done = subprocess.run(
            [sys.executable, "-m", "cronradar_sdk.cli", "exec", "--slug", name, "--create",
             "--schedule", "0 3 * * *", "--tz", "Europe/Berlin", "--grace", "900",
             "--no-output", "--", "sh", "-c", "echo secret; exit 3"],
            capture_output=True, timeout=60, env=env)
        self.assertEqual((done.returncode, done.stdout, done.stderr), (3, b"secret\n", b""))
        m = self.live.by_slug(name)
        self.assertEqual((m["kind"], m["schedule"], m["timezone"], m["grace"]),
                         ("cron", "0 3 * * *", "Europe/Berlin", 900))
        self.assertEqual([(p["kind"], p["exit_status"], p["body"]) for p in self.live.pings(m)],
                         [("start", None, ""), ("fail", 3, "")])


class StartUp(unittest.TestCase):
    def test_the_command_does_not_import_the_decorators_asyncio(self):
        done = subprocess.run(
            [sys.executable, "-c", "import sys, cronradar_sdk.cli; "
             "print(sorted(m for m in sys.modules if m.startswith(('asyncio', 'cronradar'))))"],
            capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(SDK)})
        self.assertEqual(done.stdout, "['cronradar_sdk', 'cronradar_sdk.cli', "
                                      "'cronradar_sdk.cronradar_exec']\n", done.stderr)



def _run(argv, env=None):
    """``cli.main(argv)`` with ``env`` as the CRONRADAR_ variables: (status, stdout,
    stderr); a SystemExit's code is the status."""
    out, err = io.StringIO(), io.StringIO()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CRONRADAR_")}
    with mock.patch.dict(os.environ, {**clean, **(env or {})}, clear=True), \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main(argv)
        except SystemExit as e:
            status = e.code
    return status, out.getvalue(), err.getvalue()


class Verbs(unittest.TestCase):
    def test_exec_is_cronradar_exec_main_with_the_arguments_unchanged(self):
        argv = ["exec", "--url", "https://cr/ping/x", "--", "sh", "-c", "exit 3", "--prune"]
        with mock.patch.object(cronradar_exec, "main", return_value=7) as main:
            self.assertEqual(cli.main(argv), 7)
        main.assert_called_once_with(argv)

    def test_apply_without_a_service_url_exits_1_saying_what_to_set(self):
        self.assertEqual(_run(["apply", "-f", "m.json"], {"CRONRADAR_API_KEY": "k"}), (
            1, "", "cronradar apply: no service URL: set CRONRADAR_URL (or give url=)\n"))

    def test_bad_arguments_exit_2(self):
        for argv in ([], ["apply"], ["export", "--format", "toml"], ["nope"]):
            status, _, err = _run(argv)
            self.assertEqual((status, err[:15]), (2, "usage: cronrada"), argv)

    def test_a_file_that_is_not_valid_exits_1_listing_its_problems(self):
        with tempfile.TemporaryDirectory() as where:
            path = os.path.join(where, "m.json")
            with open(path, "w") as f:
                f.write('{"version": 1, "monitors": [{"name": "x"}, {"slug": "a", "colour": 1}]}')
            self.assertEqual(_run(["apply", "-f", path], {
                "CRONRADAR_URL": "http://127.0.0.1:9", "CRONRADAR_API_KEY": "k"}), (
                1, "", "cronradar apply: monitors[0]: slug: required\n"
                       "monitors[1] (a): colour: unknown field\n"))


if __name__ == "__main__":
    unittest.main()
