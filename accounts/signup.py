"""Sign-up at ``/signup/``: who may (``CRONRADAR_SIGNUP``), the one-time link that
verifies the address before the account can sign in, and the rate limits.

``CRONRADAR_SIGNUP`` is ``closed`` (the default: people come in by invitation,
``createuser`` or the first-run page), ``open`` (anyone) or
``domain:example.com,other.org`` (addresses of those domains only). It is parsed
here only (:func:`parse`); ``accounts.checks`` refuses a malformed value at start.

Someone signing up gets a person (username and email: the address), their own
organisation (named after the address) of which they are owner, and a first
project; the person cannot sign in until they follow the emailed link and
confirm (:func:`verify`). The address is stored lower-cased. The answer is the
same whether the address is new or taken: a taken address gets an email instead
(a sign-in and password-reset link), so the page never tells who has an account.
An address whose account is not verified yet is signed up anew: the account
takes the new password and only the new link works (the password's hash is in
the link's state), so whoever verifies holds the password they chose, not one a
stranger set by signing the address up first. A completed password reset or an
accepted invitation proves the address too
(:func:`accounts.people.mark_verified`). Attempts are counted per address and per client
address in Django's cache (:data:`ADDRESS_LIMIT`, :data:`CLIENT_LIMIT` per
:data:`WINDOW`); over either, nothing is sent.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.hashers import make_password
from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.tokens import PasswordResetTokenGenerator
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.template import loader
from django.urls import reverse
from django.utils import timezone
from django.utils.encoding import force_bytes, force_str
from django.utils.http import urlsafe_base64_decode, urlsafe_base64_encode

from accounts import people, throttle
from accounts.models import Membership, Organisation, Profile, Project

CLOSED, OPEN, DOMAIN = "closed", "open", "domain"
ADDRESS_LIMIT = 3  # sign-up attempts per address per WINDOW
CLIENT_LIMIT = 10  # sign-up attempts per client IP address per WINDOW
WINDOW = timedelta(hours=1)
FIRST_PROJECT = "default"


@dataclass(frozen=True)
class Mode:
    """The parsed ``CRONRADAR_SIGNUP``: ``kind`` is ``closed``, ``open`` or
    ``domain``; ``domains`` the allowed email domains (lowercase) for ``domain``."""

    kind: str
    domains: tuple[str, ...] = ()

    @property
    def is_open(self) -> bool:
        """Whether ``/signup/`` takes anyone at all."""
        return self.kind != CLOSED

    def allows(self, email: str) -> bool:
        """Whether ``email`` may sign up (its domain, compared without case)."""
        if self.kind == DOMAIN:
            return email.rpartition("@")[2].lower() in self.domains
        return self.kind == OPEN


def parse(raw: str) -> Mode:
    """``CRONRADAR_SIGNUP``'s value as a :class:`Mode`; raises ValueError with the
    reason for anything else (an unknown word, ``domain:`` without a valid domain)."""
    text = raw.strip()
    if text.lower() in (CLOSED, OPEN):
        return Mode(text.lower())
    word, colon, rest = text.partition(":")
    if word.lower() != DOMAIN or not colon:
        raise ValueError("use closed, open or domain:example.com,other.org")
    domains = tuple(d.strip().lower() for d in rest.split(","))
    for domain in domains:
        try:
            validate_email(f"x@{domain}")
        except ValidationError:
            raise ValueError(f"{domain!r} is not an email domain: use "
                             "domain:example.com,other.org") from None
    return Mode(DOMAIN, domains)


def mode() -> Mode:
    """The installation's sign-up mode. A malformed value reads as closed (the
    system check stops ``manage.py`` and ``serve`` before it can be served)."""
    try:
        return parse(settings.CRONRADAR_SIGNUP)
    except ValueError:
        return Mode(CLOSED)


class Outcome(StrEnum):
    """What :func:`sign_up` did; the page says the same for ``sent`` whatever
    happened behind it."""

    SENT = "sent"
    """An email went to the address (a verification link, or for a taken address
    a note saying so)."""
    CLOSED = "closed"
    """``CRONRADAR_SIGNUP`` is closed."""
    DOMAIN = "domain"
    """The address's domain is not among the allowed ones."""
    RATE_LIMITED = "rate_limited"
    """Too many attempts for this address or from this client: nothing was sent."""


def _over_limit(key: str, limit: int) -> bool:
    """Count one attempt under ``key``; whether it is beyond ``limit`` in the window."""
    return throttle.count(key, WINDOW) > limit


def rate_limited(email: str, client: str) -> bool:
    """Count a sign-up attempt for ``email`` from ``client`` (an IP address);
    whether either is over its limit."""
    address = hashlib.sha256(email.lower().encode()).hexdigest()
    over_address = _over_limit(f"signup:address:{address}", ADDRESS_LIMIT)
    over_client = _over_limit(f"signup:client:{client}", CLIENT_LIMIT)
    return over_address or over_client


def check_password(email: str, password: str) -> list[str]:
    """Django's password validators' messages for a person of ``email`` (empty: ok)."""
    try:
        validate_password(password, get_user_model()(username=email, email=email))
    except ValidationError as e:
        return list(e.messages)
    return []


def same_address(email: str):
    """The people whose email or username is ``email`` (without case)."""
    return get_user_model().objects.filter(Q(email__iexact=email) | Q(username__iexact=email))


