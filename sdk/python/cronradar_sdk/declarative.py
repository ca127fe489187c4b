"""Monitors as one file: ``cronradar apply`` and ``cronradar export``.

A file declares a project's monitors (by slug) and the channels and escalation
policies they notify (by name; monitors and policies refer to them by name). Its
format is ``monitors.schema.json`` beside this module (JSON Schema 2020-12): JSON
always, YAML when PyYAML is installed (``cronradar-sdk[yaml]``). Applying upserts
every object the file declares through the API's upserts (``PUT …/by-slug/`` and
``…/by-name/``), in the order channels, policies, monitors, and answers a diff:
one :class:`Change` per object, ``created``, ``changed`` (with each field's old and
new value), ``unchanged`` (not written) or ``pruned``. ``prune`` deletes the
project's objects the file does not declare, of each kind the file has a section
for (a file without ``channels`` leaves channels alone), from lists read in full.

Credentials in a channel's ``config`` (every field but ``to`` and ``region``) are
exported as ``${ENV_NAME}`` placeholders; applying expands ``${NAME}`` in a
channel's config strings from the environment (a variable that is not set is an
error naming it), and a credential given as ``"***"`` or left out keeps the stored
one.

The logic is pure over a :class:`Backend` (read the project, upsert, delete):
:class:`HttpBackend` is the API through :class:`cronradar_sdk.client.ApiClient`; the
server's dashboard import has its own over the server's serializers.
"""
from __future__ import annotations

import json
import re
import urllib.parse
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, NamedTuple

from cronradar_sdk.client import ApiClient, ApiError

