"""Healthchecks -> CronRadar: the one home of the inbound mapping of a check.

A Healthchecks check is the JSON object ``GET /api/v3/checks/`` lists (and the
body ``POST /api/v3/checks/`` takes): ``name``, ``slug``, ``tags`` (one
space-separated string), ``desc``, ``timeout`` / ``grace`` (seconds),
``schedule`` + ``tz`` (a cron check), ``methods`` (``""`` or ``"POST"``),
``manual_resume``, ``status``, ``uuid``, and keys CronRadar has no counterpart
for. :func:`check_fields` turns one into the field values the monitors API
(:class:`monitors.api.MonitorSerializer`) takes, and says in coded
:class:`Note` s what it could not map as it was. A list of checks (the
importer's, :mod:`monitors.imports.healthchecks`) must also have unique slugs:
:func:`made_slug` makes one for a check whose slug is taken.

Only keys present are mapped (a partial update maps to a partial update);
``kind`` is set only when ``schedule`` or ``timeout`` is given (``schedule``
wins over ``timeout``, as in Healthchecks). Healthchecks' defaults for a new
check are :data:`DEFAULTS`. ``unique``, ``channels`` and ``api_key`` are the
caller's business (an upsert's filter, notification routing, authentication)
and are neither mapped nor noted here. Pure: no database, no clock.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from uuid import UUID

from django.utils.text import slugify

# A new Healthchecks check's timeout and grace, in seconds (hc.api.models).
DEFAULTS = {"timeout": 86400, "grace": 3600}
MAX_TAGS = 50  # monitors.api.MAX_TAGS
MAX_TAG = 50  # characters a CronRadar tag may have
SLUG_UUID_PREFIX = 8  # characters of the UUID a made slug ends with


class Code(enum.StrEnum):
    """What a :class:`Note` is about."""

    NAME_MADE = "name_made"
    """The check has no name: the monitor is named after its slug (or UUID)."""
    SLUG_MADE = "slug_made"
    """The check's slug is empty, or another check or monitor has it: the
    monitor's slug is the slug of its name plus a UUID prefix."""
    TAG_NOT_MAPPED = "tag_not_mapped"
    """A tag CronRadar cannot store (a space in it, longer than 50 characters,
    beyond the 50th tag): left out."""
    PAUSED_AUTO_RESUME = "paused_auto_resume"
    """Warning: paused with ``manual_resume: false``; Healthchecks resumes such a
    check on its next ping, CronRadar keeps it paused until it is resumed."""
    STATUS = "status"
    """The check's status, and the CronRadar state it starts in instead."""
    NOT_MAPPED = "not_mapped"
    """Keys with values CronRadar has no counterpart for (keyword filters, email
    subjects, unknown keys): ignored."""
    READ_ONLY_KEY = "read_only_key"
    """Refused: the check came through a read-only API key (``unique_key``, no
    ``uuid``), which cannot prove the UUID, nor give it."""
    ONCALENDAR = "oncalendar"
    """Refused: a systemd OnCalendar schedule; CronRadar reads cron expressions."""
    INVALID = "invalid"
    """Refused: a value of the wrong type or outside Healthchecks' own rules."""
    UUID_TAKEN = "uuid_taken"
    """Not imported: another project's monitor, or another check of the same
    import, has the UUID (the same answer whoever has it)."""
    PING_KEY = "ping_key"
    """The project takes the Healthchecks project's ping key (the importer's
    ``--ping-key``), so slug URLs keep working."""


@dataclass(frozen=True)
class Note:
    """Something said about one check's mapping: a ``code`` and a sentence for
    people (``message``, naming the values concerned)."""

    code: Code
    message: str

    def as_dict(self) -> dict:
        return {"code": self.code.value, "message": self.message}


class Refused(ValueError):
    """The check cannot be mapped at all; ``note`` says why (codes
    ``read_only_key``, ``oncalendar``, ``invalid``)."""

    def __init__(self, note: Note):
        super().__init__(note.message)
        self.note = note


# How each Healthchecks status maps: (paused, what the note says). CronRadar
# derives its status from the pings it receives, so an imported monitor starts
# as a new one would, waiting for its next ping.
STATUSES = {
    "new": (False, "status new: CronRadar's is new too, until the first ping"),
    "up": (False, "status up: starts as new in CronRadar and is up from its next ping "
                  "(the ping history stays in Healthchecks)"),
    "grace": (False, "status grace (late): starts as new in CronRadar, waiting for its "
                     "next ping; no incident is opened for the late run"),
    "down": (False, "status down: starts as new in CronRadar, waiting for its next ping; "
                    "no incident is opened for Healthchecks' outage"),
    "paused": (True, "status paused: paused in CronRadar"),
}

