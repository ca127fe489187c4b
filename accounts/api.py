"""The accounts side of the REST API (``/api/v1/``): organisations, projects, API
keys and members. Who may do what is :mod:`accounts.tenancy`; this module is the
endpoints.

- ``/organisations/``: the caller's organisations (an owner renames one).
- ``/projects/``: the caller's projects with their ``ping_key`` (null for callers
  who may only read); admins create and rename them.
- ``/api-keys/``: a project's keys (``prefix`` only); POST makes one and answers
  the key once (``key``); DELETE revokes it (the row stays, ``revoked_at`` set).
- ``/members/``: people in the caller's organisations and their roles; admins add
  someone who already shares an organisation with them (by ``username`` or
  ``email``: 201, the membership), invite anyone else by ``email`` (202, the same
  answer and the same email whether or not the address has an account: they join
  when they accept, :mod:`accounts.invitations`; a username nobody there has reads
  as unknown), change roles and remove members;
  only owners grant, change or remove the owner role, and an organisation keeps
  at least one owner. Members are managed by people: API keys read them only.
"""
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, generics, serializers, status, viewsets
from rest_framework.response import Response

from accounts import audit, invitations, people, plans, tenancy
from accounts.models import ApiKey, AuditEntry, Invitation, Membership, Organisation, Project
from core.api import PAGING, CursorList, RejectUnknown, object_id

ADMIN, OWNER = Membership.Role.ADMIN, Membership.Role.OWNER


def _organisations(request):
    """The caller's organisations (none for the anonymous schema request)."""
    who = tenancy.caller_or_none(request)
    return Organisation.objects.none() if who is None else who.organisations()


class OrganisationSerializer(RejectUnknown, serializers.ModelSerializer):
    """``id``, ``name``, ``role`` (the caller's; null for a key) and ``created_at``."""

    role = serializers.SerializerMethodField()

    class Meta:
        model = Organisation
        fields = ["id", "name", "role", "created_at"]
        read_only_fields = ["id", "created_at"]

    def get_role(self, org) -> str | None:
        """The caller's role there (null for an API key)."""
        return tenancy.caller(self.context["request"]).org_role(org.pk)


class OrganisationViewSet(viewsets.ModelViewSet):
    """``GET /api/v1/organisations/``, ``GET/PATCH …/<id>/`` (owners rename)."""

    serializer_class = OrganisationSerializer
    http_method_names = ["get", "patch", "head", "options"]
    write_role = OWNER
    pagination_class = None

    def get_queryset(self):
        return _organisations(self.request).order_by("pk")

    def perform_update(self, serializer):
        if tenancy.caller(self.request).org_role(serializer.instance.pk) != OWNER:
            raise exceptions.PermissionDenied("this needs the owner role in the organisation")
        before = {"name": serializer.instance.name}
        org = serializer.save()
        audit.record_update(org, org, before, {"name": org.name})


