"""Crontabs read into monitor specs and written back wrapped (monitors.imports.crontab).
Fixtures: tests/data/crontab.txt (a user's crontab) and etc-crontab.txt (Debian's
/etc/crontab, with the user field)."""
import re
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from monitors.imports import apply, crontab
from monitors.imports.spec import Remark, Spec
from monitors.models import Run
from tests.conftest import DATA, T0
from tests.monitors.conftest import GRACE, cron, curl_wrap


def job(slug, line, schedule, title, tz="UTC", tags=("crontab",), **fields):
    return Spec(slug, f"line {line}", {**cron(schedule, tz), **fields},
                {"name": title, "grace": GRACE}, tags)


def parse(text, **kw):
    return crontab.parse_crontab(text, **kw)


# ------------------------------------------------------------------ crontab: reading

def test_a_users_crontab_is_read_into_specs_reports_and_notes():
    parsed = parse((DATA / "crontab.txt").read_text())
    assert parsed.specs == [
        job("pg-backup-8b2f4abd", 8, "0 3 * * *",
            "/usr/local/bin/pg-backup.sh --full >> /var/log/pg-backup.log 2>&1"),
        job("manage-35c68c9e", 9, "*/15 * * * *", "cd /srv/app && ./manage.py clearsessions"),
        job("php-0ebd2ac8", 10, "0 * * * *", "/usr/bin/php /var/www/cron.php"),  # @hourly
        job("tar-a88189fa", 12, "30 2 * * 1-5",
            r"tar czf /var/backups/www-$(date +\%Y\%m\%d).tar.gz /var/www"),
        job("rotate-keys-ffa56e40", 13, "0 0 * * 0",  # @weekly
            "/usr/local/bin/rotate-keys.sh # rotate API keys"),
        job("invoice-run", 17, "0 6 1 * *", "/opt/billing/bin/invoice --month=previous",
            "Europe/Berlin", name="Monthly invoices"),  # pinned slug and name, CRON_TZ
        job("mail-ba23c378", 18, "0 7 * * mon-fri", 'mail -s "daily report" ops@example.com',
            "Europe/Berlin"),  # % in the command: the rest is the mail's body
    ]
    assert parsed.reported == [
        Remark("line 11", "@reboot runs once at boot: no schedule to monitor; left as it is"),
        Remark("line 19", "schedule '60 * * * *': bad minute field '60': 60 is out of range "
                          "0-59: not imported"),
        Remark("line 20", "not a job line: expected 5 time fields and a command: not imported"),
        Remark("line 21", "CRON_TZ: unknown time zone 'Mars/Olympus': the jobs after it are not "
                          "imported"),
        Remark("line 22", "the time zone 'Mars/Olympus' of line 21 is unknown: not imported"),
    ]
    assert parsed.notes == [
        Remark("", "jobs with no CRON_TZ= or TZ= line before them are read in UTC: cron runs "
                   "them in the host's time zone"),
        Remark("", "new monitors get grace 300 s (how late a run's start ping may be); "
                   "existing monitors keep theirs")]


def test_etc_crontab_has_a_user_field():
    parsed = parse((DATA / "etc-crontab.txt").read_text(), system=True)
    root = ("crontab", "user:root")
    assert parsed.specs == [
        job("run-parts-d6652387", 19, "17 * * * *",
            "root: cd / && run-parts --report /etc/cron.hourly", tags=root),
        job("test-8055f7af", 20, "25 6 * * *", "root: test -x /usr/sbin/anacron || { cd / && "
            "run-parts --report /etc/cron.daily; }", tags=root),
        job("test-2ec0d441", 21, "47 6 * * 7", "root: test -x /usr/sbin/anacron || { cd / && "
            "run-parts --report /etc/cron.weekly; }", tags=root),
        job("test-303634e4", 22, "52 6 1 * *", "root: test -x /usr/sbin/anacron || { cd / && "
            "run-parts --report /etc/cron.monthly; }", tags=root),
        job("vacuumdb-a6124607", 23, "0 0 * * *",
            "postgres: /usr/bin/vacuumdb --all --analyze-in-stages --quiet",
            tags=("crontab", "user:postgres")),
    ]
    assert parsed.reported == [Remark("line 24", "@reboot runs once at boot: no schedule to "
                                                 "monitor; left as it is")]
    assert parsed.shell == "/bin/sh"
    # read as a user's crontab, 'root' would be the command: it says so
    wrong = parse("17 * * * * root cd / && run-parts --report /etc/cron.hourly\n")
    assert wrong.notes[1] == Remark("line 1", "the command starts with 'root': if this is "
                                    "/etc/crontab or an /etc/cron.d file, import it as a system "
                                    "crontab")


