"""The SDK's standard-library tests (tests/sdk/test_config.py, test_pings.py,
test_api.py, test_runs.py, test_cli.py) again under Python 3.8, the oldest the SDK
supports, against a live ``manage.py serve`` this test starts (the server itself
needs a newer Python). Skipped where the machine has no Python 3.8: pyenv's
(/root/.pyenv/versions/3.8.*), else ``python3.8`` on PATH."""
import glob
import os
import shutil
import subprocess

import pytest

from tests.live import ROOT
from tests.sdk import service

pytestmark = pytest.mark.live
MODULES = ["tests.sdk.test_config", "tests.sdk.test_pings", "tests.sdk.test_api",
           "tests.sdk.test_runs", "tests.sdk.test_cli"]


def python38() -> str | None:
    found = sorted(glob.glob("/root/.pyenv/versions/3.8.*/bin/python3.8"))
    return found[-1] if found else shutil.which("python3.8")


@pytest.mark.skipif(python38() is None, reason="no Python 3.8 on this machine")
def test_the_sdk_tests_pass_under_python_3_8():
    live = service.start()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRONRADAR_", "PYTHON"))}
    env.update(PYTHONPATH=str(service.SDK), CRONRADAR_TEST_URL=live.url,
               CRONRADAR_TEST_API_KEY=live.api_key, PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run([python38(), "-m", "unittest", "-v", *MODULES], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-20000:]
    assert done.stderr.rstrip().endswith("OK"), done.stderr[-2000:]
    # every test module ran, none silently skipped
    ran = {line.split("(", 1)[1].split(")")[0].rsplit(".", 1)[0]
           for line in done.stderr.splitlines() if line.endswith(" ... ok")}
    assert ran == set(MODULES), ran
