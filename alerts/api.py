"""The alerting side of the REST API (``/api/v1/``): a monitor's channels (on the
monitors endpoint, extended here), channels, incidents with their timelines and
notifications, and deliveries. Thin views over :mod:`alerts.incidents` and the
models; lookups are scoped to the key's project.
"""
from django.db import transaction
from django.db.models import Exists, OuterRef, Prefetch
from django.http import Http404
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    extend_schema_view,
)
from rest_framework import exceptions, generics, permissions, serializers, viewsets
from rest_framework.response import Response

from accounts import audit, plans, tenancy
from accounts.models import AuditEntry, Membership
from alerts import escalation, incidents, maintenance
from alerts.channels import (
    delete_channel,
    send_test,
    send_test_config,
    set_alerting,
    set_channels,
)
from alerts.integrations import KINDS
from alerts.models import (
    Alerting,
    Channel,
    Delivery,
    EscalationPolicy,
    EscalationTier,
    Incident,
    IncidentEvent,
    MaintenanceWindow,
)
from alerts.timeline import alerting_of
from core.api import MAX_PK, CursorList, RejectUnknown, flag, get_or_404, object_id
from monitors import api as monitors_api
from monitors.models import Monitor


@extend_schema_field({"oneOf": [{"type": "string", "enum": ["all"]},
                                {"type": "array", "items": {"type": "integer"}}],
                      "description": '"all" (the default): every channel of the project, '
                                     "including channels added later; or a list of channel ids"})
class ChannelsField(serializers.Field):
    """A monitor's ``channels``: ``"all"`` or a list of ids of its project's channels."""

    def __init__(self, **kw):
        super().__init__(source="*", **kw)

    def to_representation(self, monitor):
        try:
            alerting = monitor.alerting
        except Alerting.DoesNotExist:
            return "all"
        if alerting.all_channels:
            return "all"
        return sorted(c.pk for c in alerting.channels.all() if c.deleted_at is None)

    def to_internal_value(self, data):
        if data == "all":
            return {"channels": "all"}
        if not isinstance(data, list) or not all(
                isinstance(i, int) and not isinstance(i, bool) for i in data):
            raise serializers.ValidationError('must be "all" or a list of channel ids')
        return {"channels": data}  # checked against the monitor's project in validate


def own_channels(project, ids: list[int]) -> list[int]:
    """``ids`` sorted and deduplicated, each a live channel of ``project``; raises
    ValidationError naming the first that is not."""
    known = set(Channel.objects.filter(project=project, deleted_at__isnull=True,
                                       pk__in=[i for i in ids if 0 < i <= MAX_PK])
                .values_list("pk", flat=True))
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise serializers.ValidationError(f"no channel with id {unknown[0]} in this project")
    return sorted(set(ids))


class AlertingValue(serializers.Field):
    """One of a monitor's :class:`~alerts.models.Alerting` settings on the monitor's
    JSON: read from its Alerting (defaults without one), validated by ``inner``."""

    def __init__(self, name: str, inner: serializers.Field, **kw):
        super().__init__(source="*", required=False, **kw)
        self.name, self.inner = name, inner

    def bind(self, field_name, parent):
        super().bind(field_name, parent)
        self.inner.bind(field_name, parent)

    def to_representation(self, monitor):
        value = getattr(alerting_of(monitor), self.name)
        return None if value in (None, "") else self.inner.to_representation(value)

    def to_internal_value(self, data):
        return {f"alerting.{self.name}": self.inner.run_validation(data)}


class PolicyId(serializers.IntegerField):
    """An escalation policy by id (or null: none); checked against the monitor's
    project by :func:`own_policy`."""

    def to_representation(self, value):
        return value.pk if hasattr(value, "pk") else value


def own_policy(project, pk: int) -> EscalationPolicy:
    """Escalation policy ``pk`` of ``project``; ValidationError when it is not one."""
    policy = EscalationPolicy.objects.filter(pk=pk if 0 < pk <= MAX_PK else 0,
                                             project=project).first()
    if policy is None:
        raise serializers.ValidationError(
            {"escalation_policy": [f"no escalation policy with id {pk} in this project"]})
    return policy