# Keys that are answers, not settings (Healthchecks computes them): not mapped,
# nothing to say. Maintained by hand from templates/docs/api.md.
READ_ONLY = frozenset({
    "n_pings", "started", "last_ping", "next_ping", "last_duration", "badge_url",
    "ping_url", "update_url", "pause_url", "resume_url", "unique_key",
})
# The caller's keys (see the module docstring).
CALLERS = frozenset({"unique", "channels", "api_key"})
# Settings CronRadar has no counterpart for, with their defaults (a default value
# is not worth a note).
UNMAPPED_DEFAULTS = {
    "start_kw": "", "success_kw": "", "failure_kw": "", "filter_subject": False,
    "filter_body": False, "filter_http_body": False, "filter_default_fail": False,
    "subject": "", "subject_fail": "",
}
MAX_DESCRIPTION = 10_000  # characters; monitors.api's bound of ``description``
MAPPED = frozenset({"name", "slug", "tags", "desc", "timeout", "grace", "schedule", "tz",
                    "methods", "manual_resume", "status", "uuid"})


def check_fields(check: dict) -> tuple[dict, list[Note]]:
    """One Healthchecks check -> (monitor field values, notes).

    The values are what :class:`monitors.api.MonitorSerializer` takes, for the keys
    the check has: ``name``, ``slug``, ``tags`` (list), ``description``, ``kind``
    (``interval`` with ``period`` from ``timeout``; ``cron`` with ``schedule``, and
    ``timezone`` from ``tz``), ``grace`` (seconds), ``paused`` (from ``status``),
    ``methods`` and ``uuid`` (a canonical UUID string). A slug is always given
    when the check has a slug, a name or a UUID (an empty slug: the slug of the
    name plus the UUID's first 8 characters, noted ``slug_made``).

    Values are checked for their type and Healthchecks' own rules (timeout and
    grace whole seconds from 60 to 31536000 as Healthchecks refuses others,
    ``desc`` at most :data:`MAX_DESCRIPTION` characters, CronRadar's own bound,
    methods ``""`` or ``"POST"``); whether a cron expression or a time zone is
    valid is the serializer's to say. Raises :class:`Refused` for a check that
    cannot be mapped: one that is not a JSON object, has a value of the wrong
    type (``invalid``), came through a read-only key (``read_only_key``) or has
    an OnCalendar schedule (``oncalendar``).
    """
    if not isinstance(check, dict):
        raise _refused(Code.INVALID, "a check must be a JSON object")
    if "uuid" not in check and "unique_key" in check:
        raise _refused(Code.READ_ONLY_KEY, "the check was read with a read-only API key "
                       "(it has a unique_key and no uuid): use a read-write key, which "
                       "gives the check's UUID and shows it is yours")
    fields: dict = {}
    notes: list[Note] = []
    uuid = _uuid(check)
    if uuid is not None:
        fields["uuid"] = uuid
    name = _string(check, "name")
    slug = _string(check, "slug")
    if name is not None:
        fields["name"] = name
    if slug is not None:
        fields["slug"] = slug
        if not slug:
            fields["slug"] = made_slug(name or "", uuid)
            notes.append(Note(Code.SLUG_MADE, f"slug '{fields['slug']}': the check's slug is "
                              "empty"))
    if not name and ("name" in check or "uuid" in check) and (made := fields.get("slug") or uuid):
        fields["name"] = made
        notes.append(Note(Code.NAME_MADE, f"name '{made}': the check has no name"))
    if "tags" in check:
        fields["tags"], dropped = _tags(check["tags"])
        notes += dropped
    if (desc := _string(check, "desc")) is not None:
        if len(desc) > MAX_DESCRIPTION:
            raise _refused(Code.INVALID, f"desc: at most {MAX_DESCRIPTION:,} characters "
                           f"(this one has {len(desc):,}); Healthchecks sets no bound, "
                           "CronRadar does")
        fields["description"] = desc
    fields.update(_schedule(check))
    if (grace := _seconds(check, "grace")) is not None:
        fields["grace"] = grace
    if (methods := check.get("methods")) is not None or "methods" in check:
        if methods not in ("", "POST"):
            raise _refused(Code.INVALID, f"methods {_shown(methods)}: \"\" or \"POST\"")
        fields["methods"] = methods
    manual_resume = check.get("manual_resume", False)
    if not isinstance(manual_resume, bool):
        raise _refused(Code.INVALID, "manual_resume must be true or false")
    if "status" in check:
        status = check["status"]
        if status not in STATUSES:
            raise _refused(Code.INVALID, f"status {_shown(status)}: one of "
                           + ", ".join(STATUSES))
        fields["paused"], said = STATUSES[status]
        notes.append(Note(Code.STATUS, said))
        if status == "paused" and not manual_resume:
            notes.append(Note(Code.PAUSED_AUTO_RESUME, "warning: paused with manual_resume "
                              "false: Healthchecks would resume it on its next ping; "
                              "CronRadar keeps it paused until you resume it"))
    unmapped = sorted(k for k, v in check.items()
                      if k not in MAPPED | READ_ONLY | CALLERS
                      and UNMAPPED_DEFAULTS.get(k, _UNKNOWN) != v)
    if unmapped:
        notes.append(Note(Code.NOT_MAPPED, "not mapped: " + ", ".join(unmapped)))
    return fields, notes


