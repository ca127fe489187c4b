"""Deleting an organisation and deleting one's own account (docs/multi-tenant.md,
"Export and deletion"). Who may is decided here; what else goes with an
organisation (monitors, channels, their notifications) is the site's business,
told by :data:`accounts.signals.organisation_deleted`.

Errors are :class:`Refused` with a coded ``reason`` and the sentence shown.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction

from accounts import audit, signals
from accounts.models import AuditEntry, Membership, Organisation

log = logging.getLogger(__name__)
OWNER = Membership.Role.OWNER


@dataclass
class Refused(Exception):
    """Why a deletion is refused: ``reason`` coded (``not_owner``, ``confirm``,
    ``last_owner``), ``message`` the sentence for the person."""

    reason: str
    message: str

    def __str__(self) -> str:
        return self.message


def delete_organisation(organisation: Organisation, user, confirm: str,
                        now: datetime) -> AuditEntry:
    """Delete ``organisation`` at ``now`` on behalf of ``user`` (a person),
    ``confirm`` being the name they typed.

    Raises :class:`Refused` (``not_owner`` unless ``user`` is an owner there,
    ``confirm`` unless ``confirm`` is exactly its name). Otherwise, in one
    transaction: ``deleted_at`` is set (hidden from every lookup at once), the
    installation-level audit entry is written (organisation None, its name kept:
    it outlives the purge) and returned, :data:`signals.organisation_deleted` is
    sent, and the operator's log gets one line. An organisation already deleted
    is hidden: ``not_owner``."""
    role = (Membership.objects.filter(user=user, organisation=organisation,
                                      organisation__deleted_at__isnull=True)
            .values_list("role", flat=True).first())
    if role != OWNER:
        raise Refused("not_owner", "this needs the owner role in the organisation")
    if confirm != organisation.name:
        raise Refused("confirm", f"type the organisation's name ({organisation.name}) to "
                                 "confirm")
    with transaction.atomic():
        if not Organisation.objects.filter(pk=organisation.pk, deleted_at__isnull=True) \
                .update(deleted_at=now):
            raise Refused("not_owner", "this needs the owner role in the organisation")
        organisation.deleted_at = now
        entry = audit.record(AuditEntry.Action.ORGANISATION_DELETE, None, target=organisation,
                             at=now)
        # installation-level, yet whose it was stays readable after the purge
        AuditEntry.objects.filter(pk=entry.pk).update(organisation_name=organisation.name)
        entry.organisation_name = organisation.name
        signals.organisation_deleted.send(sender=Organisation, organisation=organisation,
                                          now=now)
    log.warning("organisation %s (id %s) deleted by %s; its rows are purged once the "
                "resolves of its open incidents are sent", organisation.name,
                organisation.pk, entry.actor or "the service")
    return entry


def last_owner_of(user) -> list[Organisation]:
    """The live organisations where ``user`` is the only owner."""
    mine = Organisation.live.filter(memberships__user=user, memberships__role=OWNER)
    return [org for org in mine.order_by("name")
            if not Membership.objects.filter(organisation=org, role=OWNER)
            .exclude(user=user).exists()]


def delete_account(user, now: datetime) -> list[str]:
    """Delete ``user``'s account at ``now``; returns the names of the
    organisations they left.

    Refused (:class:`Refused` ``last_owner``, naming the organisation) when they
    are the last owner of an organisation that has other members, or that an
    :data:`signals.account_deleting` receiver says still holds something (the
    site: monitors). An organisation they are the last owner of and that is
    otherwise empty is deleted with them (:func:`delete_organisation`). Each
    organisation they were in gets an ``account_delete`` entry; then the person
    (their memberships, profile) is deleted."""
    sole = last_owner_of(user)
    for org in sole:
        held = Membership.objects.filter(organisation=org).exclude(user=user).exists() or any(
            answer for _, answer in signals.account_deleting.send(
                sender=Organisation, user=user, organisation=org))
        if held:
            raise Refused("last_owner", f"you are the last owner of {org.name}: make someone "
                                        "else an owner or delete the organisation first")
    left = []
    with transaction.atomic():
        for org in sole:
            delete_organisation(org, user, org.name, now)
        for membership in (Membership.objects.filter(user=user, organisation__deleted_at=None)
                           .select_related("organisation").order_by("organisation__name")):
            audit.record(AuditEntry.Action.ACCOUNT_DELETE, membership.organisation,
                         target=user, target_type="user", target_repr=user.get_username(),
                         at=now)
            left.append(membership.organisation.name)
        user.delete()
    log.warning("account %s deleted; it left %s", user.get_username(),
                ", ".join(left) or "no organisation")
    return left
