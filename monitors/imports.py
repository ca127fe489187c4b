"""Monitors as code: a crontab or Kubernetes CronJob manifests read into monitor
specs, and those specs applied to a project (created or updated by slug) or
compared with it (a dry run). Used by ``manage.py importcrontab`` / ``importk8s``
and ``POST /api/v1/import/crontab/`` / ``/import/k8s/`` (:mod:`monitors.import_api`).

Reading is pure (no ORM, no clock), so it can be table-tested:
:func:`parse_crontab` and :func:`parse_k8s` return a :class:`Parsed`: the
:class:`Spec` of each monitor, what was ``reported`` (left out, with where and
why: never guessed) and ``notes`` (imported, but worth knowing).
:func:`wrap_crontab` prints a crontab back with each imported job pinging its
monitor. :func:`apply` writes (or, dry, only compares) and returns an
:class:`Outcome`; :func:`report_lines` renders one for the commands.

Fields of a spec: ``fields`` are what the file states, set when a monitor is made
and on every later import; ``defaults`` (a derived name, a default grace) are
only set on a new monitor, so what was tuned through the API afterwards stays;
``tags`` are added when missing and never removed. Schedules are validated and
normalized by :mod:`monitors.schedule` (``@daily`` is stored as ``0 0 * * *``).
"""
from __future__ import annotations

import hashlib
import re
import shlex
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.utils.text import slugify

from monitors import schedule

MAX_SPECS = 1000  # monitors one import may declare
DEFAULT_GRACE = timedelta(seconds=300)  # a new monitor's grace when the file gives none
MAX_SECONDS = 10 * 365 * 86400  # the API's limit on durations (monitors.api.Seconds)
MAX_ATTEMPTS = 100  # the API's limit on max_attempts
K8S_BACKOFF_LIMIT = 6  # Kubernetes' default spec.jobTemplate.spec.backoffLimit
CURL = "curl -fsS -m 10 --retry 5 -o /dev/null"
UUID_SOURCE = "cat /proc/sys/kernel/random/uuid"
SLUG = re.compile(r"[-a-zA-Z0-9_]{1,100}")
MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
SYSTEM_PATHS = ("/etc/crontab", "/etc/cron.d/")


class ImportFailed(ValueError):
    """The whole file cannot be imported (not YAML, too many jobs); str(e) is
    the message for the user."""


class Conflict(ImportFailed):
    """The project changed under the import (a monitor was created or deleted
    meanwhile); running it again settles it."""


@dataclass(frozen=True)
class Remark:
    """Something said about a place in the file: ``where`` is ``line 7``,
    ``document 2 (line 14)`` or ``""`` (the whole file)."""

    where: str
    message: str

    def as_dict(self) -> dict:
        return {"where": self.where, "message": self.message}


@dataclass
class Spec:
    """One monitor a file declares: ``slug`` (its key in the project),
    ``where`` it came from, ``fields`` (model values: set on create and on every
    import), ``defaults`` (set on create only) and ``tags`` (added, never removed)."""

    slug: str
    where: str
    fields: dict
    defaults: dict = field(default_factory=dict)
    tags: tuple[str, ...] = ()


@dataclass
class Job:
    """A crontab line that was imported, in pieces, each as written in the file:
    ``prefix`` (up to the command: schedule, user, spacing), ``script`` (what
    cron gives the shell, up to a top-level shell comment), ``comment`` (that
    comment, ``""`` if none) and ``stdin`` (from cron's first unescaped ``%`` on,
    ``""`` if none). ``index`` is the 0-based line; ``pinned``: a ``# cronradar:``
    comment on the line before names its slug."""

    index: int
    prefix: str
    script: str
    comment: str
    stdin: str
    slug: str
    pinned: bool


@dataclass
class Parsed:
    """What :func:`parse_crontab` / :func:`parse_k8s` read. Crontabs also keep
    ``lines`` (with their endings), ``jobs`` and the ``shell`` (a ``SHELL=`` line)
    for :func:`wrap_crontab`."""

    specs: list[Spec] = field(default_factory=list)
    reported: list[Remark] = field(default_factory=list)
    notes: list[Remark] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)
    shell: str = ""
    rewrapped: list[int] = field(default_factory=list)  # lines an import had wrapped

    def add(self, spec: Spec) -> bool:
        """Add ``spec`` unless another spec has its slug (then report it); returns
        whether it was added."""
        first = next((s for s in self.specs if s.slug == spec.slug), None)
        if first is not None:
            self.reported.append(Remark(spec.where, f"slug '{spec.slug}' is already that of "
                                        f"{first.where}: not imported"))
            return False
        if len(self.specs) >= MAX_SPECS:
            raise ImportFailed(f"more than {MAX_SPECS} monitors in one import: split the file")
        self.specs.append(spec)
        return True


# ------------------------------------------------------------------------ crontab

