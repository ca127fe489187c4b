"""docker/systemd/: the unit files of web, the workers and beat verify with
`systemd-analyze verify` (in a root that has their binaries), restart always, run
unprivileged, read the settings from one file, and give each metrics-writing
service a multi-process directory that starts empty."""
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from tests.live import ROOT

UNITS = ROOT / "docker" / "systemd"
SERVICES = ["cronradar-migrate.service", "cronradar-web.service",
            "cronradar-evaluator.service", "cronradar-deliveries@.service",
            "cronradar-beat.service"]
LONG_RUNNING = SERVICES[1:]
ANALYZE = Path("/usr/bin/systemd-analyze")
BINARIES = ("python", "granian", "celery")  # what the units run, in /opt/cronradar/.venv/bin


def unit(name: str) -> dict[str, dict[str, list[str]]]:
    """Section -> setting -> its values in order (a setting may repeat, as
    Environment= does); backslash-continued lines joined, comments dropped."""
    text = re.sub(r"\s*\\\n\s*", " ", UNITS.joinpath(name).read_text())
    sections: dict[str, dict[str, list[str]]] = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
        else:
            key, _, value = line.partition("=")
            current.setdefault(key, []).append(value)
    return sections


def one(values: list[str]) -> str:
    assert len(values) == 1, values
    return values[0]


def test_the_directory_has_the_units_and_nothing_else():
    assert sorted(p.name for p in UNITS.iterdir()) == sorted([*SERVICES, "cronradar.target"])


def _root(tmp_path: Path, units: Path) -> Path:
    """A root for `systemd-analyze verify --root`: this machine's system units,
    the units under test, and executable stand-ins for the binaries they run."""
    root = tmp_path / "root"
    system = next(p for p in (Path("/usr/lib/systemd/system"), Path("/lib/systemd/system"))
                  if p.is_dir())
    shutil.copytree(system, root / "usr/lib/systemd/system", symlinks=True)
    shutil.copytree(units, root / "etc/systemd/system")
    bin_dir = root / "opt/cronradar/.venv/bin"
    bin_dir.mkdir(parents=True)
    for name in BINARIES:
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(stat.S_IRWXU)
    return root


def _verify(root: Path):
    names = [n.replace("@.", "@9810.") for n in SERVICES] + ["cronradar.target"]
    return subprocess.run([str(ANALYZE), "verify", f"--root={root}", *names],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(not ANALYZE.exists(), reason="no /usr/bin/systemd-analyze")
def test_systemd_analyze_verifies_the_units(tmp_path):
    out = _verify(_root(tmp_path, UNITS))
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")


@pytest.mark.skipif(not ANALYZE.exists(), reason="no /usr/bin/systemd-analyze")
def test_systemd_analyze_would_see_a_broken_unit(tmp_path):
    """The verification above can fail: a unit with a bad setting is reported
    (on stderr; systemd-analyze still exits 0 for it, so the test above requires
    silence too), and a binary missing from the root fails it."""
    units = tmp_path / "units"
    shutil.copytree(UNITS, units)
    web = units / "cronradar-web.service"
    web.write_text(web.read_text().replace("Restart=always", "Restart=sometimes"))
    out = _verify(_root(tmp_path, units))
    assert "Failed to parse service restart specifier, ignoring: sometimes" in out.stderr
    shutil.rmtree(tmp_path / "root")
    root = _root(tmp_path, UNITS)
    (root / "opt/cronradar/.venv/bin/granian").unlink()
    out = _verify(root)
    assert out.returncode != 0
    assert "/opt/cronradar/.venv/bin/granian is not executable" in out.stderr


@pytest.mark.parametrize("name", SERVICES)
def test_every_service_runs_unprivileged_with_the_settings_file(name):
    service = unit(name)["Service"]
    assert (service["User"], service["Group"]) == (["cronradar"], ["cronradar"])
    assert service["EnvironmentFile"] == ["/etc/cronradar/cronradar.env"]
    assert service["WorkingDirectory"] == ["/opt/cronradar"]
    assert service["NoNewPrivileges"] == ["yes"] and service["ProtectSystem"] == ["strict"]


@pytest.mark.parametrize("name", LONG_RUNNING)
def test_long_running_services_always_restart_after_the_migrations(name):
    u = unit(name)
    assert u["Service"]["Restart"] == ["always"]
    assert 1 <= int(one(u["Service"]["RestartSec"])) <= 5
    assert u["Unit"]["StartLimitIntervalSec"] == ["0"]  # never give up restarting
    assert u["Unit"]["Requires"] == ["cronradar-migrate.service"]
    assert one(u["Unit"]["After"]).split()[0] == "cronradar-migrate.service"


def test_migrate_runs_once_and_stays_done():
    service = unit("cronradar-migrate.service")["Service"]
    assert (service["Type"], service["RemainAfterExit"]) == (["oneshot"], ["yes"])
    assert service["ExecStart"] == [
        "/opt/cronradar/.venv/bin/python manage.py migrate --noinput"]
    assert "Restart" not in service


@pytest.mark.parametrize("name, directory", [
    ("cronradar-web.service", "cronradar-web"),
    ("cronradar-evaluator.service", "cronradar-evaluator"),
    ("cronradar-deliveries@.service", "cronradar-deliveries-%i"),
])
def test_metrics_directories_are_runtime_directories(name, directory):
    """systemd creates a RuntimeDirectory empty at start and removes it at stop."""
    service = unit(name)["Service"]
    assert service["RuntimeDirectory"] == [directory]
    assert "RuntimeDirectoryPreserve" not in service
    assert f"PROMETHEUS_MULTIPROC_DIR=%t/{directory}" in service["Environment"]


def test_web_logs_access_through_the_application_and_workers_serve_metrics():
    web = unit("cronradar-web.service")["Service"]
    assert "CRONRADAR_ACCESS_LOG=true" in web["Environment"]
    assert one(web["ExecStart"]).split() == [
        "/opt/cronradar/.venv/bin/granian", "--interface", "wsgi", "--host", "127.0.0.1",
        "--port", "8000", "--workers", "2", "--blocking-threads", "2",
        "--respawn-failed-workers", "--workers-kill-timeout", "10", "cronradar.wsgi:application"]
    assert "CRONRADAR_METRICS_PORT=9808" in unit("cronradar-evaluator.service")["Service"][
        "Environment"]
    assert "CRONRADAR_METRICS_PORT=%i" in unit("cronradar-deliveries@.service")["Service"][
        "Environment"]


def test_beat_runs_the_liveness_scheduler():
    exec_start = one(unit("cronradar-beat.service")["Service"]["ExecStart"])
    assert ("--scheduler cronradar.management.commands.beatalive:LivenessScheduler "
            "--schedule %S/cronradar/celerybeat-schedule") in exec_start
