"""`manage.py serve` argument checks, bind failures, the ping base URL, and (live)
the first account's setup token it prints under production.

Only the live test starts serving: a bad port is rejected before binding, and the
busy port test holds the port itself, so the command fails at bind time."""
import re
import resource
import socket
import subprocess
import sys
import time
from io import StringIO

import httpx
import pytest
from django.core.management import CommandError, call_command

from cronradar.management.commands.serve import (
    CONNECTIONS,
    PerClientCap,
    base_url,
    connection_limit,
)
from tests.live import ROOT, Service


@pytest.mark.parametrize("port", ["0", "65536", "99999", "-1"])
def test_port_out_of_range_is_an_argument_error(port):
    out = StringIO()
    with pytest.raises(CommandError) as exc:
        call_command("serve", "--port", port, stdout=out)
    assert str(exc.value) == f"Error: argument --port: port must be 1-65535, got {port}"
    assert out.getvalue() == ""


def test_port_not_a_number_is_an_argument_error():
    with pytest.raises(CommandError, match=r"^Error: argument --port: not a port number: 'http'$"):
        call_command("serve", "--port", "http")


def test_port_out_of_range_via_keyword_is_rejected_too():
    # call_command(port=...) bypasses argparse's type=; handle() checks again.
    with pytest.raises(CommandError, match=r"^port must be 1-65535, got 70000$"):
        call_command("serve", port=70000)


