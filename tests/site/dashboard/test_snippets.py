"""The monitor page's snippets (cronradar.dashboard.snippets)."""
import re
import shutil
import sys
from pathlib import Path

import pytest

from tests.conftest import S
from tests.live import Receiver

pytestmark = pytest.mark.django_db


def _m(**kw):
    from types import SimpleNamespace

    base = {"kind": "cron", "schedule": "0 3 * * *", "timezone": "UTC", "period": None,
            "grace": 300 * S, "max_runtime": None, "deadline": None, "concurrency": "allow",
            "max_attempts": 1, "slug": "nightly-backup", "methods": ""}
    return SimpleNamespace(**{**base, **kw})


URL = "https://cr.example/ping/UUID"


def test_the_cronjob_exits_with_the_jobs_status_and_has_the_monitors_limits():
    from cronradar.dashboard.snippets import cronjob

    text_ = cronjob(_m(timezone="Europe/Berlin", concurrency="forbid", max_attempts=3,
                       max_runtime=900 * S, deadline=4200 * S, grace=600 * S,
                       slug="Nightly_Backup.v2"), URL)
    assert "metadata: {name: nightly-backup-v2}" in text_
    assert '  schedule: "0 3 * * *"\n  timeZone: Europe/Berlin\n' in text_
    assert "  concurrencyPolicy: Forbid\n  startingDeadlineSeconds: 600\n" in text_
    assert "      activeDeadlineSeconds: 3600\n      backoffLimit: 2\n" in text_
    assert ('                  /path/to/job; code=$?\n'
            '                  curl -fsS -m 10 --retry 5 -o /dev/null "$PING/$code?rid=$RID"\n'
            '                  exit $code\n') in text_
    plain = cronjob(_m(concurrency="replace", slug="x" * 80, max_runtime=600 * S), URL)
    assert "timeZone" not in plain and "activeDeadlineSeconds" not in plain
    assert "concurrencyPolicy: Replace" in plain and "backoffLimit: 0" in plain
    assert f"metadata: {{name: {'x' * 52}}}" in plain
    import yaml

    doc = yaml.safe_load(text_)
    assert doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0][
        "args"][0].rstrip().endswith("exit $code")


@pytest.mark.parametrize("grace, deadline, active", [
    (600, 4200, 3600),  # activeDeadlineSeconds counts from the start, up to 600 s late
    (5, 70, 60),  # startingDeadlineSeconds is at least 10
    (300, 300, None), (300, None, None)])
def test_the_cronjobs_active_deadline_is_the_monitors_deadline_less_the_start(
        grace, deadline, active):
    """activeDeadlineSeconds is written from the monitor's deadline (not its per-attempt
    max_runtime), and importk8s reads the snippet back to the same deadline."""
    import yaml

    from cronradar.dashboard.snippets import cronjob
    from monitors.imports import k8s

    m = _m(grace=grace * S, deadline=deadline and deadline * S, max_runtime=30 * S,
           max_attempts=3)
    text_ = cronjob(m, URL)
    assert yaml.safe_load(text_)["spec"]["jobTemplate"]["spec"].get(
        "activeDeadlineSeconds") == active
    [spec] = k8s.parse_k8s(text_).specs
    assert spec.values().get("deadline") == (active and deadline * S)


def test_a_cronjob_snippet_run_by_sh_exits_with_the_jobs_status(tmp_path):
    """The container's script, run by sh with curl failing: the job's status wins."""
    import subprocess

    from cronradar.dashboard.snippets import cronjob

    script = cronjob(_m(), URL).split("- |\n")[1]
    script = "\n".join(line.strip() for line in script.splitlines())
    script = script.replace("/path/to/job", "sh -c 'exit 7'").replace("curl ", "false ")
    assert subprocess.run(["sh", "-c", script]).returncode == 7


@pytest.mark.parametrize("seconds, line", [
    (60, "* * * * *"), (300, "*/5 * * * *"), (900, "*/15 * * * *"), (3600, "0 * * * *"),
    (7200, "0 */2 * * *"), (21600, "0 */6 * * *"), (86400, "0 0 * * *"),
    (420, None), (90, None), (5 * 3600, None), (2 * 86400, None), (30, None)])
def test_interval_snippets_claim_a_cron_line_only_when_it_is_exact(seconds, line):
    from cronradar.dashboard.snippets import cron_for_period, crontab

    assert cron_for_period(seconds) == line
    text_ = crontab(_m(kind="interval", schedule="", period=seconds * S), URL)
    if line:
        assert text_.startswith(line + "  RID=")
    else:
        assert text_.startswith("# SCHEDULE is a placeholder") and "\nSCHEDULE  RID=" in text_
        assert "*/5" not in text_


