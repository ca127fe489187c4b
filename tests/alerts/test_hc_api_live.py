"""/api/v3/ against a live `manage.py serve`, driven by the real curl with the
command lines of Healthchecks' documentation (templates/docs/api.md), SITE_ROOT
and the key filled in: what curl itself sends (its User-Agent, Accept, the form
Content-Type of --data) reaches the server through its middleware."""
import json
import shutil
import subprocess

import pytest

from tests.alerts.test_hc_api import CHANNEL, CRON, SIMPLE
from tests.live import Service

pytestmark = [pytest.mark.live,
              pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")]


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    s = Service(tmp_path_factory.mktemp("hcapi"))
    yield s
    s.stop()


def curl(*args: str) -> tuple[int, dict]:
    """Run curl with ``args`` (plus ``-s`` and a trailer line with the status
    code); (status, JSON answer)."""
    done = subprocess.run(["curl", "-s", "-w", "\n%{http_code}", *args], capture_output=True,
                          text=True, timeout=30, check=True)
    body, _, code = done.stdout.rpartition("\n")
    return int(code), json.loads(body) if body else {}


def test_the_documented_requests(service):
    key = service.manage("createapikey", "--project", "hc").strip().splitlines()[-1]
    root = service.url
    body = '{"name": "Backups", "tags": "prod www", "timeout": 3600, "grace": 60}'

    code, created = curl(f"{root}/api/v3/checks/", "--header", f"X-Api-Key: {key}",
                         "--data", body)
    assert code == 201 and set(created) == SIMPLE
    code, other = curl(f"{root}/api/v3/checks/", "--data",
                       f'{{"api_key": "{key}", "name": "Nightly", "schedule": "15 5 * * *", '
                       '"tz": "UTC"}')
    assert code == 201 and set(other) == CRON
    uuid = created["uuid"]

    code, listed = curl("--header", f"X-Api-Key: {key}", f"{root}/api/v3/checks/")
    assert code == 200 and [c["uuid"] for c in listed["checks"]] == [uuid, other["uuid"]]
    code, one = curl("--header", f"X-Api-Key: {key}", f"{root}/api/v3/checks/{uuid}")
    assert code == 200 and one == created

    code, updated = curl(f"{root}/api/v3/checks/{uuid}", "--header", f"X-Api-Key: {key}",
                         "--data", body.replace("3600", "7200"))
    assert code == 200 and updated["timeout"] == 7200
    code, updated = curl(f"{root}/api/v3/checks/{uuid}", "--data",
                         f'{{"api_key": "{key}", "desc": "nightly dump"}}')
    assert code == 200 and updated["desc"] == "nightly dump"

    code, paused = curl(f"{root}/api/v3/checks/{uuid}/pause", "--request", "POST",
                        "--header", f"X-Api-Key: {key}", "--data", "")
    assert (code, paused["status"]) == (200, "paused")
    code, resumed = curl(f"{root}/api/v3/checks/{uuid}/resume", "--request", "POST",
                         "--header", f"X-Api-Key: {key}", "--data", "")
    assert (code, resumed["status"]) == (200, "new")

    subprocess.run(["curl", "-fsS", created["ping_url"]], check=True, capture_output=True)
    code, pings = curl(f"{root}/api/v3/checks/{uuid}/pings/", "--header", f"X-Api-Key: {key}")
    assert code == 200 and [(p["type"], p["ua"][:5]) for p in pings["pings"]] == [
        ("success", "curl/")]
    code, flips = curl(f"{root}/api/v3/checks/{uuid}/flips/", "--header", f"X-Api-Key: {key}")
    assert (code, flips) == (200, {"flips": []})
    hook = service.project_api("hc").post("/channels/", json={
        "kind": "webhook", "name": "ops", "config": {"url": "http://127.0.0.1:9/hook"}}).json()
    code, channels = curl("--header", f"X-Api-Key: {key}", f"{root}/api/v3/channels/")
    assert code == 200 and [set(c) for c in channels["channels"]] == [CHANNEL]
    assert channels["channels"][0]["name"] == hook["name"] == "ops"

    code, deleted = curl(f"{root}/api/v3/checks/{uuid}", "--request", "DELETE",
                         "--header", f"X-Api-Key: {key}")
    assert code == 200 and deleted["uuid"] == uuid
    code, gone = curl("--header", f"X-Api-Key: {key}", f"{root}/api/v3/checks/{uuid}")
    assert (code, gone) == (404, {"error": "not found"})
