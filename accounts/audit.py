"""The audit log's one writer: who changed what, from where, when
(docs/multi-tenant.md, "Audit log").

Who acts is carried in a context variable, set where a request is authenticated
(:func:`acting`); the code that makes a change calls :func:`record` with the
organisation, the coded action and the object, and the entry takes its actor and
client address from that context unless they are given. Without a context (a
management command, the evaluator) the actor is ``""``, shown as "the service".

:class:`ActorMiddleware` gives every request a fresh context: the signed-in
person (found only when an entry is written), replaced by an API key's actor
where the key authenticates (:func:`key_actor`). Sign-ins and failed sign-ins
are recorded by :func:`connect`'s receivers; :func:`prune` deletes old entries.
"""
import contextvars
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_in, user_login_failed

from accounts.models import ApiKey, AuditEntry, Membership, Organisation
from core.edge import client_address

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
SIGNED_LINK = "signed link"  # the actor of a notification's acknowledge/resolve link
_actor: contextvars.ContextVar[Actor | Callable[[], Actor] | None] = contextvars.ContextVar(
    "cronradar_actor", default=None)


def current() -> Actor:
    """The :class:`Actor` of the request being served (:data:`NOBODY` outside).
    A lazy actor (a callable, :class:`ActorMiddleware`'s) is resolved here, once."""
    found = _actor.get()
    if callable(found):
        found = found()
        _actor.set(found)
    return found or NOBODY


def person_actor(user, meta: dict) -> Actor:
    """A signed-in person: their username, them, the request's client address
    (``meta``: ``request.META``)."""
    return Actor(user.get_username(), user, client_address(meta))


def key_actor(api_key: ApiKey, meta: dict) -> Actor:
    """An API key: ``key <prefix>`` (the prefix the API lists, never the key), no
    person, the request's client address."""
    return Actor(f"key {api_key.prefix}", None, client_address(meta))


def ping_key_actor(ping_key: str, meta: dict) -> Actor:
    """A ping that creates its monitor (create-on-ping): ``ping key <first 6
    characters>`` (enough to tell a project's ping keys apart, too little to
    ping with), no person, the pinger's client address."""
    return Actor(f"ping key {ping_key[:6]}", None, client_address(meta))


def link_actor(meta: dict) -> Actor:
    """A signed link in a notification: :data:`SIGNED_LINK`, no person."""
    return Actor(SIGNED_LINK, None, client_address(meta))


