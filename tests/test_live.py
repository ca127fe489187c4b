"""The whole path on a real running service: curl-style pings in, alerts out to a
real local HTTP receiver. These start `manage.py serve` (embedded default)."""
import asyncio
import hashlib
import hmac
import time
from datetime import datetime

import httpx
import pytest

from tests.live import Receiver, Service


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def service(tmp_path):
    s = Service(tmp_path)
    yield s
    s.stop()


def _hook(service, receiver):
    resp = service.api.post("/channels/", json={
        "kind": "webhook", "name": "recv", "config": {"url": receiver.url + "/hook"}})
    assert resp.status_code == 201, resp.text
    return resp.json()


def test_missed_run_webhook_within_2s_of_deadline_then_resolve(service, receiver):
    secret = _hook(service, receiver)["config"]["secret"]
    m = service.api.post("/monitors/", json={"name": "every3s", "kind": "interval",
                                             "period": 3, "grace": 1}).json()
    assert httpx.get(m["ping_url"]).text == "OK\n"
    last_ping = datetime.fromisoformat(
        service.api.get(f"/monitors/{m['id']}/").json()["last_ping_at"]).timestamp()
    deadline = last_ping + 3 + 1
    opened = receiver.wait_for(lambda r: r.json()["event"] == "incident.opened", timeout=10)
    assert opened.json()["incident"]["cause"] == "missed"
    assert opened.json()["monitor"]["uuid"] == m["uuid"]
    assert 0 <= opened.at - deadline < 2.0, opened.at - deadline
    expected = hmac.new(secret.encode(), opened.body, hashlib.sha256).hexdigest()
    assert opened.headers["X-CronRadar-Signature"] == f"sha256={expected}"
    assert service.api.get(f"/monitors/{m['id']}/").json()["status"] == "down"
    httpx.get(m["ping_url"])
    resolved = receiver.wait_for(lambda r: r.json()["event"] == "incident.resolved", timeout=5)
    assert resolved.json()["incident"]["dedup_key"] == opened.json()["incident"]["dedup_key"]
    assert len([r for r in receiver.requests if r.json()["event"] == "incident.opened"]) == 1


@pytest.mark.parametrize("steps,cause", [
    (["/fail"], "failed"),
    (["/start"], "stuck"),
    (["/start", "/start"], "overlap"),
])
def test_bad_runs_open_incident_with_cause_and_success_resolves(service, receiver, steps, cause):
    _hook(service, receiver)
    m = service.api.post("/monitors/", json={
        "name": "job", "period": 60, "grace": 10, "concurrency": "forbid",
        "max_runtime": 1 if cause == "stuck" else 30}).json()
    for step in steps:
        assert httpx.post(m["ping_url"] + step).status_code == 200
    opened = receiver.wait_for(lambda r: r.json()["event"] == "incident.opened", timeout=5)
    assert opened.json()["incident"]["cause"] == cause
    assert httpx.get(m["ping_url"] + "/0").status_code == 200
    receiver.wait_for(lambda r: r.json()["event"] == "incident.resolved", timeout=5)
    incidents = service.api.get("/incidents/").json()
    assert [(i["cause"], i["resolution"]) for i in incidents] == [(cause, "a run succeeded")]


def test_unknown_uuid_404_and_10mb_body_truncated(service):
    assert httpx.get(f"{service.url}/ping/00000000-0000-0000-0000-000000000000").status_code == 404
    m = service.api.post("/monitors/", json={"name": "big", "period": 60, "grace": 5}).json()
    resp = httpx.post(m["ping_url"], content=b"y" * (10 * 1024 * 1024), timeout=30)
    assert resp.status_code == 200
    [p] = service.api.get(f"/monitors/{m['id']}/pings/").json()
    assert (p["body_size"], p["body_truncated"], len(p["body"])) == (10485760, True, 102400)


def test_1000_concurrent_pings_all_stored(service):
    m = service.api.post("/monitors/", json={"name": "busy", "period": 60, "grace": 5}).json()

    async def blast():
        limits = httpx.Limits(max_connections=1000)
        async with httpx.AsyncClient(limits=limits, timeout=60) as c:
            return await asyncio.gather(*[
                c.post(m["ping_url"] + ("/start" if i % 2 else ""), content=f"ping {i}")
                for i in range(1000)])

    started = time.time()
    responses = asyncio.run(blast())
    assert [r.status_code for r in responses] == [200] * 1000, time.time() - started
    pings = service.api.get(f"/monitors/{m['id']}/pings/?limit=1000").json()
    assert len(pings) == 1000
    assert sorted(p["body"] for p in pings) == sorted(f"ping {i}" for i in range(1000))


def test_delivery_waiting_to_retry_survives_a_restart(tmp_path):
    from tests.live import free_port

    port = free_port()  # nothing listens here yet: the first attempt fails
    first = Service(tmp_path, extra_env={"CRONRADAR_DELIVERY_BACKOFF": "30"})
    try:
        first.api.post("/channels/", json={"kind": "webhook",
                                           "config": {"url": f"http://127.0.0.1:{port}/h"}})
        m = first.api.post("/monitors/", json={"name": "r", "period": 60, "grace": 5}).json()
        httpx.get(m["ping_url"] + "/fail")
        deadline = time.time() + 10
        while "attempt 1" not in first.output() and time.time() < deadline:
            time.sleep(0.1)
        assert "attempt 1" in first.output()
    finally:
        first.stop()  # its 30 s retry timer dies with it
    receiver = Receiver(port=port)
    second = Service(tmp_path)
    try:
        got = receiver.wait_for(lambda r: True, timeout=10)
        assert got.json()["incident"]["cause"] == "failed"
    finally:
        second.stop()
        receiver.close()