_ENV = re.compile(r"\s*([^\s=#]+)\s*=\s*(.*?)\s*")
_PIN = re.compile(r"\s*#\s*cronradar:(.*)")
_WRAPPED_CURL = re.compile(
    r"RID=\$\(" + re.escape(UUID_SOURCE) + r"\); " + re.escape(CURL)
    + r' "(?P<url>[^"]*)/start\?rid=\$RID"; \( (?P<script>.*) \); rc=\$\?; ' + re.escape(CURL)
    + r' "(?P=url)/\$rc\?rid=\$RID"(?: (?P<comment>#.*))?')
_WRAPPED_EXEC = re.compile(r"cronradar exec --url (?P<url>\S+) -- (?P<cmd>.*)")
_SH_C = re.compile(r"(?P<shell>\S+) -c '(?P<quoted>(?:[^']|'\\'')*)'")
_SIMPLE = re.compile(r"[A-Za-z0-9_@+=:,./-]+(?: +[A-Za-z0-9_@+=:,./-]+)*")


def parse_crontab(text: str, system: bool = False, timezone: str = "UTC", wrap: str = "curl"
                  ) -> Parsed:
    """Read a crontab (``crontab -l``; with ``system``, /etc/crontab or an
    /etc/cron.d file, whose 6th field is the user the job runs as).

    Each job line (5 fields or an ``@`` macro, then the command) becomes a
    :class:`Spec`: kind ``cron``, debian semantics, read in the zone of the last
    ``CRON_TZ=`` line before it (else the last ``TZ=`` line, else ``timezone``,
    standing for the host's zone). Comments, blank lines and environment lines
    (``NAME=value``, ``NAME = "quoted"``) are kept. ``@reboot``, lines that are not
    cron syntax, jobs in an unknown zone, commands that already ping CronRadar by
    hand and commands the shell cannot read (an unterminated quote) are reported
    with their line and left as they are. ``wrap`` (``curl`` or ``exec``) only
    changes the notes.

    Slug: a ``# cronradar: slug=SLUG [name="NAME"]`` comment on the line before
    the job; else ``<program>-<hash>``: the job's program's basename and the
    first 8 hex digits of the SHA-256 of its normalized schedule, user and
    command (see :func:`derived_slug`). Two lines with one slug: the later one is
    reported. A job already wrapped by :func:`wrap_crontab` is read as the
    command inside. Raises ImportFailed (too many jobs) and ScheduleError for an
    unknown ``timezone``.
    """
    schedule.validate_timezone(timezone)
    out = Parsed(lines=text.splitlines(keepends=True))
    zones: dict = {"CRON_TZ": None, "TZ": None}  # name -> (zone, line, valid) of its last line
    used_default = has_path = False
    pin: tuple[int, dict] | None = None
    for index, raw in enumerate(out.lines):
        n, line = index + 1, raw.rstrip("\r\n")
        where = f"line {n}"
        this_pin, pin = pin, None
        if not line.strip():
            _orphan_pin(out, this_pin)
            continue
        if "\0" in line:
            out.reported.append(Remark(where, "a NUL character: not imported"))
            continue
        if line.lstrip().startswith("#"):
            _orphan_pin(out, this_pin)
            if found := _PIN.fullmatch(line):
                try:
                    pin = (n, _pin_options(found.group(1)))
                except ValueError as e:
                    out.reported.append(Remark(where, f"'# cronradar:' comment not understood: "
                                               f"{e}; the job after it is not imported"))
                    pin = (n, {"error": str(e)})
            continue
        if env := _ENV.fullmatch(line):
            _orphan_pin(out, this_pin)
            name, value = env.group(1), _unquote(env.group(2))
            if name in zones:
                _zone_line(out, zones, name, value, n)
            elif name == "SHELL":
                out.shell = value
            elif name == "PATH":
                has_path = True
            continue
        job = _job_line(out, index, line, system, this_pin)
        if job is None:
            continue
        expr, user, command = job
        zone, zone_line, valid = zones["CRON_TZ"] or zones["TZ"] or (timezone, 0, True)
        if not valid:
            out.reported.append(Remark(where, f"the time zone {zone!r} of line {zone_line} is "
                                       "unknown: not imported"))
            continue
        try:
            normalized = _schedule(expr, zone, schedule.DEBIAN)
        except schedule.ScheduleError as e:
            out.reported.append(Remark(where, f"{_schedule_error(expr, e)}: not imported"))
            continue
        used_default |= zone_line == 0
        _add_job(out, index, line, normalized, user, command, zone, this_pin)
    _orphan_pin(out, pin)
    if used_default and out.specs:
        out.notes.insert(0, Remark("", f"jobs with no CRON_TZ= or TZ= line before them are read "
                                   f"in {timezone}: cron runs them in the host's time zone"))
    if out.rewrapped:
        out.notes.append(Remark("", "already wrapped by an import, read as the command inside: "
                                f"line{'s' if len(out.rewrapped) > 1 else ''} "
                                + ", ".join(map(str, out.rewrapped))))
    if out.specs:
        out.notes.append(Remark("", f"new monitors get grace {_secs(DEFAULT_GRACE)} (how late "
                                "a run's start ping may be); existing monitors keep theirs"))
    if out.specs and wrap == "exec" and not has_path:
        out.notes.append(Remark("", "cronradar exec must be on the jobs' PATH: cron's default "
                                "PATH is /usr/bin:/bin (install it there or add a PATH= line)"))
    return out