def sign_up(email: str, password: str, client: str) -> Outcome:
    """Sign ``email`` (stored lower-cased) up with ``password`` (already through
    :func:`check_password`) from ``client`` (IP address). Creates the unverified
    person, their organisation (owner) and first project, and emails the
    verification link; an address whose account is unverified takes ``password``
    and a new link (older links stop working); a verified one gets a note
    instead. Returns the :class:`Outcome`."""
    email = email.strip().lower()
    found = mode()
    if not found.is_open:
        return Outcome.CLOSED
    if not found.allows(email):
        return Outcome.DOMAIN
    if rate_limited(email, client):
        return Outcome.RATE_LIMITED
    existing = same_address(email).order_by("pk").first()
    if existing is None:
        try:
            with transaction.atomic():
                user = get_user_model().objects.create_user(username=email, email=email,
                                                            password=password)
                Profile.objects.create(user=user, email_verified_at=None)
                give_organisation(user, email)
        except IntegrityError:  # the same address (the username) signed up meanwhile
            existing = same_address(email).order_by("pk").first()
            if existing is None:
                raise
        else:
            _send(email, "verify", {"link": verification_link(user)})
            return Outcome.SENT
    if is_verified(existing):
        make_password(password)  # the work a new account costs: the time tells nothing
        _send(email, "taken", {"login": people.absolute(reverse("dashboard:login")),
                               "reset": people.absolute(reverse("dashboard:password_reset"))})
    else:  # whoever follows the new link holds this password, and older links die
        existing.set_password(password)
        existing.save(update_fields=["password"])
        _send(email, "verify", {"link": verification_link(existing)})
    return Outcome.SENT


def give_organisation(user, name: str) -> Organisation:
    """A new organisation called ``name`` (``name (2)``, … when taken) with ``user``
    as owner and a first project."""
    base, n = name[:90], 1
    while Organisation.objects.filter(name=name).exists():
        n += 1
        name = f"{base} ({n})"
    org = Organisation.objects.create(name=name)
    Membership.objects.create(organisation=org, user=user, role=Membership.Role.OWNER)
    Project.objects.create(organisation=org, name=FIRST_PROJECT)
    return org


def _send(to: str, what: str, context: dict) -> None:
    subject = {"verify": "Confirm your email address for CronRadar",
               "taken": "You already have a CronRadar account"}[what]
    body = loader.render_to_string(f"dashboard/signup_{what}_email.txt",
                                   {**context, "email": to})
    send_mail(subject, body, settings.CRONRADAR_EMAIL_FROM, [to])


class _VerificationTokens(PasswordResetTokenGenerator):
    """One-time verification tokens: they expire after ``PASSWORD_RESET_TIMEOUT``
    and stop working once the address is verified or the password changes (a new
    sign-up of the address): the state is in the hash."""

    key_salt = "cronradar.accounts.signup.verify"

    def _make_hash_value(self, user, timestamp) -> str:
        verified = Profile.objects.filter(user=user).values_list(
            "email_verified_at", flat=True).first()
        return f"{user.pk}{user.email}{user.password}{verified}{timestamp}"


tokens = _VerificationTokens()


def verification_link(user) -> str:
    """The absolute one-time link that verifies ``user``'s address."""
    return people.absolute(reverse("dashboard:signup_verify", kwargs={
        "uidb64": urlsafe_base64_encode(force_bytes(user.pk)), "token": tokens.make_token(user)}))


def link_owner(uidb64: str, token: str):
    """The person a verification link names while it works (nothing is changed:
    the page a GET shows); None when the link is unknown, expired or used."""
    try:
        pk = int(force_str(urlsafe_base64_decode(uidb64)))
    except (TypeError, ValueError, OverflowError):
        return None
    user = get_user_model().objects.filter(pk=pk).first()
    if user is None or not tokens.check_token(user, token):
        return None
    return user


def verify(uidb64: str, token: str, now=None):
    """Mark the person of a verification link verified; returns them, or None when
    the link is unknown, expired or already used."""
    user = link_owner(uidb64, token)
    if user is not None:
        people.mark_verified(user, now or timezone.now())
    return user


def is_verified(user) -> bool:
    """Whether ``user`` may sign in as far as their address goes: everyone but a
    person who signed up and has not followed their link yet."""
    return not Profile.objects.filter(user=user, email_verified_at__isnull=True).exists()


class LoginForm(throttle.ThrottledForm, AuthenticationForm):
    """Django's sign-in form, throttled (:class:`accounts.throttle.ThrottledForm`),
    refusing a person whose address is not verified (said only to someone who
    gave the right password: it tells nothing about other addresses)."""

    error_messages = {**AuthenticationForm.error_messages,
                      "unverified": "Confirm your email address first: follow the link we "
                                    "emailed you (sign up again with the same address to get "
                                    "a new one).",
                      "unverified_closed": "Confirm your email address first: follow the link "
                                           "we emailed you, or use \"Forgot your password?\" "
                                           "below (the reset link confirms your address)."}

    def confirm_login_allowed(self, user) -> None:
        super().confirm_login_allowed(user)
        if not is_verified(user):
            again = mode().allows(user.email)  # sign-up takes this address again
            raise ValidationError(self.error_messages[
                "unverified" if again else "unverified_closed"], code="unverified")