@pytest.mark.parametrize("path,system", [
    ("/etc/crontab", True), ("/etc/cron.d/php", True), ("/etc/cron.d/../crontab", True),
    ("/var/spool/cron/crontabs/app", False), ("crontab.txt", False), ("/etc/cron.daily/x", False)])
def test_system_crontabs_are_known_by_their_path(path, system):
    assert crontab.is_system_crontab(path) is system


@pytest.mark.parametrize("line,schedule", [
    ("@hourly j", "0 * * * *"), ("@daily j", "0 0 * * *"), ("@midnight j", "0 0 * * *"),
    ("@weekly j", "0 0 * * 0"), ("@monthly j", "0 0 1 * *"), ("@yearly j", "0 0 1 1 *"),
    ("@annually j", "0 0 1 1 *"), ("  5  4 * * sun   j", "5 4 * * sun"),
    ("0 9-17/2 1,15 jan-jun 1-5 j", "0 9-17/2 1,15 jan-jun 1-5")])
def test_macros_and_fields_are_normalized(line, schedule):
    [spec] = parse(line + "\n").specs
    assert spec.fields["schedule"] == schedule


@pytest.mark.parametrize("line,reason", [
    ("@reboot /usr/local/bin/warm", "@reboot runs once at boot: no schedule to monitor; left as "
                                    "it is"),
    ("@Daily job", "unknown macro '@Daily' (cron knows @yearly, @annually, @monthly, @weekly, "
                   "@daily, @midnight, @hourly and @reboot): not imported"),
    ("@daily", "not a job line: expected a macro and a command: not imported"),
    ("* * * * *", "not a job line: expected 5 time fields and a command: not imported"),
    ("0 0 31 2 * job", "schedule '0 0 31 2 *' never fires: no date matches its day-of-month, "
                       "month and day-of-week fields: not imported"),
    ("0 0 * * * echo 'it is", "the shell cannot read the command: a single quote is not "
                              "closed: not imported"),
    ("0 0 * * * tar cf x.tar \\", "the shell cannot read the command: it ends with a backslash: "
                                  "not imported"),
    ("0 0 * * * # nothing", "no command: not imported"),
    ("0 0 * * * echo a\0b", "a NUL character: not imported"),
    ('0 0 * * * curl -fsS "https://cr.example.com/ping/abc"', "already pings CronRadar (written "
     "by hand): not imported, left as it is; take the pings out to import it"),
    ("0 4 * * * cronradar exec --key=K --slug=report -- ./report.sh", "already pings CronRadar "
     "(written by hand): not imported, left as it is; take the pings out to import it"),
])
def test_lines_that_are_reported_and_never_guessed(line, reason):
    parsed = parse(f"# header\n{line}\n")
    assert (parsed.specs, parsed.reported) == ([], [Remark("line 2", reason)])
    assert crontab.wrap_crontab(parsed, {}) == f"# header\n{line}\n"  # left as it was


