"""Ready-to-paste ways to ping a monitor, shown on its page: a crontab line, a
``cronradar exec`` line, a Kubernetes CronJob and a systemd service, and the same
in code (:data:`LANGUAGES`: Python with requests and with the standard library,
Node, Go, PHP, Ruby, PowerShell). Each mirrors docs/pinging.md (the same curl
flags, the same exit-status handling), filled in with the monitor's own URL,
schedule, zone and limits.

The code snippets all do the same: a fresh run id, ``POST <url>/start?rid=<id>``,
the job, then ``<url>/0?rid=<id>`` or, when it raised, ``<url>/1?rid=<id>`` with
the error as the body (1: the status the program then exits with). Each ping
gives up after 5 seconds and never fails the job when CronRadar is unreachable.

The shell snippets' pings without a body are GETs, except for a monitor whose
``methods`` is ``"POST"`` (it refuses GET and HEAD): those add ``-X POST``
(:func:`curl`). ``cronradar exec`` and the code snippets always POST.

Pure functions of the monitor's fields, so each snippet is tested on its text.
"""
from __future__ import annotations

import re
from datetime import timedelta

CURL = "curl -fsS -m 10 --retry 5 -o /dev/null"
RID = "RID=$(cat /proc/sys/kernel/random/uuid)"
K8S_POLICY = {"allow": "Allow", "forbid": "Forbid", "replace": "Replace"}
K8S_NAME_MAX = 52  # a CronJob's name: DNS-1123, at most 52 (Jobs add 11 characters)


def curl(m) -> str:
    """The curl command of a ping without a body: ``-X POST`` added when monitor
    ``m`` takes only POST pings (its ``methods`` is ``"POST"``)."""
    return f"{CURL} -X POST" if m.methods == "POST" else CURL


def words(seconds: int) -> str:
    """A period in words: "5 min", "2 h", "90 s", "1 d 6 h"."""
    parts, rest = [], seconds
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60), ("s", 1)):
        if rest >= size:
            parts.append(f"{rest // size} {unit}")
            rest %= size
    return " ".join(parts) or "0 s"


def cron_for_period(seconds: int) -> str | None:
    """The cron line that fires exactly every ``seconds``, when there is one: a
    whole number of minutes dividing an hour, of hours dividing a day, or a day.
    None otherwise (7 min: the gap at the top of the hour would be shorter)."""
    if seconds <= 0 or seconds % 60:
        return None
    minutes = seconds // 60
    if minutes < 60 and 60 % minutes == 0:
        return "* * * * *" if minutes == 1 else f"*/{minutes} * * * *"
    if minutes % 60 == 0 and minutes // 60 < 24 and 24 % (minutes // 60) == 0:
        hours = minutes // 60
        return "0 * * * *" if hours == 1 else f"0 */{hours} * * *"
    if seconds == 86400:
        return "0 0 * * *"
    return None


def k8s_name(slug: str) -> str:
    """A valid CronJob ``metadata.name`` from a slug: lowercase DNS-1123 (letters,
    digits and '-', starting and ending with a letter or digit), at most 52."""
    name = re.sub(r"[^a-z0-9-]+", "-", slug.lower().replace("_", "-"))
    name = re.sub(r"-{2,}", "-", name).strip("-")[:K8S_NAME_MAX].rstrip("-")
    return name or "cronradar-job"


def schedule(m) -> tuple[str, str | None]:
    """(the cron expression the job runs on, a note when it is only a placeholder)."""
    if m.kind == "cron":
        return m.schedule, None
    seconds = int(m.period.total_seconds()) if m.period else 0
    line = cron_for_period(seconds)
    if line is not None:
        return line, None
    return "SCHEDULE", (f"SCHEDULE is a placeholder: no cron line fires exactly every "
                        f"{words(seconds)}; run the job every {words(seconds)} (or change "
                        "the monitor's period to one cron can keep)")


def _zoned(m) -> bool:
    return m.kind == "cron" and bool(m.timezone) and m.timezone != "UTC"


def crontab(m, url: str) -> str:
    line, note = schedule(m)
    head = []
    if note:
        head.append(f"# {note}")
    if _zoned(m):
        head += [f"# CRON_TZ: the schedule is in {m.timezone} (Vixie cron and cronie honour "
                 "it; it applies to the lines below it)", f"CRON_TZ={m.timezone}"]
    job = (f"{line}  {RID}; {curl(m)} \"{url}/start?rid=$RID\"; /path/to/job.sh; "
           f"{CURL} --data-binary \"exit $?\" \"{url}/$??rid=$RID\"")
    return "\n".join([*head, job])


def cronradar_exec(m, url: str) -> str:
    line, note = schedule(m)
    head = [f"# {note}"] if note else []
    if _zoned(m):
        head += [f"# CRON_TZ: the schedule is in {m.timezone} (Vixie cron and cronie honour "
                 "it)", f"CRON_TZ={m.timezone}"]
    return "\n".join([*head, f"{line}  cronradar exec --url {url} -- /path/to/job.sh"])