def _zone_line(out: Parsed, zones: dict, name: str, value: str, n: int) -> None:
    """A ``CRON_TZ=`` or ``TZ=`` line: the zone of the jobs after it (an empty value
    unsets it; an unknown zone is reported, and so are the jobs it would cover)."""
    if not value:
        zones[name] = None
        return
    try:
        schedule.validate_timezone(value)
    except schedule.ScheduleError:
        zones[name] = (value, n, False)
        out.reported.append(Remark(f"line {n}", f"{name}: unknown time zone {value!r}: the "
                                   "jobs after it are not imported"))
        return
    zones[name] = (value, n, True)
    if name == "TZ" and zones["CRON_TZ"] is None:
        out.notes.append(Remark(f"line {n}", f"TZ={value} is taken as the time zone of the jobs "
                                "after it (cronie schedules by CRON_TZ and only passes TZ to the "
                                "job: if the host's cron runs them in its own zone, say so with "
                                "CRON_TZ)"))


def _schedule_error(expr: str, error: Exception) -> str:
    """A schedule's error message, naming the schedule once."""
    return str(error) if expr in str(error) else f"schedule '{expr}': {error}"


def _schedule(expr: str, zone: str, semantics: str) -> str:
    """:func:`schedule.validate_cron`, and short enough to store (200 characters)."""
    normalized = schedule.validate_cron(expr, zone, semantics)
    if len(normalized) > 200:
        raise schedule.ScheduleError("longer than 200 characters")
    return normalized


def _job_line(out: Parsed, index: int, line: str, system: bool, pin: tuple | None
              ) -> tuple[str, str, str] | None:
    """A job line's (schedule, user, command), or None when it was reported."""
    where = f"line {index + 1}"
    tokens = line.split()
    if tokens[0].startswith("@"):
        count = 2 if system else 1
        if tokens[0] == "@reboot":
            out.reported.append(Remark(where, "@reboot runs once at boot: no schedule to "
                                       "monitor; left as it is"))
            return None
        if tokens[0] not in MACROS:
            out.reported.append(Remark(where, f"unknown macro '{tokens[0]}' (cron knows "
                                       f"{', '.join(MACROS)} and @reboot): not imported"))
            return None
    else:
        count = 6 if system else 5
    spans = [m.span() for m in re.finditer(r"\S+", line)]
    what = ("a macro" if count <= 2 else "5 time fields") + (", the user" if system else "")
    if len(spans) <= count:
        out.reported.append(Remark(where, f"not a job line: expected {what} and a command: "
                                   "not imported"))
        return None
    if pin is not None and "error" in pin[1]:
        out.reported.append(Remark(where, f"its '# cronradar:' comment (line {pin[0]}) is not "
                                   "understood: not imported"))
        return None
    fields = tokens[:count - 1] if system else tokens[:count]
    user = tokens[count - 1] if system else ""
    return " ".join(fields), user, line[spans[count][0]:]


def _add_job(out: Parsed, index: int, line: str, expr: str, user: str, command: str,
             zone: str, pin: tuple | None) -> None:
    """Check a job's command, derive its slug and add its spec and :class:`Job`."""
    where = f"line {index + 1}"
    script, stdin = split_percent(command)
    script, comment, was_wrapped = _unwrap(script)
    if was_wrapped:
        out.rewrapped.append(index + 1)
    elif "cronradar exec" in script or re.search(r"curl\b.*/ping/", script):
        out.reported.append(Remark(where, "already pings CronRadar (written by hand): not "
                                   "imported, left as it is; take the pings out to import it"))
        return
    if not was_wrapped:
        try:
            start = shell_comment(script)
        except ValueError as e:
            out.reported.append(Remark(where, f"the shell cannot read the command: {e}: not "
                                       "imported"))
            return
        if start is not None:
            script, comment = script[:start], script[start:]
    if not script.strip():
        out.reported.append(Remark(where, "no command: not imported"))
        return
    options = pin[1] if pin else {}
    original = " ".join(f"{script} {comment} {stdin}".split())
    slug = options.get("slug") or derived_slug(expr, user, original)
    name = _short((f"{user}: " if user else "") + " ".join(f"{script} {comment}".split()), 200)
    fields = {"kind": "cron", "schedule": expr, "timezone": zone,
              "cron_semantics": schedule.DEBIAN, "period": None}
    defaults = {"name": name, "grace": DEFAULT_GRACE}
    if "name" in options:
        fields["name"] = options["name"]
    tags, long_tags = _tags("crontab", f"user:{user}" if user else "")
    out.notes.extend(Remark(where, m) for m in long_tags)
    if not out.add(Spec(slug, where, fields, defaults, tags)):
        return
    if not user and script.split()[0] == "root":
        out.notes.append(Remark(where, "the command starts with 'root': if this is /etc/crontab "
                                "or an /etc/cron.d file, import it as a system crontab"))
    if script.rstrip().endswith("&") and not script.rstrip().endswith("&&"):
        out.notes.append(Remark(where, "the command ends with '&' (runs in the background): its "
                                "exit status is pinged when it starts, not when it ends"))
    prefix = line[:len(line) - len(command)]
    out.jobs.append(Job(index, prefix, script, comment, stdin, slug, bool(options.get("slug"))))