class ProjectSerializer(RejectUnknown, serializers.ModelSerializer):
    """``id``, ``organisation`` (id), ``name``, ``ping_key`` (for ``/ping/<ping_key>/
    <slug>``; null for callers who may only read) and ``created_at``."""

    organisation = serializers.PrimaryKeyRelatedField(
        queryset=Organisation.objects.none(), required=False,
        error_messages={"does_not_exist": "no organisation with id {pk_value} that you can see"})
    ping_key = serializers.SerializerMethodField()

    class Meta:
        model = Project
        fields = ["id", "organisation", "name", "ping_key", "created_at"]
        read_only_fields = ["id", "created_at"]
        validators = []  # the unique name is checked in validate

    def get_fields(self):
        fields = super().get_fields()
        fields["organisation"].queryset = _organisations(self.context["request"])
        return fields

    def get_ping_key(self, project) -> str | None:
        if not tenancy.can(self.context["request"], project, Membership.Role.MEMBER):
            return None
        return project.ping_key

    def validate(self, attrs):
        request = self.context["request"]
        if self.instance is not None:
            org = self.instance.organisation
            if attrs.get("organisation", org) != org:
                raise serializers.ValidationError({"organisation": ["cannot be changed"]})
        else:
            org = attrs.get("organisation")
            if org is None:
                orgs = list(tenancy.caller(request).organisations()[:2])
                if len(orgs) != 1:
                    raise serializers.ValidationError(
                        {"organisation": ["required: the id of the organisation"]})
                org = orgs[0]
            if not tenancy.at_least(tenancy.caller(request).org_role(org.pk), ADMIN):
                raise exceptions.PermissionDenied("this needs the admin role in the "
                                                  "organisation")
            attrs["organisation"] = org
        name = attrs.get("name")
        if name and Project.objects.filter(organisation=org, name=name).exclude(
                pk=getattr(self.instance, "pk", None)).exists():
            raise serializers.ValidationError(
                {"name": [f"a project named '{name}' exists in this organisation"]})
        return attrs

    def create(self, validated):
        project = super().create(validated)
        audit.record_create(project.organisation, project, {"name": project.name})
        return project

    def update(self, project, validated):
        before = {"name": project.name}
        project = super().update(project, validated)
        audit.record_update(project.organisation, project, before, {"name": project.name})
        return project


class ProjectViewSet(viewsets.ModelViewSet):
    """``GET/POST /api/v1/projects/``, ``GET/PATCH …/<id>/``. Projects are created by
    people with the admin role (a key belongs to one project and cannot)."""

    serializer_class = ProjectSerializer
    http_method_names = ["get", "post", "patch", "head", "options"]
    write_role = ADMIN
    pagination_class = None

    def get_queryset(self):
        return tenancy.visible(self.request, Project.objects, "pk").order_by("pk")


class ApiKeySerializer(RejectUnknown, serializers.ModelSerializer):
    """``id``, ``project``, ``name``, ``prefix`` (the key's first 12 characters),
    ``read_only``, ``created_at``, ``last_used_at`` (to the minute), ``revoked_at``;
    ``key`` only in the answer to the POST that made it."""

    project = tenancy.ProjectField()

    class Meta:
        model = ApiKey
        fields = ["id", "project", "name", "prefix", "read_only", "created_at",
                  "last_used_at", "revoked_at"]
        read_only_fields = ["id", "prefix", "created_at", "last_used_at", "revoked_at"]

    def validate(self, attrs):
        tenancy.project_for(self, attrs, ADMIN)
        return attrs

    def create(self, validated):
        with transaction.atomic():
            plans.check(validated["project"].organisation, "api_keys")
            row, key = ApiKey.issue(validated["project"], validated.get("name", ""),
                                    read_only=validated.get("read_only", False))
            audit.record(AuditEntry.Action.KEY_CREATE, row.project.organisation, target=row,
                         target_type="api_key", changes=audit.diff({}, {
                             "name": row.name, "prefix": row.prefix,
                             "read_only": row.read_only, "project": row.project_id}))
        row.plaintext = key
        return row

    def update(self, row, validated):
        before = {"name": row.name}
        row = super().update(row, validated)
        audit.record_update(row.project.organisation, row, before, {"name": row.name},
                            target_type="api_key")
        return row

    def to_representation(self, row):
        data = super().to_representation(row)
        if getattr(row, "plaintext", None):
            data["key"] = row.plaintext
        return data


class ApiKeyViewSet(viewsets.ModelViewSet):
    """``GET/POST /api/v1/api-keys/``, ``GET/PATCH/DELETE …/<id>/``: DELETE revokes
    (204; the key is refused from then on; revoking twice changes nothing)."""

    serializer_class = ApiKeySerializer
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]
    write_role = ADMIN
    pagination_class = None

    def get_queryset(self):
        return tenancy.visible(self.request, ApiKey.objects).order_by("pk")

    def perform_update(self, serializer):
        if "read_only" in serializer.validated_data and \
                serializer.validated_data["read_only"] != serializer.instance.read_only:
            raise serializers.ValidationError(
                {"read_only": ["cannot be changed: make a new key and revoke this one"]})
        serializer.save()

    def perform_destroy(self, row):
        revoke_key(row, timezone.now())