def test_port_out_of_range_on_the_command_line_exits_2_with_usage():
    proc = subprocess.run([sys.executable, "manage.py", "serve", "--port", "99999"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.startswith("usage: manage.py serve")
    assert proc.stderr.endswith(
        "manage.py serve: error: argument --port: port must be 1-65535, got 99999\n")


@pytest.fixture
def busy_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def test_busy_port_is_a_clean_command_error_before_listening(busy_port, settings, monkeypatch):
    monkeypatch.delenv("CRONRADAR_BASE_URL", raising=False)
    settings.CRONRADAR_BASE_URL = "http://default.invalid"  # an override, undone afterwards
    out = StringIO()
    with pytest.raises(CommandError) as exc:
        call_command("serve", "--port", str(busy_port), "--no-evaluator", stdout=out)
    assert str(exc.value) == f"port {busy_port} on 127.0.0.1 is already in use"
    assert out.getvalue() == ""  # nothing claims to be listening
    # without CRONRADAR_BASE_URL in the environment, ping URLs follow --host/--port
    ping_base = settings.CRONRADAR_BASE_URL
    assert ping_base == f"http://127.0.0.1:{busy_port}"


def test_base_url_from_environment_is_kept(busy_port, settings, monkeypatch):
    monkeypatch.setenv("CRONRADAR_BASE_URL", "https://cron.example.com")
    settings.CRONRADAR_BASE_URL = "https://cron.example.com"
    with pytest.raises(CommandError):
        call_command("serve", "--port", str(busy_port), "--no-evaluator", stdout=StringIO())
    assert settings.CRONRADAR_BASE_URL == "https://cron.example.com"


@pytest.mark.parametrize("host,port,url", [
    ("0.0.0.0", 9101, "http://127.0.0.1:9101"),
    ("", 9101, "http://127.0.0.1:9101"),
    ("127.0.0.1", 8000, "http://127.0.0.1:8000"),
    ("::1", 9101, "http://[::1]:9101"),
    ("::", 9101, "http://[::1]:9101"),
    ("cron.internal", 65535, "http://cron.internal:65535"),
])
def test_base_url(host, port, url):
    assert base_url(host, port) == url


def test_per_client_cap_refuses_a_host_holding_its_share():
    class Conn:
        closed = False

        def close(self):
            self.closed = True

    class Channel:
        def __init__(self, addr):
            self.addr = addr

    made = []
    cap = PerClientCap(lambda server, conn, addr, adj, map=None: made.append(addr) or addr, 2)
    server = type("Server", (), {"active_channels": {
        1: Channel(("10.0.0.1", 5000)), 2: Channel(("10.0.0.1", 5001)),
        3: Channel(("10.0.0.2", 5000))}})()
    refused = Conn()
    assert cap(server, refused, ("10.0.0.1", 5002), None) is None and refused.closed
    accepted = Conn()
    assert cap(server, accepted, ("10.0.0.2", 5001), None) == ("10.0.0.2", 5001)
    assert not accepted.closed and made == [("10.0.0.2", 5001)] and cap.refused == 1


def test_connection_limit_fits_the_open_file_limit():
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = connection_limit()
    soft_after, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert soft_after >= soft
    assert limit == min(CONNECTIONS, soft_after - 200)


@pytest.mark.live
def test_serve_and_migrate_print_the_same_setup_token_which_makes_the_first_account(
        tmp_path):
    service = Service(tmp_path, extra_env={
        "CRONRADAR_ENV": "production", "SECRET_KEY": "a-test-secret-" + "x" * 40,
        "ALLOWED_HOSTS": "127.0.0.1", "CRONRADAR_SECURE_COOKIES": "false"})
    try:
        line = re.compile(r"No account exists yet: open http://127\.0\.0\.1:\d+/ to create "
                          r"the first one, with the setup token (\S+)")
        served = line.findall(service.output())
        assert len(served) == 1
        assert line.findall(service.manage("migrate")) == served
        browser = httpx.Client(base_url=service.url, timeout=10)
        form = browser.get("/")
        assert "Create the first account" in form.text and 'name="token"' in form.text
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
        fields = {"csrfmiddlewaretoken": csrf, "email": "op@example.com",
                  "password": "a long pass phrase 9"}
        assert browser.post("/", data={**fields, "token": "guess"}).status_code == 400
        made = browser.post("/", data={**fields, "token": served[0]})
        assert (made.status_code, made.headers["location"]) == (302, "/welcome/")
        assert "Welcome to CronRadar" in browser.get("/welcome/").text
        assert line.findall(service.manage("migrate")) == []  # someone exists
    finally:
        service.stop()


def test_evaluator_loop_logs_a_database_outage_once_not_a_traceback_per_tick(
        monkeypatch, caplog):
    """120 ticks failing on an unreachable database, then one that works: one line
    saying so (no traceback), then one saying it is back; another error keeps its
    traceback."""
    import threading

    from django.db import OperationalError

    from core import logs
    from cronradar.management.commands import serve
    from monitors import liveness

    monkeypatch.setattr(logs, "database", logs.DatabaseDown())
    monkeypatch.setattr(liveness, "enabled", lambda: False)
    outcomes = [OperationalError("connection refused")] * 120 + [ZeroDivisionError("bug"), 0]
    stop = threading.Event()

    def tick(now):
        outcome = outcomes.pop(0)
        if not outcomes:
            stop.set()
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    monkeypatch.setattr(serve.evaluator, "tick", tick)
    monkeypatch.setattr(serve, "close_old_connections", lambda: None)
    serve.evaluator_loop(stop, 0)
    said = [(r.name, r.levelname, r.getMessage().split(" since ")[0].split(" after ")[0],
             bool(r.exc_info)) for r in caplog.records if r.name == "monitors.evaluator"]
    assert said == [("monitors.evaluator", "ERROR", "database unreachable", False),
                    ("monitors.evaluator", "ERROR", "evaluator tick failed", True),
                    ("monitors.evaluator", "INFO", "database reachable again", False)]
    assert "121 failed step(s)" not in caplog.text  # the ZeroDivisionError is no outage
    assert "(120 failed step(s) in this process)" in caplog.text


@pytest.mark.live
@pytest.mark.parametrize(("trust", "answers"), [
    ("false", {"127.0.0.1": 403, "8.8.8.8": 403}),
    ("true", {"8.8.8.8": 403, "127.0.0.1": 200, "10.0.0.1, 127.0.0.1": 200,
              "127.0.0.1, 8.8.8.8": 403, "garbage": 403}),
])
def test_serve_hands_proxy_headers_to_the_app_which_decides_metrics_access(
        tmp_path, trust, answers):
    """waitress drops X-Forwarded-For/Forwarded unless told a trusted proxy: the
    app then saw a proxied request as loopback's own. Under serve they reach it."""
    service = Service(tmp_path, extra_env={"CRONRADAR_TRUST_X_FORWARDED_FOR": trust})
    try:
        assert httpx.get(f"{service.url}/metrics", timeout=10).status_code == 200
        got = {xff: httpx.get(f"{service.url}/metrics", timeout=10,
                              headers={"X-Forwarded-For": xff}).status_code
               for xff in answers}
        assert got == answers
        if trust == "false":
            assert httpx.get(f"{service.url}/metrics", timeout=10, headers={
                "Forwarded": "for=127.0.0.1"}).status_code == 403
    finally:
        service.stop()


@pytest.mark.live
@pytest.mark.parametrize("redis", ["hangs", "refuses"])
def test_serve_answers_state_changing_pings_at_once_while_redis_hangs_or_refuses(
        tmp_path, redis):
    """The deliver nudge of a ping that opens or resolves an incident goes to
    Redis off the request thread: the ping answers at once, the deliveries are
    rows (beat sends them), and the process logs one line, no traceback."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    if redis == "hangs":
        listener.listen(64)  # the kernel accepts; nobody ever answers
    else:
        listener.close()  # nothing listens: refused
    service = Service(tmp_path, args=("--no-evaluator",), extra_env={
        "REDIS_URL": f"redis://127.0.0.1:{port}/0", "CRONRADAR_API_RATE": ""})
    try:
        hook = service.api.post("/channels/", json={
            "kind": "webhook", "name": "h", "config": {"url": "http://127.0.0.1:9/h"}}).json()
        m = service.api.post("/monitors/", json={"name": "job", "period": 60,
                                                 "grace": 5}).json()
        took = []
        for kind in ("/fail", "", "/fail"):  # opens, resolves, opens: a nudge each
            started = time.monotonic()
            answer = httpx.get(m["ping_url"] + kind, timeout=30)
            took.append(time.monotonic() - started)
            assert (answer.status_code, answer.text) == (200, "OK\n")
        assert max(took) < 1.0, took
        rows = service.api.get(f"/deliveries/?channel={hook['id']}").json()
        assert sorted(r["status"] for r in rows) == ["pending"] * 3
        end = time.monotonic() + 15
        while "broker unreachable" not in service.output() and time.monotonic() < end:
            time.sleep(0.1)
        time.sleep(6)  # a second failed nudge (a hung Redis answers nothing in 5 s)
        out = service.output()
        assert out.count("broker unreachable since") == 1, out
        assert "Traceback" not in out, out
    finally:
        service.stop()
        listener.close()