def test_environment_lines_are_kept_and_zones_set_the_following_jobs():
    text = ('MAILTO=""\nHOME = "/srv/app home"\nNAME=\'quoted value\'\n0 1 * * * a\n'
            "TZ=Asia/Tokyo\n0 2 * * * b\nCRON_TZ=America/Chicago\n0 3 * * * c\n"
            "TZ=Europe/Paris\n0 4 * * * d\nCRON_TZ=\n0 5 * * * e\n")
    parsed = parse(text, timezone="Europe/London")
    assert [(s.where, s.fields["timezone"]) for s in parsed.specs] == [
        ("line 4", "Europe/London"), ("line 6", "Asia/Tokyo"), ("line 8", "America/Chicago"),
        ("line 10", "America/Chicago"),  # CRON_TZ wins over a later TZ
        ("line 12", "Europe/Paris")]  # an empty CRON_TZ= unsets it
    assert parsed.notes[:2] == [
        Remark("", "jobs with no CRON_TZ= or TZ= line before them are read in Europe/London: "
                   "cron runs them in the host's time zone"),
        Remark("line 5", "TZ=Asia/Tokyo is taken as the time zone of the jobs after it (cronie "
                         "schedules by CRON_TZ and only passes TZ to the job: if the host's cron "
                         "runs them in its own zone, say so with CRON_TZ)")]
    assert parsed.reported == []
    assert crontab.wrap_crontab(parsed, {s.slug: "U" for s in parsed.specs}).count("\n") == 17


def test_slug_comments_duplicates_and_orphans():
    text = ("# cronradar: slug=nightly name=\"Nightly job\"\n0 1 * * * a\n"
            "# cronradar: slug=nightly\n0 2 * * * b\n"  # the same slug again
            "0 3 * * * c\n0 3 * * * c\n"  # the same line twice
            "# cronradar: slug=bad/slug\n0 4 * * * d\n"
            "# cronradar: slug=lonely\n\n0 5 * * * e\n")
    parsed = parse(text)
    assert [(s.slug, s.where) for s in parsed.specs] == [
        ("nightly", "line 2"), ("c-8d3a4021", "line 5"), ("e-62159d25", "line 11")]
    assert parsed.specs[0].fields["name"] == "Nightly job"
    assert parsed.reported == [
        Remark("line 4", "slug 'nightly' is already that of line 2: not imported"),
        Remark("line 6", "slug 'c-8d3a4021' is already that of line 5: not imported"),
        Remark("line 7", "'# cronradar:' comment not understood: slug 'bad/slug': letters, "
                         "digits, '-' and '_' only, at most 100; the job after it is not "
                         "imported"),
        Remark("line 8", "its '# cronradar:' comment (line 7) is not understood: not imported"),
        Remark("line 9", "'# cronradar:' comment not followed by a job line: ignored")]


@pytest.mark.parametrize("command,program", [
    ("/usr/local/bin/backup.sh --full", "backup"), ("FOO=1 BAR='x y' python3 -m app", "python3"),
    ("cd /srv && ./run.py", "run"), ("cd /srv; exec ./worker.rb", "worker"),
    ("(cd /srv && make)", "make"), ("$HOME/bin/x.v2.sh", "x-v2"), ("'' arg", "job")])
def test_derived_slugs_name_the_program(command, program):
    slug = crontab.derived_slug("0 * * * *", "", command)
    assert re.fullmatch(rf"{program}-[0-9a-f]{{8}}", slug)
    assert crontab.derived_slug("0 * * * *", "", command) == slug  # stable
    assert crontab.derived_slug("1 * * * *", "", command) != slug  # another line, another slug


@pytest.mark.parametrize("script,start", [
    ("a # b", 2), ("a#b", None), ("echo '#' # c", 9), ('echo "# $(date +%s) #" #x', 23),
    ("echo ${#PATH} $#", None), ("a;# b", 2), ("echo `date #x` y", None),
    ("echo $(echo ')' ) # z", 18), ("x 'it''s' #", 10)])
def test_shell_comments_are_found_at_the_top_level(script, start):
    assert crontab.shell_comment(script) == start