def revoke_key(row: ApiKey, now) -> bool:
    """Revoke API key ``row`` at ``now`` (the API's DELETE, the dashboard's
    button): refused from then on; a ``key_revoke`` entry. False (nothing
    written) when it was revoked already."""
    if not ApiKey.objects.filter(pk=row.pk, revoked_at__isnull=True).update(revoked_at=now):
        return False
    audit.record(AuditEntry.Action.KEY_REVOKE, row.project.organisation, target=row,
                 target_type="api_key")
    return True


class MemberSerializer(RejectUnknown, serializers.ModelSerializer):
    """``id``, ``organisation`` (id), ``username``, ``email``, ``role``. Adding one
    takes ``username`` or ``email`` of someone in the caller's organisations; any
    other ``email`` (with a ``username`` suggested for someone new) is invited
    (:mod:`accounts.invitations`): saving then returns the :class:`Invitation`."""

    organisation = serializers.PrimaryKeyRelatedField(
        queryset=Organisation.objects.none(), required=False,
        error_messages={"does_not_exist": "no organisation with id {pk_value} that you can see"})
    username = serializers.CharField(source="user.username", required=False, max_length=150)
    email = serializers.EmailField(source="user.email", required=False, max_length=254)

    class Meta:
        model = Membership
        fields = ["id", "organisation", "username", "email", "role", "created_at"]
        read_only_fields = ["id", "created_at"]
        validators = []

    def get_fields(self):
        fields = super().get_fields()
        fields["organisation"].queryset = _organisations(self.context["request"])
        return fields

    def validate(self, attrs):
        request = self.context["request"]
        who = tenancy.caller(request)
        if who.key is not None:
            raise exceptions.PermissionDenied("members are managed by people with the admin "
                                              "role; API keys can only list them")
        given_user = attrs.pop("user", {})
        if self.instance is not None:
            if given_user or attrs.get("organisation", self.instance.organisation) != \
                    self.instance.organisation:
                raise serializers.ValidationError(
                    {"detail": ["only the role of a member can be changed"]})
            org = self.instance.organisation
        else:
            org = attrs.get("organisation") or _only(list(who.organisations()[:2]))
            # the role first: whom an admin can find is not for others to probe
            if not tenancy.at_least(who.org_role(org.pk), ADMIN):
                raise exceptions.PermissionDenied("this needs the admin role in the "
                                                  "organisation")
            user = _user(given_user, who.user)
            if user is not None and Membership.objects.filter(organisation=org,
                                                              user=user).exists():
                raise serializers.ValidationError(
                    {"username": [f"{user.username} is already a member"]})
            attrs.update(organisation=org, user=user,
                         invite=given_user if user is None else None)
        mine = who.org_role(org.pk)
        if not tenancy.at_least(mine, ADMIN):
            raise exceptions.PermissionDenied("this needs the admin role in the organisation")
        touches_owner = attrs.get("role") == OWNER or getattr(self.instance, "role", "") == OWNER
        if touches_owner and mine != OWNER:
            raise exceptions.PermissionDenied("only an owner can grant or change the owner role")
        if self.instance is not None and self.instance.role == OWNER \
                and attrs.get("role", OWNER) != OWNER:
            _keep_an_owner(self.instance)
        return attrs

    def create(self, validated):
        role = validated.get("role", Membership.Role.MEMBER)
        if validated["invite"]:
            given = validated["invite"]
            return invitations.invite(validated["organisation"], given["email"], role,
                                      tenancy.caller(self.context["request"]).name,
                                      username=given.get("username", ""))
        with transaction.atomic():
            plans.check(validated["organisation"], "members")
            membership = Membership.objects.create(organisation=validated["organisation"],
                                                   user=validated["user"], role=role)
            record_member(AuditEntry.Action.MEMBER_ADD, membership, {"role": [None, role]})
        return membership

    def update(self, membership, validated):
        before = membership.role
        membership = super().update(membership, validated)
        if membership.role != before:
            record_member(AuditEntry.Action.ROLE_CHANGE, membership,
                          {"role": [before, membership.role]})
        return membership


