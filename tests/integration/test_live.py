"""The whole path on a real running service: curl-style pings in, alerts out to a
real local HTTP receiver. These start `manage.py serve` (embedded default): one
shared by the tests that leave it running (each in a project of its own), and
their own for the tests that stop, kill or restart it. Marked ``live``."""
import asyncio
import contextlib
import hashlib
import hmac
import resource
import socket
import threading
import time
from datetime import UTC, datetime

import httpx
import pytest

from tests.live import Receiver, Service

pytestmark = pytest.mark.live


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """One running service for the tests that do not stop or restart it."""
    s = Service(tmp_path_factory.mktemp("serve"))
    yield s
    s.stop()


@pytest.fixture
def api(service, request):
    """The shared service's API as a project of this test's own."""
    return service.project_api(request.node.name[:90])


def _hook(api, receiver):
    resp = api.post("/channels/", json={
        "kind": "webhook", "name": "recv", "config": {"url": receiver.url + "/hook"}})
    assert resp.status_code == 201, resp.text
    return resp.json()


def test_missed_run_webhook_within_2s_of_deadline_then_resolve(api, receiver):
    secret = _hook(api, receiver)["config"]["secret"]
    m = api.post("/monitors/", json={"name": "every3s", "kind": "interval",
                                             "period": 3, "grace": 1}).json()
    assert httpx.get(m["ping_url"]).text == "OK\n"
    last_ping = datetime.fromisoformat(
        api.get(f"/monitors/{m['id']}/").json()["last_ping_at"]).timestamp()
    deadline = last_ping + 3 + 1
    opened = receiver.wait_for(lambda r: r.json()["event"] == "incident.opened", timeout=10)
    assert opened.json()["incident"]["cause"] == "missed"
    assert opened.json()["monitor"]["uuid"] == m["uuid"]
    assert 0 <= opened.at - deadline < 2.0, opened.at - deadline
    expected = hmac.new(secret.encode(), opened.body, hashlib.sha256).hexdigest()
    assert opened.headers["X-CronRadar-Signature"] == f"sha256={expected}"
    assert api.get(f"/monitors/{m['id']}/").json()["status"] == "down"
    httpx.get(m["ping_url"])
    resolved = receiver.wait_for(lambda r: r.json()["event"] == "incident.resolved", timeout=5)
    assert resolved.json()["incident"]["dedup_key"] == opened.json()["incident"]["dedup_key"]
    assert len([r for r in receiver.requests if r.json()["event"] == "incident.opened"]) == 1


@pytest.mark.parametrize("steps,cause", [
    (["/fail"], "failed"),
    (["/start"], "stuck"),
    (["/start", "/start"], "overlap"),
])
def test_bad_runs_open_incident_with_cause_and_success_resolves(api, receiver, steps, cause):
    _hook(api, receiver)
    m = api.post("/monitors/", json={
        "name": "job", "period": 60, "grace": 10, "concurrency": "forbid",
        "max_runtime": 1 if cause == "stuck" else 30}).json()
    for step in steps:
        assert httpx.post(m["ping_url"] + step).status_code == 200
    opened = receiver.wait_for(lambda r: r.json()["event"] == "incident.opened", timeout=5)
    assert opened.json()["incident"]["cause"] == cause
    assert httpx.get(m["ping_url"] + "/0").status_code == 200
    receiver.wait_for(lambda r: r.json()["event"] == "incident.resolved", timeout=5)
    incidents = api.get("/incidents/").json()
    assert [(i["cause"], i["resolution"]) for i in incidents] == [(cause, "a run succeeded")]


def test_unknown_uuid_404_and_10mb_body_truncated(service, api):
    assert httpx.get(f"{service.url}/ping/00000000-0000-0000-0000-000000000000").status_code == 404
    m = api.post("/monitors/", json={"name": "big", "period": 60, "grace": 5}).json()
    resp = httpx.post(m["ping_url"], content=b"y" * (10 * 1024 * 1024), timeout=30)
    assert resp.status_code == 200
    [p] = api.get(f"/monitors/{m['id']}/pings/").json()
    assert (p["body_size"], p["body_truncated"], len(p["body"])) == (10485760, True, 102400)


@pytest.fixture
def keeps_1000(tmp_path):
    """The API of a service of its own that keeps 1,000 pings a monitor and runs a
    retention step every second. The shared service keeps the default 100, and its
    step (every 60 s) pruned 900 of the burst's pings whenever it fell between the
    burst and the listing (a loaded machine)."""
    s = Service(tmp_path, extra_env={"CRONRADAR_KEEP_PINGS": "1000",
                                     "CRONRADAR_PRUNE_INTERVAL": "1"})
    yield s.api
    s.stop()


