"""Tenants and who acts in them: organisations, their people (memberships and
profiles), projects and project API keys.

The tables keep the names they had when these models were the monitors app's
(``monitors_organisation`` and so on): the move to this app changed no row
(migration ``accounts/0001``).
"""
import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.utils.crypto import constant_time_compare, salted_hmac
from django.utils.timezone import now


def _ping_key() -> str:
    """22 URL-safe characters, never starting with "-" (shells and argument parsers
    would take it for an option)."""
    while (key := secrets.token_urlsafe(16)).startswith("-"):
        pass
    return key


class Plan(models.Model):
    """A named set of limits an operator gives organisations (``manage.py plan``,
    ``manage.py setplan``, the admin; docs/multi-tenant.md). Every limit is a whole
    number, or None for "no limit"; an organisation without a plan has none (a
    self-hosted install). The ping rates are per minute; retention in days."""

    LIMITS = ("max_monitors", "max_channels", "max_members", "max_api_keys", "pings_kept",
              "pings_per_minute", "org_pings_per_minute", "run_retention_days",
              "incident_retention_days")

    name = models.CharField(max_length=50, unique=True)
    max_monitors = models.PositiveIntegerField(null=True, blank=True)
    max_channels = models.PositiveIntegerField(null=True, blank=True)
    max_members = models.PositiveIntegerField(null=True, blank=True)
    max_api_keys = models.PositiveIntegerField(null=True, blank=True)
    pings_kept = models.PositiveIntegerField(
        null=True, blank=True, help_text="pings (with their bodies) kept per monitor")
    pings_per_minute = models.PositiveIntegerField(
        null=True, blank=True, help_text="pings accepted per monitor per minute")
    org_pings_per_minute = models.PositiveIntegerField(
        null=True, blank=True, help_text="pings accepted per organisation per minute")
    run_retention_days = models.PositiveIntegerField(null=True, blank=True)
    incident_retention_days = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class LiveOrganisations(models.Manager):
    """``Organisation.live``: the organisations not being deleted."""

    def get_queryset(self):
        return super().get_queryset().filter(deleted_at__isnull=True)


class Organisation(models.Model):
    """A tenant: owns projects; people belong to it through :class:`Membership`.
    ``plan`` None means no plan limits (docs/multi-tenant.md). ``deleted_at`` set:
    deleted by its owner and hidden from everyone (every lookup of
    :mod:`accounts.tenancy` excludes it), its rows waiting to be purged once the
    resolves of its open incidents are sent (``cronradar/orgdata.py``); the index
    on it is the purge pass's due list."""

    name = models.CharField(max_length=100, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    plan = models.ForeignKey(Plan, on_delete=models.PROTECT, null=True, blank=True,
                             related_name="organisations")
    deleted_at = models.DateTimeField(null=True, blank=True)

    objects = models.Manager()
    live = LiveOrganisations()

    class Meta:
        db_table = "monitors_organisation"  # kept from when the model was monitors'
        indexes = [models.Index(fields=["deleted_at"], name="organisation_deleted",
                                condition=models.Q(deleted_at__isnull=False))]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    """A person (Django user) in an organisation, with a role. Roles, lowest first
    (each can do what the ones before it can): ``viewer`` reads; ``member`` manages
    monitors, incidents and maintenance windows; ``admin`` also channels, escalation
    policies, API keys, projects and members; ``owner`` also the organisation and its
    owners. See :mod:`accounts.tenancy`."""

    class Role(models.TextChoices):
        VIEWER = "viewer"
        MEMBER = "member"
        ADMIN = "admin"
        OWNER = "owner"

    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE,
                                     related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "monitors_membership"  # kept from when the model was monitors'
        constraints = [models.UniqueConstraint(fields=["organisation", "user"],
                                               name="membership_unique")]


class Profile(models.Model):
    """A person's dashboard preferences and their email's state: ``timezone`` (IANA)
    for the times shown, "" until chosen (the dashboard then takes the browser's,
    else UTC); ``email_verified_at``, null while a person who signed up at
    ``/signup/`` has not followed their verification link (they cannot sign in
    until then). Every other way in is verified: a profile is made verified, and a
    person without a profile row (``createsuperuser``) is verified
    (:func:`accounts.signup.is_verified`). ``theme``: the dashboard's colours,
    ``auto`` (follow the browser's ``prefers-color-scheme``), ``light`` or ``dark``."""

    class Theme(models.TextChoices):
        AUTO = "auto"
        LIGHT = "light"
        DARK = "dark"

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="profile")
    timezone = models.CharField(max_length=64, blank=True, default="")
    email_verified_at = models.DateTimeField(null=True, blank=True, default=now)
    theme = models.CharField(max_length=8, choices=Theme.choices, default=Theme.AUTO)

    class Meta:
        db_table = "monitors_profile"  # kept from when the model was monitors'