class MonitorSerializer(monitors_api.MonitorSerializer):
    """A monitor with its alerting: ``channels``, ``escalation_policy``, ``urgency``,
    ``severity`` (null: from the cause), ``renotify`` (seconds, null: never),
    ``failure_threshold``/``recovery_threshold``, read-only ``flapping_since`` (see
    :mod:`alerts.flapping`), and ``status`` ``down`` while an incident is open."""

    channels = ChannelsField(required=False)
    escalation_policy = AlertingValue("escalation_policy", PolicyId(allow_null=True),
                                      allow_null=True)
    urgency = AlertingValue("urgency", serializers.ChoiceField(Alerting.Urgency.choices))
    severity = AlertingValue("severity", serializers.ChoiceField(
        Alerting.Severity.choices, allow_null=True), allow_null=True)
    renotify = AlertingValue("renotify", monitors_api.Seconds(minimum=60, allow_null=True),
                             allow_null=True)
    failure_threshold = AlertingValue("failure_threshold", serializers.IntegerField(
        min_value=1, max_value=100))
    recovery_threshold = AlertingValue("recovery_threshold", serializers.IntegerField(
        min_value=1, max_value=100))
    flapping_since = AlertingValue("flapping_since", serializers.DateTimeField(),
                                   read_only=True, allow_null=True)

    class Meta(monitors_api.MonitorSerializer.Meta):
        fields = [*monitors_api.MonitorSerializer.Meta.fields, "channels", "escalation_policy",
                  "urgency", "severity", "renotify", "failure_threshold", "recovery_threshold",
                  "flapping_since"]

    def validate(self, attrs):
        attrs = super().validate(attrs)
        if isinstance(attrs.get("channels"), list):
            try:
                attrs["channels"] = own_channels(attrs["project"], attrs["channels"])
            except serializers.ValidationError as e:
                raise serializers.ValidationError({"channels": e.detail}) from None
        if attrs.get("alerting.escalation_policy") is not None:
            attrs["alerting.escalation_policy"] = own_policy(
                attrs["project"], attrs["alerting.escalation_policy"])
        return attrs

    def incident_open(self, m) -> bool:
        found = getattr(m, "has_open_incident", None)
        if found is None:
            found = incidents.open_incident(m) is not None
        return found

    def create(self, validated):
        channels = validated.pop("channels", "all")  # alert by default, on every channel
        settings = _alerting_changes(validated)
        with transaction.atomic():
            monitor = super().create(validated)
            if channels != "all":
                set_channels(monitor, channels, timezone.now())
            set_alerting(monitor, settings)
        return monitor

    def update(self, monitor, validated):
        channels = validated.pop("channels", None)
        settings = _alerting_changes(validated)
        before = self.alerting_values(monitor)
        with transaction.atomic():  # evaluator.edit's row lock lasts until this commits
            monitor = super().update(monitor, validated)
            if channels is not None:
                set_channels(monitor, channels, timezone.now())
            set_alerting(monitor, settings)
            if channels is not None or settings:  # evaluator.edit recorded the rest
                audit.record_update(monitor.project.organisation, monitor, before,
                                    self.alerting_values(Monitor.objects.get(pk=monitor.pk)))
        return monitor

    def alerting_values(self, monitor) -> dict:
        """The monitor's alerting settings as the API shows them, for the audit log."""
        return {name: self.fields[name].to_representation(monitor) for name in ALERTING}


ALERTING = ("channels", "escalation_policy", "urgency", "severity", "renotify",
            "failure_threshold", "recovery_threshold")


def _alerting_changes(validated: dict) -> dict:
    """Take the ``alerting.<name>`` values out of ``validated``: {name: value}."""
    keys = [k for k in validated if k.startswith("alerting.")]
    changes = {k.removeprefix("alerting."): validated.pop(k) for k in keys}
    if "severity" in changes and changes["severity"] is None:
        changes["severity"] = ""
    return changes


class MonitorViewSet(monitors_api.MonitorViewSet):
    """``/api/v1/monitors/``: the monitors side's endpoint with each monitor's
    alerting (see :class:`MonitorSerializer`)."""

    serializer_class = MonitorSerializer

    def get_queryset(self):
        open_incident = Incident.objects.filter(monitor=OuterRef("pk"), resolved_at__isnull=True)
        return (super().get_queryset().annotate(has_open_incident=Exists(open_incident))
                .select_related("alerting").prefetch_related("alerting__channels"))


@extend_schema_field({"anyOf": [mod.CONFIG_SCHEMA for mod in KINDS.values()],
                      "description": "by kind: " + ", ".join(
                          f"{k}: {sorted(m.CONFIG_SCHEMA['properties'])}"
                          for k, m in KINDS.items())})
class ConfigField(serializers.JSONField):
    """A channel's ``config``, whose shape depends on its ``kind`` (each
    integration's ``CONFIG_SCHEMA``; checked by its ``validate_config``)."""


SHOWN_TO_READERS = {"to", "region"}  # config fields that are not credentials


def masked_config(config: dict | None) -> dict:
    """A channel's ``config`` as callers who may only read see it: every field a
    credential could be in as ``"***"`` (also the organisation's export)."""
    return {k: v if k in SHOWN_TO_READERS else "***" for k, v in (config or {}).items()}


