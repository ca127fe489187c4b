"""docker/Dockerfile: the image installs requirements-prod.lock with hashes, then
the project without dependencies; its default command logs access through the
application's escaped logger, and the image has no HEALTHCHECK (compose sets one
per service)."""
import json
import re

from tests.live import ROOT

DOCKERFILE = (ROOT / "docker" / "Dockerfile").read_text()


def test_the_default_command_runs_granian_without_its_access_log():
    cmd = json.loads(re.search(r"^CMD (.+)$", DOCKERFILE, re.M).group(1))
    assert cmd[:2] == ["sh", "-c"] and cmd[2].startswith("exec granian ")
    assert "--access-log" not in DOCKERFILE
    assert re.search(r"^ENV CRONRADAR_ACCESS_LOG=true$", DOCKERFILE, re.M)


def test_the_image_has_no_healthcheck():
    assert not re.search(r"^HEALTHCHECK", DOCKERFILE, re.M)


def test_the_image_installs_the_lock_with_hashes_then_the_project_without_deps():
    runs = re.findall(r"^RUN (.+)$", DOCKERFILE, re.M)
    assert runs[0] == "pip install --require-hashes -r requirements-prod.lock"
    assert runs[1].startswith("pip install --no-deps . ./sdk/python ")
    assert re.search(r"^COPY requirements-prod\.lock \./$", DOCKERFILE, re.M)
    assert "pyproject.toml" not in DOCKERFILE.split("COPY . .")[0]
