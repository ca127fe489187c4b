"""Healthchecks checks imported as monitors, keeping their UUIDs (so every ping URL
of the jobs keeps working): ``manage.py importhealthchecks`` and the dashboard's
import page.

:func:`fetch_checks` reads a Healthchecks project's checks through its Management
API (``GET <url>/api/v3/checks/`` with ``X-Api-Key``); :func:`read_checks` reads
that answer saved to a file (or pasted). :func:`import_checks` maps each check
(:func:`monitors.healthchecks.check_fields`, the one home of the mapping) and
creates or updates one monitor per check in one transaction: the monitor with the
check's UUID in the project, else a new one with that UUID. At most
:data:`MAX_CHECKS` checks; the queries do not grow with the checks (new monitors
are inserted in batches of :data:`BATCH`), only each monitor that changes is
updated on its own (through :func:`monitors.evaluator.edit`). Fields that already
match are not written, so a second import changes nothing; tags are added, never
removed (as the other imports do). The answer is an
:class:`monitors.imports.apply.Outcome` with what was reported (checks not
imported) and noted (what was not mapped as it was), each coded.
"""
from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from uuid import UUID

import httpx
from django.db import IntegrityError, transaction

from accounts.models import Project
from monitors import creation, healthchecks, schedule
from monitors.imports.apply import Outcome, api_value, update
from monitors.imports.spec import (
    SLUG,
    Conflict,
    ImportFailed,
    Parsed,
    Remark,
    schedule_error,
    valid_schedule,
)
from monitors.models import UUID_TAKEN, Monitor, chosen_uuids_allowed

CHECKS_PATH = "/api/v3/checks/"
FETCH_TIMEOUT = 30.0  # seconds for each HTTP operation of the one request
MAX_ANSWER = 20 * 1024 * 1024  # bytes of an answer (or a file) read at most
# checks one import takes at most: a Healthchecks project's whole list (its plans
# allow thousands of checks; an answer of 10,000 is about 15 MB, within MAX_ANSWER)
MAX_CHECKS = 10_000
BATCH = 500  # new monitors written per INSERT
# what an existing monitor is updated from (its uuid is the check's already)
FIELDS = ("name", "slug", "description", "kind", "schedule", "timezone", "cron_semantics",
          "period", "grace", "paused", "methods")  # tags apart: added, never removed
PING_KEY = re.compile(r"[A-Za-z0-9_][-A-Za-z0-9_]{15,63}")  # as Healthchecks' (22)
UNPROVEN = ("a file's UUIDs cannot be shown to be yours on this installation (sign-up is not "
            "closed, CRONRADAR_SIGNUP): import with manage.py importhealthchecks --url and "
            "the Healthchecks project's read-write API key")


def fetch_checks(url: str, api_key: str, transport: httpx.BaseTransport | None = None
                 ) -> list[dict]:
    """The checks of the Healthchecks project whose API key is ``api_key``:
    ``GET <url>/api/v3/checks/`` (``url``: the site's root, as
    ``https://healthchecks.example.com``) with ``X-Api-Key``. ``transport``: for
    tests. Raises ImportFailed saying what went wrong (unreachable, the key
    refused, not a Healthchecks answer)."""
    endpoint = url.rstrip("/") + CHECKS_PATH
    if not endpoint.startswith(("https://", "http://")):
        raise ImportFailed(f"--url {url!r}: the Healthchecks site's address, "
                           "https://healthchecks.example.com")
    try:
        with httpx.Client(transport=transport, timeout=FETCH_TIMEOUT) as client:
            resp = client.get(endpoint, headers={"X-Api-Key": api_key,
                                                 "Accept": "application/json"})
    except httpx.HTTPError as e:
        raise ImportFailed(f"GET {endpoint}: {type(e).__name__}: {e}") from None
    if resp.status_code in (401, 403):
        raise ImportFailed(f"GET {endpoint} answered {resp.status_code}: the API key was "
                           "refused; use the project's read-write API key (Project Settings)")
    if resp.status_code != 200:
        raise ImportFailed(f"GET {endpoint} answered {resp.status_code}: not the checks "
                           "(is the URL the Healthchecks site's root?)")
    if len(resp.content) > MAX_ANSWER:
        raise ImportFailed(f"GET {endpoint}: the answer is over {MAX_ANSWER} bytes")
    return read_checks(resp.text, f"GET {endpoint}")