def _seconds(value: timedelta | None) -> int | None:
    return int(value.total_seconds()) if value else None


def cronjob(m, url: str) -> str:
    """A CronJob whose container exits with the job's status (not curl's), with
    the monitor's concurrency, attempts, deadline and grace: activeDeadlineSeconds
    is the ``deadline`` less startingDeadlineSeconds (it counts from the Job's
    start, at most that late, across all its attempts; the import maps it back to
    the same deadline); none without a deadline, or one within the start's."""
    line, note = schedule(m)
    spec = [f"  schedule: \"{line}\"" + (f"  # {note}" if note else "")]
    if _zoned(m):
        spec.append(f"  timeZone: {m.timezone}")
    spec.append(f"  concurrencyPolicy: {K8S_POLICY.get(m.concurrency, 'Allow')}")
    # the controller looks every 10 s: a shorter deadline can skip runs for good
    starting = max(_seconds(m.grace) or 0, 10)
    spec.append(f"  startingDeadlineSeconds: {starting}")
    job = []
    if (deadline := _seconds(m.deadline)) is not None and deadline > starting:
        job.append(f"      activeDeadlineSeconds: {deadline - starting}")
    job.append(f"      backoffLimit: {max(m.max_attempts - 1, 0)}")
    return "\n".join([
        "apiVersion: batch/v1", "kind: CronJob", f"metadata: {{name: {k8s_name(m.slug)}}}",
        "spec:", *spec, "  jobTemplate:", "    spec:", *job,
        "      template:", "        spec:", "          restartPolicy: Never",
        "          containers:", "            - name: job",
        "              image: registry.example.com/your-image:1.0",
        f"              env: [{{name: PING, value: \"{url}\"}}]",
        "              command: [\"/bin/sh\", \"-c\"]", "              args:",
        "                - |",
        f"                  {RID}",
        f"                  {curl(m)} \"$PING/start?rid=$RID\"",
        "                  /path/to/job; code=$?",
        f"                  {curl(m)} \"$PING/$code?rid=$RID\"",
        "                  exit $code", ""])


def systemd(m, url: str) -> str:
    """A oneshot service as in docs/pinging.md: ``-`` so a failed ping never fails the
    unit, and ``/fail`` when the job was killed (EXIT_STATUS is then a signal name,
    which the ping URL refuses)."""
    return "\n".join([
        "# /etc/systemd/system/job.service   (started by job.timer)", "[Service]",
        "Type=oneshot", f"Environment=PING={url}",
        f"ExecStartPre=-/usr/bin/{curl(m)} ${{PING}}/start",
        "ExecStart=/usr/local/bin/job.sh",
        "ExecStopPost=-/bin/sh -c 'if [ \"$$EXIT_CODE\" = exited ]; then s=$$EXIT_STATUS; "
        f"else s=fail; fi; {curl(m)} \"$$PING/$$s\"'", ""])


PING_URL = "PING_URL"  # where the monitor's URL goes in the templates below

# the two Python snippets' run: the same whichever library pings
PYTHON_RUN = """
def job():
    ...  # your job here


ping("start")
try:
    job()
except Exception as e:
    ping("1", repr(e))  # 1: the exit status the script ends with
    raise
ping("0")
"""

PYTHON_REQUESTS = """\
import uuid

import requests

PING = "PING_URL"
RID = str(uuid.uuid4())  # pairs the start with the end: overlapping runs stay apart


def ping(action, body=""):
    try:
        requests.post(f"{PING}/{action}", params={"rid": RID}, data=body.encode(), timeout=5)
    except requests.RequestException:
        pass  # CronRadar unreachable: the job goes on

""" + PYTHON_RUN

PYTHON_STDLIB = """\
import urllib.request
import uuid

PING = "PING_URL"
RID = str(uuid.uuid4())  # pairs the start with the end: overlapping runs stay apart


def ping(action, body=""):
    try:
        urllib.request.urlopen(f"{PING}/{action}?rid={RID}", data=body.encode(), timeout=5)
    except OSError:
        pass  # CronRadar unreachable (URLError and timeouts are OSErrors): the job goes on

""" + PYTHON_RUN

NODE = """\
// Node.js 18 or later (fetch and AbortSignal.timeout)
const { randomUUID } = require("node:crypto");

const PING = "PING_URL";
const RID = randomUUID(); // pairs the start with the end: overlapping runs stay apart

async function ping(action, body = "") {
  try {
    await fetch(`${PING}/${action}?rid=${RID}`,
      { method: "POST", body, signal: AbortSignal.timeout(5000) });
  } catch {
    // CronRadar unreachable: the job goes on
  }
}

async function job() {
  // your job here
}

(async () => {
  await ping("start");
  try {
    await job();
  } catch (e) {
    await ping("1", String(e && e.stack || e)); // 1: the exit status the script ends with
    process.exit(1);
  }
  await ping("0");
})();
"""