def _tags(*tags: str) -> tuple[tuple[str, ...], list[str]]:
    """(the non-empty ``tags`` the API takes, notes on those longer than 50
    characters, which are left out)."""
    return (tuple(t for t in tags if 0 < len(t) <= 50),
            [f"tag '{t}' is longer than 50 characters: left out" for t in tags if len(t) > 50])


def _orphan_pin(out: Parsed, pin: tuple | None) -> None:
    if pin is not None and "error" not in pin[1]:
        out.reported.append(Remark(f"line {pin[0]}", "'# cronradar:' comment not followed by "
                                   "a job line: ignored"))


def _pin_options(text: str) -> dict:
    """``slug=SLUG name="NAME"`` -> dict; ValueError naming what is wrong."""
    options = {}
    for word in shlex.split(text):
        key, eq, value = word.partition("=")
        if not eq or key not in ("slug", "name"):
            raise ValueError(f"'{word}': give slug=SLUG and optionally name=\"NAME\"")
        options[key] = value
    if "slug" not in options:
        raise ValueError("no slug=SLUG")
    if not SLUG.fullmatch(options["slug"]):
        raise ValueError(f"slug '{options['slug']}': letters, digits, '-' and '_' only, at "
                         "most 100")
    if "name" in options and not 0 < len(options["name"]) <= 200:
        raise ValueError("name: 1 to 200 characters")
    return options


def _unquote(value: str) -> str:
    """An environment line's value: one pair of matching quotes around it removed."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def split_percent(command: str) -> tuple[str, str]:
    """Split a crontab command as cron does: (the part the shell runs, as written
    with its ``\\%``; the rest from the first unescaped ``%`` on, which cron sends
    to the command's stdin, each unescaped ``%`` a newline). ``("", "")`` parts
    are empty strings."""
    escaped = False
    for i, c in enumerate(command):
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == "%":
            return command[:i], command[i:]
    return command, ""


def shell_comment(script: str) -> int | None:
    """Where a top-level ``#`` comment starts in a shell command line (None: there
    is none). Knows quotes, backslashes, ``$(...)`` and backquotes; a ``#`` only
    starts a comment at the start of a word. Raises ValueError for an
    unterminated quote, ``$(`` or backquote, or a trailing backslash."""
    stack: list[str] = []  # open contexts: ' " ` (
    i = 0
    while i < len(script):
        c, top = script[i], stack[-1] if stack else ""
        if top == "'":
            if c == "'":
                stack.pop()
        elif c == "\\":
            if i + 1 == len(script):
                raise ValueError("it ends with a backslash")
            i += 1
        elif top == '"':
            if c == '"':
                stack.pop()
            elif c == "`" or script.startswith("$(", i):
                stack.append("`" if c == "`" else "(")
                i += c != "`"
        elif c == "#" and not stack and (i == 0 or script[i - 1] in " \t;&|()<>"):
            return i
        elif c in "'\"":
            stack.append(c)
        elif c == "`":
            if top == "`":
                stack.pop()
            else:
                stack.append("`")
        elif c == "(" and (top == "(" or script[i - 1:i] == "$"):
            stack.append("(")
        elif c == ")" and top == "(":
            stack.pop()
        i += 1
    if stack:
        what = {"'": "a single quote", '"': "a double quote", "`": "a backquote",
                "(": "a '$('"}[stack[-1]]
        raise ValueError(f"{what} is not closed")
    return None


def _unwrap(script: str) -> tuple[str, str, bool]:
    """A script :func:`wrap_crontab` made -> (the command inside, its comment,
    True); anything else -> (script, "", False)."""
    if found := _WRAPPED_CURL.fullmatch(script):
        return found.group("script"), found.group("comment") or "", True
    if found := _WRAPPED_EXEC.fullmatch(script):
        cmd = found.group("cmd")
        if quoted := _SH_C.fullmatch(cmd):
            cmd = quoted.group("quoted").replace("'\\''", "'")
        try:
            start = shell_comment(cmd)
        except ValueError:
            return script, "", False
        return (cmd, "", True) if start is None else (cmd[:start], cmd[start:], True)
    return script, "", False


def derived_slug(expr: str, user: str, command: str) -> str:
    """``<program>-<hash>``: the basename of the command's program (after
    ``NAME=value`` assignments and a leading ``cd DIR &&``) without a script
    extension (``.sh`` ``.py`` ``.php`` ``.pl`` ``.rb`` ``.js``), slugified (dots
    made hyphens), at most 40 characters (``job`` when nothing is left), and the
    first 8 hex digits of the
    SHA-256 of ``expr`` (normalized), ``user`` and ``command`` (whitespace
    collapsed; a wrapped job's command inside) joined by newlines. The same
    line always gets the same slug; changing its schedule or command makes a new
    monitor (pin the slug with a ``# cronradar: slug=`` comment to keep it)."""
    digest = hashlib.sha256(f"{expr}\n{user}\n{command}".encode()).hexdigest()[:8]
    program = re.sub(r"\.(sh|bash|py|php|pl|rb|js)$", "", _program(command)).replace(".", "-")
    return f"{slugify(program)[:40].strip('-') or 'job'}-{digest}"


def _program(command: str) -> str:
    try:
        lexer = shlex.shlex(command.replace("\\%", "%"), posix=True, punctuation_chars=True)
        lexer.wordchars += "$@%+,:{}[]"
        words = list(lexer)
    except ValueError:
        words = command.split()
    while words and (re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0])
                     or words[0] in ("(", "{", "exec")):
        words.pop(0)
    if len(words) > 2 and words[0] == "cd" and words[2] in ("&&", ";"):
        return _program(" ".join(shlex.quote(w) for w in words[3:]))
    return words[0].rsplit("/", 1)[-1] if words else ""


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def wrap_crontab(parsed: Parsed, urls: dict[str, str], wrap: str = "curl") -> str:
    """The crontab of :func:`parse_crontab` with each imported job's command wrapped
    to ping ``urls[slug]`` (its monitor's ``ping_url``) when it starts and with its
    exit status when it ends, and preceded by a ``# cronradar: slug=`` comment
    (unless it had one), so later edits of the line keep its monitor. Everything
    else is as it was. ``wrap``: ``curl`` (see :func:`wrap_curl`) or ``exec`` (see
    :func:`wrap_exec`). Raises KeyError for a job whose slug has no URL."""
    lines = list(parsed.lines)
    for job in reversed(parsed.jobs):
        raw = lines[job.index]
        ending = raw[len(raw.rstrip("\r\n")):]
        url = urls[job.slug]
        command = (wrap_curl(job.script, job.comment, url) if wrap == "curl"
                   else wrap_exec(f"{job.script.strip()} {job.comment}", url, parsed.shell))
        lines[job.index] = job.prefix + command + job.stdin + ending
        if not job.pinned:
            lines.insert(job.index, f"# cronradar: slug={job.slug}{ending or chr(10)}")
    return "".join(lines)