SCHEMA_PATH = Path(__file__).with_name("monitors.schema.json")
SHOWN = ("to", "region")  # config fields that are not credentials (as the API's readers see)
READ_ONLY_CONFIG = ("signing_secret",)  # config the API adds to its answer; never in a file
MASKED = "***"  # a credential the file does not give: keep the stored one
PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def schema() -> dict:
    """The file format: the JSON Schema shipped with the SDK."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


class Kind(NamedTuple):
    """One kind of object a file declares: its ``section`` (the file's key),
    ``noun`` (in the diff), the API's list ``path``, the ``key`` field that names
    an object and the upsert's ``by`` path segment."""

    section: str
    noun: str
    path: str
    key: str
    by: str


CHANNELS = Kind("channels", "channel", "channels/", "name", "by-name")
POLICIES = Kind("escalation_policies", "escalation policy", "escalation-policies/", "name",
                "by-name")
MONITORS = Kind("monitors", "monitor", "monitors/", "slug", "by-slug")
KINDS = (CHANNELS, POLICIES, MONITORS)  # the order of upserts; prunes go the other way
_DEFS = {"channels": "channel", "escalation_policies": "escalation_policy",
         "monitors": "monitor"}
_SCHEMA_DEFS = schema()["$defs"]
FIELDS = {k.section: tuple(_SCHEMA_DEFS[_DEFS[k.section]]["properties"]) for k in KINDS}


class FileError(ValueError):
    """A file that cannot be applied: ``problems``, each naming where
    (``monitors[2] (nightly): grace: …``)."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


class Change(NamedTuple):
    """What applying does to one object: ``action`` (created, changed, unchanged,
    pruned), its ``kind`` and ``key`` (slug or name), ``fields`` {field: (old, new)}
    for a change (credentials shown as ``***``), ``entry`` (the file's, or None when
    pruned) and ``current`` (the API's object, or None when created)."""

    action: str
    kind: Kind
    key: str
    fields: dict
    entry: dict | None
    current: dict | None

    def lines(self) -> list[str]:
        """The diff's lines for it: ``changed monitor nightly: grace: 300 → 600``."""
        head = f"{self.action} {self.kind.noun} {self.key}"
        if self.action != "changed":
            return [head]
        return [f"{head}: {name}: {_shown(old)} → {_shown(new)}"
                + (" (a credential: not shown)" if MASKED in (old, new) else "")
                for name, (old, new) in self.fields.items()]


class State(NamedTuple):
    """A project as the API shows it: its channels, escalation policies and monitors
    (lists of the API's objects)."""

    channels: list
    escalation_policies: list
    monitors: list

    def of(self, kind: Kind) -> list:
        return getattr(self, kind.section)


class Backend:
    """Where a file is applied: reads a project, upserts and deletes its objects."""

    def read(self) -> State:
        raise NotImplementedError

    def put(self, kind: Kind, key: str, body: dict) -> dict:
        """Create or update the object ``key``; answers the API's object."""
        raise NotImplementedError

    def delete(self, kind: Kind, obj: dict) -> None:
        raise NotImplementedError

    def usage(self) -> dict | None:
        """The organisation's usage against its plan (``GET /api/v1/usage/``'s answer:
        ``{"plan": name, "monitors": {"used": n, "limit": n | None}, "channels":
        {...}, ...}``), or None when it cannot be known (then the API refuses each
        object over a limit as it is written)."""
        return None


class HttpBackend(Backend):
    """The API key's project through the API (:class:`~cronradar_sdk.client.ApiClient`);
    every list is read in full (all its pages)."""

    def __init__(self, client: ApiClient):
        self.client = client

    def read(self) -> State:
        return State(*(self.client.list(k.path) for k in KINDS))

    def put(self, kind, key, body):
        return self.client.put(f"{kind.path}{kind.by}/{urllib.parse.quote(key, safe='')}/",
                               body)

    def delete(self, kind, obj):
        self.client.delete(f"{kind.path}{obj['id']}/")

    def usage(self):
        try:
            return self.client.get("usage/")
        except ApiError as e:
            if e.status in (403, 404):  # a key that may not read it; an older CronRadar
                return None
            raise


# --- reading and writing files -------------------------------------------------------------

def parse(text: str, fmt: str | None = None) -> Any:
    """The document in ``text``: ``fmt`` ``json`` or ``yaml`` (None: JSON when it
    reads as JSON, else YAML). FileError when it is neither, or YAML is asked for
    without PyYAML."""
    if fmt in (None, "json"):
        try:
            return json.loads(text)
        except ValueError as e:
            if fmt == "json":
                raise FileError([f"not JSON: {e}"]) from None
    yaml = _yaml()
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark, problem = getattr(e, "problem_mark", None), getattr(e, "problem", None)
        where = "" if mark is None else f" at line {mark.line + 1}, column {mark.column + 1}"
        what = " ".join(str(problem or e).split())
        raise FileError([f"not {'YAML' if fmt else 'JSON or YAML'}{where}: {what}"]) from None


def dump(doc: dict, fmt: str = "yaml") -> str:
    """``doc`` as the text of a file: ``json`` or ``yaml``."""
    if fmt == "json":
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    return _yaml().safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)


def format_of(path: str) -> str | None:
    """``json`` or ``yaml`` by the file name's extension; None when it says neither."""
    suffix = Path(path).suffix.lower()
    return {".json": "json", ".yaml": "yaml", ".yml": "yaml"}.get(suffix)


def _yaml():
    try:
        import yaml
    except ImportError:
        raise FileError(["YAML needs PyYAML: pip install 'cronradar-sdk[yaml]' (or use "
                         "JSON)"]) from None
    return yaml


# --- checking a file ---------------------------------------------------------------------

def check(doc: Any) -> None:
    """Raise FileError listing what makes ``doc`` unfit to apply: first its shape
    (unknown fields, the required ones, unique non-blank slugs and names, each named
    ``monitors[2] (nightly): grace: …``), then, when the shape is right, every other
    rule of the schema (:func:`schema_problems`)."""
    if not isinstance(doc, dict):
        raise FileError(["the file must be an object (version, channels, "
                         "escalation_policies, monitors)"])
    problems = [f"{k}: unknown field" for k in doc if k != "version" and k not in FIELDS]
    if doc.get("version") != 1:
        problems.append("version: must be 1")
    required = {"channels": ("name", "kind", "config"),
                "escalation_policies": ("name", "tiers"), "monitors": ("slug",)}
    for kind in KINDS:
        entries = doc.get(kind.section, [])
        if not isinstance(entries, list):
            problems.append(f"{kind.section}: must be a list")
            continue
        seen = set()
        for i, entry in enumerate(entries):
            where = f"{kind.section}[{i}]"
            if not isinstance(entry, dict):
                problems.append(f"{where}: must be an object")
                continue
            key = entry.get(kind.key)
            if isinstance(key, str) and key.strip():
                where += f" ({key})"
                if key in seen:
                    problems.append(f"{where}: a second {kind.noun} with {kind.key} '{key}': "
                                    f"each {kind.key} once")
                seen.add(key)
            elif kind.key in entry:
                problems.append(f"{where}: {kind.key}: must be a string that is not blank")
            problems += [f"{where}: {f}: required" for f in required[kind.section]
                         if f not in entry]
            problems += [f"{where}: {f}: unknown field" for f in entry
                         if f not in FIELDS[kind.section]]
    if problems:
        raise FileError(problems)
    problems = schema_problems(doc)
    if problems:
        raise FileError(problems)


MAX_PROBLEMS = 50  # a file this wrong needs no more to be fixed


def schema_problems(doc: Any) -> list[str]:
    """What makes ``doc`` not valid under :func:`schema`, each ``$.monitors[0].grace:
    'soon' is not of type 'integer'`` (jsonschema's words, as the dashboard says them),
    in document order, at most :data:`MAX_PROBLEMS`; [] for a valid file. A standard
    library reading of the keywords the schema uses (type, enum, const, bounds,
    lengths, pattern, properties, required, additionalProperties, items, $ref, allOf,
    oneOf, if/then). A valid file can still be refused by the API (an unknown time
    zone)."""
    root = schema()
    found = sorted(_schema_errors(doc, root, (), root), key=lambda e: [str(p) for p in e[0]])
    return [f"{_json_path(path)}: {message}" for path, message in found[:MAX_PROBLEMS]]


def _json_path(path: tuple) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else
                         (f".{p}" if re.fullmatch(r"\w+", p) else f"[{p!r}]") for p in path)