class ChannelSerializer(RejectUnknown, serializers.ModelSerializer):
    """A channel. Callers who may only read (viewers, read-only keys) see its
    ``config`` with the credentials (URLs, keys, secrets, tokens) as ``"***"``; a
    credential written as ``"***"`` keeps the stored one (a new channel: refused)."""

    project = tenancy.ProjectField()
    config = ConfigField(required=False, default=dict)

    class Meta:
        model = Channel
        fields = ["id", "project", "kind", "name", "config", "created_at", "last_error",
                  "failing_since"]
        read_only_fields = ["id", "created_at", "last_error", "failing_since"]

    def to_representation(self, channel):
        data = super().to_representation(channel)
        shown = getattr(KINDS.get(channel.kind), "shown_config", None)
        if shown is not None and isinstance(data["config"], dict):
            data["config"] = shown(data["config"])
        if not tenancy.can(self.context["request"], channel.project, Membership.Role.ADMIN):
            data["config"] = masked_config(data["config"])
        return data

    def validate(self, attrs):
        tenancy.project_for(self, attrs, Membership.Role.ADMIN)
        previous = None
        if self.instance is not None:
            if attrs.get("kind", self.instance.kind) != self.instance.kind:
                raise serializers.ValidationError({"kind": ["cannot be changed"]})
            attrs["kind"] = self.instance.kind
            if "config" not in attrs:
                return attrs
            previous = self.instance.config
        config = attrs.get("config") or {}
        if isinstance(config, dict):  # what a reader was shown, sent back: keeps the stored
            config = keep_secrets(config, previous, left_out=False)
        try:
            attrs["config"] = KINDS[attrs["kind"]].validate_config(config, previous)
        except ValueError as e:
            raise serializers.ValidationError({"config": [str(e)]}) from None
        return attrs

    def create(self, validated):
        with transaction.atomic():
            plans.check(validated["project"].organisation, "channels")
            channel = Channel.objects.create(**validated)
            audit.record_create(channel.project.organisation, channel, *channel_audit(channel))
        return channel

    def update(self, channel, validated):
        before, secret = channel_audit(channel)
        channel = super().update(channel, validated)
        after, secret_after = channel_audit(channel)
        audit.record_update(channel.project.organisation, channel,
                            before, {**dict.fromkeys(before), **after}, secret | secret_after)
        return channel


def channel_audit(channel: Channel) -> tuple[dict, set]:
    """A channel's values for the audit log, and which of them are secret: ``name``,
    ``kind`` and ``config.<field>``, every config field a reader sees as
    ``"***"`` (URLs, tokens, routing keys) secret."""
    config = channel.config if isinstance(channel.config, dict) else {}
    values = {"name": channel.name, "kind": channel.kind,
              **{f"config.{k}": v for k, v in config.items()}}
    return values, {f"config.{k}" for k in config if k not in SHOWN_TO_READERS}


class ChannelList(generics.ListCreateAPIView):
    """``GET/POST /api/v1/channels/``."""

    serializer_class = ChannelSerializer
    write_role = Membership.Role.ADMIN
    pagination_class = None

    def get_queryset(self):
        return tenancy.visible(self.request, Channel.objects.filter(
            deleted_at__isnull=True)).order_by("pk")


class ChannelDetail(generics.RetrieveUpdateDestroyAPIView):
    """``GET/PATCH/DELETE /api/v1/channels/<id>/``; ``kind`` cannot change.

    DELETE first sends a resolve for every open incident the channel was notified of;
    the only channel of an escalation policy's tier cannot be deleted (400).
    """

    serializer_class = ChannelSerializer
    write_role = Membership.Role.ADMIN
    http_method_names = ["get", "patch", "delete", "head", "options"]

    def get_object(self):
        channel = get_or_404(tenancy.visible(self.request, Channel.objects), self.kwargs["pk"],
                             deleted_at__isnull=True)
        self.check_object_permissions(self.request, channel)
        return channel

    def perform_destroy(self, channel):
        sole = escalation.tiers_only_on(channel)
        if sole:
            raise serializers.ValidationError({"detail": f"the only channel of {sole[0]}: "
                                               "change the policy first"})
        delete_channel(channel, timezone.now())


class DeliverySerializer(serializers.ModelSerializer):
    """One notification to one channel: ``status`` pending / sending / delivered /
    failed (given up), ``attempts``, ``last_error``, ``next_attempt_at`` (while it is
    still to be sent). ``event``: ``incident.opened``, ``incident.resolved``,
    ``incident.channel_removed``, or a notice's kind (``outage.summary``,
    ``channel.failing``, ``channel.recovered``); ``incident`` is null for a notice."""

    event = serializers.SerializerMethodField()

    class Meta:
        model = Delivery
        fields = ["id", "event", "incident", "channel", "status", "attempts", "last_error",
                  "created_at", "next_attempt_at", "delivered_at"]

    def get_event(self, d) -> str:
        kind = d.event.kind
        return kind if kind in IncidentEvent.NOTICES else f"incident.{kind}"