def _cron_text(text: str) -> str:
    """Text added to a crontab line: every ``%`` escaped (cron reads ``%`` as a
    newline and unescapes ``\\%``)."""
    return text.replace("%", "\\%")


def wrap_curl(script: str, comment: str, url: str) -> str:
    """``RID=$(cat /proc/sys/kernel/random/uuid); curl … "URL/start?rid=$RID"; (
    SCRIPT ); rc=$?; curl … "URL/$rc?rid=$RID" [COMMENT]``: the job runs in a
    subshell (an ``exit`` or ``exec`` in it still reaches the exit-status ping),
    with one run id; the pings use curl (``-fsS -m 10 --retry 5``) and never
    stop the job. ``script`` and ``comment`` are kept as written (a shell comment
    goes last, where it hides nothing). Linux hosts (the run id comes from
    /proc)."""
    quoted = _cron_text(re.sub(r'(["\\$`])', r"\\\1", url))
    return (f'RID=$({UUID_SOURCE}); {CURL} "{quoted}/start?rid=$RID"; ( {script.strip()} ); '
            f'rc=$?; {CURL} "{quoted}/$rc?rid=$RID"' + (f" {comment.strip()}" if comment else ""))


def wrap_exec(script: str, url: str, shell: str = "") -> str:
    """``cronradar exec --url URL -- COMMAND``: a simple command (words of letters,
    digits and ``_@+=:,./-``, not starting with an assignment) as it is, anything
    else as ``sh -c '…'`` (the crontab's ``SHELL`` when it sets one), so pipes,
    ``&&`` and redirections stay inside the wrapped job."""
    script = script.strip()
    if not (_SIMPLE.fullmatch(script) and "=" not in script.split()[0]):
        script = f"{shell or 'sh'} -c '" + script.replace("'", "'\\''") + "'"
    return f"cronradar exec --url {_cron_text(shlex.quote(url))} -- {script}"


# ------------------------------------------------------------------- Kubernetes

_K8S_SPEC = {"schedule", "timeZone", "concurrencyPolicy", "startingDeadlineSeconds", "suspend",
             "jobTemplate"}
