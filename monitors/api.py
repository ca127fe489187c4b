"""The monitors side of the REST API (``/api/v1/``): monitors, their runs, pings
and run statistics. Authenticated by project API key or a person's session;
every lookup is scoped by :mod:`accounts.tenancy`.

Durations are whole seconds. Views are thin: validation lives in the
serializers, schedule rules in :mod:`monitors.schedule`, state changes in
:mod:`monitors.evaluator`.
"""
import base64
import codecs
from datetime import timedelta

from django.db import IntegrityError
from django.db.models import Exists, OuterRef, Q, Subquery
from django.http import Http404
from django.utils import timezone
from django.utils.text import slugify
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import generics, mixins, permissions, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import MethodNotAllowed
from rest_framework.response import Response

from accounts import tenancy
from accounts.models import Membership, Project
from core.api import (
    CURSOR,
    LIMIT,
    MAX_PK,
    CursorList,
    RejectUnknown,
    cursor,
    get_or_404,
    limit,
    link_next,
)
from monitors import creation, evaluator, healthchecks, history, schedule, slots, usage
from monitors.models import (
    UUID_TAKEN,
    Monitor,
    PingLog,
    PingUsage,
    Run,
    chosen_uuids_allowed,
    uuid_taken,
)
from monitors.runs import REASONS

MAX_TAGS = 50
MAX_DESCRIPTION = healthchecks.MAX_DESCRIPTION  # characters (a page of text): more is a 400
STATUSES = ("new", "up", "running", "late", "down", "paused")
FILTER_BATCH = 500  # monitors read at a time by a list filtered by tag or status


class Seconds(serializers.IntegerField):
    """A duration: whole seconds at the API, ``timedelta`` in the model.

    Accepts ``minimum`` .. 10 years; anything else is a 400 naming the field
    (``hint`` is added to the message about the minimum).
    """

    MAXIMUM = 10 * 365 * 86400

    def __init__(self, minimum: int = 0, hint: str = "", **kw):
        self.minimum = minimum
        self.hint = hint
        kw.setdefault("error_messages", {"invalid": "must be a whole number of seconds"})
        super().__init__(**kw)
        # for the schema's minimum and maximum only: the check is to_internal_value's
        # (IntegerField's validators would compare the timedelta with a number)
        self.min_value, self.max_value = minimum, self.MAXIMUM

    def to_representation(self, value):
        return None if value is None else int(value.total_seconds())

    def to_internal_value(self, data):
        n = super().to_internal_value(data)
        if not self.minimum <= n <= self.MAXIMUM:
            unit = "second" if self.minimum == 1 else "seconds"
            raise serializers.ValidationError(
                f"must be at least {self.minimum} {unit} and at most {self.MAXIMUM}{self.hint}")
        return timedelta(seconds=n)


SLOW_RANGE = "must be more than 1 and at most 100 (or null: off)"


@extend_schema_field({"type": "number", "format": "double", "minimum": 1,
                      "exclusiveMinimum": True, "maximum": 100})
class SlowFactor(serializers.DecimalField):
    """``slow_factor``: more than 1, at most 100, two decimal places (checked by
    :meth:`MonitorSerializer.validate_slow_factor`; the schema says so, where a
    plain ``DecimalField`` would say -1000 to 1000)."""


class MonitorWarningSerializer(serializers.Serializer):
    """One item of a monitor's ``warnings`` (:func:`monitors.slots.warnings`)."""

    code = serializers.CharField(help_text="grace_covers_gap")
    message = serializers.CharField()