class IncidentEventSerializer(serializers.ModelSerializer):
    """A timeline event; ``count`` times between ``at`` and ``last_at`` (a problem
    seen again is counted on its event, so a timeline stays bounded), with the
    notifications it made."""

    deliveries = DeliverySerializer(many=True, read_only=True)

    class Meta:
        model = IncidentEvent
        fields = ["kind", "at", "last_at", "count", "message", "detail", "deliveries"]


class IncidentSerializer(serializers.ModelSerializer):
    """An incident with its timeline. ``tier``: the last escalation tier notified
    (1-based; null before the first); ``next_escalation_at``: its next step."""

    events = IncidentEventSerializer(many=True, read_only=True)
    tier = serializers.SerializerMethodField()

    class Meta:
        model = Incident
        fields = ["id", "monitor", "cause", "summary", "severity", "dedup_key", "opened_at",
                  "acknowledged_at", "acknowledged_by", "resolved_at", "resolution",
                  "missed_count", "failure_count", "tier", "next_escalation_at", "events"]

    def get_tier(self, incident) -> int | None:
        return incident.tier + 1 if incident.tier >= 0 else None


def _incidents(qs=None):
    """Incidents (of ``qs``) with their timelines and notifications, prefetched."""
    events = IncidentEvent.objects.prefetch_related(
        Prefetch("deliveries", Delivery.objects.select_related("event").order_by("pk")))
    return (Incident.objects.all() if qs is None else qs).prefetch_related(
        Prefetch("events", events))


@extend_schema_view(list=extend_schema(parameters=[
    OpenApiParameter("open", bool, description="only open (true) or resolved (false)"),
    OpenApiParameter("monitor", int, description="only this monitor's incidents"),
]))
class IncidentList(CursorList, generics.ListAPIView):
    """``GET /api/v1/incidents/``: newest first; ``?monitor=<id>``, ``?open=true``,
    ``?limit=``, ``?since=``/``?until=`` (opening time), ``cursor`` paging."""

    serializer_class = IncidentSerializer
    time_field = "opened_at"

    def get_queryset(self):
        qs = tenancy.visible(self.request, Incident.objects.filter(
            monitor__deleted_at__isnull=True), "monitor__project")
        monitor = object_id(self.request, "monitor")
        if monitor is not None:
            qs = qs.filter(monitor_id=monitor)
        is_open = flag(self.request, "open")
        if is_open is not None:
            qs = qs.filter(resolved_at__isnull=is_open)
        return _incidents(qs)


class IncidentDetail(generics.RetrieveAPIView):
    """``GET /api/v1/incidents/<id>/``: one incident with its timeline and
    notifications."""

    serializer_class = IncidentSerializer

    def get_object(self):
        return get_or_404(_incidents(tenancy.visible(self.request, Incident.objects,
                                                     "monitor__project")),
                          self.kwargs["pk"], monitor__deleted_at__isnull=True)


@extend_schema_view(list=extend_schema(parameters=[
    OpenApiParameter("incident", int, description="only this incident's notifications"),
    OpenApiParameter("channel", int, description="only this channel's"),
    OpenApiParameter("status", str, enum=list(Delivery.Status.values)),
]))
class DeliveryList(CursorList, generics.ListAPIView):
    """``GET /api/v1/deliveries/``: notifications, newest first; ``?incident=``,
    ``?channel=``, ``?status=`` (``failed``: the given-up ones), ``?limit=``,
    ``?since=``/``?until=`` (creation time), ``cursor`` paging."""

    serializer_class = DeliverySerializer
    time_field = "created_at"

    def get_queryset(self):
        qs = tenancy.visible(self.request, Delivery.objects.select_related("event"),
                             "channel__project")
        for name in ("incident", "channel"):
            value = object_id(self.request, name)
            if value is not None:
                qs = qs.filter(**{f"{name}_id": value})
        status = self.request.query_params.get("status")
        if status is not None:
            if status not in Delivery.Status.values:
                raise serializers.ValidationError(
                    {"status": [f"must be one of {', '.join(Delivery.Status.values)}"]})
            qs = qs.filter(status=status)
        return qs


# --- escalation policies -------------------------------------------------------------------

class TierSerializer(RejectUnknown, serializers.Serializer):
    """One tier: ``delay`` seconds after the opening (first tier) or the previous
    tier, and the ``channels`` (ids) it notifies."""

    delay = monitors_api.Seconds(minimum=0)
    channels = serializers.ListField(child=serializers.IntegerField(), min_length=1,
                                     max_length=50)

    def to_representation(self, tier):
        return {"delay": int(tier.delay.total_seconds()),
                "channels": live(tier.channels.all())}