_K8S_JOB_SPEC = {"activeDeadlineSeconds", "backoffLimit", "template"}
_POLICIES = {"Allow": "allow", "Forbid": "forbid", "Replace": "replace"}
_TZ_PREFIX = re.compile(r"(CRON_TZ|TZ)=(\S*)\s+(.*)", re.DOTALL)


class _Unmappable(ValueError):
    """A CronJob document that cannot become a monitor (str: why)."""


def parse_k8s(text: str) -> Parsed:
    """Read Kubernetes manifests (multi-document YAML; ``kind: List`` documents,
    as ``kubectl get cronjobs -o yaml`` writes, are read item by item).

    Each ``apiVersion: batch/v1`` ``kind: CronJob`` becomes a :class:`Spec` with
    ``cron_semantics`` kubernetes; slug ``metadata.name`` (dots made hyphens),
    tag ``ns:<namespace>``. Mapping (``fields``, set on every import, with
    Kubernetes' defaults where the manifest says nothing): ``spec.schedule``
    (a ``CRON_TZ=``/``TZ=`` prefix gives the zone), ``spec.timeZone`` (none: UTC,
    the controller's usual zone, noted), ``concurrencyPolicy`` Allow/Forbid/
    Replace -> allow/forbid/replace, ``jobTemplate.spec.activeDeadlineSeconds`` ->
    max_runtime, ``jobTemplate.spec.backoffLimit`` (default 6) + 1 -> max_attempts
    (at most 100), ``suspend`` -> paused; ``startingDeadlineSeconds`` -> grace
    (none: :data:`DEFAULT_GRACE` for a new monitor, noted). Fields present but not
    mapped are noted per document. Other kinds and documents that are not a valid
    CronJob are reported. Raises ImportFailed for text that is not YAML (with the
    line) or too many CronJobs.
    """
    import yaml

    out = Parsed()
    loader = None
    try:
        loader = yaml.SafeLoader(text)  # checks the characters already
        number = 0
        while loader.check_node():
            node = loader.get_node()
            number += 1
            where = f"document {number} (line {node.start_mark.line + 1})"
            _k8s_document(out, where, loader.construct_document(node))
    except RecursionError:
        raise ImportFailed("not YAML this import reads: nested too deeply") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise ImportFailed(f"not YAML{at}: {getattr(e, 'problem', None) or e}") from None
    finally:
        if loader is not None:
            loader.dispose()
    return out


def _k8s_document(out: Parsed, where: str, doc) -> None:
    if doc is None:
        return
    if not isinstance(doc, dict):
        out.reported.append(Remark(where, "not a Kubernetes object (a mapping): skipped"))
        return
    kind, version = doc.get("kind"), doc.get("apiVersion")
    if kind == "List" and isinstance(doc.get("items"), list):
        for i, item in enumerate(doc["items"], 1):
            _k8s_document(out, f"{where} item {i}", item)
        return
    if kind != "CronJob":
        out.reported.append(Remark(where, f"kind {kind} ({version}) is not a CronJob: skipped"))
        return
    if version != "batch/v1":
        out.reported.append(Remark(where, f"apiVersion {version}: only batch/v1 CronJobs are "
                                   "read: skipped"))
        return
    try:
        spec, notes = _cronjob(where, doc)
    except _Unmappable as e:
        out.reported.append(Remark(where, f"{e}: not imported"))
        return
    if out.add(spec):
        out.notes.extend(Remark(where, n) for n in notes)