def record_member(action: str, membership: Membership, changes: dict | None = None) -> None:
    """A members entry (``member_add``, ``role_change``, ``member_remove``): the
    target is the person (``user``, their username)."""
    audit.record(action, membership.organisation, target_type="user",
                 target_id=membership.user_id, target_repr=membership.user.get_username(),
                 changes=changes)


def invitation_answer(invitation: Invitation) -> dict:
    """The answer to an invitation (202): the same whoever the address belongs to."""
    return {"organisation": invitation.organisation_id, "email": invitation.email,
            "role": invitation.role, "invited": True,
            "detail": f"invitation sent to {invitation.email}: they join the organisation "
                      "when they accept it"}


def _only(orgs: list) -> Organisation:
    if len(orgs) != 1:
        raise serializers.ValidationError({"organisation": ["required: the id of the "
                                                            "organisation"]})
    return orgs[0]


def _user(given: dict, acting):
    """The person to add: someone who already shares an organisation with
    ``acting`` (by username or email), or None to invite the email given (whoever
    it belongs to, if anyone). A username alone of anyone else on the installation
    gets the same answer as a name that does not exist (:data:`people.NOT_FOUND`)."""
    users = get_user_model()
    username, email = given.get("username"), given.get("email")
    if not (username or email):
        raise serializers.ValidationError({"username": ["give the username or email of "
                                                        "someone in your organisations, or a "
                                                        "new username and email"]})
    known = people.people_of(acting)
    found = list(known.filter(Q(username=username) if username else Q(email__iexact=email))[:2])
    if len(found) > 1:  # only people the caller can see: nothing is given away
        raise serializers.ValidationError({"email": ["several people in your organisations "
                                                     "have this email: give the username"]})
    if found and username and email and found[0].email.lower() != email.lower():
        raise serializers.ValidationError({"email": [f"{username} has another email: give "
                                                     "only the username"]})
    if found:
        return found[0]
    if email:
        if username:  # only its form: whether the name is taken is the invitee's business
            try:
                users.username_validator(username)
            except DjangoValidationError as e:
                raise serializers.ValidationError({"username": e.messages}) from None
        return None
    raise serializers.ValidationError({"username" if username else "email": [people.NOT_FOUND]})


def _keep_an_owner(membership: Membership) -> None:
    others = Membership.objects.filter(organisation=membership.organisation_id, role=OWNER) \
        .exclude(pk=membership.pk)
    if not others.exists():
        raise serializers.ValidationError(
            {"role": ["an organisation keeps at least one owner: make another owner first"]})


class MemberViewSet(viewsets.ModelViewSet):
    """``GET/POST /api/v1/members/``, ``GET/PATCH/DELETE …/<id>/``."""

    serializer_class = MemberSerializer
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]
    write_role = ADMIN
    pagination_class = None

    def get_queryset(self):
        return (Membership.objects.filter(organisation__in=_organisations(self.request))
                .select_related("user").order_by("pk"))

    def create(self, request, *args, **kwargs):
        """201 with the membership, or 202 with :func:`invitation_answer`."""
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        made = serializer.save()
        if isinstance(made, Invitation):
            return Response(invitation_answer(made), status=status.HTTP_202_ACCEPTED)
        return Response(serializer.data, status=status.HTTP_201_CREATED)

    def perform_destroy(self, membership):
        who = tenancy.caller(self.request)
        if who.key is not None:
            raise exceptions.PermissionDenied("members are managed by people with the admin "
                                              "role; API keys can only list them")
        mine = who.org_role(membership.organisation_id)
        if not tenancy.at_least(mine, ADMIN) or (membership.role == OWNER and mine != OWNER):
            raise exceptions.PermissionDenied(
                "only an owner can remove an owner" if membership.role == OWNER
                else "this needs the admin role in the organisation")
        with transaction.atomic():
            if membership.role == OWNER:
                _keep_an_owner(membership)
            record_member(AuditEntry.Action.MEMBER_REMOVE, membership,
                          {"role": [membership.role, None]})
            membership.delete()