def live(channels) -> list[int]:
    return sorted(c.pk for c in channels if c.deleted_at is None)


class EscalationPolicySerializer(RejectUnknown, serializers.ModelSerializer):
    """``name``, ordered ``tiers`` (1-20) and ``repeat`` (0-9): how many more times
    the policy runs from the first tier while nobody acknowledges."""

    project = tenancy.ProjectField()
    tiers = TierSerializer(many=True, min_length=1, max_length=20)
    repeat = serializers.IntegerField(min_value=0, max_value=9, required=False)
    monitors = serializers.SerializerMethodField()

    class Meta:
        model = EscalationPolicy
        fields = ["id", "project", "name", "tiers", "repeat", "monitors", "created_at"]
        read_only_fields = ["id", "created_at"]
        validators = []  # the unique name is checked in validate, in the policy's project

    def get_monitors(self, policy) -> list[int]:
        """Ids of the monitors that use it."""
        return users_of(policy)

    def validate(self, attrs):
        project = tenancy.project_for(self, attrs, Membership.Role.ADMIN)
        name = attrs.get("name")
        if name is not None and EscalationPolicy.objects.filter(project=project, name=name) \
                .exclude(pk=getattr(self.instance, "pk", None)).exists():
            raise serializers.ValidationError(
                {"name": [f"a policy named '{name}' exists in this project"]})
        try:
            for tier in attrs.get("tiers", []):
                tier["channels"] = own_channels(project, tier["channels"])
        except serializers.ValidationError as e:
            raise serializers.ValidationError({"tiers": e.detail}) from None
        return attrs

    def create(self, validated):
        tiers = validated.pop("tiers")
        with transaction.atomic():
            policy = EscalationPolicy.objects.create(**validated)
            _set_tiers(policy, tiers)
            audit.record_create(policy.project.organisation, policy, policy_audit(policy))
        return policy

    def update(self, policy, validated):
        tiers = validated.pop("tiers", None)
        with transaction.atomic():
            before = policy_audit(policy)
            for name, value in validated.items():
                setattr(policy, name, value)
            policy.save()
            if tiers is not None:
                _set_tiers(policy, tiers)
            audit.record_update(policy.project.organisation, policy, before,
                                policy_audit(policy))
        return policy


def policy_audit(policy: EscalationPolicy) -> dict:
    """A policy's values for the audit log: ``name``, ``repeat`` and ``tiers``
    (``[{"delay": seconds, "channels": [ids]}]`` in order)."""
    tiers = [{"delay": int(t.delay.total_seconds()),
              "channels": sorted(t.channels.values_list("pk", flat=True))}
             for t in policy.tiers.order_by("position")]
    return {"name": policy.name, "repeat": policy.repeat, "tiers": tiers}


def users_of(policy: EscalationPolicy) -> list[int]:
    """Ids of the monitors that use ``policy``, not deleted ones (a deleted monitor
    keeps its settings until the evaluator removes it); prefetch
    ``monitors__monitor``."""
    return sorted(a.monitor_id for a in policy.monitors.all() if a.monitor.deleted_at is None)


POLICY_PREFETCH = ("tiers__channels", "monitors__monitor")


def delete_policy(policy: EscalationPolicy) -> None:
    """Delete ``policy``, which no monitor but deleted ones uses (see :func:`users_of`):
    the deleted monitors keep their settings until purged, but not this policy."""
    with transaction.atomic():
        Alerting.objects.filter(escalation_policy=policy,
                                monitor__deleted_at__isnull=False).update(
            escalation_policy=None)
        audit.record(AuditEntry.Action.DELETE, policy.project.organisation, target=policy)
        policy.delete()


def _set_tiers(policy: EscalationPolicy, tiers: list[dict]) -> None:
    """Replace ``policy``'s tiers (open incidents take their next step by them)."""
    policy.tiers.all().delete()
    for position, tier in enumerate(tiers):
        row = EscalationTier.objects.create(policy=policy, position=position,
                                            delay=tier["delay"])
        row.channels.set(tier["channels"])


class ChannelTest(generics.GenericAPIView):
    """``POST /api/v1/channels/<id>/test/``: send a test notification now (a
    ``test`` notice with an event id of its own, see
    :func:`alerts.channels.send_test`) and answer what the receiver said:
    ``{"ok", "status_code", "error"}``."""

    serializer_class = None

    @extend_schema(request=None, responses=None)
    def post(self, request, pk):
        channel = get_or_404(tenancy.visible(request, Channel.objects), pk,
                             deleted_at__isnull=True)
        self.check_object_permissions(request, channel)
        status_code, error = send_test(channel, timezone.now())
        return Response({"ok": error == "", "status_code": status_code, "error": error})