def read_checks(text: str, source: str = "the file") -> list[dict]:
    """The checks of a ``GET /api/v3/checks/`` answer (``{"checks": [...]}``; a bare
    list of checks is read too). Raises ImportFailed naming ``source`` for text
    that is not such an answer."""
    if len(text) > MAX_ANSWER:
        raise ImportFailed(f"{source} is over {MAX_ANSWER} characters")
    try:
        data = json.loads(text)
    except ValueError as e:
        raise ImportFailed(f"{source} is not JSON: {e}") from None
    checks = data.get("checks") if isinstance(data, dict) else data
    if not isinstance(checks, list):
        raise ImportFailed(f"{source} is not the answer of GET /api/v3/checks/: "
                           '{"checks": [...]}')
    if len(checks) > MAX_CHECKS:
        raise ImportFailed(f"{len(checks)} checks: at most {MAX_CHECKS} in one import")
    return checks


def import_checks(project, checks: list, *, proven: bool, dry_run: bool, now: datetime,
                  ping_key: str | None = None, quota: bool = True) -> tuple[Parsed, Outcome]:
    """Create or update one monitor of ``project`` per check at ``now`` (module
    docstring); ``dry_run``: only compare. ``proven``: the checks were fetched
    with the Healthchecks key that owns them (their UUIDs may be taken); else
    their UUIDs may be taken only where :func:`monitors.models.chosen_uuids_allowed`.
    Returns (what was reported and noted, the outcome; their ``as_dict`` is the
    answer). A check whose UUID another project's monitor has is reported with
    the one answer a UUID in use gets. Raises ImportFailed when the UUIDs cannot
    be taken, Conflict when a monitor was created meanwhile (nothing written),
    and (``quota``, dry run included) :class:`accounts.plans.PlanLimit` when the
    new monitors would take the plan over its limit (nothing written; False: the
    operator's command).

    ``ping_key``: the Healthchecks project's ping key, made the project's too (in
    the same transaction), so the checks' slug URLs ``/ping/<ping key>/<slug>``
    work here; only where sign-up is closed (Healthchecks' API cannot show it is
    yours), and not one another project has: else ImportFailed."""
    if not (proven or chosen_uuids_allowed()):
        raise ImportFailed(UNPROVEN)
    parsed, wanted = Parsed(), []
    if ping_key == project.ping_key:
        ping_key = None  # already: nothing to do or say
    if ping_key is not None:
        _check_ping_key(project, ping_key)
        parsed.notes.append(Remark("", f"the project's ping key {'would be' if dry_run else 'is'}"
                                   f" {ping_key}, Healthchecks': its checks' slug URLs "
                                   "/ping/<ping key>/<slug> work here (the old key's do not)",
                                   healthchecks.Code.PING_KEY.value))
    for number, check in enumerate(checks, 1):
        where = _where(number, check)
        try:
            fields, notes = healthchecks.check_fields(check)
            values = _values(fields)
        except healthchecks.Refused as e:
            parsed.reported.append(_remark(where, e.note))
            continue
        parsed.notes += [_remark(where, n) for n in notes]
        if check.get("channels"):
            parsed.notes.append(Remark(where, "channels not mapped: the monitor notifies "
                                       "every channel of the project (choose them in "
                                       "CronRadar)", healthchecks.Code.NOT_MAPPED.value))
        wanted.append((where, values))
    return parsed, _apply(project, parsed, wanted, dry_run, now, ping_key, quota)


