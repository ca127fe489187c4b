"""Monitors as code: crontabs and Kubernetes CronJobs read into monitors
(monitors/imports.py), the importcrontab / importk8s commands and the
/api/v1/import/ actions. Fixtures: tests/data/crontab.txt (a user's crontab),
etc-crontab.txt (Debian's /etc/crontab, with the user field) and cronjobs.yaml."""
import io
import re
import subprocess
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from accounts.models import ApiKey
from monitors.imports import apply, crontab, k8s, spec
from monitors.imports.spec import Remark, Spec
from monitors.models import Monitor, Run
from tests.conftest import T0, new_project
from tests.test_tenancy import as_key, as_person, person

DATA = Path(__file__).parent / "data"
S = timedelta(seconds=1)
GRACE = 300 * S
CURL = "curl -fsS -m 10 --retry 5 -o /dev/null"
RID = "RID=$(cat /proc/sys/kernel/random/uuid)"


def cron(schedule, tz="UTC", semantics="debian"):
    return {"kind": "cron", "schedule": schedule, "timezone": tz, "cron_semantics": semantics,
            "period": None}


def job(slug, line, schedule, title, tz="UTC", tags=("crontab",), **fields):
    return Spec(slug, f"line {line}", {**cron(schedule, tz), **fields},
                {"name": title, "grace": GRACE}, tags)


def parse(text, **kw):
    return crontab.parse_crontab(text, **kw)


def curl_wrap(url, command, comment=""):
    return (f'{RID}; {CURL} "{url}/start?rid=$RID"; ( {command} ); rc=$?; '
            f'{CURL} "{url}/$rc?rid=$RID"' + (f" {comment}" if comment else ""))


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


# ---------------------------------------------------------------- Kubernetes: reading

def cronjob(slug, where, schedule, tz, concurrency, max_runtime, attempts, paused, name, ns,
            grace=None):
    fields = {**cron(schedule, tz, "kubernetes"), "concurrency": concurrency,
              "max_runtime": max_runtime, "max_attempts": attempts, "paused": paused}
    defaults = {"name": name}
    if grace is None:
        defaults["grace"] = GRACE
    else:
        fields["grace"] = grace
    return Spec(slug, where, fields, defaults, ("kubernetes", f"ns:{ns}"))


def test_cronjob_manifests_are_mapped():
    parsed = k8s.parse_k8s((DATA / "cronjobs.yaml").read_text())
    assert parsed.specs == [
        cronjob("nightly-report", "document 1 (line 2)", "0 2 * * *", "Europe/Berlin", "forbid",
                3600 * S, 3, False, "reporting/nightly-report", "reporting", grace=600 * S),
        cronjob("cache-warmer", "document 3 (line 36)", "*/10 * * * *", "UTC", "replace", None,
                7, True, "web/cache.warmer", "web"),
        cronjob("ledger-close", "document 4 (line 54)", "30 17 * * 1-5", "America/New_York",
                "allow", None, 1, False, "finance/ledger-close", "finance", grace=30 * S)]
    assert parsed.reported == [
        Remark("document 2 (line 28)", "kind ConfigMap (v1) is not a CronJob: skipped"),
        Remark("document 5 (line 72)", "schedule '0 0 30 2 *' never fires: no date matches its "
               "day-of-month, month and day-of-week fields: not imported")]
    one, three, four = "document 1 (line 2)", "document 3 (line 36)", "document 4 (line 54)"
    assert parsed.notes == [
        Remark(one, "not mapped: spec.failedJobsHistoryLimit, spec.jobTemplate.spec."
                    "ttlSecondsAfterFinished, spec.successfulJobsHistoryLimit"),
        Remark(three, "slug cache-warmer (metadata.name cache.warmer with '.' made '-')"),
        Remark(three, "no spec.timeZone: read in UTC, the usual zone of the cluster's "
                      "controller (set timeZone if yours differs)"),
        Remark(three, "no backoffLimit: Kubernetes' default 6, so max_attempts 7"),
        Remark(three, "no startingDeadlineSeconds: grace 300 s for a new monitor (an existing "
                      "one keeps its grace)"),
        Remark(four, "time zone America/New_York from the schedule's CRON_TZ= prefix "
                     "(Kubernetes does not support it officially: prefer spec.timeZone)"),
        Remark(four, "grace 30 s from startingDeadlineSeconds: it must also cover the pod's "
                     "start (scheduling, image pull) before its first ping")]