def _is_type(value: Any, name: str) -> bool:
    if name == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer())
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, {"object": dict, "array": list, "string": str, "boolean": bool,
                              "null": type(None)}[name])


def _valid(value: Any, sch: dict, root: dict) -> bool:
    return next(_schema_errors(value, sch, (), root), None) is None


def _schema_errors(value: Any, sch: dict, path: tuple, root: dict):
    """(path, message) for each keyword of ``sch`` that ``value`` fails."""
    if "$ref" in sch:
        yield from _schema_errors(value, root["$defs"][sch["$ref"].rsplit("/", 1)[-1]],
                                  path, root)
    if "type" in sch:
        types = sch["type"] if isinstance(sch["type"], list) else [sch["type"]]
        if not any(_is_type(value, t) for t in types):
            yield path, f"{value!r} is not of type {', '.join(repr(t) for t in types)}"
    if "const" in sch and value != sch["const"]:
        yield path, f"{sch['const']!r} was expected"
    if "enum" in sch and value not in sch["enum"]:
        yield path, f"{value!r} is not one of {sch['enum']!r}"
    if _is_type(value, "number"):
        if "minimum" in sch and value < sch["minimum"]:
            yield path, f"{value!r} is less than the minimum of {sch['minimum']!r}"
        if "exclusiveMinimum" in sch and value <= sch["exclusiveMinimum"]:
            yield path, (f"{value!r} is less than or equal to the minimum of "
                         f"{sch['exclusiveMinimum']!r}")
        if "maximum" in sch and value > sch["maximum"]:
            yield path, f"{value!r} is greater than the maximum of {sch['maximum']!r}"
    if isinstance(value, (str, list)):
        low, high = (("minLength", "maxLength") if isinstance(value, str)
                     else ("minItems", "maxItems"))
        if low in sch and len(value) < sch[low]:
            yield path, f"{value!r} " + ("should be non-empty" if sch[low] == 1
                                         else "is too short")
        if high in sch and len(value) > sch[high]:
            yield path, f"{value!r} " + ("is expected to be empty" if sch[high] == 0
                                         else "is too long")
    if isinstance(value, str) and "pattern" in sch and not re.search(sch["pattern"], value):
        yield path, f"{value!r} does not match {sch['pattern']!r}"
    if isinstance(value, list) and isinstance(sch.get("items"), dict):
        for i, item in enumerate(value):
            yield from _schema_errors(item, sch["items"], path + (i,), root)
    if isinstance(value, dict):
        for name in sch.get("required", []):
            if name not in value:
                yield path, f"{name!r} is a required property"
        props = sch.get("properties", {})
        for name, inner in props.items():
            if name in value:
                yield from _schema_errors(value[name], inner, path + (name,), root)
        extra = sch.get("additionalProperties", True)
        extras = [k for k in value if k not in props]
        if extra is False and extras:
            yield path, ("Additional properties are not allowed (" + ", ".join(
                repr(k) for k in sorted(extras, key=str))
                         + (" was" if len(extras) == 1 else " were") + " unexpected)")
        elif isinstance(extra, dict):
            for k in extras:
                yield from _schema_errors(value[k], extra, path + (k,), root)
    for inner in sch.get("allOf", []):
        yield from _schema_errors(value, inner, path, root)
    if "oneOf" in sch:
        matched = [inner for inner in sch["oneOf"] if _valid(value, inner, root)]
        if not matched:
            yield path, f"{value!r} is not valid under any of the given schemas"
        elif len(matched) > 1:
            yield path, f"{value!r} is valid under each of " + ", ".join(
                repr(m) for m in matched)
    if "if" in sch and "then" in sch and _valid(value, sch["if"], root):
        yield from _schema_errors(value, sch["then"], path, root)


