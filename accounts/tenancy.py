"""Who may see and change what: the one place the API's lookups are scoped.

A caller is either a project API key (``request.auth`` is an
:class:`~accounts.models.ApiKey`) or a person (``request.user``, signed in, acting
through their :class:`~accounts.models.Membership` rows):

- a key sees its own project only; a read-write key acts there as an ``admin``
  (everything but the organisation's members and the organisation itself), a
  read-only key as a ``viewer``;
- a person sees every project of the organisations they belong to, with their
  membership's role there.

An organisation being deleted (``Organisation.deleted_at`` set) is invisible to
everyone from that moment: its projects, its objects and its memberships' roles
are excluded from every lookup here, and its keys are refused
(:meth:`~accounts.models.ApiKey.find`).

Every list and lookup goes through :func:`visible` (another tenant's object is a
404, never a 403 and never the object); every write is checked by
:class:`Access` against the view's ``write_role`` in the object's project (a role
acting above its rights inside its own organisation is a 403); every reference a
write makes (a channel, a policy, a monitor, a project) is resolved through
:func:`visible` too, so it can never point into another tenant (400).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Model, QuerySet
from rest_framework import exceptions, permissions, serializers

from accounts.models import ApiKey, Membership, Organisation, Project

ROLES = [r.value for r in Membership.Role]  # lowest first
KEY_ROLE = {False: Membership.Role.ADMIN, True: Membership.Role.VIEWER}  # by read_only
LIVE = {"organisation__deleted_at__isnull": True}  # a project's or membership's organisation


def at_least(role: str | None, needed: str) -> bool:
    """Whether ``role`` (None: no role) can do what ``needed`` can."""
    return role is not None and ROLES.index(role) >= ROLES.index(needed)


@dataclass
class Caller:
    """The authenticated caller: ``key`` or ``user`` (exactly one is set)."""

    key: ApiKey | None = None
    user: object | None = None
    _roles: dict = field(default_factory=dict, repr=False)  # organisation id -> role

    @property
    def name(self) -> str:
        """Who acts, for timelines: the key's name, or the person's username."""
        return str(self.key) if self.key is not None else self.user.get_username()

    def projects(self) -> QuerySet:
        """The projects this caller can see."""
        if self.key is not None:
            return Project.objects.filter(pk=self.key.project_id, **LIVE)
        return Project.objects.filter(organisation__memberships__user=self.user, **LIVE)

    def organisations(self) -> QuerySet:
        """The organisations this caller can see (a key: its project's)."""
        if self.key is not None:
            return Organisation.live.filter(projects=self.key.project_id)
        return Organisation.live.filter(memberships__user=self.user)

    def role(self, project: Project) -> str | None:
        """The caller's role in ``project`` (None: it cannot see it)."""
        if self.key is not None:
            return KEY_ROLE[self.key.read_only] if project.pk == self.key.project_id else None
        return self.org_role(project.organisation_id)

    def org_role(self, organisation_id: int) -> str | None:
        """A person's role in an organisation (keys have none: None)."""
        if self.key is not None:
            return None
        if organisation_id not in self._roles:
            self._roles[organisation_id] = (
                Membership.objects.filter(user=self.user, organisation_id=organisation_id,
                                          **LIVE).values_list("role", flat=True).first())
        return self._roles[organisation_id]

    def best_role(self) -> str | None:
        """The highest role the caller has anywhere."""
        if self.key is not None:
            return KEY_ROLE[self.key.read_only]
        roles = set(Membership.objects.filter(user=self.user, **LIVE)
                    .values_list("role", flat=True))
        return max(roles, key=ROLES.index, default=None)


def caller(request) -> Caller:
    """The request's :class:`Caller` (made once per request); raises
    NotAuthenticated (401) without one."""
    found = getattr(request, "_cronradar_caller", None)
    if found is None:
        if isinstance(getattr(request, "auth", None), ApiKey):  # a dashboard page has none
            found = Caller(key=request.auth)
        elif request.user is not None and request.user.is_authenticated:
            found = Caller(user=request.user)
        else:
            raise exceptions.NotAuthenticated()
        request._cronradar_caller = found
    return found


def caller_or_none(request) -> Caller | None:
    """The request's :class:`Caller`, or None for an anonymous request (the OpenAPI
    schema is built with one: every scoped list is then empty)."""
    try:
        return caller(request)
    except exceptions.NotAuthenticated:
        return None


def can(request, project: Project, role: str) -> bool:
    """Whether the caller has ``role`` in ``project``."""
    return at_least(caller(request).role(project), role)


def visible(request, queryset: QuerySet, path: str = "project") -> QuerySet:
    """``queryset`` limited to the caller's projects; ``path`` leads from the model to
    its project (``"monitor__project"`` for runs, ``"channel__project"`` …)."""
    who = caller_or_none(request)
    if who is None:
        return queryset.none()
    return queryset.filter(**{f"{path}__in": who.projects()})


def project_of(obj: Model) -> Project:
    """The project an API object belongs to."""
    if isinstance(obj, Project):
        return obj
    for path in ("project", "monitor", "channel"):
        if hasattr(obj, f"{path}_id"):
            owner = getattr(obj, path)
            return owner if path == "project" else project_of(owner)
    raise TypeError(f"{type(obj).__name__} belongs to no project")


def require(request, project: Project, role: str) -> None:
    """Raise PermissionDenied (403) unless the caller has ``role`` in ``project``."""
    if not can(request, project, role):
        raise exceptions.PermissionDenied(_refusal(request, role))


def _refusal(request, role: str) -> str:
    who = caller(request)
    if who.key is not None and who.key.read_only:
        return "this API key is read-only"
    if who.key is not None:
        return f"this needs a person with the {role} role; API keys cannot do it"
    return f"this needs the {role} role in the organisation"


def target_project(request, given: Project | None, role: str) -> Project:
    """The project a new object goes to: ``given`` (already resolved through
    :class:`ProjectField`), else the key's project, else the person's only
    project. Raises ValidationError (400) when a person with several projects gave
    none, PermissionDenied (403) without ``role`` there."""
    who = caller(request)
    if given is None:
        if who.key is not None:
            given = who.key.project
        else:
            candidates = list(who.projects()[:2])
            if len(candidates) != 1:
                raise serializers.ValidationError(
                    {"project": ["required: you are in several projects; give the id of "
                                 "one"]})
            given = candidates[0]
    require(request, given, role)
    return given


def project_for(serializer, attrs: dict, role: str) -> Project:
    """The project a serializer's object is in, put in ``attrs["project"]``: the
    instance's (moving it to another project is a 400), or :func:`target_project`
    for a new one."""
    request = serializer.context["request"]
    if serializer.instance is not None:
        project = project_of(serializer.instance)
        if attrs.get("project", project) != project:
            raise serializers.ValidationError({"project": ["cannot be changed"]})
    else:
        project = target_project(request, attrs.get("project"), role)
    attrs["project"] = project
    return project


class ProjectField(serializers.PrimaryKeyRelatedField):
    """A ``project`` reference (id) among the caller's projects; another tenant's
    project reads as one that does not exist (400)."""

    default_error_messages = {
        "does_not_exist": "no project with id {pk_value} that you can see",
        "incorrect_type": "must be a project id",
    }

    def __init__(self, **kw):
        kw.setdefault("required", False)
        super().__init__(**kw)

    def get_queryset(self):
        return visible(self.context["request"], Project.objects, "pk")


class Access(permissions.BasePermission):
    """DRF permission for every API view: an authenticated caller; a write needs the
    view's ``write_role`` (default ``member``; a read-only key never writes): on a
    collection somewhere, on an object in its own project once it is found
    (:meth:`has_object_permission`), so another tenant's object is a 404 first. A
    method the view does not serve is a 405 before any role is looked at (DRF checks
    permissions before it looks the handler up)."""

    def has_permission(self, request, view) -> bool:
        method = request.method.lower()
        if method not in view.http_method_names or not hasattr(view, method):
            view.http_method_not_allowed(request, *view.args, **view.kwargs)  # raises
        who = caller(request)
        if request.method in permissions.SAFE_METHODS or view.kwargs.get("pk"):
            return True  # an object's route: found first (404), then checked in its project
        role = getattr(view, "write_role", Membership.Role.MEMBER)
        if who.key is not None and who.key.read_only:
            raise exceptions.PermissionDenied("this API key is read-only")
        if not at_least(who.best_role(), role):
            raise exceptions.PermissionDenied(_refusal(request, role))
        return True

    def has_object_permission(self, request, view, obj) -> bool:
        if request.method in permissions.SAFE_METHODS:
            return True
        role = getattr(view, "write_role", Membership.Role.MEMBER)
        if isinstance(obj, Organisation | Membership):  # organisation-wide: people only
            org_id = obj.pk if isinstance(obj, Organisation) else obj.organisation_id
            if not at_least(caller(request).org_role(org_id), role):
                raise exceptions.PermissionDenied(_refusal(request, role))
        else:
            require(request, project_of(obj), role)
        return True