def _cronjob(where: str, doc: dict) -> tuple[Spec, list[str]]:
    """A CronJob -> (its spec, notes); raises _Unmappable."""
    notes = []
    meta = _mapping(doc, "metadata")
    name, namespace = meta.get("name"), meta.get("namespace")
    if not isinstance(name, str) or not name:
        raise _Unmappable("no metadata.name")
    if namespace is not None and not isinstance(namespace, str):
        raise _Unmappable("metadata.namespace must be a string")
    slug = name.replace(".", "-")
    if not SLUG.fullmatch(slug):
        raise _Unmappable(f"metadata.name '{name}' does not make a slug (letters, digits, '-', "
                          "'_', '.'; at most 100)")
    if slug != name:
        notes.append(f"slug {slug} (metadata.name {name} with '.' made '-')")
    spec = _mapping(doc, "spec")
    job = _mapping(_mapping(spec, "jobTemplate", "spec.jobTemplate"), "spec",
                   "spec.jobTemplate.spec")
    raw = spec.get("schedule")
    if not isinstance(raw, str) or not raw.strip():
        raise _Unmappable("no spec.schedule")
    zone = spec.get("timeZone")
    if zone is not None and not isinstance(zone, str):
        raise _Unmappable("spec.timeZone must be a string")
    expr = raw.strip()
    if prefix := _TZ_PREFIX.fullmatch(expr):
        if zone is not None:
            raise _Unmappable(f"spec.schedule starts with {prefix.group(1)}= and spec.timeZone "
                              "is set: Kubernetes refuses both")
        zone, expr = prefix.group(2), prefix.group(3).strip()
        notes.append(f"time zone {zone} from the schedule's {prefix.group(1)}= prefix "
                     "(Kubernetes does not support it officially: prefer spec.timeZone)")
    if expr.split()[0] == "@every":
        raise _Unmappable(f"schedule {raw!r}: @every runs at an interval, not on a cron "
                          "schedule: make an interval monitor for it")
    if zone is None:
        zone = "UTC"
        notes.append("no spec.timeZone: read in UTC, the usual zone of the cluster's "
                     "controller (set timeZone if yours differs)")
    try:
        schedule.validate_timezone(zone)
        expr = _schedule(expr, zone, schedule.KUBERNETES)
    except schedule.ScheduleError as e:
        raise _Unmappable(_schedule_error(raw, e)) from None
    policy = spec.get("concurrencyPolicy", "Allow")
    if policy not in _POLICIES:
        raise _Unmappable(f"spec.concurrencyPolicy {policy!r}: Allow, Forbid or Replace")
    backoff = _count(job, "backoffLimit", "spec.jobTemplate.spec.backoffLimit", 0)
    if backoff is None:
        backoff = K8S_BACKOFF_LIMIT
        notes.append(f"no backoffLimit: Kubernetes' default {K8S_BACKOFF_LIMIT}, so max_attempts "
                     f"{K8S_BACKOFF_LIMIT + 1}")
    if backoff + 1 > MAX_ATTEMPTS:
        notes.append(f"backoffLimit {backoff}: max_attempts {MAX_ATTEMPTS}, the most CronRadar "
                     "counts")
    suspend = spec.get("suspend", False)
    if not isinstance(suspend, bool):
        raise _Unmappable("spec.suspend must be true or false")
    active = _count(job, "activeDeadlineSeconds", "spec.jobTemplate.spec.activeDeadlineSeconds",
                    1, MAX_SECONDS)
    fields = {"kind": "cron", "schedule": expr, "timezone": zone,
              "cron_semantics": schedule.KUBERNETES, "period": None,
              "concurrency": _POLICIES[policy],
              "max_runtime": timedelta(seconds=active) if active else None,
              "max_attempts": min(backoff + 1, MAX_ATTEMPTS), "paused": suspend}
    defaults = {"name": f"{namespace}/{name}" if namespace else name}
    starting = _count(spec, "startingDeadlineSeconds", "spec.startingDeadlineSeconds", 0,
                      MAX_SECONDS)
    if starting is None:
        defaults["grace"] = DEFAULT_GRACE
        notes.append(f"no startingDeadlineSeconds: grace {_secs(DEFAULT_GRACE)} for a new "
                     "monitor (an existing one keeps its grace)")
    else:
        fields["grace"] = timedelta(seconds=max(starting, 1))
        if starting < 60:
            notes.append(f"grace {max(starting, 1)} s from startingDeadlineSeconds: it must also "
                         "cover the pod's start (scheduling, image pull) before its first ping")
    unmapped = ([f"spec.{k}" for k in spec if k not in _K8S_SPEC]
                + [f"spec.jobTemplate.spec.{k}" for k in job if k not in _K8S_JOB_SPEC])
    if unmapped:
        notes.append("not mapped: " + ", ".join(sorted(unmapped)))
    tags, long_tags = _tags("kubernetes", f"ns:{namespace}" if namespace else "")
    return Spec(slug, where, fields, defaults, tags), notes + long_tags


def _mapping(parent: dict, key: str, path: str | None = None) -> dict:
    value = parent.get(key, {})
    if not isinstance(value, dict):
        raise _Unmappable(f"{path or key} must be a mapping")
    return value


def _count(parent: dict, key: str, path: str, minimum: int, maximum: int = 2**31 - 1
           ) -> int | None:
    value = parent.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise _Unmappable(f"{path} must be a whole number from {minimum} to {maximum}")
    return value


# ------------------------------------------------------------------------ apply


@dataclass
class Outcome:
    """What :func:`apply` did (or, dry, would do); ``monitors``: slug -> the
    monitor (after the import; in a dry run the existing ones only)."""

    dry_run: bool
    created: list[dict] = field(default_factory=list)
    updated: list[dict] = field(default_factory=list)
    unchanged: list[dict] = field(default_factory=list)
    monitors: dict = field(default_factory=dict)

    def as_dict(self, parsed: Parsed) -> dict:
        """The diff as the API answers it (durations in seconds)::

            {"dry_run": bool,
             "created": [{"slug", "where", "id" (not in a dry run), "monitor": {field: value}}],
             "updated": [{"slug", "where", "id", "changes": {field: {"old", "new"}}}],
             "unchanged": [{"slug", "where", "id"}],
             "reported": [{"where", "message"}], "notes": [{"where", "message"}]}
        """
        return {"dry_run": self.dry_run, "created": self.created, "updated": self.updated,
                "unchanged": self.unchanged,
                "reported": [r.as_dict() for r in parsed.reported],
                "notes": [r.as_dict() for r in parsed.notes]}