def expand(doc: dict, environ: Mapping[str, str]) -> dict:
    """``doc`` with each ``${NAME}`` in a channel's config strings replaced by
    ``environ[NAME]``; FileError naming every variable that is not set."""
    problems: list[str] = []

    def one(value, where):
        if isinstance(value, str):
            def sub(m):
                if m.group(1) not in environ:
                    problems.append(f"{where}: ${{{m.group(1)}}} is not set in the environment")
                    return m.group(0)
                return environ[m.group(1)]
            return PLACEHOLDER.sub(sub, value)
        if isinstance(value, list):
            return [one(v, where) for v in value]
        return value

    channels = []
    for i, ch in enumerate(doc.get("channels") or []):
        config = ch.get("config") if isinstance(ch, dict) else None
        if isinstance(config, dict):
            where = f"channels[{i}] ({ch.get('name')}): config"
            ch = {**ch, "config": {k: one(v, f"{where}.{k}") for k, v in config.items()}}
        channels.append(ch)
    if problems:
        raise FileError(problems)
    return {**doc, "channels": channels} if "channels" in doc else doc


# --- the project as a file ---------------------------------------------------------------

def to_file(state: State) -> dict:
    """The project ``state`` as a file (real credentials: see :func:`placeholders`)."""
    channel_names = {c["id"]: c["name"] for c in state.channels}
    policy_names = {p["id"]: p["name"] for p in state.escalation_policies}
    return {
        "version": 1,
        "channels": [{"name": c["name"], "kind": c["kind"],
                      "config": {k: v for k, v in (c.get("config") or {}).items()
                                 if k not in READ_ONLY_CONFIG}}
                     for c in sorted(state.channels, key=lambda c: c["name"])],
        "escalation_policies": [
            {"name": p["name"],
             "tiers": [{"delay": t["delay"], "channels": _names(t["channels"], channel_names)}
                       for t in p["tiers"]],
             "repeat": p.get("repeat", 0)}
            for p in sorted(state.escalation_policies, key=lambda p: p["name"])],
        "monitors": [_monitor_entry(m, channel_names, policy_names)
                     for m in sorted(state.monitors, key=lambda m: m["slug"])],
    }