class MonitorSerializer(RejectUnknown, serializers.ModelSerializer):
    """Monitor JSON: section-1 field names, durations in seconds."""

    period = Seconds(minimum=1, required=False, allow_null=True)
    grace = Seconds(minimum=1, required=False,
                    hint=" (grace must cover the job's start-up and network latency)")
    max_runtime = Seconds(minimum=1, required=False, allow_null=True)
    deadline = Seconds(minimum=1, required=False, allow_null=True)
    min_runtime = Seconds(minimum=1, required=False, allow_null=True)
    slow_factor = SlowFactor(
        max_digits=5, decimal_places=2, coerce_to_string=False, required=False, allow_null=True,
        error_messages={"max_digits": SLOW_RANGE, "max_whole_digits": SLOW_RANGE,
                        "max_decimal_places": "at most 2 decimal places"},
        help_text="a succeeded run longer than this times the p95 duration of the last 50 "
                  "succeeded runs (at least 20 needed) is slow; more than 1, at most 100; "
                  "null: off")
    slug = serializers.SlugField(max_length=100, required=False, allow_blank=True)
    tags = serializers.ListField(child=serializers.CharField(max_length=50), required=False,
                                 max_length=MAX_TAGS)
    max_attempts = serializers.IntegerField(min_value=1, max_value=100, required=False)
    project = tenancy.ProjectField()
    ping_url = serializers.SerializerMethodField()
    uuid = serializers.UUIDField(
        required=False, allow_null=True,
        help_text="the ping URL's key; null for callers who may only read. A new monitor may "
                  "be given one (keeping a Healthchecks check's ping URLs): any UUID no other "
                  "monitor on the installation has, where sign-up is closed "
                  "(CRONRADAR_SIGNUP); else a 400. It cannot be changed (the same value, or "
                  "null, is ignored)")
    n_pings = serializers.IntegerField(read_only=True, help_text="pings received, ever "
                                       "(log pings and duplicates apart)")
    pings_refused = serializers.SerializerMethodField(
        help_text="pings refused this UTC month by a ping rate limit (429; not stored), "
                  "added up each minute; dropped_pings counts them ever")
    status = serializers.SerializerMethodField()
    next_expected_at = serializers.DateTimeField(read_only=True)
    warnings = serializers.SerializerMethodField(
        help_text="settings that work but may surprise (read-only; ignored when sent): "
                  "grace_covers_gap, a grace at least the shortest gap between fire times "
                  "(over the next 1,000) or the period")

    class Meta:
        model = Monitor
        fields = ["id", "project", "uuid", "name", "slug", "description", "kind", "schedule",
                  "timezone", "cron_semantics", "period", "grace", "max_runtime", "deadline",
                  "min_runtime", "slow_factor", "concurrency", "max_attempts",
                  "tags", "paused", "methods", "ping_url", "status", "next_expected_at",
                  "last_ping_at", "created_at", "evaluation_error", "dropped_pings",
                  "pings_refused", "n_pings", "warnings"]
        read_only_fields = ["id", "last_ping_at", "created_at", "evaluation_error",
                            "dropped_pings", "n_pings"]
        extra_kwargs = {"methods": {"help_text": 'which HTTP methods a ping may use: "" any '
                                                 '(GET, HEAD, POST; the default), "POST" only '
                                                 'POST (GET and HEAD pings are refused, 405)'},
                        "description": {"help_text": "free text about the job (at most "
                                                     f"{MAX_DESCRIPTION:,} characters)",
                                        "max_length": MAX_DESCRIPTION}}

    def validate_slow_factor(self, value):
        if value is not None and not 1 < value <= 100:
            raise serializers.ValidationError(SLOW_RANGE)
        return value

    def get_ping_url(self, m) -> str | None:
        """The URL to ping; null for callers who may only read (viewers, read-only
        keys): a ping changes the monitor."""
        if not tenancy.can(self.context["request"], m.project, Membership.Role.MEMBER):
            return None
        return m.ping_url

    def to_representation(self, instance):
        """As the fields say, but ``uuid`` (the ping URL's key) is null where
        ``ping_url`` is: for callers who may only read."""
        data = super().to_representation(instance)
        if data.get("ping_url") is None and "uuid" in data:
            data["uuid"] = None
        return data

    @extend_schema_field(MonitorWarningSerializer(many=True))
    def get_warnings(self, m) -> list[dict[str, str]]:
        return slots.warnings(m, timezone.now())

    def get_status(self, m) -> str:
        running = getattr(m, "is_running", None)
        if running is None:
            running = m.runs.open().exists()
        return slots.status(m, timezone.now(), running=running,
                            incident_open=self.incident_open(m))

    def incident_open(self, m) -> bool:
        """Whether ``m`` has an open incident: the alerting side knows (its
        serializer overrides this); monitors alone cannot tell."""
        return False

    def validate(self, attrs):
        get = lambda k, default=None: attrs.get(k, getattr(self.instance, k, default))  # noqa: E731
        project = tenancy.project_for(self, attrs, Membership.Role.MEMBER)
        errors = {}
        kind = get("kind") or Monitor.Kind.INTERVAL
        tz = get("timezone") or "UTC"
        try:
            schedule.validate_timezone(tz)
        except schedule.ScheduleError as e:
            errors["timezone"] = [str(e)]
        if kind == Monitor.Kind.CRON:
            expr = get("schedule") or ""
            if not expr.strip():
                errors["schedule"] = ["required for kind 'cron' (a 5-field cron expression)"]
            elif "timezone" not in errors:
                try:
                    attrs["schedule"] = schedule.validate_cron(
                        expr, tz, get("cron_semantics") or Monitor.Semantics.DEBIAN)
                except schedule.ScheduleError as e:
                    errors["schedule"] = [str(e)]
            attrs["period"] = None
        else:
            if get("period") is None:
                errors["period"] = ["required for kind 'interval' (seconds between runs)"]
            attrs["schedule"] = ""
        max_runtime, min_runtime = get("max_runtime"), get("min_runtime")
        if max_runtime and min_runtime and min_runtime >= max_runtime:
            errors["min_runtime"] = ["must be less than max_runtime"]
        if self.instance is None and "grace" not in attrs:
            errors["grace"] = ["required: seconds a run may start after its scheduled time"]
        if (self.instance is None and not attrs.get("slug")) or attrs.get("slug") == "":
            attrs["slug"] = slugify(get("name") or "")[:100]
            if not attrs["slug"]:
                errors["slug"] = ["required when the name gives no slug"]
        self._validate_uuid(attrs, errors)
        slug = attrs.get("slug")
        if slug and Monitor.objects.filter(project=project, slug=slug, deleted_at__isnull=True) \
                .exclude(pk=getattr(self.instance, "pk", None)).exists():
            errors["slug"] = [f"a monitor with slug '{slug}' already exists in this project"]
        if errors:
            raise serializers.ValidationError(errors)
        return attrs

    def _validate_uuid(self, attrs: dict, errors: dict) -> None:
        """A chosen ``uuid``: kept in ``attrs`` for a new monitor where it may be
        chosen (:func:`monitors.models.chosen_uuids_allowed`) and no other monitor
        has it; dropped when it is None or the instance's own; else an error in
        ``errors``."""
        given = attrs.pop("uuid", None)
        if given is None or (self.instance is not None and given == self.instance.uuid):
            return
        if self.instance is not None:
            errors["uuid"] = ["cannot be changed: it is the key of the monitor's ping URLs"]
        elif not chosen_uuids_allowed():
            errors["uuid"] = ["a chosen uuid needs sign-up closed on this installation "
                              "(CRONRADAR_SIGNUP=closed), or manage.py importhealthchecks "
                              "with the Healthchecks API key of the check: leave it out for "
                              "a new one"]
        elif uuid_taken(given):
            errors["uuid"] = [UUID_TAKEN]
        else:
            attrs["uuid"] = given

    def create(self, validated):
        monitor = Monitor(**validated)
        try:
            creation.create(monitor.project, monitor, timezone.now())
        except IntegrityError:
            # another request took the UUID (or the slug) since validate() looked
            if "uuid" in validated and uuid_taken(validated["uuid"]):
                raise serializers.ValidationError({"uuid": [UUID_TAKEN]}) from None
            raise serializers.ValidationError({"slug": [
                f"a monitor with slug '{monitor.slug}' already exists in this project"]}) from None
        return monitor

    def update(self, monitor, validated):
        validated.pop("project")
        return evaluator.edit(monitor.pk, validated, timezone.now())


    def get_pings_refused(self, m) -> int:
        if hasattr(m, "refused_this_month"):  # annotated by MonitorViewSet
            return m.refused_this_month or 0
        return (PingUsage.objects.filter(monitor=m, month=usage.month_of(timezone.now()))
                .values_list("refused", flat=True).first() or 0)


