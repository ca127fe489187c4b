"""Plan limits: the one place that says what an organisation may have
(docs/multi-tenant.md, "Plans and quotas").

An organisation's :class:`~accounts.models.Plan` caps what it creates (monitors,
channels, members, API keys) and how much is kept (pings, runs, incidents) and
accepted (pings per minute). :func:`limits` reads them; :func:`check` is called
where one of the counted things is created and raises :class:`PlanLimit` (a 403
with the message ``this organisation's plan (free) allows 20 monitors``) when one
more would be over the limit. An organisation without a plan has no limit.

What is counted lives on higher floors (monitors, channels): each app registers
its count with :func:`counts` in its ``AppConfig.ready``, so this module imports
none of them. New organisations get ``CRONRADAR_DEFAULT_PLAN``'s plan
(:func:`default_plan`, applied on every save that creates one).
"""
from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, transaction
from django.db.models.signals import pre_save
from rest_framework import exceptions

from accounts import audit
from accounts.models import ApiKey, Organisation, Plan

# what check() counts -> (the plan's field, the word in the message)
COUNTED = {
    "monitors": ("max_monitors", "monitors"),
    "channels": ("max_channels", "channels"),
    "members": ("max_members", "members"),
    "api_keys": ("max_api_keys", "API keys"),
}
_SINGULAR = {"monitors": "monitor", "channels": "channel", "members": "member",
             "API keys": "API key"}
_counters: dict[str, Callable[[Organisation], int]] = {}


class PlanLimit(exceptions.PermissionDenied):
    """One more ``what`` would be over ``limit``, the most ``plan`` allows: the API
    answers 403 ``{"detail": "this organisation's plan (free) allows 20
    monitors"}``; ``code`` is ``plan_limit``."""

    default_code = "plan_limit"

    def __init__(self, plan: str, what: str, limit: int):
        self.plan, self.what, self.limit = plan, what, limit
        super().__init__(message(plan, what, limit), code="plan_limit")


class UnknownPlan(ImproperlyConfigured):
    """``CRONRADAR_DEFAULT_PLAN`` names a plan that does not exist."""


def message(plan: str, what: str, limit: int) -> str:
    """``this organisation's plan (<plan>) allows <limit> <things>`` for ``what`` in
    :data:`COUNTED`."""
    word = COUNTED[what][1]
    return f"this organisation's plan ({plan}) allows {limit} " \
           f"{_SINGULAR[word] if limit == 1 else word}"


def limits(organisation: Organisation) -> dict[str, int | None]:
    """Every limit of ``organisation``'s plan, ``{field: n}`` for each of
    :attr:`Plan.LIMITS` (counts, pings per minute, days); None for "no limit".
    No plan: every value None."""
    plan = organisation.plan if organisation.plan_id is not None else None
    return {name: getattr(plan, name) if plan is not None else None for name in Plan.LIMITS}


def counts(what: str):
    """Register the decorated ``function(organisation) -> int`` as the count of
    ``what`` (a key of :data:`COUNTED`) that :func:`check` compares."""
    if what not in COUNTED:
        raise ValueError(f"unknown counted thing {what!r}")

    def register(function):
        _counters[what] = function
        return function

    return register


def usage(organisation: Organisation, what: str) -> int:
    """How many ``what`` (a key of :data:`COUNTED`) ``organisation`` has now."""
    return _counters[what](organisation)


def room(organisation: Organisation, what: str) -> int | None:
    """How many more ``what`` ``organisation``'s plan allows now (0 at or over the
    limit), or None without a limit."""
    limit = limits(organisation)[COUNTED[what][0]]
    if limit is None:
        return None
    return max(0, limit - usage(organisation, what))


def refusal(organisation: Organisation, what: str) -> str:
    """The :class:`PlanLimit` message when ``organisation`` is at its limit of
    ``what`` (the dashboard shows it instead of the create button), else ``""``."""
    if room(organisation, what) != 0:
        return ""
    return message(organisation.plan.name, what, limits(organisation)[COUNTED[what][0]])


def check(organisation: Organisation, what: str, adding: int = 1) -> None:
    """Raise :class:`PlanLimit` when ``adding`` more ``what`` (a key of
    :data:`COUNTED`) would take ``organisation`` over its plan's limit; nothing
    without a limit. Call it in the transaction that creates them: with a limit
    the organisation's row is locked until it ends (on PostgreSQL), so two
    creations at once cannot both take the last place."""
    field = COUNTED[what][0]
    limit = limits(organisation)[field]
    if limit is None or adding <= 0:
        return
    if connection.in_atomic_block:
        Organisation.objects.select_for_update().filter(pk=organisation.pk).first()
    if usage(organisation, what) + adding > limit:
        raise PlanLimit(organisation.plan.name, what, limit)


@counts("api_keys")
def _api_keys(organisation: Organisation) -> int:
    return ApiKey.objects.filter(project__organisation=organisation,
                                 revoked_at__isnull=True).count()


def default_plan() -> Plan | None:
    """The plan ``CRONRADAR_DEFAULT_PLAN`` names, None when it is empty. Raises
    :class:`UnknownPlan` (with what to do) when no plan has that name."""
    name = settings.CRONRADAR_DEFAULT_PLAN
    if not name:
        return None
    found = Plan.objects.filter(name=name).first()
    if found is None:
        raise UnknownPlan(f"CRONRADAR_DEFAULT_PLAN={name!r} names no plan: create it "
                          f"(manage.py plan {name} --max-monitors ...) or change the setting")
    return found


def _give_default_plan(sender, instance: Organisation, raw: bool = False, **kwargs) -> None:
    """Every new organisation (sign-up, first run, commands, the admin) starts on
    :func:`default_plan` unless a plan was given."""
    if instance._state.adding and instance.plan_id is None and not raw:
        instance.plan = default_plan()


pre_save.connect(_give_default_plan, sender=Organisation,
                 dispatch_uid="accounts.plans.default_plan")


def set_plan(organisation: Organisation, plan: Plan | None) -> bool:
    """Put ``organisation`` on ``plan`` (None: no plan) and record a ``plan_change``
    audit entry ``{"plan": [old name, new name]}`` (None for no plan). False when
    it was on that plan already (nothing written)."""
    old = organisation.plan.name if organisation.plan_id is not None else None
    new = plan.name if plan is not None else None
    if old == new:
        return False
    with transaction.atomic():
        Organisation.objects.filter(pk=organisation.pk).update(plan=plan)
        organisation.plan = plan
        audit.record("plan_change", organisation, target=organisation,
                     changes={"plan": [old, new]})
    return True