def _monitor_entry(m: dict, channel_names: dict, policy_names: dict) -> dict:
    entry = {f: m[f] for f in FIELDS["monitors"] if f in m}
    entry.pop("schedule" if m.get("kind") == "interval" else "period", None)
    if isinstance(entry.get("channels"), list):
        entry["channels"] = _names(entry["channels"], channel_names)
    if entry.get("escalation_policy") is not None:
        entry["escalation_policy"] = policy_names.get(entry["escalation_policy"],
                                                      f"#{entry['escalation_policy']}")
    return entry


def _names(ids: Iterable[int], names: dict) -> list[str]:
    return sorted(names.get(i, f"#{i}") for i in ids)


def env_name(channel: str, field: str) -> str:
    """The placeholder's variable for a channel's credential: ``CRONRADAR_`` and the
    channel's name and the field, upper case, other characters ``_``
    (``ops pager``, ``api_key``: ``CRONRADAR_OPS_PAGER_API_KEY``)."""
    return "CRONRADAR_" + re.sub(r"[^A-Z0-9]+", "_", f"{channel}_{field}".upper()).strip("_")


def placeholders(doc: dict) -> tuple[dict, dict]:
    """``doc`` with each credential of its channels' configs replaced by a
    ``${ENV_NAME}`` placeholder, and {ENV_NAME: the value it stands for}; a value the
    API showed as ``***`` (to a caller who may not see it) stays ``***``, which keeps
    the stored credential when the file is applied. Two channels whose
    names give the same variable get ``_2``, ``_3``, … on the later ones."""
    values: dict[str, Any] = {}
    channels = []
    for ch in doc.get("channels", []):
        config = {}
        for k, v in ch["config"].items():
            if k in SHOWN or v == MASKED:  # "***" applied keeps the stored credential
                config[k] = v
                continue
            name, n = env_name(ch["name"], k), 1
            while name + (f"_{n}" if n > 1 else "") in values:
                n += 1
            name += f"_{n}" if n > 1 else ""
            values[name] = v
            config[k] = "${" + name + "}"
        channels.append({**ch, "config": config})
    return {**doc, "channels": channels}, values


def export(backend: Backend) -> tuple[dict, dict]:
    """The backend's project as a file with credential placeholders, and what they
    stand for (see :func:`placeholders`)."""
    return placeholders(to_file(backend.read()))


# --- the diff and applying it ---------------------------------------------------------------

def plan(doc: dict, state: State, prune: bool = False) -> list[Change]:
    """The changes that make ``state`` what ``doc`` (checked and expanded) declares:
    upserts in the order of :data:`KINDS`, then prunes in reverse. FileError when a
    name a monitor or policy refers to is neither in the file nor in the project, or
    when what the API refuses to create is to be created (:func:`_refused_new`)."""
    current = to_file(state)
    _check_references(doc, current)
    changes, prunes, problems = [], [], []
    for kind in KINDS:
        by_key = {e[kind.key]: e for e in current[kind.section]}
        objects = {o[kind.key]: o for o in state.of(kind)}
        declared = doc.get(kind.section) or []
        for i, entry in enumerate(declared):
            key = entry[kind.key]
            if key not in by_key:
                problems += [f"{kind.section}[{i}] ({key}): {p}" for p in _refused_new(kind, entry)]
                changes.append(Change("created", kind, key, {}, entry, None))
                continue
            fields = _diff(kind, entry, by_key[key])
            changes.append(Change("changed" if fields else "unchanged", kind, key, fields,
                                  entry, objects[key]))
        if prune and kind.section in doc:
            keep = {e[kind.key] for e in declared}
            prunes += [Change("pruned", kind, key, {}, None, obj)
                       for key, obj in sorted(objects.items()) if key not in keep]
    if problems:
        raise FileError(problems)
    order = {k.section: i for i, k in enumerate(KINDS)}
    return changes + sorted(prunes, key=lambda c: -order[c.kind.section])


