"""docker/nginx.conf: CronRadar's own metrics are never served to the public;
the health endpoints pass through. Read as text, and (when nginx is installed,
Debian's nginx-light) served for real on loopback in front of a local server."""
import os
import re
import shutil
import subprocess
import time

import httpx
import pytest

from cronradar.probes import Probes
from tests.docker.local import serving
from tests.live import ROOT, free_port

NGINX = (ROOT / "docker" / "nginx.conf").read_text()
# Debian puts it in /usr/sbin, which a non-root PATH may lack
NGINX_BIN = shutil.which("nginx") or (
    "/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)


def test_metrics_is_denied_outside():
    block = re.search(r"location = /metrics \{([^}]*)\}", NGINX)
    assert block and block.group(1).split() == ["deny", "all;"]


def test_health_endpoints_pass_through_to_web():
    # /healthz and /readyz have no location of their own: `location /` proxies them
    assert "location = /healthz" not in NGINX and "location = /readyz" not in NGINX
    assert re.search(r"location / \{[^}]*proxy_pass http://cronradar_web;", NGINX)


@pytest.fixture
def behind_nginx(tmp_path):
    """docker/nginx.conf served by a real nginx on loopback, its upstream a local
    server of the probes around an app that records every path it is asked.
    Yields (nginx's base URL, the paths the app saw)."""
    if NGINX_BIN is None:
        pytest.skip("nginx is not installed (apt-get install nginx-light)")
    seen = []

    def app(environ, start_response):
        seen.append(environ["PATH_INFO"])
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"app"]

    with serving(Probes(app)) as backend_port:
        yield from _nginx(tmp_path, backend_port, seen)


def _nginx(tmp_path, backend_port: int, seen: list):
    """docker/nginx.conf on a free loopback port, its upstream ``backend_port``:
    yields (base URL, ``seen``) while nginx runs."""
    port = free_port()
    shutil.copy(ROOT / "docker" / "nginx_proxy.conf", tmp_path / "cronradar_proxy.conf")
    server = (NGINX.replace("server web:8000;", f"server 127.0.0.1:{backend_port};")
              .replace("listen 8080;", f"listen 127.0.0.1:{port};")
              .replace("/etc/nginx/cronradar_proxy.conf", str(tmp_path / "cronradar_proxy.conf")))
    assert server.count(str(port)) == 1 and "web:8000" not in server
    (tmp_path / "default.conf").write_text(server)
    (tmp_path / "nginx.conf").write_text(
        f"daemon off;\nmaster_process off;\npid {tmp_path}/nginx.pid;\n"
        f"error_log {tmp_path}/error.log;\nevents {{}}\n"
        f"http {{\n  access_log off;\n  client_body_temp_path {tmp_path}/body;\n"
        f"  proxy_temp_path {tmp_path}/proxy;\n  include {tmp_path}/default.conf;\n}}\n")
    nginx = subprocess.Popen([NGINX_BIN, "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")],
                             stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                httpx.get(base + "/healthz", timeout=1)
                break
            except httpx.TransportError:
                assert nginx.poll() is None, nginx.stderr.read().decode()
                assert time.monotonic() < deadline, "nginx did not start"
                time.sleep(0.05)
        yield base, seen
    finally:
        nginx.terminate()
        nginx.wait(timeout=10)


def test_nginx_refuses_metrics_and_passes_the_rest(behind_nginx):
    base, seen = behind_nginx
    for path in ("/metrics", "/metrics?x=1"):
        assert httpx.get(base + path, timeout=5).status_code == 403
    healthz = httpx.get(base + "/healthz", timeout=5)
    assert (healthz.status_code, healthz.text) == (200, "ok\n")
    assert httpx.get(base + "/ping/abc", timeout=5).text == "app"
    assert httpx.get(base + "/metrics/", timeout=5).text == "app"  # only /metrics itself
    assert "/metrics" not in seen and seen == ["/ping/abc", "/metrics/"]


def test_nginx_sets_its_own_request_id_over_the_clients(tmp_path):
    """CronRadar takes X-Request-ID from a trusted proxy (compose turns the trust on):
    nginx must set its own, or any client picks the id of its log lines."""
    if NGINX_BIN is None:
        pytest.skip("nginx is not installed (apt-get install nginx-light)")
    ids = []

    def app(environ, start_response):
        ids.append(environ.get("HTTP_X_REQUEST_ID"))
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"app"]

    with serving(app) as backend_port:
        for base, _ in _nginx(tmp_path, backend_port, []):
            httpx.get(base + "/ping/abc", headers={"X-Request-ID": "forged"}, timeout=5)
            httpx.get(base + "/ping/abc", timeout=5)
    given = ids[-2:]
    assert all(re.fullmatch(r"[0-9a-f]{32}", i or "") for i in given), given
    assert given[0] != given[1]
