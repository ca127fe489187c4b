"""What the importers share: the :class:`Spec` of a monitor a file declares, what a
parser read (:class:`Parsed`, with :class:`Remark` s reported or noted), the
errors that stop an import, and the small rules both parsers apply (schedules
validated and normalized by :mod:`monitors.schedule`, tags the API takes).

Fields of a spec: ``fields`` are what the file states, set when a monitor is made
and on every later import; ``defaults`` (a derived name, a default grace) are
only set on a new monitor, so what was tuned through the API afterwards stays;
``after_grace`` fields are set on every import to the monitor's grace (after the
import) plus a duration; ``kept`` fields are not set by the file, and an existing
monitor's value is kept with a note; ``tags`` are added when missing and never
removed.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from datetime import timedelta

from monitors import schedule

MAX_SPECS = 1000  # monitors one import may declare
DEFAULT_GRACE = timedelta(seconds=300)  # a new monitor's grace when the file gives none
MAX_SECONDS = 10 * 365 * 86400  # the API's limit on durations (monitors.api.Seconds)
MAX_ATTEMPTS = 100  # the API's limit on max_attempts
SLUG = re.compile(r"[-a-zA-Z0-9_]{1,100}")


class ImportFailed(ValueError):
    """The whole file cannot be imported (not YAML, too many jobs); str(e) is
    the message for the user."""


class Conflict(ImportFailed):
    """The project changed under the import (a monitor was created or deleted
    meanwhile); running it again settles it."""


@dataclass(frozen=True)
class Remark:
    """Something said about a place in the file: ``where`` is ``line 7``,
    ``document 2 (line 14)``, ``check 3 (Backups)`` or ``""`` (the whole file);
    ``code``: what it is about, where the importer codes it (Healthchecks':
    :class:`monitors.healthchecks.Code`), else ``""``."""

    where: str
    message: str
    code: str = ""

    def as_dict(self) -> dict:
        """``{"where", "message"}``, and ``"code"`` when there is one."""
        return {"where": self.where, "message": self.message,
                **({"code": self.code} if self.code else {})}


@dataclass
class Spec:
    """One monitor a file declares: ``slug`` (its key in the project),
    ``where`` it came from, ``fields`` (model values: set on create and on every
    import), ``defaults`` (set on create only), ``tags`` (added, never removed),
    ``after_grace`` (field -> timedelta: set on create and on every import to the
    monitor's grace after the import plus that duration)
    and ``kept`` (field -> why the file does not set it: an existing monitor's
    value, when set, is kept and noted with that reason)."""

    slug: str
    where: str
    fields: dict
    defaults: dict = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    after_grace: dict = field(default_factory=dict)
    kept: dict = field(default_factory=dict)

    def values(self, monitor=None) -> dict:
        """The model values this spec sets: on a new monitor (``monitor`` None) its
        defaults, fields and ``after_grace`` fields (tags apart); on an existing
        one its fields and ``after_grace`` fields (grace: the file's, else the
        monitor's)."""
        values = {**self.defaults, **self.fields} if monitor is None else dict(self.fields)
        if self.after_grace:
            grace = values.get("grace") or monitor.grace  # a grace is at least 1 s
            values.update({k: grace + d for k, d in self.after_grace.items()})
        return values


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


def schedule_error(expr: str, error: Exception) -> str:
    """A schedule's error message, naming the schedule once."""
    return str(error) if expr in str(error) else f"schedule '{expr}': {error}"


def valid_schedule(expr: str, zone: str, semantics: str) -> str:
    """:func:`schedule.validate_cron`, and short enough to store (200 characters)."""
    normalized = schedule.validate_cron(expr, zone, semantics)
    if len(normalized) > 200:
        raise schedule.ScheduleError("longer than 200 characters")
    return normalized


def tags_of(*tags: str) -> tuple[tuple[str, ...], list[str]]:
    """(the non-empty ``tags`` the API takes, notes on those longer than 50
    characters, which are left out)."""
    return (tuple(t for t in tags if 0 < len(t) <= 50),
            [f"tag '{t}' is longer than 50 characters: left out" for t in tags if len(t) > 50])


def secs(td: timedelta) -> str:
    """``td`` as report text: whole seconds and " s"."""
    return f"{int(td.total_seconds())} s"


def read_file(path: str) -> str:
    """The text of ``path`` (``-``: standard input), UTF-8; raises ImportFailed
    saying why it cannot be read."""
    try:
        if path == "-":
            return sys.stdin.read()
        with open(path, encoding="utf-8") as f:
            return f.read()
    except UnicodeDecodeError:
        raise ImportFailed("not UTF-8 text") from None
    except OSError as e:
        raise ImportFailed(e.strerror or str(e)) from None