def test_a_chunked_api_body_is_read_by_serve(api):
    """``curl -T -`` style: Transfer-Encoding chunked, no Content-Length; waitress
    de-chunks it and the API reads it (core.edge), not an empty body's 400."""
    made = api.post("/monitors/", headers={"Content-Type": "application/json"},
                    content=iter([b'{"name": "chunked", ', b'"period": 60, "grace": 5}']))
    assert made.request.headers.get("Transfer-Encoding") == "chunked"
    assert "Content-Length" not in made.request.headers
    assert made.status_code == 201, made.text
    assert made.json()["name"] == "chunked"


def test_1000_concurrent_pings_all_stored(keeps_1000):
    """1,000 pings at once: each answered 200 and each stored, with retention
    running during the burst and after it."""
    api = keeps_1000
    m = api.post("/monitors/", json={"name": "busy", "period": 60, "grace": 5}).json()

    async def blast():
        limits = httpx.Limits(max_connections=1000)
        async with httpx.AsyncClient(limits=limits, timeout=60) as c:
            return await asyncio.gather(*[
                c.post(m["ping_url"] + ("/start" if i % 2 else ""), content=f"ping {i}")
                for i in range(1000)])

    started = time.time()
    responses = asyncio.run(blast())
    assert [r.status_code for r in responses] == [200] * 1000, time.time() - started
    pings = api.get(f"/monitors/{m['id']}/pings/?limit=1000").json()
    assert len(pings) == 1000
    assert sorted(p["body"] for p in pings) == sorted(f"ping {i}" for i in range(1000))
    time.sleep(1.5)  # a retention step after the burst, too: it keeps all 1,000
    assert len(api.get(f"/monitors/{m['id']}/pings/?limit=1000").json()) == 1000


def test_a_delivery_cut_off_by_a_crash_is_sent_again_within_seconds(tmp_path):
    """The service is killed while a notification is on the wire: after the restart
    it is sent again once, within seconds (its claim expires after twice the HTTP
    timeout plus 2 s), with the same event_id."""
    release = threading.Event()
    receiver = Receiver(hold=release)
    env = {"CRONRADAR_DELIVERY_TIMEOUT": "2"}  # a claim then lasts 6 s
    first = Service(tmp_path, extra_env=env)
    try:
        _hook(first.api, receiver)
        m = first.api.post("/monitors/", json={"name": "r", "period": 60, "grace": 5}).json()
        httpx.get(m["ping_url"] + "/fail")
        cut = receiver.wait_for(lambda r: True, timeout=10)
    finally:
        first.kill()  # mid-send: the outcome is never written
        release.set()
    second = Service(tmp_path, extra_env=env)
    try:
        again = receiver.wait_for(lambda r: r is not cut, timeout=15)
        assert again.at - cut.at < 10
        assert again.json()["event_id"] == cut.json()["event_id"]
        time.sleep(3)
        assert len(receiver.requests) == 2  # once more, not again and again
        [incident] = second.api.get("/incidents/").json()
        [notification] = incident["events"][0]["deliveries"]
        assert (notification["status"], notification["attempts"]) == ("delivered", 1)
    finally:
        second.stop()
        receiver.close()


def test_half_sent_requests_from_one_host_do_not_block_other_pings(service, api):
    """1,100 connections from one host, each stalled 3 bytes into its body: other
    clients' pings are answered at once, and the stalled ones are dropped after
    serve's 10 s idle timeout."""
    m = api.post("/monitors/", json={"name": "j", "period": 60, "grace": 5}).json()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
    head = (f"POST /ping/{m['uuid']} HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc"
            .encode())
    slow = []
    try:
        for _ in range(1100):
            sock = socket.socket()
            sock.bind(("127.0.0.2", 0))  # another host, as far as the server can tell
            sock.connect(("127.0.0.1", service.port))
            sock.sendall(head)
            slow.append(sock)
        # connect() returns once the kernel has queued a connection; the server
        # accepts the 1,100 afterwards (0.5-1 s on a 2-core machine), and a first
        # ping waits in that queue: answered, but not yet what is timed
        assert httpx.get(m["ping_url"], timeout=5).status_code == 200
        started = time.time()
        assert httpx.get(m["ping_url"], timeout=5).status_code == 200
        assert time.time() - started < 1.0
        slow[0].settimeout(15)
        assert slow[0].recv(100) == b""  # closed by the server, not answered
        assert time.time() - started < 13
    finally:
        for sock in slow:
            sock.close()
    pings = api.get(f"/monitors/{m['id']}/pings/").json()
    assert [p["remote_addr"] for p in pings] == ["127.0.0.1"] * 2  # half-sent: nothing stored


