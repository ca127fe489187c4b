"""The first account of an installation: while no person exists (staff made by
``createsuperuser`` count), ``/`` offers "Create the first account" (email,
password, organisation name). That person becomes the owner of a new
organisation with a first project, or, when exactly one organisation exists (one
``createapikey`` made: nobody can be its owner yet), its owner; they are
verified and staff (the installation's operator: ``/admin/`` is theirs).

Under ``CRONRADAR_ENV=production`` the form also needs the one-time setup token
that ``migrate`` and ``serve`` print (:func:`setup_lines`), so the first stranger
to reach a public deploy cannot take it. The token is a :class:`SetupToken` row,
made once and printed by every command while nobody exists (several processes
print the same one); the first account deletes it, and no token works once a
person exists.
"""
from __future__ import annotations

import secrets
import sys
from enum import StrEnum

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models.signals import post_migrate
from django.utils.crypto import constant_time_compare

from accounts import signup
from accounts.models import Membership, Organisation, Profile, Project, SetupToken


def nobody_yet() -> bool:
    """Whether no person exists on the installation."""
    return not get_user_model().objects.exists()


def token_needed() -> bool:
    """Whether the first account needs the setup token (``CRONRADAR_ENV=production``)."""
    return settings.PRODUCTION


def setup_token() -> str:
    """The setup token, made on the first call (one row, whoever asks first)."""
    row, _ = SetupToken.objects.get_or_create(pk=1, defaults={
        "token": secrets.token_urlsafe(24)})
    return row.token


def setup_lines() -> list[str]:
    """What ``migrate`` and ``serve`` print about the first account: under
    production while nobody exists, the page and the setup token; else nothing."""
    if not (token_needed() and nobody_yet()):
        return []
    return [f"No account exists yet: open {settings.CRONRADAR_BASE_URL}/ to create the "
            f"first one, with the setup token {setup_token()}"]


def _announce(sender, verbosity=1, **kwargs) -> None:
    if verbosity:
        for line in setup_lines():
            print(line, file=sys.stdout, flush=True)


def connect(app_config) -> None:
    """Print :func:`setup_lines` after ``migrate`` (once: for the accounts app)."""
    post_migrate.connect(_announce, sender=app_config, dispatch_uid="accounts.firstrun")


def adoptable() -> Organisation | None:
    """The organisation the first account would own instead of making one: the
    only one, when exactly one exists (``createapikey`` made it)."""
    orgs = list(Organisation.objects.order_by("pk")[:2])
    return orgs[0] if len(orgs) == 1 else None


class Refusal(StrEnum):
    """Why :func:`create_first_account` made nobody."""

    TAKEN = "taken"
    """Someone exists already (another tab, another person was quicker)."""
    TOKEN = "token"
    """The setup token is missing or wrong (production only)."""
    NAME = "name"
    """The organisation name is empty, too long or taken."""


class Refused(Exception):
    """The first account was not made; ``reason`` is a :class:`Refusal`."""

    def __init__(self, reason: Refusal):
        super().__init__(reason)
        self.reason = reason


def create_first_account(email: str, password: str, organisation: str, token: str = ""):
    """Make the first person (``email``, lower-cased, is their username and address; ``password``
    already through :func:`accounts.signup.check_password`), verified and staff,
    owner of :func:`adoptable` or of a new organisation called ``organisation``
    with a first project. Returns the user; raises :class:`Refused`."""
    email = email.strip().lower()
    with transaction.atomic():
        # the token row, locked, makes two simultaneous first accounts take turns
        SetupToken.objects.get_or_create(pk=1, defaults={"token": secrets.token_urlsafe(24)})
        row = SetupToken.objects.select_for_update().get(pk=1)
        if not nobody_yet():
            raise Refused(Refusal.TAKEN)
        if token_needed() and not constant_time_compare(token.strip(), row.token):
            raise Refused(Refusal.TOKEN)
        org = adoptable()
        name = organisation.strip()
        if org is None and (not name or len(name) > 100
                            or Organisation.objects.filter(name=name).exists()):
            raise Refused(Refusal.NAME)
        user = get_user_model().objects.create_user(username=email, email=email,
                                                    password=password, is_staff=True,
                                                    is_superuser=True)
        Profile.objects.create(user=user)  # verified
        if org is None:
            signup.give_organisation(user, name)
        else:
            Membership.objects.create(organisation=org, user=user, role=Membership.Role.OWNER)
            if not org.projects.exists():
                Project.objects.create(organisation=org, name=signup.FIRST_PROJECT)
        SetupToken.objects.all().delete()
    return user