def _refused_new(kind: Kind, entry: dict) -> list[str]:
    """Why the API would refuse to create ``entry`` (a dry run says so too, and a run
    stops before writing anything): a new monitor needs ``grace``; a new channel has
    no stored credential for ``***`` to keep."""
    if kind is MONITORS and "grace" not in entry:
        return ["grace: required for a new monitor (seconds a run may start late)"]
    if kind is CHANNELS:
        return [f"config.{k}: '***' keeps a stored credential, and the project has no "
                f"channel named '{entry['name']}': give it" for k, v in entry["config"].items()
                if v == MASKED and k not in SHOWN]
    return []


def _check_references(doc: dict, current: dict) -> None:
    channels = {c["name"] for c in doc.get("channels") or []} | {
        c["name"] for c in current["channels"]}
    policies = {p["name"] for p in doc.get("escalation_policies") or []} | {
        p["name"] for p in current["escalation_policies"]}
    problems = []
    for i, p in enumerate(doc.get("escalation_policies") or []):
        for j, tier in enumerate(p.get("tiers") or []):
            problems += [f"escalation_policies[{i}] ({p['name']}): tiers[{j}].channels: no "
                         f"channel named '{n}' in the file or the project"
                         for n in (tier.get("channels") or []) if n not in channels]
    for i, m in enumerate(doc.get("monitors") or []):
        where = f"monitors[{i}] ({m['slug']})"
        if isinstance(m.get("channels"), list):
            problems += [f"{where}: channels: no channel named '{n}' in the file or the "
                         "project" for n in m["channels"] if n not in channels]
        policy = m.get("escalation_policy")
        if policy is not None and policy not in policies:
            problems.append(f"{where}: escalation_policy: no escalation policy named "
                            f"'{policy}' in the file or the project")
    if problems:
        raise FileError(problems)


def _diff(kind: Kind, entry: dict, current: dict) -> dict:
    """{field: (old, new)} where ``entry`` differs from ``current`` (both in file
    terms), for the fields ``entry`` gives; lists of names compare as sets, a
    channel's config field by field (``***`` and left out: unchanged)."""
    fields = {}
    for name, new in entry.items():
        if name == kind.key:
            continue
        old = current.get(name)
        if name == "config":
            for k, v in new.items():
                if v == MASKED and k not in SHOWN:
                    continue
                before = old.get(k)
                if before != v:
                    secret = k not in SHOWN and before is not None
                    fields[f"config.{k}"] = (MASKED if secret else before,
                                             MASKED if k not in SHOWN else v)
        elif _normal(name, old) != _normal(name, new):
            fields[name] = (old, new)
    return fields


CRON_ALIASES = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
                "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
                "@hourly": "0 * * * *"}  # as the service stores them (monitors/schedule.py)


def _normal(name: str, value: Any) -> Any:
    """``value`` as the service stores it, where the file may write it otherwise: a
    schedule's alias and spacing, lists of names in any order."""
    if name == "schedule" and isinstance(value, str):
        value = " ".join(value.split())
        return CRON_ALIASES.get(value.lower(), value)
    if name == "channels" and isinstance(value, list):
        return sorted(value)
    if name == "tiers" and isinstance(value, list):
        return [{**t, "channels": sorted(t.get("channels", []))} if isinstance(t, dict) else t
                for t in value]
    return value