class TestResultSerializer(serializers.Serializer):
    """What a test notification's receiver said."""

    ok = serializers.BooleanField(help_text="delivered (a 2xx answer, or the mail sent)")
    status_code = serializers.IntegerField(allow_null=True, help_text="the receiver's HTTP "
                                           "status; null when no answer came")
    error = serializers.CharField(help_text='why it failed ("" when delivered)')


@extend_schema_field(OpenApiTypes.INT)
class ProjectId(tenancy.ProjectField):
    """A ``project`` id outside a model serializer (the schema cannot derive its type)."""


class ChannelTestConfigSerializer(RejectUnknown, serializers.Serializer):
    """A channel not saved, to test: the fields a new channel is created with."""

    project = ProjectId(help_text="the project's id (default: the key's project, or your "
                        "only one)")
    kind = serializers.ChoiceField(choices=sorted(KINDS))
    name = serializers.CharField(required=False, allow_blank=True, default="", max_length=200)
    config = ConfigField(required=False, default=dict)

    def validate(self, attrs):
        tenancy.project_for(self, attrs, Membership.Role.ADMIN)  # as creating a channel
        if not isinstance(attrs["config"], dict):
            raise serializers.ValidationError({"config": ["must be an object"]})
        attrs["config"] = keep_secrets(attrs["config"], None)  # "***": nothing stored to keep
        return attrs


class ChannelTestConfig(generics.GenericAPIView):
    """``POST /api/v1/channels/test/``: the test notification of a channel not saved
    (``{project, kind, name?, config}``, checked as a new channel is: admins and
    up, the kind's config rules), sent now without storing a channel
    (:func:`alerts.channels.send_test_config`); answers what the receiver said,
    ``{"ok", "status_code", "error"}``."""

    serializer_class = ChannelTestConfigSerializer
    write_role = Membership.Role.ADMIN

    @extend_schema(operation_id="channels_test_config", responses={200: TestResultSerializer})
    def post(self, request):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            status_code, error = send_test_config(data["project"], data["kind"],
                                                  data["config"], timezone.now(),
                                                  name=data["name"])
        except ValueError as e:
            raise serializers.ValidationError({"config": [str(e)]}) from None
        return Response({"ok": error == "", "status_code": status_code, "error": error})


class EscalationPolicyViewSet(viewsets.ModelViewSet):
    """``/api/v1/escalation-policies/`` list/create, ``.../<id>/`` get/patch/delete.
    A policy in use by monitors cannot be deleted (400 naming them); deleted monitors
    (not yet purged) do not count."""

    serializer_class = EscalationPolicySerializer
    write_role = Membership.Role.ADMIN
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]
    pagination_class = None

    def get_queryset(self):
        return (tenancy.visible(self.request, EscalationPolicy.objects)
                .prefetch_related(*POLICY_PREFETCH).order_by("pk"))

    def perform_destroy(self, policy):
        users = users_of(policy)
        if users:
            raise serializers.ValidationError(
                {"detail": f"in use by monitors {users}: give them another policy first"})
        delete_policy(policy)


# --- upserts by name ----------------------------------------------------------------------

SECRET_SHOWN = "***"  # how a credential reads for a caller who may only read


def keep_secrets(config: dict, previous: dict | None, left_out: bool = True) -> dict:
    """``config`` for a channel whose stored config is ``previous`` (None: a new
    channel): a credential (any field but those :data:`SHOWN_TO_READERS`) given as
    ``"***"``, or left out when ``left_out``, is the stored one, so a file written by
    an export, or by someone who may only read, can be applied without the secrets in
    it. A ``"***"`` with nothing stored is a ValidationError naming the field."""
    masked = [k for k, v in config.items() if v == SECRET_SHOWN and k not in SHOWN_TO_READERS]
    if previous is None:
        if masked:
            raise serializers.ValidationError({"config": [
                f"{masked[0]}: '***' keeps a stored secret, and this channel is new: "
                "give the secret"]})
        return config
    kept = {k: v for k, v in previous.items() if k not in SHOWN_TO_READERS
            and (left_out or k in masked)}
    return {**kept, **{k: v for k, v in config.items() if k not in masked}}