def test_cronradar_down_15s_is_one_outage_summary_not_an_alert_storm(tmp_path, receiver):
    """Two 5 s monitors (grace 2) whose jobs keep pinging while the service is
    stopped for 15 s: after the restart no monitor alerts; the project's channel
    gets one outage.summary counting the slots that fell into the outage."""
    first = Service(tmp_path)
    _hook(first.api, receiver)
    monitors = [first.api.post("/monitors/", json={"name": f"m{i}", "period": 5,
                                                   "grace": 2}).json() for i in range(2)]
    stop = threading.Event()

    def job(url):  # a crontab line: ping every 5 s, whether or not anyone answers
        while not stop.is_set():
            with contextlib.suppress(httpx.HTTPError):
                httpx.get(url, timeout=2)
            stop.wait(5)

    jobs = [threading.Thread(target=job, args=(m["ping_url"],), daemon=True) for m in monitors]
    for t in jobs:
        t.start()
    time.sleep(2)
    first.stop()
    time.sleep(15)
    second = Service(tmp_path, port=first.port)  # the jobs' ping URLs
    try:
        summary = receiver.wait_for(lambda r: r.json()["event"] == "outage.summary", timeout=40)
        time.sleep(3)
        runs = [second.api.get(f"/monitors/{m['id']}/runs/").json() for m in monitors]
    finally:
        stop.set()
        second.stop()
    assert [r.json()["event"] for r in receiver.requests] == ["outage.summary"], [
        (r.at, r.json()) for r in receiver.requests]
    outage = summary.json()["outage"]
    assert outage["unknown_slots"] >= 4  # >= 2 slots of each monitor fell into it
    down = (datetime.fromisoformat(outage["ended_at"])
            - datetime.fromisoformat(outage["started_at"])).total_seconds()
    assert 15 <= down < 25
    for monitor_runs in runs:  # pings got through again: the slots after it succeeded
        assert monitor_runs[0]["outcome"] == "succeeded"
        assert {r["outcome"] for r in monitor_runs} == {"succeeded", "unknown"}


def test_a_two_tier_policy_end_to_end(api, receiver):
    """tier 1 at once, tier 2 three seconds later, acknowledged and resolved through
    the API: each receiver gets what it should, in order, once."""
    second = Receiver()
    try:
        one = _hook(api, receiver)["id"]
        two = api.post("/channels/", json={"kind": "webhook",
                                           "config": {"url": second.url + "/hook"}}).json()["id"]
        policy = api.post("/escalation-policies/", json={"name": "p", "tiers": [
            {"delay": 0, "channels": [one]}, {"delay": 3, "channels": [two]}]}).json()
        m = api.post("/monitors/", json={"name": "esc", "period": 60, "grace": 5,
                                         "escalation_policy": policy["id"]}).json()
        httpx.get(m["ping_url"] + "/fail")
        opened = receiver.wait_for(lambda r: r.json()["event"] == "incident.opened", timeout=5)
        escalated = second.wait_for(lambda r: r.json()["event"] == "incident.escalated",
                                    timeout=10)
        assert 2.5 <= escalated.at - opened.at < 5
        incident = opened.json()["incident"]["id"]
        assert api.post(f"/incidents/{incident}/ack/", json={"by": "ana"}).status_code == 200
        for r in (receiver, second):
            r.wait_for(lambda x: x.json()["event"] == "incident.acknowledged", timeout=5)
        assert api.post(f"/incidents/{incident}/resolve/").status_code == 200
        for r in (receiver, second):
            r.wait_for(lambda x: x.json()["event"] == "incident.resolved", timeout=5)
        time.sleep(4)  # nothing more comes: acknowledged stops the escalation
        assert [r.json()["event"] for r in receiver.requests] == [
            "incident.opened", "incident.acknowledged", "incident.resolved"]
        assert [r.json()["event"] for r in second.requests] == [
            "incident.escalated", "incident.acknowledged", "incident.resolved"]
    finally:
        second.close()


TG_TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"