class ActorMiddleware:
    """Each request starts with its own actor context, reset when it ends (so
    nothing leaks to the next request served on the thread): the signed-in person
    (``request.user``, looked at only when an entry is written), else nobody.
    Goes after Django's ``AuthenticationMiddleware``."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        token = _actor.set(lambda: _from_session(request))
        try:
            return self.get_response(request)
        finally:
            _actor.reset(token)


def _from_session(request) -> Actor:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return NOBODY
    return person_actor(user, request.META)


@contextmanager
def acting(actor: Actor):
    """Within the block, :func:`record` attributes entries to ``actor``."""
    token = _actor.set(actor)
    try:
        yield actor
    finally:
        _actor.reset(token)


def set_actor(actor: Actor | Callable[[], Actor]) -> None:
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


def record_each(action: str, organisation: Organisation | None, targets: list,
                values: Callable[[object], dict] | None = None) -> None:
    """:func:`record` ``action`` once per model instance of ``targets`` (a bulk
    import's new monitors), inserted together. ``values`` (a target -> its values)
    gives each entry the changes :func:`record_create` would (``{field: [None,
    value]}``); without it the entries have none."""
    AuditEntry.objects.bulk_create(
        [_entry(action, organisation, target=t,
                changes=created(values(t)) if values is not None else None) for t in targets],
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
        target_id = target_id or target.pk
        target_repr = target_repr or str(target)
    user = actor.user if getattr(actor.user, "pk", None) else None
    fields = {"at": at} if at is not None else {}
    return AuditEntry(
        organisation=organisation, organisation_name=organisation.name if organisation else "",
        actor=actor.name[:150], actor_user=user, address=actor.address, action=action,
        target_type=target_type[:32], target_id=str(target_id)[:64], target_repr=target_repr[:200],
        changes=changes or {}, **fields)


def diff(before: dict, after: dict, secret: frozenset | set = frozenset()) -> dict:
    """``{field: [old, new]}`` for each key of ``after`` whose value differs from
    ``before``'s (a key missing from ``before`` counts as None). Fields named in
    ``secret`` show :data:`MASK` for a value and None for none (a secret set
    where there was none is ``[None, "***"]``, one removed ``["***", None]``: the
    change is recorded, not the secret). Values go through :func:`plain` (a
    ``timedelta`` becomes whole seconds, a time ISO 8601)."""
    changes = {}
    for field, new in after.items():
        old, new = plain(before.get(field)), plain(new)
        if old != new:
            changes[field] = [_masked(old), _masked(new)] if field in secret else [old, new]
    return changes


def _masked(value):
    """A secret's value in an entry: :data:`MASK`, None where there is none."""
    return None if value is None else MASK


def plain(value):
    """``value`` as the API shows it, JSON-serialisable: ``timedelta`` -> whole
    seconds, ``datetime``/``date`` -> ISO 8601, a model instance -> its pk, a set
    or tuple -> a sorted list, a ``Decimal`` -> a number; lists and dicts item
    by item; anything else (a UUID) its text."""
    if isinstance(value, timedelta):
        return int(value.total_seconds())
    if isinstance(value, datetime | date):
        return value.isoformat()
    if hasattr(value, "_meta") and hasattr(value, "pk"):
        return value.pk
    if isinstance(value, set | frozenset | tuple):
        return sorted(plain(v) for v in value)
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, Decimal):
        return float(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)  # a UUID, an enum: as its text


def fields_of(obj, names) -> dict:
    """``{name: getattr(obj, name)}``: the before or after of :func:`diff`."""
    return {name: getattr(obj, name) for name in names}


def record_update(organisation: Organisation | None, target, before: dict, after: dict,
                  secret: frozenset | set = frozenset(), **kw) -> AuditEntry | None:
    """An ``update`` entry of ``target`` with :func:`diff` ``(before, after,
    secret)``; nothing (None) when no value changed. ``kw`` as :func:`record`."""
    changes = diff(before, after, secret)
    if not changes:
        return None
    return record(AuditEntry.Action.UPDATE, organisation, target=target, changes=changes, **kw)


def record_create(organisation: Organisation | None, target, values: dict,
                  secret: frozenset | set = frozenset(), **kw) -> AuditEntry:
    """A ``create`` entry of ``target`` with its ``values`` as :func:`created`
    makes them. ``kw`` as :func:`record`."""
    return record(AuditEntry.Action.CREATE, organisation, target=target,
                  changes=created(values, secret), **kw)


def created(values: dict, secret: frozenset | set = frozenset()) -> dict:
    """The changes of a ``create`` entry: ``{field: [None, value]}`` for each of
    ``values`` that is not None or ``""`` (``secret`` ones ``[None, "***"]``)."""
    return diff({}, {k: v for k, v in values.items() if v not in (None, "")}, secret)


# --- reading ----------------------------------------------------------------------------