def manifest(spec: str, name="job", extra="") -> str:
    return (f"apiVersion: batch/v1\nkind: CronJob\nmetadata: {{name: {name}}}\n"
            f"spec: {{{spec}}}\n{extra}")


@pytest.mark.parametrize("spec,reason", [
    ('schedule: "TZ=Asia/Tokyo 0 1 * * *", timeZone: UTC', "spec.schedule starts with TZ= and "
     "spec.timeZone is set: Kubernetes refuses both"),
    ('schedule: "@every 1h"', "schedule '@every 1h': @every runs at an interval, not on a cron "
     "schedule: make an interval monitor for it"),
    ('schedule: "0 1 * * 7"', "schedule '0 1 * * 7': bad day-of-week field '7': 7 is out of "
     "range 0-6"),
    ('schedule: "0 1 * * *", timeZone: Mars/Base', "schedule '0 1 * * *': unknown time zone "
     "'Mars/Base'"),
    ('schedule: "0 1 * * *", concurrencyPolicy: Sometimes', "spec.concurrencyPolicy "
     "'Sometimes': Allow, Forbid or Replace"),
    ('schedule: "0 1 * * *", suspend: "yes"', "spec.suspend must be true or false"),
    ('schedule: "0 1 * * *", startingDeadlineSeconds: "60"', "spec.startingDeadlineSeconds must "
     "be a whole number from 0 to 315360000"),
    ('schedule: "0 1 * * *", jobTemplate: {spec: {activeDeadlineSeconds: 0}}',
     "spec.jobTemplate.spec.activeDeadlineSeconds must be a whole number from 1 to 315360000"),
    ('schedule: "0 1 * * *", jobTemplate: []', "spec.jobTemplate must be a mapping"),
    ("jobTemplate: {}", "no spec.schedule"),
])
def test_cronjobs_that_cannot_be_mapped_are_reported(spec, reason):
    parsed = k8s.parse_k8s(manifest(spec))
    assert (parsed.specs, parsed.reported) == ([], [Remark("document 1 (line 1)",
                                                           f"{reason}: not imported")])


def test_cronjob_details():
    text = ("---\n# a list, as kubectl get -o yaml writes it\napiVersion: v1\nkind: List\nitems:\n"
            "- apiVersion: batch/v1\n  kind: CronJob\n  metadata: {name: a}\n"
            "  spec: {schedule: '@daily', startingDeadlineSeconds: 0,\n"
            "         jobTemplate: {spec: {backoffLimit: 150}}}\n"
            "- {apiVersion: batch/v1beta1, kind: CronJob, metadata: {name: b}, spec: {}}\n"
            "---\n- just a list\n---\n")
    parsed = k8s.parse_k8s(text)
    [spec] = parsed.specs
    assert (spec.slug, spec.where, spec.fields["schedule"], spec.fields["grace"],
            spec.fields["max_attempts"], spec.tags, spec.defaults) == (
        "a", "document 1 (line 3) item 1", "0 0 * * *", S, 100, ("kubernetes",), {"name": "a"})
    assert parsed.reported == [
        Remark("document 1 (line 3) item 2", "apiVersion batch/v1beta1: only batch/v1 CronJobs "
               "are read: skipped"),
        Remark("document 2 (line 13)", "not a Kubernetes object (a mapping): skipped")]
    assert [n.message for n in parsed.notes] == [
        "no spec.timeZone: read in UTC, the usual zone of the cluster's controller (set timeZone "
        "if yours differs)",
        "backoffLimit 150: max_attempts 100, the most CronRadar counts",
        "grace 1 s from startingDeadlineSeconds: it must also cover the pod's start (scheduling, "
        "image pull) before its first ping"]


