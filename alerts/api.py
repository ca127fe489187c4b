"""The alerting side of the REST API (``/api/v1/``): a monitor's channels (on the
monitors endpoint, extended here), channels, incidents with their timelines and
notifications, and deliveries. Thin views over :mod:`alerts.incidents` and the
models; lookups are scoped to the key's project.
"""
from django.db import transaction
from django.db.models import Exists, OuterRef, Prefetch
from django.utils import timezone
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    extend_schema_field,
    extend_schema_view,
)
from rest_framework import generics, serializers

from alerts import incidents
from alerts.integrations import KINDS
from alerts.models import Alerting, Channel, Delivery, Incident, IncidentEvent
from cronradar.api import LIMIT, MAX_PK, flag, get_or_404, limit, object_id
from monitors import api as monitors_api


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
        project = self.context["request"].auth.project
        known = set(Channel.objects.filter(project=project, deleted_at__isnull=True,
                                           pk__in=[i for i in data if 0 < i <= MAX_PK])
                    .values_list("pk", flat=True))
        unknown = [i for i in data if i not in known]
        if unknown:
            raise serializers.ValidationError(f"no channel with id {unknown[0]} in this project")
        return {"channels": sorted(set(data))}


class MonitorSerializer(monitors_api.MonitorSerializer):
    """A monitor with its alerting: ``channels``, and ``status`` ``down`` while an
    incident is open."""

    channels = ChannelsField(required=False)

    class Meta(monitors_api.MonitorSerializer.Meta):
        fields = [*monitors_api.MonitorSerializer.Meta.fields, "channels"]

    def incident_open(self, m) -> bool:
        found = getattr(m, "has_open_incident", None)
        if found is None:
            found = incidents.open_incident(m) is not None
        return found

    def create(self, validated):
        channels = validated.pop("channels", "all")  # alert by default, on every channel
        with transaction.atomic():
            monitor = super().create(validated)
            if channels != "all":
                incidents.set_channels(monitor, channels, timezone.now())
        return monitor

    def update(self, monitor, validated):
        channels = validated.pop("channels", None)
        with transaction.atomic():  # evaluator.edit's row lock lasts until this commits
            monitor = super().update(monitor, validated)
            if channels is not None:
                incidents.set_channels(monitor, channels, timezone.now())
        return monitor


class MonitorViewSet(monitors_api.MonitorViewSet):
    """``/api/v1/monitors/``: the monitors side's endpoint with each monitor's
    alerting (see :class:`MonitorSerializer`)."""

    serializer_class = MonitorSerializer

    def get_queryset(self):
        open_incident = Incident.objects.filter(monitor=OuterRef("pk"), resolved_at__isnull=True)
        return (super().get_queryset().annotate(has_open_incident=Exists(open_incident))
                .select_related("alerting").prefetch_related("alerting__channels"))


class ChannelSerializer(serializers.ModelSerializer):
    config = serializers.JSONField(required=False, default=dict)

    class Meta:
        model = Channel
        fields = ["id", "kind", "name", "config", "created_at", "last_error", "failing_since"]
        read_only_fields = ["id", "created_at", "last_error", "failing_since"]

    def validate(self, attrs):
        previous = None
        if self.instance is not None:
            if attrs.get("kind", self.instance.kind) != self.instance.kind:
                raise serializers.ValidationError({"kind": ["cannot be changed"]})
            attrs["kind"] = self.instance.kind
            if "config" not in attrs:
                return attrs
            previous = self.instance.config
        try:
            attrs["config"] = KINDS[attrs["kind"]].validate_config(attrs.get("config") or {},
                                                                   previous)
        except ValueError as e:
            raise serializers.ValidationError({"config": [str(e)]}) from None
        return attrs

    def create(self, validated):
        return Channel.objects.create(project=self.context["request"].auth.project, **validated)


class ChannelList(generics.ListCreateAPIView):
    """``GET/POST /api/v1/channels/``."""

    serializer_class = ChannelSerializer
    pagination_class = None

    def get_queryset(self):
        return Channel.objects.filter(project=self.request.auth.project,
                                      deleted_at__isnull=True).order_by("pk")