class _ByName(generics.GenericAPIView):
    """``GET/PUT …/by-name/<name>/``: read, or create-or-update (201 created, 200
    changed; fields left out keep their values) the object with this ``name`` in the
    key's project (a person in several gives ``project``: in the body of a PUT, the
    query of a GET). A blank name is a 400; a name two objects of the project share
    is a 409 naming their ids (the name cannot say which: rename one).
    :meth:`upsert` is the same for callers with a project in hand (the dashboard)."""

    write_role = Membership.Role.ADMIN
    noun = ""

    @classmethod
    def named(cls, project):
        """The project's objects of this kind (the by-name lookup's rows)."""
        raise NotImplementedError

    @classmethod
    def prepare(cls, data: dict, instance) -> dict:
        """The body as the serializer takes it, given the stored object (or None)."""
        return data

    @classmethod
    def fresh(cls, obj):
        return obj

    @classmethod
    def find(cls, project, name: str):
        """The project's object named ``name`` (None: none); ValidationError when the
        name is blank, Conflict when objects share it."""
        if not name.strip():
            raise serializers.ValidationError({"name": ["must not be blank"]})
        rows = list(cls.named(project).filter(name=name).order_by("pk")[:10])
        if len(rows) > 1:
            raise Conflict({"detail": f"{len(rows)} {cls.noun}s of this project are named "
                                      f"'{name}' (ids {', '.join(str(r.pk) for r in rows)}): "
                                      "rename one, a name must say which"})
        return rows[0] if rows else None

    @classmethod
    def upsert(cls, request, project, name: str, body: dict):
        """Create or update ``project``'s object ``name`` from ``body`` (as a PUT's):
        (the object, whether it was created). Raises the API's ValidationError,
        PermissionDenied or Conflict."""
        instance = cls.find(project, name)
        if body.get("name", name) != name:
            raise serializers.ValidationError({"name": ["must be the name in the URL"]})
        data = cls.prepare({**body, "name": name, "project": project.pk}, instance)
        serializer = cls.serializer_class(instance, data=data, partial=instance is not None,
                                          context={"request": request})
        serializer.is_valid(raise_exception=True)
        return cls.fresh(serializer.save()), instance is None

    def _project(self, request, body):
        role = (Membership.Role.VIEWER if request.method in permissions.SAFE_METHODS
                else self.write_role)
        return tenancy.target_project(
            request, monitors_api._project(request, body.get("project")), role)

    def get(self, request, name):
        instance = self.find(self._project(request, request.query_params), name)
        if instance is None:
            raise Http404
        return Response(self.get_serializer(self.fresh(instance)).data)

    def put(self, request, name):
        if not isinstance(request.data, dict):
            raise serializers.ValidationError({"detail": ["the body must be a JSON object"]})
        saved, created = self.upsert(request, self._project(request, request.data), name,
                                     request.data)
        return Response(self.get_serializer(saved).data, status=201 if created else 200)


class Conflict(exceptions.APIException):
    """409: the request names something ambiguously."""

    status_code = 409
    default_detail = "conflict"


def _by_name_schema(serializer):
    """The OpenAPI description of a :class:`_ByName` view answering ``serializer``."""
    ambiguous = OpenApiResponse(OpenApiTypes.OBJECT, description="two or more objects of "
                                "the project have this name (their ids): rename one")
    project = OpenApiParameter("project", int, description="the project (for a person in "
                               "several)")
    return extend_schema_view(
        get=extend_schema(parameters=[project], responses={200: serializer, 409: ambiguous}),
        put=extend_schema(request=serializer, responses={200: serializer, 201: serializer,
                                                         409: ambiguous}))


@_by_name_schema(ChannelSerializer)
class ChannelByName(_ByName):
    """``GET/PUT /api/v1/channels/by-name/<name>/``: a channel by its name (see
    :class:`_ByName`). A PUT's ``config`` keeps the stored credentials it gives as
    ``"***"`` or leaves out (:func:`keep_secrets`); ``kind`` cannot change."""

    serializer_class = ChannelSerializer
    noun = "channel"

    @classmethod
    def named(cls, project):
        return Channel.objects.filter(project=project, deleted_at__isnull=True)

    @classmethod
    def prepare(cls, data, instance):
        if isinstance(data.get("config"), dict):
            data["config"] = keep_secrets(data["config"],
                                          None if instance is None else instance.config)
        return data


@_by_name_schema(EscalationPolicySerializer)
class EscalationPolicyByName(_ByName):
    """``GET/PUT /api/v1/escalation-policies/by-name/<name>/``: a policy by its name
    (see :class:`_ByName`); ``tiers`` given replace the stored ones."""

    serializer_class = EscalationPolicySerializer
    noun = "escalation policy"

    @classmethod
    def named(cls, project):
        return EscalationPolicy.objects.filter(project=project)

    @classmethod
    def fresh(cls, policy):
        return EscalationPolicy.objects.prefetch_related(*POLICY_PREFETCH).get(
            pk=policy.pk)


# --- maintenance windows --------------------------------------------------------------------

