"""Module boundaries: the monitors side never imports the alerting side."""
import ast
import subprocess
import sys
from pathlib import Path

from tests.live import ROOT

LOAD_MONITORS_ALONE = """
import sys, django
from pathlib import Path
from django.conf import settings
settings.configure(
    INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth", "rest_framework",
                    "accounts", "monitors"],
    DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
    USE_TZ=True, CRONRADAR_LIVENESS_INTERVAL=1.0, CRONRADAR_OUTAGE_THRESHOLD=10.0,
    CRONRADAR_TICK_SECONDS=0.5, CRONRADAR_BASE_URL="http://x", CRONRADAR_PING_BODY_LIMIT=10,
    CRONRADAR_TRUST_X_FORWARDED_FOR=False, PRODUCTION=False,
    DATA_DIR=Path("/tmp/cronradar-boundary"), STATIC_ROOT=Path("/tmp/cronradar-boundary"),
)
django.setup()
import monitors.pings, monitors.evaluator, monitors.api, monitors.views, monitors.liveness
print(sorted(m for m in sys.modules if m.split(".")[0] == "alerts"))
"""


def test_no_monitors_module_imports_alerts():
    for path in sorted((ROOT / "monitors").rglob("*.py")):
        tree = ast.parse(Path(path).read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not any(n.split(".")[0] == "alerts" for n in names), (path, names)


def test_monitors_loads_and_runs_without_alerts_installed():
    proc = subprocess.run([sys.executable, "-c", LOAD_MONITORS_ALONE], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