def apply(doc: dict, backend: Backend, prune: bool = False, dry_run: bool = False,
          report: Callable[[Change], None] | None = None) -> list[Change]:
    """Make the backend's project what ``doc`` declares (checked, placeholders
    already expanded: :func:`expand`) and answer the changes; ``dry_run`` only
    answers them. New channels or monitors past the plan's limits are a FileError
    before anything is written, dry run or not (:func:`check_plan`). ``report`` is
    called with each change as it is made (a change the API refuses raises
    :class:`~cronradar_sdk.client.ApiError` after the ones made before it were
    reported)."""
    check(doc)
    state = backend.read()
    changes = plan(doc, state, prune)
    if any(c.action == "created" and c.kind in COUNTED for c in changes):
        check_plan(changes, backend.usage())
    ids = {"channels": {c["name"]: c["id"] for c in state.channels},
           "escalation_policies": {p["name"]: p["id"] for p in state.escalation_policies}}
    for change in changes:
        if not dry_run and change.action in ("created", "changed"):
            saved = backend.put(change.kind, change.key, _body(change.kind, change.entry, ids))
            if change.kind.section in ids:
                ids[change.kind.section][change.key] = saved["id"]
        elif not dry_run and change.action == "pruned":
            backend.delete(change.kind, change.current)
        if report is not None:
            report(change)
    return changes


COUNTED = (CHANNELS, MONITORS)  # what a plan limits, in the order they are created


def check_plan(changes: list[Change], usage: dict | None) -> None:
    """Raise FileError with the API's own sentence (``this organisation's plan (pro)
    allows 5 monitors``) when the channels or monitors ``changes`` create would take
    the organisation past its plan's limit in ``usage`` (:meth:`Backend.usage`; None:
    not known, nothing checked). A whole file is refused before anything is written,
    a dry run too, as the server's imports are; prunes run after the creations, so
    they make no room."""
    if not isinstance(usage, dict):
        return
    problems = []
    for kind in COUNTED:
        counted = usage.get(kind.section)
        limit = counted.get("limit") if isinstance(counted, dict) else None
        if not isinstance(limit, int):  # None: no limit
            continue
        new = sum(c.action == "created" and c.kind is kind for c in changes)
        if new and (counted.get("used") or 0) + new > limit:
            problems.append(f"this organisation's plan ({usage.get('plan')}) allows {limit} "
                            f"{kind.noun}{'' if limit == 1 else 's'}")
    if problems:
        raise FileError(problems)


def _body(kind: Kind, entry: dict, ids: dict) -> dict:
    """The upsert's body for ``entry``: names of channels and policies made ids."""
    body = {k: v for k, v in entry.items() if k != kind.key}
    channel_ids = ids["channels"]
    if kind is POLICIES:
        body["tiers"] = [{**t, "channels": [channel_ids[n] for n in t["channels"]]}
                         for t in body["tiers"]]
    elif kind is MONITORS:
        if isinstance(body.get("channels"), list):
            body["channels"] = [channel_ids[n] for n in body["channels"]]
        if body.get("escalation_policy") is not None:
            body["escalation_policy"] = ids["escalation_policies"][body["escalation_policy"]]
    return body


def summary(changes: list[Change], dry_run: bool = False) -> str:
    """``2 created, 1 changed, 4 unchanged, 1 pruned`` (and ``(dry run: nothing
    changed)``)."""
    counts = [f"{sum(c.action == a for c in changes)} {a}"
              for a in ("created", "changed", "unchanged", "pruned")]
    return ", ".join(counts) + (" (dry run: nothing changed)" if dry_run else "")


def _shown(value: Any) -> str:
    return value if value == MASKED else json.dumps(value, ensure_ascii=False)
