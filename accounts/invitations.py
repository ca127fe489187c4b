"""Invitations: an admin invites an email address into an organisation with a
role; the invitee joins through the emailed link.

The answer to the admin and the email are the same whether or not the address
already has an account (nothing tells who has one). The link's page is the
invitee's: someone with an account there signs in as that address and accepts
(their membership is made then); someone new chooses a username (the admin's
suggestion, or the address) and a password, and is verified by having followed
the link (the address is stored lower-cased). Someone whose account is not
verified yet (signed up, never confirmed) cannot sign in: they accept on the
page with that account's password, which verifies it (the link proves the
address), or reset the password first. The link is signed (Django's ``signing``), expires after
:data:`MAX_AGE` and works once; a new invitation of the same address to the same
organisation replaces a pending one.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.db import transaction
from django.template import loader
from django.urls import reverse
from django.utils import timezone

from accounts import people, plans, signup
from accounts.models import Invitation, Membership, Organisation, Profile

MAX_AGE = timedelta(days=7)
SALT = "cronradar.accounts.invitation"


def invite(organisation: Organisation, email: str, role: str, invited_by: str,
           username: str = "", now: datetime | None = None) -> Invitation:
    """Invite ``email`` into ``organisation`` as ``role`` (``invited_by``: who, for
    the email; ``username``: a suggestion for someone new) and send the email.
    Replaces a pending invitation of the same address there. Raises
    :class:`accounts.plans.PlanLimit` when the plan's members (people and pending
    invitations) are all taken."""
    with transaction.atomic():
        replaced = pending(organisation, now).filter(email__iexact=email).exists()
        plans.check(organisation, "members", adding=0 if replaced else 1)
        Invitation.objects.filter(organisation=organisation, email__iexact=email,
                                  accepted_at__isnull=True).delete()
        extra = {"created_at": now} if now is not None else {}
        invitation = Invitation.objects.create(organisation=organisation, email=email,
                                               username=username, role=role,
                                               invited_by=invited_by, **extra)
    body = loader.render_to_string("dashboard/invitation_email.txt", {
        "invitation": invitation, "link": link(invitation), "days": MAX_AGE.days})
    send_mail(f"{invited_by} invited you to {organisation.name} on CronRadar", body,
              settings.CRONRADAR_EMAIL_FROM, [email])
    return invitation


def link(invitation: Invitation) -> str:
    """The absolute link that accepts ``invitation``."""
    token = signing.dumps(invitation.pk, salt=SALT)
    return people.absolute(reverse("dashboard:invitation", kwargs={"token": token}))


def find(token: str) -> Invitation | None:
    """The pending invitation a link's token names; None when the token is forged,
    older than :data:`MAX_AGE`, used, or its invitation was replaced."""
    try:
        pk = signing.loads(token, salt=SALT, max_age=MAX_AGE)
    except signing.BadSignature:  # SignatureExpired is one
        return None
    return Invitation.objects.select_related("organisation").filter(
        pk=pk, accepted_at__isnull=True).first() if isinstance(pk, int) else None


def has_account(invitation: Invitation) -> bool:
    """Whether a person with the invited address exists (for the invitee's page)."""
    return get_user_model().objects.filter(email__iexact=invitation.email).exists()


def is_for(invitation: Invitation, user) -> bool:
    """Whether ``user`` (signed in) is the invited address."""
    return bool(user.email) and user.email.lower() == invitation.email.lower()


def pending(organisation: Organisation, now: datetime | None = None):
    """The invitations into ``organisation`` that can still be accepted at ``now``
    (default: the present)."""
    return Invitation.objects.filter(organisation=organisation, accepted_at__isnull=True,
                                     created_at__gt=(now or timezone.now()) - MAX_AGE)


@plans.counts("members")
def members(organisation: Organisation) -> int:
    """What a plan's ``max_members`` bounds: the organisation's people and its
    pending invitations."""
    return Membership.objects.filter(organisation=organisation).count() \
        + pending(organisation).count()


def accept(invitation: Invitation, user, now: datetime) -> Membership | None:
    """Put ``user`` (whose address is the invitation's: :func:`is_for`) into the
    organisation with the invited role; someone already a member keeps their role.
    None when the invitation was used meanwhile. Raises
    :class:`accounts.plans.PlanLimit` (nothing changed) when the plan's members are
    all taken without this invitation (the plan was lowered since it was sent)."""
    with transaction.atomic():
        if not Invitation.objects.filter(pk=invitation.pk, accepted_at__isnull=True).update(
                accepted_at=now):
            return None
        if not Membership.objects.filter(organisation=invitation.organisation,
                                         user=user).exists():
            plans.check(invitation.organisation, "members")  # this one is no longer pending
        membership, _ = Membership.objects.get_or_create(
            organisation=invitation.organisation, user=user,
            defaults={"role": invitation.role})
    return membership


def unverified_account(invitation: Invitation):
    """The person with the invited address who has not verified it yet (signed up
    and never followed their link), or None."""
    for user in get_user_model().objects.filter(email__iexact=invitation.email).order_by("pk"):
        if not signup.is_verified(user):
            return user
    return None


def accept_unverified(invitation: Invitation, user, password: str, now: datetime):
    """Accept for :func:`unverified_account` ``user`` given their ``password``:
    the invitation's link proves the address, so they are verified at ``now``.
    Returns the membership; None when the password is wrong or the invitation
    was used meanwhile (then nothing changes)."""
    if not user.check_password(password):
        return None
    with transaction.atomic():
        membership = accept(invitation, user, now)
        if membership is not None:
            people.mark_verified(user, now)
    return membership


def check_username(username: str) -> list[str]:
    """Why ``username`` cannot be a new person's (empty: it can)."""
    users = get_user_model()
    if not username or len(username) > users._meta.get_field("username").max_length:
        return ["a username of 1 to 150 characters"]
    try:
        users.username_validator(username)
    except ValidationError as e:
        return list(e.messages)
    if users.objects.filter(username__iexact=username).exists():
        return [f"the username '{username}' is taken: choose another"]
    return []


def accept_new(invitation: Invitation, username: str, password: str, now: datetime):
    """Make the invited person (``username`` through :func:`check_username`,
    ``password`` through the validators), verified, and :func:`accept` for them.
    Returns the user, or None when the invitation was used meanwhile."""
    with transaction.atomic():
        user = get_user_model().objects.create_user(
            username=username, email=invitation.email.lower(), password=password)
        Profile.objects.create(user=user, email_verified_at=now)
        if accept(invitation, user, now) is None:
            transaction.set_rollback(True)
            return None
    return user