def _check_ping_key(project, key: str) -> None:
    """Raises ImportFailed unless ``key`` may become ``project``'s ping key."""
    if not chosen_uuids_allowed():
        raise ImportFailed("a chosen ping key needs sign-up closed on this installation "
                           "(CRONRADAR_SIGNUP=closed)")
    if not PING_KEY.fullmatch(key):
        raise ImportFailed("the ping key is 16 to 64 letters, digits, '-' and '_' (Healthchecks' "
                           "Project Settings show it)")
    if Project.objects.filter(ping_key=key).exclude(pk=project.pk).exists():
        raise ImportFailed("this ping key cannot be used: another project has it")


def _where(number: int, check) -> str:
    """``check 3 (Database Backup)``: its place in the list and its name (or slug,
    or UUID)."""
    name = None
    if isinstance(check, dict):
        name = check.get("name") or check.get("slug") or check.get("uuid")
    return f"check {number}" + (f" ({str(name)[:60]})" if name else "")


def _remark(where: str, note: healthchecks.Note) -> Remark:
    return Remark(where, note.message, note.code.value)


def _refused(code: healthchecks.Code, message: str) -> healthchecks.Refused:
    return healthchecks.Refused(healthchecks.Note(code, message))


def _values(fields: dict) -> dict:
    """Mapped fields (the API's values) -> model values, checked as the API
    checks them; raises Refused (``invalid``) for what the API would refuse."""
    invalid = healthchecks.Code.INVALID
    if "uuid" not in fields:
        raise _refused(invalid, "no uuid: not a check of GET /api/v3/checks/")
    if "kind" not in fields:
        raise _refused(invalid, "neither timeout nor schedule: no schedule to watch")
    if "grace" not in fields:
        raise _refused(invalid, "no grace")
    name, slug = fields.get("name", ""), fields.get("slug", "")
    if not name or len(name) > 200:
        raise _refused(invalid, "the name must have 1 to 200 characters")
    if not SLUG.fullmatch(slug):
        raise _refused(invalid, f"slug {slug!r}: letters, digits, '-' and '_', at most 100")
    zone = fields.get("timezone") or "UTC"
    values = {"uuid": UUID(fields["uuid"]), "name": name, "slug": slug,
              "description": fields.get("description", ""), "tags": fields.get("tags", []),
              "kind": fields["kind"], "timezone": zone,
              "cron_semantics": Monitor.Semantics.DEBIAN,  # cronsim's, Healthchecks' library
              "grace": timedelta(seconds=fields["grace"]),
              "paused": fields.get("paused", False), "methods": fields.get("methods", "")}
    try:
        schedule.validate_timezone(zone)
    except schedule.ScheduleError as e:
        raise _refused(invalid, f"tz: {e}") from None
    try:
        if fields["kind"] == Monitor.Kind.CRON:
            values.update(schedule=valid_schedule(fields["schedule"], zone, schedule.DEBIAN),
                          period=None)
        else:
            values.update(schedule="", period=timedelta(seconds=fields["period"]))
    except schedule.ScheduleError as e:
        raise _refused(invalid, schedule_error(fields.get("schedule", ""), e)) from None
    return values