class MaintenanceWindowSerializer(RejectUnknown, serializers.ModelSerializer):
    """A maintenance window: one-off (``starts_at``, ``ends_at``) or recurring
    (``schedule``, ``timezone``, ``duration`` seconds), for a ``monitor`` (id) or a
    ``tag``. ``active_until``: when the maintenance it is part of ends, while it is on."""

    project = tenancy.ProjectField()
    monitor = serializers.IntegerField(required=False, allow_null=True, source="monitor_id")
    duration = monitors_api.Seconds(minimum=60, required=False, allow_null=True)
    active_until = serializers.SerializerMethodField()

    class Meta:
        model = MaintenanceWindow
        fields = ["id", "project", "name", "monitor", "tag", "starts_at", "ends_at", "schedule",
                  "timezone", "duration", "active_until", "created_at"]
        read_only_fields = ["id", "created_at"]

    def get_active_until(self, window) -> str | None:
        end = maintenance.end_if_open(window, timezone.now())
        return end.isoformat() if end else None

    def validate(self, attrs):
        project = tenancy.project_for(self, attrs, Membership.Role.MEMBER)
        merged = {k: getattr(self.instance, k) for k in
                  ("monitor_id", "tag", "starts_at", "ends_at", "schedule", "timezone",
                   "duration")} if self.instance else {}
        merged.update(attrs)
        merged.pop("project")
        monitor_id = merged.get("monitor_id")
        if monitor_id is not None and not Monitor.objects.filter(
                pk=monitor_id if 0 < monitor_id <= MAX_PK else 0, project=project,
                deleted_at__isnull=True).exists():
            raise serializers.ValidationError(
                {"monitor": [f"no monitor with id {monitor_id} in this project"]})
        errors = maintenance.validate({**merged, "monitor": monitor_id})
        if errors:
            raise serializers.ValidationError(errors)
        return attrs

    def create(self, validated):
        window = MaintenanceWindow.objects.create(**validated)
        audit.record_create(window.project.organisation, window, window_audit(window))
        return window

    def update(self, window, validated):
        before = window_audit(window)
        window = super().update(window, validated)
        audit.record_update(window.project.organisation, window, before, window_audit(window))
        return window


WINDOW_AUDITED = ("name", "monitor_id", "tag", "starts_at", "ends_at", "schedule", "timezone",
                  "duration")


def window_audit(window: MaintenanceWindow) -> dict:
    """A maintenance window's values for the audit log (``monitor`` its id,
    ``duration`` seconds, times ISO 8601)."""
    values = audit.fields_of(window, WINDOW_AUDITED)
    values["monitor"] = values.pop("monitor_id")
    return values


def delete_window(window: MaintenanceWindow) -> None:
    """Delete a maintenance window (the API's DELETE and the dashboard's)."""
    audit.record(AuditEntry.Action.DELETE, window.project.organisation, target=window)
    window.delete()


class MaintenanceWindowViewSet(viewsets.ModelViewSet):
    """``/api/v1/maintenance-windows/`` list/create, ``…/<id>/`` get/patch/delete."""

    serializer_class = MaintenanceWindowSerializer
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]
    pagination_class = None

    def get_queryset(self):
        return tenancy.visible(self.request, MaintenanceWindow.objects).order_by("pk")

    def perform_destroy(self, window):
        delete_window(window)


# --- acknowledging and resolving -------------------------------------------------------------

class IncidentAction(RejectUnknown, serializers.Serializer):
    """``by`` (default: the API key's name) and an optional ``note``."""

    by = serializers.CharField(max_length=200, required=False)
    note = serializers.CharField(max_length=500, required=False, default="", allow_blank=True)


class _IncidentActionView(generics.GenericAPIView):
    serializer_class = IncidentAction

    def post(self, request, pk):
        incident = get_or_404(tenancy.visible(request, Incident.objects, "monitor__project"),
                              pk, monitor__deleted_at__isnull=True)
        self.check_object_permissions(request, incident)
        action = IncidentAction(data=request.data)
        action.is_valid(raise_exception=True)
        by = action.validated_data.get("by") or tenancy.caller(request).name
        try:
            self.act(incident.pk, by, action.validated_data["note"], timezone.now())
        except incidents.IncidentClosed as exc:
            return Response({"detail": str(exc)}, status=409)
        return Response(IncidentSerializer(_incidents().get(pk=incident.pk)).data)


@extend_schema(request=IncidentAction, responses=None)
class IncidentAcknowledge(_IncidentActionView):
    """``POST /api/v1/incidents/<id>/ack/``: stop escalating it and tell every notified
    channel (409 when it is resolved; acknowledging twice changes nothing)."""

    act = staticmethod(incidents.acknowledge)


@extend_schema(request=IncidentAction, responses=None)
class IncidentResolve(_IncidentActionView):
    """``POST /api/v1/incidents/<id>/resolve/``: resolve it by hand; every notified
    channel gets the resolve."""

    act = staticmethod(incidents.resolve_by_hand)