class SetupToken(models.Model):
    """The one-time token that creating the first account needs under
    ``CRONRADAR_ENV=production`` (:mod:`accounts.firstrun`): made by the first
    ``migrate`` or ``serve`` that finds nobody, printed by each of them while nobody
    exists, deleted when the first account is made. At most one row."""

    token = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)


class Invitation(models.Model):
    """An admin's invitation of ``email`` into ``organisation`` with ``role``
    (:mod:`accounts.invitations`): the invitee joins through the emailed link,
    signed in as that address or choosing a password (``username`` is the admin's
    suggestion for someone new). ``accepted_at`` set: used. One pending invitation
    per organisation and address (a new one replaces it)."""

    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE,
                                     related_name="invitations")
    email = models.EmailField()
    username = models.CharField(max_length=150, blank=True, default="")
    role = models.CharField(max_length=10, choices=Membership.Role.choices,
                            default=Membership.Role.MEMBER)
    invited_by = models.CharField(max_length=150, blank=True, default="")
    created_at = models.DateTimeField(default=now)
    accepted_at = models.DateTimeField(null=True, blank=True)


def _badge_key() -> str:
    return secrets.token_urlsafe(18)


class Project(models.Model):
    """A group of monitors, channels, policies and API keys in an organisation.

    ``ping_key`` makes the slug URL form ``/ping/<ping_key>/<slug>`` work;
    ``badge_key`` the public status badges ``/badge/<badge_key>/<slug or tag>.svg``
    (a new one revokes the old).
    """

    organisation = models.ForeignKey(Organisation, on_delete=models.CASCADE,
                                     related_name="projects")
    name = models.CharField(max_length=100)
    ping_key = models.CharField(max_length=64, unique=True, default=_ping_key)
    badge_key = models.CharField(max_length=64, unique=True, default=_badge_key)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "monitors_project"  # kept from when the model was monitors'
        constraints = [models.UniqueConstraint(fields=["organisation", "name"],
                                               name="project_name_unique")]

    def __str__(self) -> str:
        return self.name


