"""docker/nginx.conf: CronRadar's own metrics are never served to the public."""
import re

from tests.live import ROOT

NGINX = (ROOT / "docker" / "nginx.conf").read_text()


def test_metrics_is_denied_outside():
    block = re.search(r"location = /metrics \{([^}]*)\}", NGINX)
    assert block and block.group(1).split() == ["deny", "all;"]


def test_health_endpoints_pass_through_to_web():
    # /healthz and /readyz have no location of their own: `location /` proxies them
    assert "location = /healthz" not in NGINX and "location = /readyz" not in NGINX
    assert re.search(r"location / \{[^}]*proxy_pass http://cronradar_web;", NGINX)