def test_a_notification_of_each_kind_links_the_dashboard_and_carries_the_body_tail(
        service, api, receiver):
    """A real failure on `serve` notifies a channel of every kind at a local
    receiver: each links the incident's and the monitor's dashboard pages (no API
    URL but in the webhook body) and carries the last ping body's marked tail; the
    webhook verifies by Standard Webhooks' algorithm; the email (on the console)
    links both pages."""
    from tests.helpers import spec_verify

    configs = {
        "webhook": {"url": f"{receiver.url}/hook"},
        "slack": {"url": f"{receiver.url}/slack"},
        "teams": {"url": f"{receiver.url}/teams"},
        "discord": {"url": f"{receiver.url}/discord"},
        "ntfy": {"url": f"{receiver.url}/ntfy/ops"},
        "opsgenie": {"api_key": "K", "api_url": f"{receiver.url}/og"},
        "pagerduty": {"routing_key": "R", "events_url": f"{receiver.url}/pd/v2/enqueue"},
        "email": {"to": ["ops@example.com"]},
        "telegram": {"bot_token": TG_TOKEN, "chat_id": "-100123", "api_url": f"{receiver.url}/tg"},
        "googlechat": {"url": f"{receiver.url}/v1/spaces/A/messages?key=k&token=t"},
        "mattermost": {"url": f"{receiver.url}/hooks/mm"},
    }
    made = {}
    for kind, config in configs.items():
        resp = api.post("/channels/", json={"kind": kind, "name": kind, "config": config})
        assert resp.status_code == 201, resp.text
        made[kind] = resp.json()
    m = api.post("/monitors/", json={"name": "backup", "kind": "interval", "period": 3600,
                                     "grace": 60}).json()
    body = "x" * 650 + "disk full at /var"
    assert httpx.post(m["ping_url"] + "/fail", content=body.encode()).status_code == 200
    paths = {"/hook": "webhook", "/slack": "slack", "/teams": "teams",
             "/discord?wait=true": "discord", "/ntfy/": "ntfy", "/og/v2/alerts": "opsgenie",
             "/pd/v2/enqueue": "pagerduty", f"/tg/bot{TG_TOKEN}/sendMessage": "telegram",
             "/v1/spaces/A/messages?key=k&token=t"
             "&messageReplyOption=REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD": "googlechat",
             "/hooks/mm": "mattermost"}
    for path in paths:
        receiver.wait_for(lambda r, path=path: r.path == path, timeout=15)
    got = {paths[r.path]: r for r in receiver.requests if r.path in paths}
    hook = got["webhook"]
    incident = hook.json()["incident"]["id"]
    pages = [f"{service.url}/incidents/{incident}/", f"{service.url}/monitors/{m['id']}/"]
    tail = "…" + body[-499:]
    for kind, r in got.items():
        text = r.body.decode()
        assert all(page in text for page in pages), kind
        assert tail in text, kind
        assert ("/api/v1/" in text) == (kind == "webhook"), kind
    assert hook.json()["context"]["links"]["incident"] == (
        f"{service.url}/api/v1/incidents/{incident}/")
    assert hook.headers["webhook-id"] == str(hook.json()["event_id"])
    signed = spec_verify(made["webhook"]["config"]["signing_secret"], hook.headers, hook.body,
                         datetime.fromtimestamp(hook.at, tz=UTC))
    assert signed["incident"]["id"] == incident
    end = time.time() + 10
    while time.time() < end and pages[0] not in service.output():
        time.sleep(0.1)
    mail = service.output()
    assert "To: ops@example.com" in mail and pages[0] in mail and pages[1] in mail


def test_a_channel_answering_500_is_announced_once_and_its_recovery_once(tmp_path, receiver):
    """A webhook answering 500 for longer than CRONRADAR_CHANNEL_FAILING_AFTER (2 s
    here): the project's other channel gets one channel.failing, and once the broken
    receiver answers 200 again (its retry releases the backlog) one channel.recovered."""
    broken = Receiver(status=500)
    service = Service(tmp_path, extra_env={"CRONRADAR_CHANNEL_FAILING_AFTER": "2"})
    try:
        bad = service.api.post("/channels/", json={
            "kind": "webhook", "name": "broken", "config": {"url": broken.url + "/hook"}}).json()
        _hook(service.api, receiver)
        m = service.api.post("/monitors/", json={"name": "job", "period": 60,
                                                 "grace": 5}).json()
        httpx.get(m["ping_url"] + "/fail")
        failing = receiver.wait_for(lambda r: r.json()["event"] == "channel.failing",
                                    timeout=15)
        assert failing.headers["X-CronRadar-Event"] == "channel.failing"
        channel = failing.json()["channel"]
        assert (channel["id"], channel["name"], channel["kind"], channel["held"]) == (
            bad["id"], "broken", "webhook", 1)
        assert channel["last_error"] == "HTTP 500: ok"
        assert failing.json()["links"] == {"channel_page": f"{service.url}/channels/{bad['id']}/"}
        assert httpx.get(failing.json()["links"]["channel_page"]).status_code in (200, 302)
        broken.status = 200
        recovered = receiver.wait_for(lambda r: r.json()["event"] == "channel.recovered",
                                      timeout=20)
        assert recovered.json()["channel"]["failing_since"] == channel["failing_since"]
        time.sleep(3)  # nothing more comes
        assert [r.json()["event"] for r in receiver.requests] == [
            "incident.opened", "channel.failing", "channel.recovered"]
        assert broken.requests[-1].status == 200
        assert broken.requests[-1].json()["event"] == "incident.opened"
    finally:
        service.stop()
        broken.close()
