"""The ``cronradar`` command (sdk/python/cronradar_sdk/cli.py) run as ``python -m
cronradar_sdk.cli`` by this interpreter against a live ``manage.py serve``: under
Python 3.8 too (tests/sdk/test_python38.py). ``cronradar exec`` itself is tested
in depth by tests/site/test_cronradar_exec.py."""
import os
import subprocess
import sys
import unittest

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


if __name__ == "__main__":
    unittest.main()