def refused_this_month(now):
    """An annotation: the monitor's refused pings of ``now``'s month (None: none)."""
    return Subquery(PingUsage.objects.filter(monitor=OuterRef("pk"), month=usage.month_of(now))
                    .values("refused")[:1])


def matching(qs, tags: list[str], statuses: list[str], n: int, status_of) -> list[Monitor]:
    """The first ``n`` monitors of ``qs`` (in id order) having every tag of ``tags``
    and, when ``statuses`` is not empty, a status among them (``status_of(m)``).
    Tags and status are decided in Python (a status needs the clock and the open
    runs), so with a filter ``qs`` is read in batches until ``n`` match."""
    if not tags and not statuses:
        return list(qs[:n])
    found, last = [], 0
    while len(found) < n:
        batch = list(qs.filter(pk__gt=last)[:FILTER_BATCH])
        found += [m for m in batch if all(t in m.tags for t in tags)
                  and (not statuses or status_of(m) in statuses)]
        if len(batch) < FILTER_BATCH:
            break
        last = batch[-1].pk
    return found[:n]


class MonitorViewSet(mixins.CreateModelMixin, mixins.RetrieveModelMixin,
                     mixins.DestroyModelMixin, viewsets.GenericViewSet):
    """``/api/v1/monitors/`` list/create, ``/api/v1/monitors/<id>/`` get/patch/delete.

    No PUT on ``/monitors/<id>/`` (a 405, and ``Allow`` does not list it): PATCH
    changes the fields sent, ``PUT /monitors/by-slug/<slug>/`` declares a monitor.
    The route serves the alerting side's subclass (``alerts.api.MonitorViewSet``),
    which adds a monitor's channels and its incident to what is here."""

    serializer_class = MonitorSerializer
    http_method_names = ["get", "post", "put", "patch", "delete", "head", "options"]

    def get_queryset(self):
        open_run = Run.objects.open().filter(monitor=OuterRef("pk"))
        return (tenancy.visible(self.request, Monitor.objects.filter(deleted_at__isnull=True))
                .select_related("project")
                .annotate(is_running=Exists(open_run),
                          refused_this_month=refused_this_month(timezone.now()))
                .order_by("pk"))

    def http_method_not_allowed(self, request, *args, **kwargs):
        if request.method == "PUT" and "pk" in kwargs:
            raise MethodNotAllowed("PUT", detail="use PATCH, or PUT on /monitors/by-slug/<slug>/")
        return super().http_method_not_allowed(request, *args, **kwargs)

    def partial_update(self, request, *args, **kwargs):
        """``PATCH /api/v1/monitors/<id>/``: the fields sent change, the others keep
        their values."""
        serializer = self.get_serializer(self.get_object(), data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        serializer.save()
        return Response(serializer.data)

    @extend_schema(parameters=[
        OpenApiParameter("status", str, description="only these statuses, comma-separated: "
                         + ", ".join(STATUSES)),
        OpenApiParameter("tag", str, many=True, description="only monitors with this tag "
                         "(repeat for several: all of them)"),
        OpenApiParameter("q", str, description="text in the name or slug"), LIMIT, CURSOR])
    def list(self, request, *args, **kwargs):
        """The monitors the caller can see, in id order, filtered by ``?status=``,
        ``?tag=`` (repeatable) and ``?q=``: a page of ``?limit=`` (default 100), and
        when more follow a ``Link: <url>; rel="next"`` header (filters kept,
        ``cursor`` the last id sent; see :class:`core.api.CursorList`)."""
        qs = self.get_queryset()
        if text := request.query_params.get("q", "").strip():
            qs = qs.filter(Q(name__icontains=text) | Q(slug__icontains=text))
        wanted = [w for w in request.query_params.get("status", "").split(",") if w]
        if unknown := [w for w in wanted if w not in STATUSES]:
            raise serializers.ValidationError(
                {"status": [f"unknown status '{unknown[0]}': use {', '.join(STATUSES)}"]})
        if (after := cursor(request)) is not None:
            qs = qs.filter(pk__gt=after)
        n = limit(request)
        rows = matching(qs, request.query_params.getlist("tag"), wanted, n + 1,
                        self.get_serializer().get_status)
        response = Response(self.get_serializer(rows[:n], many=True).data)
        if len(rows) > n:
            link_next(request, response, rows[n - 1].pk)
        return response

    @extend_schema(request=None)
    @action(detail=True, methods=["post"])
    def pause(self, request, pk=None):
        """``POST /api/v1/monitors/<id>/pause/``: as ``PATCH {"paused": true}``."""
        return self._set_paused(True)

    @extend_schema(request=None)
    @action(detail=True, methods=["post"])
    def resume(self, request, pk=None):
        """``POST /api/v1/monitors/<id>/resume/``: as ``PATCH {"paused": false}``."""
        return self._set_paused(False)

    def _set_paused(self, paused: bool) -> Response:
        monitor = self.get_object()
        try:
            evaluator.edit(monitor.pk, {"paused": paused}, timezone.now())
        except Monitor.DoesNotExist:
            raise Http404 from None
        return Response(self.get_serializer(self.get_queryset().get(pk=monitor.pk)).data)

    @extend_schema(parameters=[OpenApiParameter("project", int, description="the project "
                                                "(for a person in several)")])
    @action(detail=False, methods=["get", "put"], url_path=r"by-slug/(?P<slug>[-a-zA-Z0-9_]+)")
    def by_slug(self, request, slug=None):
        """``GET/PUT /api/v1/monitors/by-slug/<slug>/``: read, or create-or-update (201
        when created, 200 when changed) the monitor with this slug in the key's
        project (a person gives ``project``), so deploy scripts declare monitors
        idempotently. Fields left out of a PUT keep their values."""
        read = request.method in permissions.SAFE_METHODS  # GET and HEAD never write
        raw = request.query_params.get("project") if read or not isinstance(
            request.data, dict) else request.data.get("project")
        project = tenancy.target_project(request, _project(request, raw), Membership.Role.VIEWER
                                         if read else Membership.Role.MEMBER)
        instance = self.get_queryset().filter(project=project, slug=slug).first()
        if read:
            if instance is None:
                raise Http404
            return Response(self.get_serializer(instance).data)
        if not isinstance(request.data, dict):
            raise serializers.ValidationError({"detail": ["the body must be a JSON object"]})
        if request.data.get("slug", slug) != slug:
            raise serializers.ValidationError({"slug": ["must be the slug in the URL"]})
        data = {**request.data, "slug": slug, "project": project.pk}
        serializer = self.get_serializer(instance, data=data, partial=instance is not None)
        serializer.is_valid(raise_exception=True)
        serializer.save()
        fresh = self.get_queryset().get(pk=serializer.instance.pk)
        return Response(self.get_serializer(fresh).data, status=201 if instance is None else 200)

    def perform_destroy(self, monitor):
        try:
            evaluator.delete(monitor.pk, timezone.now())
        except Monitor.DoesNotExist:  # deleted by a concurrent request
            raise Http404 from None


def _project(request, raw) -> Project | None:
    """The project a request names (an id), among the caller's; None when absent.
    Named but empty (``?project=``) is a 400, as any value that is not a project's id."""
    if raw is None:
        return None
    if raw == "":
        raise serializers.ValidationError({"project": ["must be a project's id, not empty"]})
    found = tenancy.visible(request, Project.objects, "pk").filter(
        pk=raw if str(raw).isdigit() and 0 < int(raw) <= MAX_PK else 0).first()
    if found is None:
        raise serializers.ValidationError({"project": [f"no project with id {raw} that you "
                                                       "can see"]})
    return found


class RunSerializer(serializers.ModelSerializer):
    """A run: ``slot_at`` (the scheduled time it belongs to), ``started_at``,
    ``ended_at``, ``duration`` (seconds, null until it has a start and an end),
    ``outcome``, ``exit_status`` and ``reason`` (why an ``unknown`` run is unknown)."""

    duration = Seconds(read_only=True, allow_null=True)

    class Meta:
        model = Run
        fields = ["id", "rid", "slot_at", "started_at", "ended_at", "duration", "outcome",
                  "exit_status", "reason"]
        extra_kwargs = {"reason": {"help_text": "why an unknown run is unknown: " + "; ".join(
            f"{code}: {text}" for code, text in REASONS.items()) + "; empty for other runs"}}


class PingSerializer(serializers.ModelSerializer):
    """A stored ping. ``body``: the stored bytes as UTF-8 text (invalid bytes
    replaced; a character cut by truncation dropped); ``body_base64``: the exact
    stored bytes."""

    body = serializers.SerializerMethodField()
    body_base64 = serializers.SerializerMethodField()

    class Meta:
        model = PingLog
        fields = ["id", "received_at", "kind", "exit_status", "rid", "run", "method",
                  "remote_addr", "user_agent", "body", "body_base64", "body_size",
                  "body_truncated", "duplicate"]

    def get_body(self, p) -> str:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        # final=False leaves out a trailing partial character: truncation cut it
        return decoder.decode(bytes(p.body), final=not p.body_truncated)

    def get_body_base64(self, p) -> str:
        return base64.b64encode(bytes(p.body)).decode()


class _MonitorChildList(CursorList, generics.ListAPIView):
    """A monitor's runs or pings in time order (:mod:`monitors.history`): newest
    first by time, then id; ``cursor`` the last id sent."""

    def monitor(self) -> Monitor:
        if not hasattr(self, "_monitor"):
            self._monitor = get_or_404(tenancy.visible(self.request, Monitor.objects),
                                       self.kwargs["pk"], deleted_at__isnull=True)
        return self._monitor

    def since(self, qs, at):
        return history.since(qs, at, self.time_field)

    def until(self, qs, at):
        return history.before(qs, at, self.time_field)

    def after(self, qs, pk: int):
        at = (self.get_queryset().filter(pk=pk).values_list(self.time_field, flat=True)
              .first())
        if at is None:  # the row is gone (pruned): by id, as near as it gets
            return qs.filter(pk__lt=pk)
        return history.older_than(qs, at, pk, self.time_field)

    def newest_first(self, qs):
        return history.newest_first(qs, self.time_field)


class RunList(_MonitorChildList):
    """``GET /api/v1/monitors/<id>/runs/``: newest first (by when the run started,
    else ended, else its slot; then by id), ``?limit=`` (default 100),
    ``?since=``/``?until=`` (on that time), ``cursor`` paging (see
    :class:`core.api.CursorList`)."""

    serializer_class = RunSerializer
    time_field = "at"

    def get_queryset(self):
        return history.runs(self.monitor())


class PingList(_MonitorChildList):
    """``GET /api/v1/monitors/<id>/pings/``: the monitor's stored pings
    (:func:`monitors.history.kept_pings`: its newest ``pings_kept``, ping rows and
    pings kept in their runs) newest first (arrival time, then id), ``?limit=``,
    ``?since=``/``?until=`` (arrival time), ``cursor`` paging."""

    serializer_class = PingSerializer
    time_field = "received_at"

    def get_queryset(self):
        return history.kept_pings(self.monitor())