@pytest.mark.parametrize("script,error", [
    ("echo 'a", "a single quote is not closed"), ('echo "a', "a double quote is not closed"),
    ("echo $(date", "a '$(' is not closed"), ("echo `date", "a backquote is not closed"),
    ("a \\", "it ends with a backslash")])
def test_commands_the_shell_cannot_read(script, error):
    with pytest.raises(ValueError, match=re.escape(error)):
        crontab.shell_comment(script)


def test_percent_splits_as_cron_does():
    assert crontab.split_percent(r"date +\%F%line one%two") == (r"date +\%F", "%line one%two")
    assert crontab.split_percent(r"a \\%b") == ("a \\\\", "%b")  # \\ then an unescaped %
    assert crontab.split_percent("plain") == ("plain", "")


# ------------------------------------------------------------------ crontab: wrapping

def test_wrapped_lines_are_exact():
    parsed = parse((DATA / "crontab.txt").read_text())
    urls = {s.slug: f"https://cr.example.com/ping/{s.slug}" for s in parsed.specs}
    out = crontab.wrap_crontab(parsed, urls).splitlines()
    u = "https://cr.example.com/ping/"
    assert out[7:9] == [
        "# cronradar: slug=pg-backup-8b2f4abd",
        "0 3 * * * " + curl_wrap(u + "pg-backup-8b2f4abd", "/usr/local/bin/pg-backup.sh --full "
                                 ">> /var/log/pg-backup.log 2>&1")]
    assert out[15] == "30 2 * * 1-5 " + curl_wrap(  # \% stays escaped, as cron needs it
        u + "tar-a88189fa", r"tar czf /var/backups/www-$(date +\%Y\%m\%d).tar.gz /var/www")
    assert out[17] == "@weekly " + curl_wrap(  # the shell comment goes last
        u + "rotate-keys-ffa56e40", "/usr/local/bin/rotate-keys.sh", "# rotate API keys")
    assert out[20:22] == [  # the slug comment there is kept; % and what follows stay stdin
        '# cronradar: slug=invoice-run name="Monthly invoices"',
        "0 6 1 * * " + curl_wrap(u + "invoice-run", "/opt/billing/bin/invoice --month=previous")]
    assert out[23] == "0 7 * * mon-fri " + curl_wrap(
        u + "mail-ba23c378", 'mail -s "daily report" ops@example.com') + "%Report attached.%Bye"
    assert out[13:14] + out[24:] == [  # reported lines are left as they were
        "@reboot /usr/local/bin/warm-cache.sh", "60 * * * * /usr/local/bin/bad-minute.sh",
        "this line is not cron", "CRON_TZ=Mars/Olympus", "0 8 * * * /usr/local/bin/never.sh"]
    # an URL with a % (escaped for cron) or a quote (escaped for the shell)
    assert crontab.wrap_curl("j", "", 'https://x/p%41"$') == curl_wrap(r'https://x/p\%41\"\$', "j")


def test_exec_wrapping():
    parsed = parse((DATA / "etc-crontab.txt").read_text(), system=True, wrap="exec")
    out = crontab.wrap_crontab(parsed, {s.slug: f"https://cr.test/ping/{s.slug}"
                                        for s in parsed.specs}, "exec").splitlines()
    assert out[19] == ("17 *\t* * *\troot\tcronradar exec --url https://cr.test/ping/"
                       "run-parts-d6652387 -- /bin/sh -c 'cd / && run-parts --report "
                       "/etc/cron.hourly'")  # the crontab's SHELL
    assert out[27] == ("@daily\tpostgres\tcronradar exec --url https://cr.test/ping/"
                       "vacuumdb-a6124607 -- /usr/bin/vacuumdb --all --analyze-in-stages --quiet")
    assert parsed.notes[-1] == Remark("", "cronradar exec must be on the jobs' PATH: cron's "
                                      "default PATH is /usr/bin:/bin (install it there or add a "
                                      "PATH= line)")
    assert crontab.wrap_exec("echo 'it''s' > /tmp/x # c", "https://h/p") == (
        "cronradar exec --url https://h/p -- sh -c 'echo '\\''it'\\'''\\''s'\\'' > /tmp/x # c'")