# --- the audit log ---------------------------------------------------------------------

class AuditTargetSerializer(serializers.Serializer):
    """The object an entry is about: ``type`` (monitor, channel, ...), ``id``, ``repr``."""

    type = serializers.CharField(source="target_type")
    id = serializers.CharField(source="target_id")
    repr = serializers.CharField(source="target_repr")


class AuditEntrySerializer(serializers.ModelSerializer):
    """``id``, ``at``, ``organisation`` (id), ``actor`` (a username, ``key <prefix>``,
    ``signed link``, ``ping key <6 characters>``; ``""`` for the service itself),
    ``address`` (the client's IP, or null), ``action`` (a code), ``target``
    ``{type, id, repr}``, ``changes`` ``{field: [old, new]}`` (secrets ``"***"``)."""

    target = AuditTargetSerializer(source="*")
    changes = serializers.JSONField()

    class Meta:
        model = AuditEntry
        fields = ["id", "at", "organisation", "actor", "address", "action", "target", "changes"]
        read_only_fields = fields


def audit_organisations(request) -> list[int]:
    """The organisations whose audit log the caller reads: a person's where they
    are an admin or owner, a read-write key's own (it acts as an admin); 403
    for anyone else (members, viewers, read-only keys)."""
    who = tenancy.caller(request)
    if who.key is not None:
        if who.key.read_only:
            raise exceptions.PermissionDenied("the audit log needs the admin role: this API "
                                              "key is read-only")
        return [who.key.project.organisation_id]
    found = audit.readable(dict(Membership.objects.filter(user=who.user)
                                .values_list("organisation_id", "role")))
    if not found:
        raise exceptions.PermissionDenied("the audit log needs the admin role in the "
                                          "organisation")
    return found


@extend_schema(parameters=[
    *PAGING,
    OpenApiParameter("organisation", int, description="only this organisation's (for a "
                     "person who administers several)"),
    OpenApiParameter("object", str, description="only entries about this object: "
                     "<type>:<id>, e.g. monitor:12"),
    OpenApiParameter("target_type", str, description="only entries about objects of this "
                     "type (monitor, channel, escalationpolicy, maintenancewindow, project, "
                     "organisation, incident, api_key, user)"),
    OpenApiParameter("target_id", str, description="only entries about the object with "
                     "this id"),
    OpenApiParameter("actor", str, description="only entries by this actor (a username, "
                     "key <prefix>, signed link)"),
    OpenApiParameter("action", str, enum=AuditEntry.Action.values,
                     description="only entries of this action")])
class AuditLogList(CursorList, generics.ListAPIView):
    """``GET /api/v1/audit-log/``: who changed what, newest first
    (docs/multi-tenant.md, "Audit log"), for admins and owners (and read-write
    keys) of the organisation; filters ``?object=``/``?target_type=``/
    ``?target_id=``, ``?actor=``, ``?action=``, ``?since=``/``?until=`` (on
    ``at``), ``?organisation=``; cursor paging as every time series
    (:class:`core.api.CursorList`)."""

    serializer_class = AuditEntrySerializer
    time_field = "at"

    def get_queryset(self):
        if tenancy.caller_or_none(self.request) is None:  # the schema's anonymous request
            return AuditEntry.objects.none()
        orgs = audit_organisations(self.request)
        wanted = object_id(self.request, "organisation")
        if wanted is not None:
            orgs = [o for o in orgs if o == wanted]
        try:
            return audit.search(AuditEntry.objects.filter(organisation__in=orgs),
                                self.request.query_params)
        except audit.BadFilter as e:
            raise serializers.ValidationError({e.field: [str(e)]}) from None