def test_zoned_cron_lines_get_cron_tz_and_systemd_handles_signals():
    from cronradar.dashboard.snippets import cronradar_exec, crontab, systemd

    zoned = _m(timezone="America/New_York")
    assert "\nCRON_TZ=America/New_York\n0 3 * * *  RID=" in crontab(zoned, URL)
    assert "Vixie cron and cronie honour it" in crontab(zoned, URL)
    assert cronradar_exec(zoned, URL).endswith(
        "CRON_TZ=America/New_York\n0 3 * * *  cronradar exec --url " + URL + " -- "
        "/path/to/job.sh")
    assert "CRON_TZ" not in crontab(_m(), URL)
    assert ('\nExecStopPost=-/bin/sh -c \'if [ "$$EXIT_CODE" = exited ]; then '
            's=$$EXIT_STATUS; else s=fail; fi; curl -fsS -m 10 --retry 5 -o /dev/null '
            '"$$PING/$$s"\'\n') in systemd(_m(), URL)
    assert f"Environment=PING={URL}\nExecStartPre=-/usr/bin/curl" in systemd(_m(), URL)


def test_a_post_only_monitors_shell_snippets_ping_with_post():
    """A monitor whose ``methods`` is "POST" answers GET with 405: every ping of its
    snippets is a POST (curl's --data-binary is one already; cronradar exec and the
    code snippets always POST)."""
    from cronradar.dashboard.snippets import all_snippets

    post = "curl -fsS -m 10 --retry 5 -o /dev/null -X POST"
    shown = all_snippets(_m(methods="POST"), URL)
    assert shown["crontab"] == (
        f'0 3 * * *  RID=$(cat /proc/sys/kernel/random/uuid); {post} "{URL}/start?rid=$RID"; '
        '/path/to/job.sh; curl -fsS -m 10 --retry 5 -o /dev/null --data-binary "exit $?" '
        f'"{URL}/$??rid=$RID"')
    assert (f'                  {post} "$PING/start?rid=$RID"\n'
            '                  /path/to/job; code=$?\n'
            f'                  {post} "$PING/$code?rid=$RID"\n') in shown["Kubernetes CronJob"]
    assert f"ExecStartPre=-/usr/bin/{post} ${{PING}}/start\n" in shown["systemd"]
    assert f'else s=fail; fi; {post} "$$PING/$$s"\'\n' in shown["systemd"]
    # every curl without a body says POST; GET-able monitors' snippets stay as documented
    for name in ("crontab", "Kubernetes CronJob", "systemd"):
        curls = re.findall(r"curl [^\"$]*", shown[name])
        assert curls and all("-X POST" in c or "--data-binary" in c for c in curls), name
        assert "-X POST" not in all_snippets(_m(), URL)[name]
    assert shown["cronradar exec"] == f"0 3 * * *  cronradar exec --url {URL} -- /path/to/job.sh"


def test_the_snippets_agree_with_the_readme():
    from pathlib import Path

    from cronradar.dashboard.snippets import cronjob, crontab, systemd

    readme = Path(__file__).resolve().parents[3].joinpath("docs", "pinging.md").read_text()
    readme_url = "https://cronradar.example.com/ping/UUID"
    line = next(x for x in readme.splitlines() if x.startswith("0 3 * * *  RID="))
    assert crontab(_m(), readme_url) == line.replace("/usr/local/bin/backup.sh",
                                                     "/path/to/job.sh")
    stop = next(x for x in readme.splitlines() if x.startswith("ExecStopPost="))
    assert f"\n{stop}\n" in systemd(_m(), readme_url)
    for readme_line in ('curl -fsS -m 10 --retry 5 -o /dev/null "$PING/start?rid=$RID"',
                        'curl -fsS -m 10 --retry 5 -o /dev/null "$PING/$code?rid=$RID"',
                        "exit $code", "restartPolicy: Never"):
        assert readme_line in readme and readme_line in cronjob(_m(), readme_url)


# --- code snippets: their text, and the ones this machine can run, run ------------------

SNIPPET_FILES = {"Python (requests)": "python_requests.py", "Python (standard library)":
                 "python_stdlib.py", "Node.js": "node.js", "Go": "go.go", "PHP": "php.php",
                 "Ruby": "ruby.rb", "PowerShell": "powershell.ps1"}
SNIPPETS_DIR = Path(__file__).parent / "snippets"