class BadFilter(ValueError):
    """A filter of :func:`search` that cannot be: ``field`` names it."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def readable(organisation_roles: dict[int, str]) -> list[int]:
    """Of ``{organisation id: role}``, the organisations whose log may be read:
    where the role is ``admin`` or ``owner``."""
    return sorted(org for org, role in organisation_roles.items()
                  if role in (Membership.Role.ADMIN, Membership.Role.OWNER))


def search(queryset, query) -> object:
    """``queryset`` of entries filtered by ``query`` (a mapping of request
    parameters): ``object`` (``<type>:<id>``, e.g. ``monitor:12``) or
    ``target_type`` and/or ``target_id``, ``actor`` (the actor text exactly) and
    ``action`` (a code). Raises :class:`BadFilter` for a malformed one."""
    target_type, target_id = query.get("target_type", ""), query.get("target_id", "")
    if obj := query.get("object", ""):
        target_type, sep, target_id = obj.partition(":")
        if not (sep and target_type and target_id):
            raise BadFilter("object", "must be <type>:<id>, e.g. monitor:12")
    if target_type:
        queryset = queryset.filter(target_type=target_type)
    if target_id:
        queryset = queryset.filter(target_id=target_id)
    if actor := query.get("actor", ""):
        queryset = queryset.filter(actor=actor)
    if action := query.get("action", ""):
        if action not in AuditEntry.Action.values:
            raise BadFilter("action", f"unknown action '{action}': use "
                            + ", ".join(AuditEntry.Action.values))
        queryset = queryset.filter(action=action)
    return queryset


# --- sign-ins ----------------------------------------------------------------------------

def _signed_in(sender, request, user, **kw) -> None:
    """``user_logged_in``: a ``signin`` entry in each of the person's organisations."""
    actor = person_actor(user, request.META if request is not None else {})
    for org in Organisation.objects.filter(memberships__user=user).order_by("pk"):
        record(AuditEntry.Action.SIGNIN, org, target=user, target_type="user", actor=actor)


def _sign_in_failed(sender, credentials, request=None, **kw) -> None:
    """``user_login_failed``: for a username that is someone's (exactly, else the
    one person it is without letter case, as sign-in finds them), a
    ``signin_failed`` entry in each of their organisations, the actor the name
    typed. An unknown username is not recorded: what a stranger types (often a
    password in the wrong box) is kept nowhere."""
    users = get_user_model()
    typed = str(credentials.get(users.USERNAME_FIELD) or credentials.get("username") or "")
    if not typed:
        return
    field = users.USERNAME_FIELD
    user = users._default_manager.filter(**{field: typed}).first()
    if user is None:
        found = list(users._default_manager.filter(**{f"{field}__iexact": typed})[:2])
        user = found[0] if len(found) == 1 else None
    if user is None:
        return
    actor = Actor(user.get_username(), user,
                  client_address(request.META) if request is not None else None)
    for org in Organisation.objects.filter(memberships__user=user).order_by("pk"):
        record(AuditEntry.Action.SIGNIN_FAILED, org, target=user, target_type="user",
               actor=actor)


def connect() -> None:
    """Connect the sign-in receivers (:class:`~accounts.apps.AccountsConfig`)."""
    user_logged_in.connect(_signed_in, dispatch_uid="cronradar_audit_signin")
    user_login_failed.connect(_sign_in_failed, dispatch_uid="cronradar_audit_signin_failed")


# --- retention ---------------------------------------------------------------------------

def prune(now: datetime, batch: int | None = None, max_batches: int = 20) -> int:
    """Delete entries older than ``CRONRADAR_AUDIT_RETENTION_DAYS`` at ``now``
    (installation-level ones too), at most ``batch`` (``CRONRADAR_PRUNE_BATCH``)
    rows per statement and ``max_batches`` statements per call (the rest: next
    call). Returns how many were deleted."""
    batch = batch or settings.CRONRADAR_PRUNE_BATCH
    before = now - timedelta(days=settings.CRONRADAR_AUDIT_RETENTION_DAYS)
    deleted = 0
    for _ in range(max_batches):
        # oldest first by id: entries are written in time order, "at" is indexed
        ids = list(AuditEntry.objects.filter(at__lt=before).order_by("pk")
                   .values_list("pk", flat=True)[:batch])
        if ids:
            deleted += AuditEntry.objects.filter(pk__in=ids)._raw_delete(AuditEntry.objects.db)
        if len(ids) < batch:
            break
    return deleted