@pytest.mark.parametrize("wrap", ["curl", "exec"])
def test_wrapped_crontab_reads_back_as_the_same_monitors(wrap):
    for name, system in (("crontab.txt", False), ("etc-crontab.txt", True)):
        first = parse((DATA / name).read_text(), system=system)
        urls = {s.slug: f"https://cr.test/ping/{s.slug}" for s in first.specs}
        wrapped = crontab.wrap_crontab(first, urls, wrap)
        again = parse(wrapped, system=system)
        assert [(s.slug, s.fields, s.defaults) for s in again.specs] == [
            (s.slug, s.fields, s.defaults) for s in first.specs]
        assert crontab.wrap_crontab(again, urls, wrap) == wrapped
        other = "exec" if wrap == "curl" else "curl"
        assert crontab.wrap_crontab(again, urls, other) == crontab.wrap_crontab(first, urls, other)
        unpinned = "".join(line for line in wrapped.splitlines(keepends=True)
                           if not line.startswith("# cronradar: slug=") or "name=" in line)
        assert [s.slug for s in parse(unpinned, system=system).specs] == list(urls)


@pytest.fixture
def get_server():
    """A local HTTP server answering 200 to GETs; yields (its URL, the paths asked)."""
    paths = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            paths.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"OK")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", paths
    server.shutdown()


def as_cron_runs(command: str) -> tuple[str, str]:
    """(the script cron hands /bin/sh -c, the job's stdin), as Vixie cron makes them
    from a crontab command: up to the first unescaped % with each \\% made %, and the
    rest with each unescaped % a newline."""
    script, rest, escaped = [], None, False
    for i, c in enumerate(command):
        if escaped and c == "%":
            script[-1] = "%"
        elif not escaped and c == "%":
            rest = command[i + 1:]
            break
        else:
            script.append(c)
        escaped = not escaped and c == "\\"
    stdin = re.sub(r"(?<!\\)%", "\n", rest) + "\n" if rest is not None else ""
    return "".join(script), stdin


def test_a_wrapped_line_pings_start_and_exit_status_in_sh(get_server, settings, project,
                                                          client):
    """The curl wrapping, run by /bin/sh as cron would run it (the test does cron's
    part: \\% unescaped, the text after % sent to stdin); the requests it made are
    then replayed to the real ping endpoint."""
    url, paths = get_server
    settings.CRONRADAR_BASE_URL = url
    line = ('0 7 * * * test "$(date +\\%Y)" -ge 2024 && read greeting && '
            '[ "$greeting" = hello ] && exit 3%hello%world')
    parsed = parse(f"# cronradar: slug=greeter\n{line}\n")
    outcome = apply.apply(project, parsed.specs, False, T0)
    monitor = outcome.monitors["greeter"]
    wrapped = crontab.wrap_crontab(parsed, {"greeter": monitor.ping_url}).splitlines()[1]
    script, stdin = as_cron_runs(wrapped.split(" ", 5)[5])
    assert stdin == "hello\nworld\n" and "date +%Y" in script
    done = subprocess.run(["/bin/sh", "-c", script], input=stdin, text=True, timeout=60,
                          capture_output=True)
    assert (done.stdout, done.stderr) == ("", "")
    start, end = paths
    rid = start.rsplit("=", 1)[1]
    assert re.fullmatch(r"[0-9a-f-]{36}", rid)
    assert (start, end) == (f"/ping/{monitor.uuid}/start?rid={rid}",
                            f"/ping/{monitor.uuid}/3?rid={rid}")
    for path in paths:
        assert client.get(path).status_code == 200
    run = Run.objects.get(monitor=monitor)
    assert (str(run.rid), run.outcome, run.exit_status) == (rid, "failed", 3)
