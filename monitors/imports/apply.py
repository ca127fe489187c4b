"""Monitor specs applied to a project, or compared with it (a dry run).

:func:`apply` creates or updates a project's monitors by slug in one transaction,
as the API does, and returns an :class:`Outcome`: what was (or would be)
created, updated with which changes, and left unchanged; :func:`report_lines`
renders one for the management commands.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from uuid import UUID

from django.db import IntegrityError, transaction

from monitors import creation, evaluator
from monitors.imports.spec import Conflict, Parsed, Remark, Spec, secs
from monitors.models import Monitor


@dataclass
class Outcome:
    """What :func:`apply` did (or, dry, would do); ``monitors``: slug -> the
    monitor (after the import; in a dry run the existing ones only); ``notes``:
    about existing monitors (a ``kept`` field's value)."""

    dry_run: bool
    created: list[dict] = field(default_factory=list)
    updated: list[dict] = field(default_factory=list)
    unchanged: list[dict] = field(default_factory=list)
    monitors: dict = field(default_factory=dict)
    notes: list[Remark] = field(default_factory=list)

    def as_dict(self, parsed: Parsed) -> dict:
        """The diff as the API answers it (durations in seconds)::

            {"dry_run": bool,
             "created": [{"slug", "where", "id" (not in a dry run), "monitor": {field: value}}],
             "updated": [{"slug", "where", "id", "changes": {field: {"old", "new"}}}],
             "unchanged": [{"slug", "where", "id"}],
             "reported": [{"where", "message"}], "notes": [{"where", "message"}]}

        (notes: the parser's, then :attr:`notes`).
        """
        return {"dry_run": self.dry_run, "created": self.created, "updated": self.updated,
                "unchanged": self.unchanged,
                "reported": [r.as_dict() for r in parsed.reported],
                "notes": [r.as_dict() for r in parsed.notes + self.notes]}


def apply(project, specs: list[Spec], dry_run: bool, now: datetime, *,
          quota: bool = True) -> Outcome:
    """Create or update ``project``'s monitors from ``specs`` at ``now`` (upsert by
    slug), in one transaction, as the API does: a new monitor is made by
    :func:`monitors.creation.create`, changes go through
    :func:`monitors.evaluator.edit` (only fields that differ; nothing is written
    for a monitor that already matches, so a second import changes nothing; an
    existing monitor's ``kept`` fields stay, noted when set).
    ``dry_run``: only compare. Raises Conflict when a monitor is created or
    deleted by someone else meanwhile (nothing is written then), and (``quota``,
    dry run included) :class:`accounts.plans.PlanLimit` before anything is
    written when the new monitors would take the plan over its limit (False:
    the operator's commands)."""
    result = Outcome(dry_run)
    existing = {m.slug: m for m in Monitor.objects.filter(
        project=project, deleted_at__isnull=True, slug__in=[s.slug for s in specs])}
    try:
        with transaction.atomic():
            if quota:  # the whole import, once: then each creation skips the count
                creation.check(project, len({s.slug for s in specs} - existing.keys()))
            for spec in specs:
                monitor = existing.get(spec.slug)
                if monitor is None:
                    values = {**spec.values(), "tags": list(spec.tags)}
                    entry = {"slug": spec.slug, "where": spec.where, "monitor": {
                        k: api_value(v) for k, v in values.items() if v is not None}}
                    if not dry_run:
                        monitor = creation.create(project, Monitor(slug=spec.slug, **values),
                                                  now, quota=False)
                        entry = {**entry, "id": monitor.pk}
                    result.created.append(entry)
                else:
                    changes = {k: v for k, v in spec.values(monitor).items()
                               if getattr(monitor, k) != v}
                    result.notes += [
                        Remark(spec.where, f"{k} {_report(getattr(monitor, k))} kept: {why}")
                        for k, why in spec.kept.items() if getattr(monitor, k) is not None]
                    monitor = update(result, monitor, changes, spec.tags, spec.slug,
                                     spec.where, now)
                if monitor is not None:
                    result.monitors[spec.slug] = monitor
    except (IntegrityError, Monitor.DoesNotExist):
        raise Conflict("a monitor of this import was created or deleted meanwhile: nothing was "
                       "changed; run the import again") from None
    return result


def update(result: Outcome, monitor: Monitor, changes: dict, tags, slug: str, where: str,
           now: datetime) -> Monitor:
    """Record in ``result`` the update of an existing ``monitor`` with ``changes``
    (model values of the fields that differ) and ``tags`` added where missing,
    and make it at ``now`` unless ``result`` is a dry run; nothing differing: it
    is ``unchanged``. Returns the monitor (as the edit left it)."""
    added = monitor.tags + [t for t in tags if t not in monitor.tags]
    if added != monitor.tags:
        changes = {**changes, "tags": added}
    entry = {"slug": slug, "where": where, "id": monitor.pk}
    if not changes:
        result.unchanged.append(entry)
        return monitor
    result.updated.append({**entry, "changes": {
        k: {"old": api_value(getattr(monitor, k)), "new": api_value(v)}
        for k, v in changes.items()}})
    return monitor if result.dry_run else evaluator.edit(monitor.pk, changes, now)


def api_value(value):
    """A model value as the API shows it (durations in whole seconds, a UUID as
    text)."""
    if isinstance(value, UUID):
        return str(value)
    return int(value.total_seconds()) if isinstance(value, timedelta) else value


def _report(value) -> str:
    """A model value in a note (durations as "3600 s")."""
    return secs(value) if isinstance(value, timedelta) else _shown(value)


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
    return f"'{value}'" if isinstance(value, str) else json.dumps(value)


