"""The audit log's one writer: who changed what, from where, when
(docs/multi-tenant.md, "Audit log").

Who acts is carried in a context variable, set where a request is authenticated
(:func:`acting`); the code that makes a change calls :func:`record` with the
organisation, the coded action and the object, and the entry takes its actor and
client address from that context unless they are given. Without a context (a
management command, the evaluator) the actor is ``""``, shown as "the service".
"""
import contextvars
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from accounts.models import AuditEntry, Organisation

MASK = "***"  # a secret's value in an entry, as the API shows it


@dataclass(frozen=True)
class Actor:
    """Who acts: ``name`` the text shown (a username, ``key cr_AbCdEf``,
    ``signed link``), ``user`` the person (None for a key or a signed link),
    ``address`` the client address the ping path computes (None if unknown)."""

    name: str = ""
    user: object = None
    address: str | None = None


NOBODY = Actor()
_actor: contextvars.ContextVar[Actor | None] = contextvars.ContextVar("cronradar_actor",
                                                                      default=None)


def current() -> Actor:
    """The :class:`Actor` of the request being served (:data:`NOBODY` outside)."""
    return _actor.get() or NOBODY


@contextmanager
def acting(actor: Actor):
    """Within the block, :func:`record` attributes entries to ``actor``."""
    token = _actor.set(actor)
    try:
        yield actor
    finally:
        _actor.reset(token)


def set_actor(actor: Actor) -> None:
    """Attribute the rest of this context's entries to ``actor`` (for an
    authentication class, which cannot wrap the view in :func:`acting`; the
    request middleware resets the context after each request)."""
    _actor.set(actor)


def record(action: str, organisation: Organisation | None, *, target=None,
           target_type: str = "", target_id: str = "", target_repr: str = "",
           changes: dict | None = None, actor: Actor | None = None,
           at: datetime | None = None) -> AuditEntry:
    """Write one entry and return it.

    ``action`` is an :class:`~accounts.models.AuditEntry.Action` value (ValueError
    for another). ``target`` (a model instance) fills ``target_type`` (its model's
    lower-case name), ``target_id`` (its pk) and ``target_repr`` (``str()``) where
    those are not given. ``changes`` is ``{field: [old, new]}``, with secrets
    already replaced by :data:`MASK` (use :func:`diff`). ``organisation`` None writes
    an installation-level entry.
    """
    row = _entry(action, organisation, target=target, target_type=target_type,
                 target_id=target_id, target_repr=target_repr, changes=changes, actor=actor,
                 at=at)
    row.save()
    return row


def record_each(action: str, organisation: Organisation | None, targets: list) -> None:
    """:func:`record` ``action`` once per model instance of ``targets`` (a bulk
    import's new monitors), inserted together."""
    AuditEntry.objects.bulk_create([_entry(action, organisation, target=t) for t in targets],
                                   batch_size=500)


def _entry(action: str, organisation: Organisation | None, *, target=None,
           target_type: str = "", target_id: str = "", target_repr: str = "",
           changes: dict | None = None, actor: Actor | None = None,
           at: datetime | None = None) -> AuditEntry:
    """The entry :func:`record` writes, not saved yet."""
    if action not in AuditEntry.Action.values:
        raise ValueError(f"unknown audit action {action!r}")
    actor = actor or current()
    if target is not None:
        target_type = target_type or target._meta.model_name
        target_id = target_id or str(target.pk)
        target_repr = target_repr or str(target)
    user = actor.user if getattr(actor.user, "pk", None) else None
    fields = {"at": at} if at is not None else {}
    return AuditEntry(
        organisation=organisation, organisation_name=organisation.name if organisation else "",
        actor=actor.name[:150], actor_user=user, address=actor.address, action=action,
        target_type=target_type[:32], target_id=target_id[:64], target_repr=target_repr[:200],
        changes=changes or {}, **fields)


def diff(before: dict, after: dict, secret: frozenset | set = frozenset()) -> dict:
    """``{field: [old, new]}`` for each key of ``after`` whose value differs from
    ``before``'s (a key missing from ``before`` counts as None). Fields named in
    ``secret`` show :data:`MASK` for both values (the change is recorded, not
    the secret). Values must be JSON-serialisable."""
    changes = {}
    for field, new in after.items():
        old = before.get(field)
        if old != new:
            changes[field] = [MASK, MASK] if field in secret else [old, new]
    return changes
