"""Crontabs read into monitor specs, and written back with each job pinging its
monitor.

:func:`parse_crontab` is pure (no ORM, no clock): a :class:`~monitors.imports.spec.Parsed`
with the :class:`~monitors.imports.spec.Spec` of each job, what was reported (left
out, with where and why: never guessed) and notes. :func:`wrap_crontab` prints the
crontab back with each imported job pinging its monitor (curl lines or
``cronradar exec``). Schedules are normalized (``@daily`` is stored as ``0 0 * * *``).
"""
from __future__ import annotations

import hashlib
import os
import re
import shlex

from django.utils.text import slugify

from monitors import schedule
from monitors.imports.spec import (
    DEFAULT_GRACE,
    SLUG,
    Job,
    Parsed,
    Remark,
    Spec,
    schedule_error,
    secs,
    tags_of,
    valid_schedule,
)

CURL = "curl -fsS -m 10 --retry 5 -o /dev/null"
UUID_SOURCE = "cat /proc/sys/kernel/random/uuid"
MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
SYSTEM_PATHS = ("/etc/crontab", "/etc/cron.d/")

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
            normalized = valid_schedule(expr, zone, schedule.DEBIAN)
        except schedule.ScheduleError as e:
            out.reported.append(Remark(where, f"{schedule_error(expr, e)}: not imported"))
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
        out.notes.append(Remark("", f"new monitors get grace {secs(DEFAULT_GRACE)} (how late "
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
    tags, long_tags = tags_of("crontab", f"user:{user}" if user else "")
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


def is_system_crontab(path: str) -> bool:
    """Whether ``path`` is /etc/crontab or in /etc/cron.d (files with a user field)."""
    full = os.path.abspath(path)
    return full == "/etc/crontab" or os.path.dirname(full) == "/etc/cron.d"