GO = """\
package main

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"
)

const ping = "PING_URL"

var client = &http.Client{Timeout: 5 * time.Second}

// newRID is a random (version 4) UUID: it pairs the start with the end.
func newRID() string {
	b := make([]byte, 16)
	rand.Read(b)
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func send(rid, action, body string) {
	resp, err := client.Post(ping+"/"+action+"?rid="+rid, "text/plain", strings.NewReader(body))
	if err == nil { // on error CronRadar is unreachable: the job goes on
		resp.Body.Close()
	}
}

func job() error {
	return nil // your job here
}

func main() {
	rid := newRID()
	send(rid, "start", "")
	if err := job(); err != nil {
		send(rid, "1", err.Error()) // 1: the exit status the program ends with
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	send(rid, "0", "")
}
"""

PHP = """\
<?php
$ping = 'PING_URL';
$rid = sprintf('%04x%04x-%04x-%04x-%04x-%04x%04x%04x', random_int(0, 0xffff),
    random_int(0, 0xffff), random_int(0, 0xffff), random_int(0, 0x0fff) | 0x4000,
    random_int(0, 0x3fff) | 0x8000, random_int(0, 0xffff), random_int(0, 0xffff),
    random_int(0, 0xffff)); // pairs the start with the end: overlapping runs stay apart

function ping(string $action, string $body = ''): void {
    global $ping, $rid;
    // @: CronRadar unreachable never stops the job
    @file_get_contents("$ping/$action?rid=$rid", false, stream_context_create(['http' => [
        'method' => 'POST', 'header' => 'Content-Type: text/plain', 'content' => $body,
        'timeout' => 5, 'ignore_errors' => true]]));
}

function job(): void {
    // your job here
}

ping('start');
try {
    job();
} catch (Throwable $e) {
    ping('1', (string) $e); // 1: the exit status the script ends with
    fwrite(STDERR, $e . PHP_EOL);
    exit(1);
}
ping('0');
"""

RUBY = """\
require "net/http"
require "securerandom"

PING = "PING_URL"
RID = SecureRandom.uuid # pairs the start with the end: overlapping runs stay apart

def ping(action, body = "")
  uri = URI("#{PING}/#{action}?rid=#{RID}")
  Net::HTTP.start(uri.host, uri.port, use_ssl: uri.scheme == "https",
                  open_timeout: 5, read_timeout: 5, write_timeout: 5) do |http|
    http.post(uri.request_uri, body)
  end
rescue StandardError
  nil # CronRadar unreachable: the job goes on
end

def job
  # your job here
end

ping("start")
begin
  job
rescue StandardError => e
  ping("1", e.full_message) # 1: the exit status the script ends with
  raise
end
ping("0")
"""

POWERSHELL = """\
$Ping = "PING_URL"
$Rid = [guid]::NewGuid().ToString()  # pairs the start with the end: overlapping runs stay apart

function Send-Ping([string]$Action, [string]$Body = "") {
    try {
        Invoke-RestMethod -Method Post -Uri "$Ping/$($Action)?rid=$Rid" -Body $Body `
            -ContentType "text/plain" -TimeoutSec 5 | Out-Null
    } catch {
        # CronRadar unreachable: the job goes on
    }
}

function Invoke-Job {
    # your job here
}

Send-Ping "start"
try {
    Invoke-Job
} catch {
    Send-Ping "1" "$_"  # 1: the exit status the script ends with
    Write-Error $_
    exit 1
}
Send-Ping "0"
"""

# the code snippets by the name the monitor page shows
LANGUAGES = {"Python (requests)": PYTHON_REQUESTS, "Python (standard library)": PYTHON_STDLIB,
             "Node.js": NODE, "Go": GO, "PHP": PHP, "Ruby": RUBY, "PowerShell": POWERSHELL}


def code(language: str, url: str) -> str:
    """The :data:`LANGUAGES` snippet ``language`` filled in with the ping ``url``
    (the monitor's own: ``https://…/ping/<uuid>`` or by ping key and slug). Raises
    ``KeyError`` for another language."""
    return LANGUAGES[language].replace(PING_URL, url)


def all_snippets(m, url: str) -> dict[str, str]:
    """Every snippet of monitor ``m`` pinging ``url``, by the name the page shows:
    the shell ones first, then :data:`LANGUAGES`."""
    return {"crontab": crontab(m, url), "cronradar exec": cronradar_exec(m, url),
            "Kubernetes CronJob": cronjob(m, url), "systemd": systemd(m, url),
            **{language: code(language, url) for language in LANGUAGES}}