def made_slug(name: str, uuid: str | None) -> str:
    """The slug of ``name`` plus the first 8 characters of ``uuid`` (``check`` for
    a name that gives no slug; the name's alone without a UUID), at most 100
    characters."""
    prefix = uuid[:SLUG_UUID_PREFIX] if uuid else ""
    base = slugify(name)[:100 - len(prefix) - 1] or ("check" if prefix else "")
    return f"{base}-{prefix}" if prefix else base


_UNKNOWN = object()


def _refused(code: Code, message: str) -> Refused:
    return Refused(Note(code, message))


def _shown(value) -> str:
    return repr(value)[:40]


def _uuid(check: dict) -> str | None:
    if "uuid" not in check:
        return None
    raw = check["uuid"]
    try:
        return str(UUID(raw)) if isinstance(raw, str) and len(raw) == 36 else _bad_uuid(raw)
    except ValueError:
        return _bad_uuid(raw)


def _bad_uuid(raw) -> None:
    raise _refused(Code.INVALID, f"uuid {_shown(raw)} is not a UUID")


def _string(check: dict, key: str) -> str | None:
    if key not in check:
        return None
    value = check[key]
    if not isinstance(value, str):
        raise _refused(Code.INVALID, f"{key} must be a string")
    return value


def _seconds(check: dict, key: str) -> int | None:
    """A duration key: whole seconds, 60 to 31536000 (Healthchecks' range)."""
    if key not in check:
        return None
    value = check[key]
    if isinstance(value, bool) or not isinstance(value, int) or not 60 <= value <= 31536000:
        raise _refused(Code.INVALID, f"{key} must be a whole number of seconds from 60 to "
                       f"31536000, got {_shown(value)}")
    return value


def _tags(raw) -> tuple[list[str], list[Note]]:
    """Healthchecks' tags (a space-separated string; a list is read too, as its
    items) -> (the tags CronRadar keeps, in order, once each; notes on the rest)."""
    if isinstance(raw, str):
        given = raw.split()
    elif isinstance(raw, list) and all(isinstance(t, str) for t in raw):
        given = raw
    else:
        raise _refused(Code.INVALID, "tags must be a string of space-separated tags")
    kept, notes = [], []
    for tag in given:
        if not tag or tag in kept:
            continue
        why = ("contains a space" if any(c.isspace() for c in tag) else
               f"longer than {MAX_TAG} characters" if len(tag) > MAX_TAG else
               f"more than {MAX_TAGS} tags" if len(kept) >= MAX_TAGS else None)
        if why:
            notes.append(Note(Code.TAG_NOT_MAPPED, f"tag {_shown(tag)} not mapped: {why}"))
        else:
            kept.append(tag)
    return kept, notes


def _schedule(check: dict) -> dict:
    """The schedule fields: a cron monitor for a ``schedule`` (with ``tz``), else an
    interval one for a ``timeout``."""
    expr = _string(check, "schedule")
    tz = _string(check, "tz")
    timeout = _seconds(check, "timeout")
    out = {} if tz is None else {"timezone": tz}
    if expr:
        if "\n" in expr.strip() or len(expr.split()) != 5:  # Healthchecks' guess_kind
            raise _refused(Code.ONCALENDAR, f"schedule {_shown(expr)} is an OnCalendar "
                           "expression: CronRadar reads 5-field cron expressions; write it "
                           "as one")
        return {**out, "kind": "cron", "schedule": expr.strip()}
    if timeout is not None:
        return {**out, "kind": "interval", "period": timeout}
    return out