def apply(project, specs: list[Spec], dry_run: bool, now: datetime) -> Outcome:
    """Create or update ``project``'s monitors from ``specs`` at ``now`` (upsert by
    slug), in one transaction, as the API does: a new monitor is armed by
    :func:`monitors.runs.rearm`, changes go through
    :func:`monitors.evaluator.edit` (only fields that differ; nothing is written
    for a monitor that already matches, so a second import changes nothing).
    ``dry_run``: only compare. Raises Conflict when a monitor is created or
    deleted by someone else meanwhile (nothing is written then)."""
    from django.db import IntegrityError, transaction

    from monitors import evaluator
    from monitors.models import Monitor
    from monitors.runs import rearm

    result = Outcome(dry_run)
    existing = {m.slug: m for m in Monitor.objects.filter(
        project=project, deleted_at__isnull=True, slug__in=[s.slug for s in specs])}
    try:
        with transaction.atomic():
            for spec in specs:
                monitor = existing.get(spec.slug)
                if monitor is None:
                    values = {**spec.defaults, **spec.fields, "tags": list(spec.tags)}
                    entry = {"slug": spec.slug, "where": spec.where,
                             "monitor": {k: _api(v) for k, v in values.items() if v is not None}}
                    if not dry_run:
                        monitor = Monitor(project=project, slug=spec.slug, **values)
                        rearm(monitor, now)
                        monitor.save()
                        entry = {**entry, "id": monitor.pk}
                    result.created.append(entry)
                else:
                    changes = {k: v for k, v in spec.fields.items() if getattr(monitor, k) != v}
                    tags = monitor.tags + [t for t in spec.tags if t not in monitor.tags]
                    if tags != monitor.tags:
                        changes["tags"] = tags
                    entry = {"slug": spec.slug, "where": spec.where, "id": monitor.pk}
                    if not changes:
                        result.unchanged.append(entry)
                    else:
                        result.updated.append({**entry, "changes": {
                            k: {"old": _api(getattr(monitor, k)), "new": _api(v)}
                            for k, v in changes.items()}})
                        if not dry_run:
                            monitor = evaluator.edit(monitor.pk, changes, now)
                if monitor is not None:
                    result.monitors[spec.slug] = monitor
    except (IntegrityError, Monitor.DoesNotExist):
        raise Conflict("a monitor of this import was created or deleted meanwhile: nothing was "
                       "changed; run the import again") from None
    return result


def _api(value):
    """A model value as the API shows it (durations in whole seconds)."""
    return int(value.total_seconds()) if isinstance(value, timedelta) else value


def _secs(td: timedelta) -> str:
    return f"{int(td.total_seconds())} s"


def report_lines(answer: dict) -> list[str]:
    """Human-readable lines for an :meth:`Outcome.as_dict` answer (the commands
    print them)."""
    head = "dry run, nothing changed: " if answer["dry_run"] else ""
    lines = [f"{head}{len(answer['created'])} created, {len(answer['updated'])} updated, "
             f"{len(answer['unchanged'])} unchanged, {len(answer['reported'])} reported"]
    verb = "would create" if answer["dry_run"] else "created"
    for c in answer["created"]:
        lines.append(f"  {verb} {c['slug']} ({c['where']}): "
                     + ", ".join(f"{k} {_shown(v)}" for k, v in c["monitor"].items()))
    verb = "would update" if answer["dry_run"] else "updated"
    for u in answer["updated"]:
        lines.append(f"  {verb} {u['slug']} ({u['where']}): " + ", ".join(
            f"{k} {_shown(c['old'])} -> {_shown(c['new'])}" for k, c in u["changes"].items()))
    lines += [f"  unchanged {u['slug']} ({u['where']})" for u in answer["unchanged"]]
    if answer["reported"]:
        lines.append("reported (not imported):")
        lines += [f"  {r['where']}: {r['message']}" for r in answer["reported"]]
    if answer["notes"]:
        lines.append("notes:")
        lines += [f"  {r['where'] + ': ' if r['where'] else ''}{r['message']}"
                  for r in answer["notes"]]
    return lines


def _shown(value) -> str:
    """A value in a report line: text in single quotes, the rest as JSON."""
    import json

    return f"'{value}'" if isinstance(value, str) else json.dumps(value)


def read_file(path: str) -> str:
    """The text of ``path`` (``-``: standard input), UTF-8; raises ImportFailed
    saying why it cannot be read."""
    import sys

    try:
        if path == "-":
            return sys.stdin.read()
        with open(path, encoding="utf-8") as f:
            return f.read()
    except UnicodeDecodeError:
        raise ImportFailed("not UTF-8 text") from None
    except OSError as e:
        raise ImportFailed(e.strerror or str(e)) from None


def is_system_crontab(path: str) -> bool:
    """Whether ``path`` is /etc/crontab or in /etc/cron.d (files with a user field)."""
    import os

    full = os.path.abspath(path)
    return full == "/etc/crontab" or os.path.dirname(full) == "/etc/cron.d"
