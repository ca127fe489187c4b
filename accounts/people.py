"""People, as admins add them and as they get in: who an admin can find by name,
the links emails carry (on ``CRONRADAR_BASE_URL``), and the password reset.

An admin finds only people who already share an organisation with them: anyone
else on the installation reads exactly as a name that does not exist, so the
members form cannot be used to learn who has an account, nor to pull a stranger
into an organisation: anyone else is invited by email (:mod:`accounts.invitations`)
and joins only by accepting.

Every link is built on ``CRONRADAR_BASE_URL``, never on the request's ``Host``
header (with ``ALLOWED_HOSTS=*`` anyone can send ``Host: evil.example`` and the
link would carry a valid reset token to that host). A completed reset proves
the address: a person who signed up and never followed their link is verified
by it (:class:`SetForm`, :func:`mark_verified`).
"""
from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import PasswordResetForm, SetPasswordForm
from django.utils import timezone

from accounts.models import Profile

NOT_FOUND = ("no such person in your organisations; to invite someone, give their email")


def base_url() -> tuple[str, str]:
    """(protocol, host[:port]) of ``CRONRADAR_BASE_URL``. A path prefix is the
    script prefix's business: ``reverse`` adds it."""
    parts = urlsplit(settings.CRONRADAR_BASE_URL)
    return parts.scheme or "http", parts.netloc


def people_of(caller_user):
    """Users who share an organisation with ``caller_user`` (themselves included)."""
    return get_user_model().objects.filter(
        memberships__organisation__memberships__user=caller_user).distinct()


def absolute(path: str) -> str:
    """``path`` (from ``reverse``) as an absolute URL on ``CRONRADAR_BASE_URL``."""
    protocol, host = base_url()
    return f"{protocol}://{host}{path}"


class ResetForm(PasswordResetForm):
    """Django's password reset, with the link on ``CRONRADAR_BASE_URL`` whatever
    the request's host, and open to people added from the members page who have
    not chosen a password yet (their password is unusable until then)."""

    def get_users(self, email):
        field = get_user_model().get_email_field_name()
        return get_user_model()._default_manager.filter(
            **{f"{field}__iexact": email, "is_active": True})

    def save(self, **options):
        protocol, host = base_url()
        options.update(domain_override=host, use_https=protocol == "https",
                       from_email=settings.CRONRADAR_EMAIL_FROM)
        return super().save(**options)


class SetForm(SetPasswordForm):
    """The reset link's new-password form: saving it also verifies the address
    (the link came to it), so someone who signed up and never confirmed gets in
    this way, even once sign-up is closed."""

    def save(self, commit=True):
        user = super().save(commit=commit)
        if commit:
            mark_verified(user, timezone.now())
        return user


def mark_verified(user, now) -> None:
    """Record that ``user`` proved their address at ``now`` (their sign-up link, a
    completed password reset, an invitation's link); no change for someone
    verified already."""
    Profile.objects.filter(user=user, email_verified_at__isnull=True).update(
        email_verified_at=now)