class ApiKey(models.Model):
    """A project API key, shown once at creation.

    Stored as ``prefix`` (the first 12 characters, indexed, for the lookup) and
    ``key_hash``, an HMAC-SHA256 of the whole key keyed by ``SECRET_KEY`` (Django's
    ``salted_hmac``; ``SECRET_KEY_FALLBACKS`` keep keys working across a rotation).
    Keys made before hashing was keyed (``scheme`` ``sha256``: plain SHA-256, 8-
    character prefix) still work and are rehashed on their first use.
    ``read_only`` keys never change anything; ``revoked_at`` keys are refused.
    ``name`` says whose it is: it signs acknowledgements made with it."""

    PREFIX = 12

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100, blank=True, default="")
    key_hash = models.CharField(max_length=64, unique=True)
    scheme = models.CharField(max_length=10, default="hmac")
    prefix = models.CharField(max_length=12, db_index=True)
    read_only = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "monitors_apikey"  # kept from when the model was monitors'

    def __str__(self) -> str:
        return self.name or f"API key {self.prefix}…"

    @staticmethod
    def keyed_hash(key: str, secret: str | None = None) -> str:
        """HMAC-SHA256 of ``key`` (hex) under ``secret`` (default ``SECRET_KEY``)."""
        return salted_hmac("cronradar.apikey", key, secret=secret,
                           algorithm="sha256").hexdigest()

    def matches(self, key: str) -> bool:
        """Whether ``key`` is this key (constant-time comparison)."""
        if self.scheme == "sha256":
            return constant_time_compare(hashlib.sha256(key.encode()).hexdigest(),
                                         self.key_hash)
        secrets_ = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
        return any(constant_time_compare(self.keyed_hash(key, s), self.key_hash)
                   for s in secrets_)

    @classmethod
    def find(cls, key: str) -> "ApiKey | None":
        """The unrevoked key ``key`` is, with its project, or None (also for a key
        of an organisation being deleted). A key of the old scheme is rehashed
        under the current one on the way."""
        candidates = (cls.objects.select_related("project", "project__organisation")
                      .filter(prefix__in={key[:cls.PREFIX], key[:8]}, revoked_at__isnull=True,
                              project__organisation__deleted_at__isnull=True))
        for row in candidates:
            if row.matches(key):
                if row.scheme != "hmac" or row.key_hash != cls.keyed_hash(key):
                    row.scheme, row.key_hash, row.prefix = "hmac", cls.keyed_hash(key), \
                        key[:cls.PREFIX]
                    row.save(update_fields=["scheme", "key_hash", "prefix"])
                return row
        return None

    @classmethod
    def issue(cls, project: Project, name: str = "", read_only: bool = False
              ) -> tuple["ApiKey", str]:
        """Create a key for ``project``; returns (row, plaintext key)."""
        key = "cr_" + secrets.token_urlsafe(30)
        row = cls.objects.create(project=project, name=name, key_hash=cls.keyed_hash(key),
                                 prefix=key[:cls.PREFIX], read_only=read_only)
        return row, key


class AuditEntry(models.Model):
    """One change by a person, a key or the service itself (:mod:`accounts.audit`
    writes them). ``organisation`` is None for an installation-level entry (an
    organisation's deletion outlives it: ``organisation_name`` keeps its name).
    ``actor`` is the text shown (a username, ``key cr_AbCd``, ``signed link``);
    ``actor_user`` the person, when there is one. ``changes`` is
    ``{field: [old, new]}`` for an update, secrets masked; ``target_*`` name the
    object changed (``target_type`` a coded kind: monitor, channel, ...)."""

    class Action(models.TextChoices):
        CREATE = "create"
        UPDATE = "update"
        DELETE = "delete"
        PAUSE = "pause"
        RESUME = "resume"
        ACKNOWLEDGE = "acknowledge"
        RESOLVE = "resolve"
        KEY_CREATE = "key_create"
        KEY_REVOKE = "key_revoke"
        MEMBER_ADD = "member_add"
        MEMBER_REMOVE = "member_remove"
        ROLE_CHANGE = "role_change"
        PLAN_CHANGE = "plan_change"
        SIGNIN = "signin"
        SIGNIN_FAILED = "signin_failed"
        EXPORT = "export"
        ORGANISATION_DELETE = "organisation_delete"
        ACCOUNT_DELETE = "account_delete"

    organisation = models.ForeignKey(Organisation, on_delete=models.SET_NULL, null=True,
                                     blank=True, related_name="audit_entries")
    organisation_name = models.CharField(max_length=100, blank=True, default="")
    at = models.DateTimeField(default=now, db_index=True)
    actor = models.CharField(max_length=150, blank=True, default="")
    actor_user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL,
                                   null=True, blank=True, related_name="+")
    address = models.GenericIPAddressField(null=True, blank=True)
    action = models.CharField(max_length=24, choices=Action.choices)
    target_type = models.CharField(max_length=32, blank=True, default="")
    target_id = models.CharField(max_length=64, blank=True, default="")
    target_repr = models.CharField(max_length=200, blank=True, default="")
    changes = models.JSONField(default=dict, blank=True)

    class Meta:
        indexes = [models.Index(fields=["organisation", "-id"], name="audit_org_recent"),
                   models.Index(fields=["organisation", "target_type", "target_id"],
                                name="audit_org_target")]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.actor} {self.action} {self.target_repr}"
