"""`cronradar exec` against a live `manage.py serve` with real commands: success,
exit 3, killed by SIGTERM, passing signals on, the service down; and the same
file served at /cli/cronradar_exec.py runs on its own."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.live import ROOT, Service, free_port

pytestmark = pytest.mark.live
EXEC = ROOT / "sdk" / "python" / "cronradar_sdk" / "cronradar_exec.py"
WRAPPER = [sys.executable, str(EXEC), "exec"]


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    s = Service(tmp_path_factory.mktemp("exec"))
    yield s
    s.stop()


@pytest.fixture
def monitor(service, request):
    api = service.project_api(request.node.name[:90])
    m = api.post("/monitors/", json={"name": "job", "period": 3600, "grace": 60}).json()
    return api, m


def wrapped(url: str, *command: str, timeout: float = 10, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([*WRAPPER, "--url", url, "--timeout", str(timeout), "--", *command],
                          capture_output=True, timeout=60, **kw)


def pings(api, m) -> list[dict]:
    return list(reversed(api.get(f"/monitors/{m['id']}/pings/").json()))


def test_a_successful_job_is_a_start_and_a_zero_with_one_rid(monitor):
    api, m = monitor
    done = wrapped(m["ping_url"], "sh", "-c", "echo hello; echo oops >&2")
    assert (done.returncode, done.stdout, done.stderr) == (0, b"hello\n", b"oops\n")
    start, end = pings(api, m)
    assert (start["kind"], end["kind"], end["exit_status"]) == ("start", "success", 0)
    assert start["rid"] == end["rid"] and start["rid"]
    assert sorted(end["body"].splitlines()) == ["hello", "oops"]
    [run] = api.get(f"/monitors/{m['id']}/runs/").json()
    assert (run["outcome"], run["exit_status"]) == ("succeeded", 0)


def test_exit_3_is_reported_as_a_failure_with_the_output_tail(monitor):
    api, m = monitor
    script = "python3 -c \"print('x' * 200000)\"; echo 'disk full' >&2; exit 3"
    done = wrapped(m["ping_url"], "sh", "-c", script)
    assert done.returncode == 3
    end = pings(api, m)[-1]
    assert (end["kind"], end["exit_status"], end["body_size"]) == ("fail", 3, 102400)
    # the tail, within the body limit; stdout and stderr are two pipes read by two
    # threads, so the last line may come from either
    tail = end["body"][-20000:]
    assert "disk full\n" in tail and tail.rstrip("\n").endswith(("x", "disk full"))
    assert set(end["body"].replace("disk full\n", "")) == {"x", "\n"}
    assert api.get(f"/monitors/{m['id']}/").json()["status"] == "down"


def test_a_job_killed_by_sigterm_is_a_failure_143(monitor):
    api, m = monitor
    done = wrapped(m["ping_url"], "sh", "-c", "kill -TERM $$")
    assert done.returncode == 128 + signal.SIGTERM
    assert (pings(api, m)[-1]["kind"], pings(api, m)[-1]["exit_status"]) == ("fail", 143)


def test_sigterm_to_the_wrapper_reaches_the_job(monitor, tmp_path):
    api, m = monitor
    marker = tmp_path / "got-term"
    job = f"trap 'echo term > {marker}; exit 7' TERM; sleep 30 & wait"
    proc = subprocess.Popen([*WRAPPER, "--url", m["ping_url"], "--", "sh", "-c", job],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    end = time.time() + 10
    while not pings(api, m) and time.time() < end:  # started
        time.sleep(0.1)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(15) == 7
    assert marker.read_text() == "term\n"
    assert pings(api, m)[-1]["exit_status"] == 7


def test_sigterm_reaches_the_jobs_children_too(monitor, tmp_path):
    """A job that is a shell running a command: the command gets the signal as
    well (the whole process group), not left running on its own."""
    api, m = monitor
    pid_file = tmp_path / "pid"
    job = f"sleep 37.5 & echo $! > {pid_file}; wait"
    proc = subprocess.Popen([*WRAPPER, "--url", m["ping_url"], "--", "sh", "-c", job],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    end = time.time() + 10
    while not (pid_file.exists() and pid_file.read_text().strip()) and time.time() < end:
        time.sleep(0.1)
    sleeper = int(pid_file.read_text())
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(15) == 128 + signal.SIGTERM
    end = time.time() + 5
    while os.path.exists(f"/proc/{sleeper}") and time.time() < end:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{sleeper}")


def test_the_job_runs_and_keeps_its_status_when_cronradar_is_down(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/ping/3f1c7d3e-0000-4000-8000-000000000000"
    started = time.monotonic()
    done = wrapped(url, "sh", "-c", f"echo ran > {tmp_path / 'out'}; exit 5", timeout=1)
    assert done.returncode == 5
    assert (tmp_path / "out").read_text() == "ran\n"
    assert time.monotonic() - started < 8  # two pings of at most ~1 s each
    assert done.stderr.count(b"cronradar exec: gave up pinging after 1s") == 2


def test_a_command_that_is_not_there_is_127(monitor):
    api, m = monitor
    done = wrapped(m["ping_url"], "no-such-command-here")
    assert done.returncode == 127
    end = pings(api, m)[-1]
    assert (end["exit_status"], end["body"]) == (
        127, "cronradar exec: no-such-command-here: command not found\n")


def test_key_and_slug_with_cronradar_url(service, request):
    api = service.project_api(request.node.name[:90])
    m = api.post("/monitors/", json={"name": "by slug", "period": 3600, "grace": 60}).json()
    key = api.get("/projects/").json()[0]["ping_key"]
    env = {**os.environ, "CRONRADAR_URL": service.url}
    done = subprocess.run([*WRAPPER, f"--key={key}", "--slug", m["slug"], "--", "true"],
                          capture_output=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    assert [p["kind"] for p in pings(api, m)] == ["start", "success"]


def test_the_served_file_runs_on_its_own(service, monitor, tmp_path):
    api, m = monitor
    got = httpx.get(f"{service.url}/cli/cronradar_exec.py")
    assert got.status_code == 200 and got.headers["content-type"].startswith("text/x-python")
    assert got.content == EXEC.read_bytes()
    alone = Path(tmp_path / "cronradar_exec.py")
    alone.write_bytes(got.content)
    # -I: isolated, nothing of CronRadar's tree or virtualenv on the path
    done = subprocess.run(["/usr/bin/env", "-i", "PATH=/usr/bin:/bin", sys.executable, "-I",
                           str(alone), "exec", "--url", m["ping_url"], "--", "true"],
                          capture_output=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [p["kind"] for p in pings(api, m)] == ["start", "success"]


def test_the_installed_console_script(monitor):
    api, m = monitor
    script = Path(sys.executable).parent / "cronradar"  # pip install puts it beside python
    done = subprocess.run([str(script), "exec", "--url", m["ping_url"], "--", "sh", "-c",
                           "exit 4"], capture_output=True, timeout=60)
    assert done.returncode == 4, done.stderr
    assert [(p["kind"], p["exit_status"]) for p in pings(api, m)] == [("start", None),
                                                                      ("fail", 4)]


@pytest.mark.parametrize("url", ["not a url", "http://[::1", "127.0.0.1:8000/ping/x",
                                 "ftp://example.com/ping/x", "file:///etc/passwd",
                                 "http://h:99999/ping/x", "http://h/ping/ü",
                                 "http://h/ping/x\ty"])
def test_a_bad_url_never_costs_the_job(url, tmp_path):
    started = time.monotonic()
    done = wrapped(url, "sh", "-c", f"echo ran > {tmp_path / 'out'}; exit 6")
    assert done.returncode == 6 and (tmp_path / "out").read_text() == "ran\n"
    assert done.stderr.startswith(b"cronradar exec: not pinging, ")
    assert time.monotonic() - started < 5  # no retrying what cannot work


def test_a_huge_url_never_costs_the_job_and_is_shown_cut(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/ping/{'x' * 100000}"
    done = wrapped(url, "sh", "-c", f"echo ran > {tmp_path / 'out'}; exit 6", timeout=0.5)
    assert done.returncode == 6 and (tmp_path / "out").read_text() == "ran\n"
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 2 and all(line.startswith("cronradar exec: gave up pinging after 0.5s")
                                   and line.endswith("x…") and len(line) < 500 for line in lines)


def test_slot_goes_with_both_pings(service, request):
    from datetime import UTC, datetime

    api = service.project_api(request.node.name[:90])
    m = api.post("/monitors/", json={"name": "minutely", "kind": "cron",
                                     "schedule": "* * * * *", "grace": 600}).json()
    slot = datetime.fromtimestamp(time.time() // 60 * 60 - 60, UTC)  # a minute ago
    done = subprocess.run([*WRAPPER, "--url", m["ping_url"], "--slot",
                           slot.isoformat(), "--", "sh", "-c", "exit 2"],
                          capture_output=True, timeout=60)
    assert (done.returncode, done.stderr) == (2, b"")
    [run] = api.get(f"/monitors/{m['id']}/runs/").json()
    assert (run["slot_at"], run["outcome"], run["exit_status"]) == (
        slot.isoformat().replace("+00:00", "Z"), "failed", 2)


def test_a_slot_cronradar_refuses_is_reported_and_the_job_runs(monitor, tmp_path):
    api, m = monitor  # an interval monitor: no fire times to name
    done = subprocess.run([*WRAPPER, "--url", m["ping_url"], "--slot", "1767614400", "--",
                           "sh", "-c", f"echo ran > {tmp_path / 'out'}; exit 0"],
                          capture_output=True, timeout=60)
    assert done.returncode == 0 and (tmp_path / "out").read_text() == "ran\n"
    assert done.stderr.count(
        b"cronradar exec: ping refused (HTTP 400: slot: an interval monitor has no fire "
        b"times to name; leave slot out; nothing was stored)") == 2
    assert pings(api, m) == []


def exec_env(**env) -> dict:
    """The environment without the SDK's settings, plus ``env``."""
    return {**{k: v for k, v in os.environ.items()
               if k not in ("CRONRADAR_URL", "CRONRADAR_PING_KEY", "CRONRADAR_PING_URL")}, **env}