@pytest.mark.parametrize("language", SNIPPET_FILES)
def test_each_code_snippets_exact_text(language):
    """tests/site/dashboard/snippets/<file>.txt is the snippet for URL, as written."""
    from cronradar.dashboard.snippets import code

    expected = (SNIPPETS_DIR / f"{SNIPPET_FILES[language]}.txt").read_text()
    assert code(language, URL) == expected
    assert URL in expected and "PING_URL" not in expected


def test_the_monitor_page_lists_the_code_snippets_after_the_shell_ones():
    from cronradar.dashboard.snippets import all_snippets

    assert list(all_snippets(_m(), URL)) == [
        "crontab", "cronradar exec", "Kubernetes CronJob", "systemd", "Python (requests)",
        "Python (standard library)", "Node.js", "Go", "PHP", "Ruby", "PowerShell"]


def _runner(language: str, path: Path) -> list[str] | None:
    """The command that runs the snippet saved at ``path``, None without its tool."""
    tool = {"Python (requests)": sys.executable, "Python (standard library)": sys.executable,
            "Node.js": shutil.which("node"), "PHP": shutil.which("php"),
            "Ruby": shutil.which("ruby"), "Go": shutil.which("go"),
            "PowerShell": shutil.which("pwsh")}[language]
    if tool is None:
        return None
    return [tool, "run", str(path)] if language == "Go" else [tool, str(path)]


JOB_LINES = {"Python (requests)": "...  # your job here",
             "Python (standard library)": "...  # your job here",
             "Node.js": "// your job here", "Go": "return nil // your job here",
             "PHP": "// your job here", "Ruby": "# your job here",
             "PowerShell": "# your job here"}
FAILING_JOB = {"Python (requests)": 'raise RuntimeError("disk full")',
               "Python (standard library)": 'raise RuntimeError("disk full")',
               "Node.js": 'throw new Error("disk full");',
               "Go": 'return fmt.Errorf("disk full")', "PHP": "throw new Exception('disk full');",
               "Ruby": 'raise "disk full"', "PowerShell": 'throw "disk full"'}


def _run(language: str, url: str, tmp_path: Path, job: str | None = None):
    import subprocess

    from cronradar.dashboard.snippets import code

    text_ = code(language, url)
    if job is not None:
        text_ = text_.replace(JOB_LINES[language], job)
    path = tmp_path / ("main.go" if language == "Go" else SNIPPET_FILES[language])
    path.write_text(text_)
    command = _runner(language, path)
    if command is None:
        pytest.skip(f"no {language} on this machine")
    return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=tmp_path)


@pytest.mark.live
@pytest.mark.once
@pytest.mark.parametrize("language", SNIPPET_FILES)
def test_a_code_snippet_pings_start_and_end_with_one_run_id(language, tmp_path):
    """Run against a local receiver: start, then 0 with the same rid; a job that
    raises: start, then 1 with the error as the body, and the program exits 1."""
    receiver = Receiver()
    try:
        url = receiver.url + "/ping/UUID"
        done = _run(language, url, tmp_path)
        assert done.returncode == 0, done.stderr
        start, end = receiver.requests
        rid = start.path.removeprefix("/ping/UUID/start?rid=")
        assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-"
                            r"[0-9a-f]{12}", rid), start.path
        assert (end.path, end.body) == (f"/ping/UUID/0?rid={rid}", b"")
        failed = _run(language, url, tmp_path, job=FAILING_JOB[language])
        assert failed.returncode == 1, failed.stderr
        start, end = receiver.requests[2:]
        rid = start.path.removeprefix("/ping/UUID/start?rid=")
        assert end.path == f"/ping/UUID/1?rid={rid}" and b"disk full" in end.body
    finally:
        receiver.close()


@pytest.mark.live
@pytest.mark.once
@pytest.mark.parametrize("language", SNIPPET_FILES)
def test_a_code_snippet_runs_its_job_when_cronradar_is_unreachable(language, tmp_path):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = _run(language, f"http://127.0.0.1:{port}/ping/UUID", tmp_path)
    assert done.returncode == 0, done.stderr


def test_the_monitor_page_shows_the_code_snippets_with_its_own_url(admin, world):
    import html

    from cronradar.dashboard.snippets import code

    m = world["monitor"]
    page = admin.get(f"/monitors/{m.pk}/").content.decode()
    for language in SNIPPET_FILES:
        assert f"<summary>{language}</summary>" in page
    assert html.escape(code("PHP", m.ping_url)) in page  # as Django escapes: quotes too
