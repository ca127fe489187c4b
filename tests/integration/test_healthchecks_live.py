"""Moving from Healthchecks on a real running service (`manage.py serve`): checks
imported from the saved /api/v3/checks/ answer keep their ping URLs, including
hc-ping.com's form at the root path of CRONRADAR_PING_HOST, and a POST-only check
refuses GET pings. Marked ``live``."""
import httpx
import pytest

from tests.conftest import DATA
from tests.live import Service

pytestmark = pytest.mark.live

PING_HOST = "ping.cronradar.test"


def test_imported_checks_answer_their_healthchecks_ping_urls(tmp_path):
    s = Service(tmp_path, extra_env={"CRONRADAR_PING_HOST": PING_HOST,
                                     "CRONRADAR_SIGNUP": "closed"})
    try:
        out = s.manage("importhealthchecks", "--from-json", str(DATA / "healthchecks_checks.json"),
                       "--project", "live", "--ping-key", "jq3WmSKH3kN8lTBnoWEoxw")
        assert "4 created, 0 updated, 0 unchanged, 0 reported" in out
        backup, database = ("31365bce-8da9-4729-8ff3-aaa71d56b712",
                            "803f680d-e89b-492b-82ef-2be7b774a92d")
        answers = [
            httpx.get(f"{s.url}/ping/{backup}/start"),  # the self-hosted Healthchecks' form
            httpx.get(f"{s.url}/{backup}/0", headers={"Host": PING_HOST}),  # hc-ping.com's
            httpx.head(f"{s.url}/jq3WmSKH3kN8lTBnoWEoxw/filesystem-backup",
                       headers={"Host": PING_HOST}),
            httpx.post(f"{s.url}/{database}/fail", headers={"Host": f"{PING_HOST}:443"},
                       content=b"exit 1"),
            httpx.get(f"{s.url}/ping/{database}")]  # methods POST: refused
        assert [a.status_code for a in answers] == [200, 200, 200, 200, 405]
        assert answers[-1].headers["Allow"] == "POST"
        assert httpx.get(f"{s.url}/{backup}").status_code == 404  # not the ping host
        monitors = {m["uuid"]: m for m in s.api.get("/monitors/").json()}
        assert (monitors[backup]["n_pings"], monitors[database]["n_pings"]) == (3, 1)
        pings = s.api.get(f"/monitors/{monitors[database]['id']}/pings/").json()
        assert [(p["kind"], p["body"]) for p in pings] == [("fail", "exit 1")]
    finally:
        s.stop()
