"""People, as admins add them and as they get in: who an admin can find by name,
and the emails that carry a link to choose a password.

An admin finds only people who already share an organisation with them: anyone
else on the installation reads exactly as a name that does not exist, so the
members form cannot be used to learn who has an account, nor to pull a stranger
into an organisation. Someone new is created with both a username and an email;
they get an email with a link to set their password.

Every link is built on ``CRONRADAR_BASE_URL``, never on the request's ``Host``
header (with ``ALLOWED_HOSTS=*`` anyone can send ``Host: evil.example`` and the
link would carry a valid reset token to that host).
"""
from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import PasswordResetForm
from django.contrib.auth.tokens import default_token_generator
from django.template import loader
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

NOT_FOUND = ("no such person in your organisations; to add someone new, give a new "
             "username and email")


def base_url() -> tuple[str, str]:
    """(protocol, host[:port]) of ``CRONRADAR_BASE_URL``. A path prefix is the
    script prefix's business: ``reverse`` adds it."""
    parts = urlsplit(settings.CRONRADAR_BASE_URL)
    return parts.scheme or "http", parts.netloc


def people_of(caller_user):
    """Users who share an organisation with ``caller_user`` (themselves included)."""
    return get_user_model().objects.filter(
        memberships__organisation__memberships__user=caller_user).distinct()


def password_link(user) -> str:
    """An absolute one-use link for ``user`` to choose a password."""
    protocol, host = base_url()
    path = reverse("dashboard:password_reset_confirm", kwargs={
        "uidb64": urlsafe_base64_encode(force_bytes(user.pk)),
        "token": default_token_generator.make_token(user)})
    return f"{protocol}://{host}{path}"


def send_welcome(user, organisation, role: str, added_by: str) -> None:
    """The email a person created from the members page gets: who added them,
    where, their username and the link to choose a password."""
    from django.core.mail import send_mail

    context = {"user": user, "organisation": organisation, "role": role,
               "added_by": added_by, "link": password_link(user)}
    body = loader.render_to_string("dashboard/password_set_email.txt", context)
    send_mail(f"You were added to {organisation.name} on CronRadar", body,
              settings.CRONRADAR_EMAIL_FROM, [user.email])


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