class ChannelDetail(generics.RetrieveUpdateDestroyAPIView):
    """``GET/PATCH/DELETE /api/v1/channels/<id>/``; ``kind`` cannot change.

    DELETE first sends a resolve for every open incident the channel was notified of.
    """

    serializer_class = ChannelSerializer
    http_method_names = ["get", "patch", "delete", "head", "options"]

    def get_object(self):
        return get_or_404(Channel, self.kwargs["pk"], project=self.request.auth.project,
                          deleted_at__isnull=True)

    def perform_destroy(self, channel):
        incidents.delete_channel(channel, timezone.now())


class DeliverySerializer(serializers.ModelSerializer):
    """One notification to one channel: ``status`` pending / sending / delivered /
    failed (given up), ``attempts``, ``last_error``, ``next_attempt_at`` (while it is
    still to be sent). ``event``: ``incident.opened``, ``incident.resolved``,
    ``incident.channel_removed`` or ``outage.summary``."""

    event = serializers.SerializerMethodField()

    class Meta:
        model = Delivery
        fields = ["id", "event", "incident", "channel", "status", "attempts", "last_error",
                  "created_at", "next_attempt_at", "delivered_at"]

    def get_event(self, d) -> str:
        return "outage.summary" if d.outage_id else f"incident.{d.event.kind}"


class IncidentEventSerializer(serializers.ModelSerializer):
    """A timeline event; ``count`` times between ``at`` and ``last_at`` (a problem
    seen again is counted on its event, so a timeline stays bounded), with the
    notifications it made."""

    deliveries = DeliverySerializer(many=True, read_only=True)

    class Meta:
        model = IncidentEvent
        fields = ["kind", "at", "last_at", "count", "message", "detail", "deliveries"]


class IncidentSerializer(serializers.ModelSerializer):
    events = IncidentEventSerializer(many=True, read_only=True)

    class Meta:
        model = Incident
        fields = ["id", "monitor", "cause", "summary", "dedup_key", "opened_at", "resolved_at",
                  "resolution", "missed_count", "failure_count", "events"]


@extend_schema_view(get=extend_schema(parameters=[
    LIMIT,
    OpenApiParameter("open", bool, description="only open (true) or resolved (false)"),
    OpenApiParameter("monitor", int, description="only this monitor's incidents"),
]))
class IncidentList(generics.ListAPIView):
    """``GET /api/v1/incidents/``: newest first; ``?monitor=<id>``, ``?open=true``, ``?limit=``."""

    serializer_class = IncidentSerializer
    pagination_class = None

    def get_queryset(self):
        qs = Incident.objects.filter(monitor__project=self.request.auth.project,
                                     monitor__deleted_at__isnull=True)
        monitor = object_id(self.request, "monitor")
        if monitor is not None:
            qs = qs.filter(monitor_id=monitor)
        is_open = flag(self.request, "open")
        if is_open is not None:
            qs = qs.filter(resolved_at__isnull=is_open)
        events = IncidentEvent.objects.prefetch_related(
            Prefetch("deliveries", Delivery.objects.select_related("event").order_by("pk")))
        return (qs.prefetch_related(Prefetch("events", events))
                .order_by("-opened_at", "-pk")[:limit(self.request)])


@extend_schema_view(get=extend_schema(parameters=[
    LIMIT,
    OpenApiParameter("incident", int, description="only this incident's notifications"),
    OpenApiParameter("channel", int, description="only this channel's"),
    OpenApiParameter("status", str, enum=list(Delivery.Status.values)),
]))
class DeliveryList(generics.ListAPIView):
    """``GET /api/v1/deliveries/``: notifications, newest first; ``?incident=``,
    ``?channel=``, ``?status=`` (``failed``: the given-up ones), ``?limit=``."""

    serializer_class = DeliverySerializer
    pagination_class = None

    def get_queryset(self):
        qs = (Delivery.objects.filter(channel__project=self.request.auth.project)
              .select_related("event"))
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
        return qs.order_by("-pk")[:limit(self.request)]
