"""docker/compose.yaml: one migration run that the rest waits for, a health check
and a restart policy per service, the application's access log, and the
multi-process metrics directories. Docker does not run here: the file is parsed
(YAML merge keys resolved, as compose does), and the web health check's command
runs against a local server."""
import os
import re
import subprocess
import sys
import time

import pytest
import yaml

from cronradar.probes import Probes
from tests.docker.local import serving
from tests.live import ROOT

COMPOSE = ROOT / "docker" / "compose.yaml"
APP_SERVICES = ("web", "worker", "deliveries", "beat")


def services() -> dict:
    return yaml.safe_load(COMPOSE.read_text())["services"]


def command_text(service: dict) -> str:
    command = service.get("command", "")
    return command if isinstance(command, str) else " ".join(command)


def test_migrations_run_once_in_a_one_shot_service():
    svc = services()
    migrate = svc["migrate"]
    assert migrate["command"] == ["python", "manage.py", "migrate", "--noinput"]
    assert migrate["restart"] == "no"
    assert migrate["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    # nothing else migrates: two web replicas can no longer race
    assert [name for name, s in svc.items() if "migrate" in command_text(s)] == ["migrate"]


@pytest.mark.parametrize("name", APP_SERVICES)
def test_web_workers_and_beat_wait_for_the_migrations(name):
    assert services()[name]["depends_on"] == {
        "migrate": {"condition": "service_completed_successfully"},
        "postgres": {"condition": "service_healthy"},
        "redis": {"condition": "service_healthy"},
    }


def test_every_long_running_service_restarts_and_has_a_health_check():
    svc = services()
    long_running = set(svc) - {"migrate"}
    assert long_running == {"postgres", "redis", "web", "nginx", *APP_SERVICES}
    assert {name: svc[name]["restart"] for name in long_running} == dict.fromkeys(
        long_running, "unless-stopped")
    # nginx: its process is all there is to it (restart covers it); the rest probe
    assert {name for name in long_running if "healthcheck" in svc[name]} == long_running - {
        "nginx"}
    for name in APP_SERVICES:
        check = svc[name]["healthcheck"]
        assert set(check) == {"test", "interval", "timeout", "retries", "start_period"}


def test_the_web_health_check_is_healthz_never_all_of_readyz():
    check = services()["web"]["healthcheck"]["test"]
    assert check[:3] == ["CMD", "python", "-c"]
    assert "'/healthz'" in check[3] and "readyz" not in check[3]


def _run_web_check(app) -> int:
    """Exit status of the web service's health check command against ``app``
    served on a free loopback port (the check's port 8000 swapped for it)."""
    code = services()["web"]["healthcheck"]["test"][3]
    assert code.count("8000") == 1
    with serving(app) as port:
        return subprocess.run([sys.executable, "-c", code.replace("8000", str(port))],
                              timeout=30).returncode


def test_the_web_health_check_passes_on_healthz_and_fails_otherwise():
    def down(environ, start_response):
        start_response("503 Service Unavailable", [("Content-Length", "0")])
        return [b""]

    assert _run_web_check(Probes(down)) == 0      # /healthz answered by the probes
    assert _run_web_check(down) == 1              # no 200: unhealthy


@pytest.mark.parametrize("name, node", [("worker", "evaluator"), ("deliveries", "deliveries")])
def test_a_worker_is_healthy_while_its_own_node_answers_a_ping(name, node):
    svc = services()[name]
    assert f"-n {node}@%h" in command_text(svc)
    # $$: compose's escape for a literal $, so the container's shell expands
    # HOSTNAME (Celery's %h), not compose from the host's environment
    assert svc["healthcheck"]["test"] == [
        "CMD-SHELL", f"celery -A cronradar inspect ping --timeout 10 -d {node}@$$HOSTNAME"]


def test_beat_is_healthy_while_its_liveness_file_is_fresh():
    beat = services()["beat"]
    command = beat["command"]
    assert command[command.index("--scheduler") + 1] == (
        "cronradar.management.commands.beatalive:LivenessScheduler")
    schedule = command[command.index("--schedule") + 1]
    assert beat["healthcheck"]["test"] == ["CMD", "python", "manage.py", "beatalive",
                                           "--schedule", schedule, "--max-age", "30"]


def test_access_lines_come_from_the_applications_logger():
    assert "--access-log" not in COMPOSE.read_text()
    web = services()["web"]
    assert web["environment"]["CRONRADAR_ACCESS_LOG"] == "true"
    assert "exec granian" in command_text(web)


@pytest.mark.parametrize("name", ["web", "worker", "deliveries"])
def test_metrics_directories_are_tmpfs_and_workers_serve_a_port(name):
    svc = services()[name]
    directory = svc["environment"]["PROMETHEUS_MULTIPROC_DIR"]
    assert svc["tmpfs"] == [directory] == ["/run/cronradar-metrics"]
    if name == "web":
        assert "CRONRADAR_METRICS_PORT" not in svc["environment"]
        assert svc["expose"] == ["8000"] and "ports" not in svc
    else:
        port = svc["environment"]["CRONRADAR_METRICS_PORT"]
        assert port == "9808" and svc["expose"] == [port] and "ports" not in svc


def test_only_nginx_is_published():
    assert {name for name, s in services().items() if "ports" in s} == {"nginx"}


def test_compose_passes_the_metrics_token_through():
    for name in APP_SERVICES:
        env = services()[name]["environment"]
        assert env["CRONRADAR_METRICS_TOKEN"] == "${CRONRADAR_METRICS_TOKEN:-}"
    # the old health check's Host is no longer needed: probes answer ahead of ALLOWED_HOSTS
    assert not re.search(r"ALLOWED_HOSTS: .*127\.0\.0\.1", COMPOSE.read_text())


@pytest.mark.live
@pytest.mark.skipif(not os.environ.get("REDIS_URL"),
                    reason="needs Redis (REDIS_URL), see scripts/test")
def test_the_worker_health_check_pings_a_real_worker_by_its_node_name(tmp_path):
    """The worker's check, run by a shell as compose runs it (HOSTNAME set, as in
    a container), against a real worker named as compose names it: exit 0; a
    node that is not there: not 0."""
    import socket as _socket

    check = services()["worker"]["healthcheck"]["test"][1].replace("$$", "$")
    hostname = _socket.gethostname()
    # the image's PATH has celery: here, the venv's bin
    env = {**os.environ, "HOSTNAME": hostname,
           "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}"}
    # a queue of its own: it answers control commands and takes no work
    worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "cronradar", "worker",
                               "-l", "warning", "-Q", f"healthcheck-{os.getpid()}",
                               "-n", "evaluator@%h", "--concurrency", "1", "--pool", "solo"],
                              cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            ok = subprocess.run(["sh", "-c", check], cwd=ROOT, env=env,
                                capture_output=True, text=True, timeout=60)
            if ok.returncode == 0 or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert ok.returncode == 0, ok.stdout + ok.stderr
        assert f"evaluator@{hostname}: OK" in ok.stdout
        absent = subprocess.run(["sh", "-c", check.replace("evaluator@", "nobody@")
                                 .replace("--timeout 10", "--timeout 2")],
                                cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
        assert absent.returncode != 0
    finally:
        worker.terminate()
        worker.wait(timeout=30)