@pytest.mark.parametrize("text,message", [
    ("a: [1, 2\n", "not YAML at line 2: expected ',' or ']', but got '<stream end>'"),
    ("a: b\n c: d\n", "not YAML at line 2: mapping values are not allowed here"),
    ("[" * 5000, "not YAML this import reads: nested too deeply"),
    ("\xad\x12X", "not YAML: unacceptable character #x0012: special characters are not "
                  "allowed")])
def test_text_that_is_not_yaml_fails_the_whole_import(text, message):
    with pytest.raises(spec.ImportFailed, match=re.escape(message)):
        k8s.parse_k8s(text)


# ------------------------------------------------------------------ applying: commands

def command(name, *args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(name, *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def monitor_fields(m: Monitor) -> dict:
    return {f: getattr(m, f) for f in (
        "name", "kind", "schedule", "timezone", "cron_semantics", "period", "grace",
        "max_runtime", "concurrency", "max_attempts", "paused", "tags")}


def test_importcrontab_creates_prints_the_wrapped_crontab_and_is_idempotent(project):
    path = str(DATA / "crontab.txt")
    out, err = command("importcrontab", path, "--project", "acme", "--dry-run")
    assert out == "" and not Monitor.objects.exists()
    assert err.splitlines()[1:3] == [
        "project 'acme' in organisation 'acme'",
        "dry run, nothing changed: 7 created, 0 updated, 0 unchanged, 5 reported"]
    assert err.startswith("using database: ")

    out, err = command("importcrontab", path, "--project", "acme")
    monitors = {m.slug: m for m in Monitor.objects.all()}
    assert len(monitors) == 7
    assert monitor_fields(monitors["invoice-run"]) == {
        "name": "Monthly invoices", "kind": "cron", "schedule": "0 6 1 * *",
        "timezone": "Europe/Berlin", "cron_semantics": "debian", "period": None, "grace": GRACE,
        "max_runtime": None, "concurrency": "allow", "max_attempts": 1, "paused": False,
        "tags": ["crontab"]}
    assert monitors["invoice-run"].next_expected_at is not None  # armed as the API does
    assert err.splitlines()[3] == (
        "  created pg-backup-8b2f4abd (line 8): name '/usr/local/bin/pg-backup.sh --full >> "
        "/var/log/pg-backup.log 2>&1', grace 300, kind 'cron', schedule '0 3 * * *', timezone "
        "'UTC', cron_semantics 'debian', tags [\"crontab\"]")
    assert "  line 11: @reboot runs once at boot: no schedule to monitor; left as it is" in err
    m = monitors["mail-ba23c378"]
    assert out.splitlines()[22:24] == [
        "# cronradar: slug=mail-ba23c378",
        "0 7 * * mon-fri " + curl_wrap(f"http://127.0.0.1:8000/ping/{m.uuid}",
                                       'mail -s "daily report" ops@example.com')
        + "%Report attached.%Bye"]

    before = {m.slug: (m.next_expected_at, m.next_evaluation_at) for m in Monitor.objects.all()}
    again, err = command("importcrontab", path, "--project", "acme")
    assert again == out
    assert "0 created, 0 updated, 7 unchanged, 5 reported" in err
    assert {m.slug: (m.next_expected_at, m.next_evaluation_at)
            for m in Monitor.objects.all()} == before


def test_importcrontab_reads_the_installed_wrapped_crontab_and_stdin(project, monkeypatch,
                                                                     tmp_path):
    first, _ = command("importcrontab", str(DATA / "crontab.txt"), "--project", "acme")
    monkeypatch.setattr("sys.stdin", io.StringIO(first))
    again, err = command("importcrontab", "-", "--project", "acme")
    assert again == first and "0 created, 0 updated, 7 unchanged" in err
    assert "already wrapped by an import, read as the command inside: lines 9, 11, 13, 16, 18, " \
           "22, 24" in err


def test_importcrontab_updates_existing_monitors_and_keeps_what_the_file_does_not_say(
        project, make_monitor):
    make_monitor(name="billing", slug="invoice-run", kind="cron", schedule="0 5 1 * *",
                 grace=900 * S, tags=["billing"])
    _, err = command("importcrontab", str(DATA / "crontab.txt"), "--project", "acme",
                     "--timezone", "Europe/Madrid")
    assert ("  updated invoice-run (line 17): schedule '0 5 1 * *' -> '0 6 1 * *', timezone "
            "'UTC' -> 'Europe/Berlin', name 'billing' -> 'Monthly invoices', tags [\"billing\"] "
            "-> [\"billing\", \"crontab\"]") in err.splitlines()
    m = Monitor.objects.get(slug="invoice-run")
    assert (m.grace, m.tags, m.schedule) == (900 * S, ["billing", "crontab"], "0 6 1 * *")
    assert Monitor.objects.get(slug="php-0ebd2ac8").timezone == "Europe/Madrid"


def test_importcrontab_system_crontab_by_path_and_errors(project, tmp_path, monkeypatch):
    monkeypatch.setattr(crontab, "is_system_crontab", lambda path: path.endswith("etc-crontab.txt"))
    out, err = command("importcrontab", str(DATA / "etc-crontab.txt"), "--project", "acme",
                       "--wrap", "exec")
    assert f"notes:\n  {DATA / 'etc-crontab.txt'} is a system crontab: the 6th field is the user" \
        in err
    vacuum = Monitor.objects.get(slug="vacuumdb-a6124607")
    assert (vacuum.tags, vacuum.schedule) == (["crontab", "user:postgres"], "0 0 * * *")
    assert f"@daily\tpostgres\tcronradar exec --url {vacuum.ping_url} -- /usr/bin/vacuumdb" in out
    with pytest.raises(CommandError, match="no project 'nope'"):
        command("importcrontab", str(DATA / "crontab.txt"), "--project", "nope")
    with pytest.raises(CommandError, match="missing.txt: No such file or directory"):
        command("importcrontab", str(tmp_path / "missing.txt"), "--project", "acme")
    (tmp_path / "latin1").write_bytes(b"0 0 * * * caf\xe9\n")
    with pytest.raises(CommandError, match="latin1: not UTF-8 text"):
        command("importcrontab", str(tmp_path / "latin1"), "--project", "acme")
    with pytest.raises(CommandError, match="unknown time zone 'Nowhere/City'"):
        command("importcrontab", str(DATA / "crontab.txt"), "--project", "acme", "--timezone",
                "Nowhere/City")


def test_importk8s_creates_updates_and_is_idempotent(project, tmp_path):
    path = str(DATA / "cronjobs.yaml")
    out, _ = command("importk8s", path, "--project", "acme", "--dry-run")
    assert "dry run, nothing changed: 3 created, 0 updated, 0 unchanged, 2 reported" in out
    assert not Monitor.objects.exists()
    out, _ = command("importk8s", path, "--project", "acme")
    assert out.splitlines()[0].startswith("using database: ")
    assert "  document 2 (line 28): kind ConfigMap (v1) is not a CronJob: skipped" in out
    assert monitor_fields(Monitor.objects.get(slug="nightly-report")) == {
        "name": "reporting/nightly-report", "kind": "cron", "schedule": "0 2 * * *",
        "timezone": "Europe/Berlin", "cron_semantics": "kubernetes", "period": None,
        "grace": 600 * S, "max_runtime": 3600 * S, "concurrency": "forbid", "max_attempts": 3,
        "paused": False, "tags": ["kubernetes", "ns:reporting"]}
    assert monitor_fields(Monitor.objects.get(slug="cache-warmer")) == {
        "name": "web/cache.warmer", "kind": "cron", "schedule": "*/10 * * * *",
        "timezone": "UTC", "cron_semantics": "kubernetes", "period": None, "grace": GRACE,
        "max_runtime": None, "concurrency": "replace", "max_attempts": 7, "paused": True,
        "tags": ["kubernetes", "ns:web"]}
    out, _ = command("importk8s", path, "--project", "acme")
    assert "0 created, 0 updated, 3 unchanged, 2 reported" in out
    # the manifest changes: the warmer is resumed and gets a deadline; its grace stays
    Monitor.objects.filter(slug="cache-warmer").update(grace=120 * S)
    changed = (DATA / "cronjobs.yaml").read_text().replace("  suspend: true\n", "").replace(
        "  concurrencyPolicy: Replace\n", "  concurrencyPolicy: Replace\n  timeZone: Asia/Tokyo\n")
    (tmp_path / "cronjobs.yaml").write_text(changed)
    out, _ = command("importk8s", str(tmp_path / "cronjobs.yaml"), "--project", "acme")
    assert ("  updated cache-warmer (document 3 (line 36)): timezone 'UTC' -> 'Asia/Tokyo', "
            "paused true -> false") in out.splitlines()
    warmer = Monitor.objects.get(slug="cache-warmer")
    assert (warmer.paused, warmer.timezone, warmer.grace) == (False, "Asia/Tokyo", 120 * S)
    (tmp_path / "bad.yaml").write_text("kind: [\n")
    with pytest.raises(CommandError, match=r"bad.yaml: not YAML at line 2"):
        command("importk8s", str(tmp_path / "bad.yaml"), "--project", "acme")


# ----------------------------------------------------------------------------- the API

CRONTAB = "MAILTO=ops@example.com\n0 3 * * * /usr/local/bin/backup.sh\n@reboot /bin/warm\n"


def test_api_crontab_dry_run_answers_the_diff_and_changes_nothing(api, project, make_monitor):
    make_monitor(name="backup", slug="backup", kind="cron", schedule="0 2 * * *", grace=60 * S)
    text = CRONTAB.replace("0 3", "# cronradar: slug=backup\n0 3") + "0 4 * * * ./report.sh\n"
    resp = api.post("/api/v1/import/crontab/?dry_run=1&timezone=Europe/Rome", text,
                    content_type="text/plain")
    assert resp.status_code == 200, resp.content
    assert resp.json() == {
        "project": project.pk, "dry_run": True,
        "created": [{"slug": "report-ab531067", "where": "line 5", "monitor": {
            "name": "./report.sh", "grace": 300, "kind": "cron", "schedule": "0 4 * * *",
            "timezone": "Europe/Rome", "cron_semantics": "debian", "tags": ["crontab"]}}],
        "updated": [{"slug": "backup", "where": "line 3", "id": Monitor.objects.get().pk,
                     "changes": {"schedule": {"old": "0 2 * * *", "new": "0 3 * * *"},
                                 "timezone": {"old": "UTC", "new": "Europe/Rome"},
                                 "tags": {"old": [], "new": ["crontab"]}}}],
        "unchanged": [],
        "reported": [{"where": "line 4", "message": "@reboot runs once at boot: no schedule to "
                                                    "monitor; left as it is"}],
        "notes": [{"where": "", "message": "jobs with no CRON_TZ= or TZ= line before them are "
                                           "read in Europe/Rome: cron runs them in the host's "
                                           "time zone"},
                  {"where": "", "message": "new monitors get grace 300 s (how late a run's "
                                           "start ping may be); existing monitors keep theirs"}]}
    assert list(Monitor.objects.values_list("slug", "schedule")) == [("backup", "0 2 * * *")]


def test_api_crontab_applies_and_answers_the_wrapped_crontab(api, project):
    resp = api.post("/api/v1/import/crontab/", {"text": CRONTAB, "wrap": "exec"}, format="json")
    assert resp.status_code == 200, resp.content
    m = Monitor.objects.get()
    body = resp.json()
    assert (body["dry_run"], body["created"][0]["id"], body["created"][0]["slug"]) == (
        False, m.pk, "backup-240aaff4")
    assert body["crontab"] == (
        "MAILTO=ops@example.com\n# cronradar: slug=backup-240aaff4\n0 3 * * * cronradar exec "
        f"--url {m.ping_url} -- /usr/local/bin/backup.sh\n@reboot /bin/warm\n")
    again = api.post("/api/v1/import/crontab/", {"text": CRONTAB, "wrap": "exec"}, format="json")
    assert (again.json()["created"], again.json()["updated"], again.json()["unchanged"]) == (
        [], [], [{"slug": "backup-240aaff4", "where": "line 2", "id": m.pk}])
    assert again.json()["crontab"] == body["crontab"]


def test_api_k8s_takes_yaml(api, project):
    text = (DATA / "cronjobs.yaml").read_text()
    dry = api.post("/api/v1/import/k8s/?dry_run=true", text, content_type="application/yaml")
    assert dry.status_code == 200, dry.content
    assert [c["slug"] for c in dry.json()["created"]] == ["nightly-report", "cache-warmer",
                                                           "ledger-close"]
    assert dry.json()["created"][0]["monitor"] == {
        "name": "reporting/nightly-report", "kind": "cron", "schedule": "0 2 * * *",
        "timezone": "Europe/Berlin", "cron_semantics": "kubernetes", "concurrency": "forbid",
        "max_runtime": 3600, "max_attempts": 3, "paused": False, "grace": 600,
        "tags": ["kubernetes", "ns:reporting"]}
    assert not Monitor.objects.exists() and "crontab" not in dry.json()
    done = api.post("/api/v1/import/k8s/", {"text": text}, format="json")
    assert done.status_code == 200 and len(done.json()["created"]) == 3
    assert Monitor.objects.get(slug="ledger-close").timezone == "America/New_York"


def test_api_import_errors(api, project, api_key):
    post = api.post
    assert post("/api/v1/import/k8s/", "a: [1", content_type="text/plain").json() == {
        "text": ["not YAML at line 1: expected ',' or ']', but got '<stream end>'"]}
    assert post("/api/v1/import/crontab/?timezone=Mars/Base", CRONTAB,
                content_type="text/plain").json() == {"timezone": ["unknown time zone "
                                                                   "'Mars/Base'"]}
    assert post("/api/v1/import/crontab/", {"text": CRONTAB, "wrap": "ssh"}, format="json"
                ).json() == {"wrap": ['"ssh" is not a valid choice.']}
    assert post("/api/v1/import/crontab/", {"txt": "x"}, format="json").json() == {
        "txt": ["unknown field"]}
    assert post("/api/v1/import/crontab/", [CRONTAB], format="json").json() == {
        "detail": ['the body must be the file (text/plain) or a JSON object {"text": "..."}']}
    bad = post("/api/v1/import/crontab/", b"0 0 * * * caf\xe9", content_type="text/plain")
    assert (bad.status_code, bad.json()) == (400, {"detail": "the body must be UTF-8 text"})
    assert post("/api/v1/import/crontab/?project=99999999999999999999", CRONTAB,
                content_type="text/plain").status_code == 400
    assert not Monitor.objects.exists()


def test_api_import_is_tenant_scoped(api, project):
    other = new_project("bravo")
    for url, text in (("/api/v1/import/crontab/", CRONTAB), ("/api/v1/import/k8s/", "")):
        resp = api.post(url, {"text": text, "project": other.pk}, format="json")
        assert (resp.status_code, resp.json()) == (
            400, {"project": [f"no project with id {other.pk} that you can see"]})
        resp = api.post(f"{url}?project={other.pk}&dry_run=1", text, content_type="text/plain")
        assert resp.status_code == 400
    read_only = as_key(ApiKey.issue(project, "ro", read_only=True)[1])
    resp = read_only.post("/api/v1/import/crontab/?dry_run=1", CRONTAB, content_type="text/plain")
    assert (resp.status_code, resp.json()) == (403, {"detail": "this API key is read-only"})
    assert not Monitor.objects.exists()
    # people: a viewer may not; a member of several projects says which
    viewer = as_person(person("vera", project.organisation, "viewer"))
    assert viewer.post("/api/v1/import/k8s/", {"text": ""}, format="json").status_code == 403
    second = project.organisation.projects.create(name="second")
    member = as_person(person("max", project.organisation, "member"))
    assert member.post("/api/v1/import/crontab/", {"text": CRONTAB}, format="json").json() == {
        "project": ["required: you are in several projects; give the id of one"]}
    resp = member.post("/api/v1/import/crontab/", {"text": CRONTAB, "project": second.pk},
                       format="json")
    assert resp.status_code == 200
    assert list(Monitor.objects.values_list("project", flat=True)) == [second.pk]
