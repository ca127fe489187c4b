"""Kubernetes CronJob manifests read into monitor specs (pure: no ORM, no clock).

:func:`parse_k8s` maps each ``batch/v1`` ``CronJob`` onto a
:class:`~monitors.imports.spec.Spec` with Kubernetes' cron semantics and defaults,
and reports every document it cannot map (with where and why).
"""
from __future__ import annotations

import re
from datetime import timedelta

import yaml

from monitors import schedule
from monitors.imports.spec import (
    DEFAULT_GRACE,
    MAX_ATTEMPTS,
    MAX_SECONDS,
    SLUG,
    ImportFailed,
    Parsed,
    Remark,
    Spec,
    schedule_error,
    secs,
    tags_of,
    valid_schedule,
)

K8S_BACKOFF_LIMIT = 6  # Kubernetes' default spec.jobTemplate.spec.backoffLimit
_K8S_SPEC = {"schedule", "timeZone", "concurrencyPolicy", "startingDeadlineSeconds", "suspend",
             "jobTemplate"}
_K8S_JOB_SPEC = {"activeDeadlineSeconds", "backoffLimit", "template"}
_POLICIES = {"Allow": "allow", "Forbid": "forbid", "Replace": "replace"}
_TZ_PREFIX = re.compile(r"(CRON_TZ|TZ)=(\S*)\s+(.*)", re.DOTALL)
_KEPT_MAX_RUNTIME = ("a Kubernetes import does not set it: activeDeadlineSeconds maps to "
                     "deadline (clear max_runtime if an earlier import set it)")


class _Unmappable(ValueError):
    """A CronJob document that cannot become a monitor (str: why)."""


def parse_k8s(text: str) -> Parsed:
    """Read Kubernetes manifests (multi-document YAML; ``kind: List`` documents,
    as ``kubectl get cronjobs -o yaml`` writes, are read item by item).

    Each ``apiVersion: batch/v1`` ``kind: CronJob`` becomes a :class:`Spec` with
    ``cron_semantics`` kubernetes; slug ``metadata.name`` (dots made hyphens),
    tag ``ns:<namespace>``. Mapping (``fields``, set on every import, with
    Kubernetes' defaults where the manifest says nothing): ``spec.schedule``,
    ``spec.timeZone`` (none: UTC, the controller's usual zone, noted),
    ``concurrencyPolicy`` Allow/Forbid/Replace -> allow/forbid/replace (Forbid
    with no activeDeadlineSeconds: a warning, noted),
    ``jobTemplate.spec.activeDeadlineSeconds`` -> deadline = it + the monitor's
    grace (``after_grace``, noted: it counts from the Job's start across all its
    attempts; none: not set, an existing monitor keeps its deadline),
    ``jobTemplate.spec.backoffLimit`` (default 6) + 1 -> max_attempts (at most
    100), ``suspend`` -> paused; ``startingDeadlineSeconds`` -> grace (none:
    :data:`DEFAULT_GRACE` for a new monitor, noted). max_runtime is not set: an
    existing monitor's is kept, noted (``kept``). Fields present but not mapped are
    noted per document. A schedule with a ``CRON_TZ=``/``TZ=`` prefix (Kubernetes
    1.29+ refuses it on create), other kinds and documents that are not a valid
    CronJob are reported (not imported). Raises ImportFailed for text that is not
    YAML (with the line) or too many CronJobs.
    """
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
        raise _Unmappable(_prefix_refused(prefix, zone))
    if expr.split()[0] == "@every":
        raise _Unmappable(f"schedule {raw!r}: @every runs at an interval, not on a cron "
                          "schedule: make an interval monitor for it")
    if zone is None:
        zone = "UTC"
        notes.append("no spec.timeZone: read in UTC, the usual zone of the cluster's "
                     "controller (set timeZone if yours differs)")
    try:
        schedule.validate_timezone(zone)
        expr = valid_schedule(expr, zone, schedule.KUBERNETES)
    except schedule.ScheduleError as e:
        raise _Unmappable(schedule_error(raw, e)) from None
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
    if active is not None:
        notes.append(f"deadline = activeDeadlineSeconds {active} s + grace: it counts from the "
                     "Job's start across all its attempts, so it bounds the slot's run "
                     "(deadline), not one attempt (max_runtime)")
    elif policy == "Forbid":
        notes.append("warning: concurrencyPolicy Forbid with no activeDeadlineSeconds: one hung "
                     "Job blocks every later run (the controller starts none while it runs); "
                     "set activeDeadlineSeconds")
    fields = {"kind": "cron", "schedule": expr, "timezone": zone,
              "cron_semantics": schedule.KUBERNETES, "period": None,
              "concurrency": _POLICIES[policy],
              "max_attempts": min(backoff + 1, MAX_ATTEMPTS), "paused": suspend}
    defaults = {"name": f"{namespace}/{name}" if namespace else name}
    starting = _count(spec, "startingDeadlineSeconds", "spec.startingDeadlineSeconds", 0,
                      MAX_SECONDS)
    if starting is None:
        defaults["grace"] = DEFAULT_GRACE
        notes.append(f"no startingDeadlineSeconds: grace {secs(DEFAULT_GRACE)} for a new "
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
    tags, long_tags = tags_of("kubernetes", f"ns:{namespace}" if namespace else "")
    return Spec(slug, where, fields, defaults, tags,
                after_grace={"deadline": timedelta(seconds=active)} if active else {},
                kept={"max_runtime": _KEPT_MAX_RUNTIME}), notes + long_tags


def _prefix_refused(prefix: re.Match, zone: str | None) -> str:
    """Why a schedule with a ``CRON_TZ=``/``TZ=`` prefix is not imported, and what
    to write instead (``zone``: the document's spec.timeZone, if any)."""
    head = f"spec.schedule starts with {prefix.group(1)}={prefix.group(2)}"
    rest = prefix.group(3).strip()
    if zone is not None:
        return (f"{head} and spec.timeZone is set ({zone}): Kubernetes refuses both; write "
                f"schedule: '{rest}' and the zone in timeZone only")
    return (f"{head}: Kubernetes 1.29+ refuses a time zone in the schedule on create (older "
            f"CronJobs still carry it); write timeZone: {prefix.group(2)} and schedule: "
            f"'{rest}' in spec")


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