def _apply(project, parsed: Parsed, wanted: list, dry_run: bool, now: datetime,
           ping_key: str | None, quota: bool) -> Outcome:
    """Create or update the monitors of ``wanted`` ((where, model values)), and set
    the project's ``ping_key`` when given, in one transaction; ``quota``: first
    refuse the whole import (PlanLimit, nothing written) when its new monitors
    would take the plan over its limit. Reported: checks whose UUID another
    project's monitor has, or whose slug (and the made one) other monitors have."""
    result = Outcome(dry_run)
    uuids = {values["uuid"] for _, values in wanted}
    holders = {m.uuid: m for m in Monitor.objects.filter(uuid__in=uuids,
                                                         deleted_at__isnull=True)}
    # slug -> (the UUID of the monitor that has it, who that is for a note)
    taken = {slug: (uuid, "another check" if uuid in uuids else "another monitor of the "
                    "project")
             for slug, uuid in Monitor.objects.filter(project=project, deleted_at__isnull=True)
             .values_list("slug", "uuid")}
    try:
        with transaction.atomic():
            seen, new, changed = set(), [], []
            for where, values in wanted:
                monitor = holders.get(values["uuid"])
                if values["uuid"] in seen:
                    parsed.reported.append(Remark(where, f"uuid {values['uuid']}: an earlier "
                                                  "check has it: not imported",
                                                  healthchecks.Code.UUID_TAKEN.value))
                elif monitor is not None and monitor.project_id != project.pk:
                    parsed.reported.append(Remark(where, f"uuid {values['uuid']}: "
                                                  f"{UUID_TAKEN}",
                                                  healthchecks.Code.UUID_TAKEN.value))
                elif _free_slug(values, taken, where, parsed):
                    if monitor is None:
                        new.append(_create(project, values, where, dry_run, result))
                    else:
                        changed.append((monitor, values, where))
                seen.add(values["uuid"])
            if quota:  # the whole import, before anything is written
                creation.check(project, len(new))
            if ping_key is not None and not dry_run:
                Project.objects.filter(pk=project.pk).update(ping_key=ping_key)
                project.ping_key = ping_key
            for monitor, values, where in changed:
                _update(monitor, values, where, now, result)
            _insert(project, [made for made in new if made is not None], now, result)
    except (IntegrityError, Monitor.DoesNotExist):
        raise Conflict("a monitor with one of these UUIDs or slugs was created or deleted "
                       "meanwhile: nothing was changed; run the import again") from None
    return result


def _free_slug(values: dict, taken: dict, where: str, parsed: Parsed) -> bool:
    """Keep the check's slug when no other monitor or earlier check has it, else
    take the slug of its name plus a UUID prefix (noted ``slug_made``); False
    (reported) when that one is taken too. Records the slug in ``taken``."""
    slug, uuid = values["slug"], values["uuid"]
    holder = taken.get(slug)
    if holder is not None and holder[0] != uuid:
        made = healthchecks.made_slug(values["name"], str(uuid))
        if taken.get(made, (uuid,))[0] != uuid:
            parsed.reported.append(Remark(where, f"slug '{slug}': {holder[1]} has it, and "
                                          f"'{made}' is taken too: not imported",
                                          healthchecks.Code.SLUG_MADE.value))
            return False
        parsed.notes.append(Remark(where, f"slug '{made}': {holder[1]} has the slug "
                                   f"'{slug}'", healthchecks.Code.SLUG_MADE.value))
        values["slug"] = slug = made
    taken[slug] = (uuid, "another check")
    return True


def _create(project, values: dict, where: str, dry_run: bool,
            result: Outcome) -> tuple[dict, Monitor] | None:
    """Record the creation in ``result``; returns (its entry, the monitor not yet
    saved) for :func:`_insert`, None in a dry run."""
    entry = {"slug": values["slug"], "where": where,
             "monitor": {k: api_value(v) for k, v in values.items() if v is not None}}
    result.created.append(entry)
    if dry_run:
        return None
    return entry, Monitor(project=project, **values)


def _insert(project, new: list[tuple[dict, Monitor]], now: datetime, result: Outcome) -> None:
    """Save the monitors :func:`_create` made, :data:`BATCH` per query (the plan
    was checked for all of them), and give their entries their ids."""
    creation.create_many(project, [monitor for _, monitor in new], now, quota=False,
                         batch_size=BATCH)
    for entry, monitor in new:
        entry["id"] = monitor.pk
        result.monitors[monitor.slug] = monitor


def _update(monitor: Monitor, values: dict, where: str, now: datetime,
            result: Outcome) -> None:
    changes = {k: values[k] for k in FIELDS if getattr(monitor, k) != values[k]}
    result.monitors[values["slug"]] = update(result, monitor, changes, values["tags"],
                                             values["slug"], where, now)