def test_cronradar_ping_url_is_the_default_url(monitor):
    api, m = monitor
    done = subprocess.run([*WRAPPER, "--", "true"], capture_output=True, timeout=60,
                          env=exec_env(CRONRADAR_PING_URL=m["ping_url"]))
    assert (done.returncode, done.stderr) == (0, b"")
    assert [p["kind"] for p in pings(api, m)] == ["start", "success"]


def test_url_overrides_cronradar_ping_url(monitor):
    api, m = monitor
    down = f"http://127.0.0.1:{free_port()}/ping/3f1c7d3e-0000-4000-8000-000000000000"
    done = subprocess.run([*WRAPPER, "--url", m["ping_url"], "--", "true"],
                          capture_output=True, timeout=60, env=exec_env(CRONRADAR_PING_URL=down))
    assert (done.returncode, done.stderr) == (0, b"")
    assert [p["kind"] for p in pings(api, m)] == ["start", "success"]


def test_no_output_sends_none_of_it_and_still_passes_it_through(monitor):
    api, m = monitor
    done = subprocess.run([*WRAPPER, "--url", m["ping_url"], "--no-output", "--", "sh", "-c",
                           "echo password=hunter2; echo oops >&2; exit 1"],
                          capture_output=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (1, b"password=hunter2\n", b"oops\n")
    assert [(p["kind"], p["exit_status"], p["body"], p["body_size"]) for p in pings(api, m)] == [
        ("start", None, "", 0), ("fail", 1, "", 0)]


def created(service, request, *flags: str, key_flag: bool = True):
    """Run ``exec --slug <new> --create flags... -- true`` by ping key; (api, the
    monitor it made, the result)."""
    api = service.project_api(request.node.name[:90])
    key = api.get("/projects/").json()[0]["ping_key"]
    slug = "made-by-exec"
    env = exec_env(CRONRADAR_URL=service.url, **({} if key_flag else
                                                  {"CRONRADAR_PING_KEY": key}))
    done = subprocess.run([*WRAPPER, *([f"--key={key}"] if key_flag else []), "--slug", slug,
                           "--create", *flags, "--", "true"],
                          capture_output=True, timeout=60, env=env)
    found = api.get(f"/monitors/by-slug/{slug}/")
    return api, (found.json() if found.status_code == 200 else None), done


def test_create_with_a_schedule_makes_a_cron_monitor(service, request):
    api, m, done = created(service, request, "--schedule", "0 3 * * *", "--tz",
                           "Europe/Berlin", "--grace", "900")
    assert (done.returncode, done.stderr) == (0, b"")
    assert (m["name"], m["kind"], m["schedule"], m["timezone"], m["grace"]) == (
        "made-by-exec", "cron", "0 3 * * *", "Europe/Berlin", 900)
    assert [p["kind"] for p in pings(api, m)] == ["start", "success"]
    [run] = api.get(f"/monitors/{m['id']}/runs/").json()
    assert run["outcome"] == "succeeded"


def test_create_alone_is_an_interval_monitor_of_a_day_with_the_key_from_the_environment(
        service, request):
    api, m, done = created(service, request, key_flag=False)
    assert (done.returncode, done.stderr) == (0, b"")
    assert (m["kind"], m["period"], m["grace"]) == ("interval", 86400, 3600)
    assert [p["kind"] for p in pings(api, m)] == ["start", "success"]


def test_a_schedule_cronradar_refuses_is_reported_and_the_job_runs(service, request):
    api, m, done = created(service, request, "--schedule", "61 * * * *")
    assert done.returncode == 0 and m is None
    assert done.stderr.count(b"cronradar exec: ping refused (HTTP 400: ") == 2


@pytest.mark.parametrize(("args", "env", "message"), [
    ([], {}, b"give --url, --key with --slug, or set CRONRADAR_PING_URL"),
    (["--key", "k"], {}, b"--key needs --slug"),
    (["--slug", "s"], {}, b"--slug needs --key or CRONRADAR_PING_KEY"),
    (["--url", "http://x/ping/u", "--schedule", "0 3 * * *"], {},
     b"--schedule, --tz and --grace go with --create"),
    (["--url", "http://x/ping/u", "--tz", "UTC"], {},
     b"--schedule, --tz and --grace go with --create"),
    (["--url", "http://x/ping/u", "--create", "--schedule", "0 3 * * *"], {},
     b"--create goes with --key/--slug (a --url's monitor exists already)"),
    (["--create"], {"CRONRADAR_PING_URL": "http://x/ping/u"},
     b"--create goes with --key/--slug (a --url's monitor exists already)"),
    (["--slug", "s", "--create", "--grace", "0"], {"CRONRADAR_PING_KEY": "k"},
     b"--grace must be at least 1 (seconds)"),
])
def test_usage_errors_run_nothing(args, env, message, tmp_path):
    done = subprocess.run([*WRAPPER, *args, "--", "sh", "-c", f"touch {tmp_path / 'ran'}"],
                          capture_output=True, timeout=60, env=exec_env(**env))
    assert done.returncode == 2
    assert done.stderr.rstrip().endswith(b"error: " + message), done.stderr
    assert not (tmp_path / "ran").exists()
