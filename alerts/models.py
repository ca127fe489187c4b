"""Incidents, their timelines, channels and notification deliveries.

An incident is opened by a detection (see ``alerts.incidents``); every change to
it is an ``IncidentEvent``. Notifications are produced from events: one
``Delivery`` per (event, channel), sent by a Celery task and logged per attempt.
"""
import secrets
import uuid

from django.db import models
from django.db.models import Q
from django.utils import timezone

from monitors.detections import PROBLEMS


class Channel(models.Model):
    """Where notifications go (an integration).

    ``config`` by kind: ``webhook`` {"url", "secret"}; ``slack`` {"url"};
    ``pagerduty`` {"routing_key", "events_url" (optional)}.
    """

    class Kind(models.TextChoices):
        WEBHOOK = "webhook"
        SLACK = "slack"
        PAGERDUTY = "pagerduty"
        EMAIL = "email"
        TEAMS = "teams"
        DISCORD = "discord"
        OPSGENIE = "opsgenie"
        NTFY = "ntfy"
        TELEGRAM = "telegram"
        GOOGLECHAT = "googlechat"
        MATTERMOST = "mattermost"
        PUSHOVER = "pushover"
        MATRIX = "matrix"

    project = models.ForeignKey("accounts.Project", on_delete=models.CASCADE,
                                related_name="channels")
    kind = models.CharField(max_length=12, choices=Kind.choices)
    name = models.CharField(max_length=200, blank=True, default="")
    # stable public id (Healthchecks' channel "id" in /api/v3/channels/)
    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    config = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)
    # Deleted through the API: kept (and invisible) until the notifications that
    # close its open pages are delivered or abandoned.
    deleted_at = models.DateTimeField(null=True, blank=True)
    # Health: the last failed attempt's error, and since when attempts fail
    # (None once one succeeds).
    last_error = models.CharField(max_length=500, blank=True, default="")
    failing_since = models.DateTimeField(null=True, blank=True)
    # Telling people (alerts.health): when the tick checks whether this failure has
    # lasted CRONRADAR_CHANNEL_FAILING_AFTER (None: nothing to check), and when it
    # was announced as channel.failing (None: not announced).
    failing_check_at = models.DateTimeField(null=True, blank=True)
    failing_notified_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            # the evaluator's clean-up looks for deleted channels on every idle tick
            models.Index(fields=["deleted_at"], name="channel_deleted",
                         condition=Q(deleted_at__isnull=False)),
            # and for channels whose failure is due to be announced on every tick
            models.Index(fields=["failing_check_at"], name="channel_failing_check",
                         condition=Q(failing_check_at__isnull=False)),
        ]

    def __str__(self) -> str:
        return self.name or f"{self.kind} #{self.pk}"

    @staticmethod
    def new_secret() -> str:
        """A new webhook secret: 32 random bytes, hex (the key is its UTF-8 text)."""
        return secrets.token_hex(32)


class EscalationPolicy(models.Model):
    """Who is told of an incident, and when, until somebody acknowledges it.

    Its :class:`EscalationTier` rows are notified in ``position`` order; a tier's
    ``delay`` counts from the incident's opening for the first tier and from the
    previous tier for the others. While nobody acknowledges, the policy runs again
    from the first tier ``repeat`` (0-9) more times. See :mod:`alerts.escalation`.
    """

    project = models.ForeignKey("accounts.Project", on_delete=models.CASCADE,
                                related_name="escalation_policies")
    name = models.CharField(max_length=200)
    repeat = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "name"],
                                               name="policy_name_unique")]

    def __str__(self) -> str:
        return self.name


class EscalationTier(models.Model):
    """One step of an escalation policy: its ``channels``, ``delay`` after the
    previous step (after the opening, for the first)."""

    policy = models.ForeignKey(EscalationPolicy, on_delete=models.CASCADE, related_name="tiers")
    position = models.PositiveSmallIntegerField()
    delay = models.DurationField()
    channels = models.ManyToManyField(Channel, related_name="tiers")

    class Meta:
        ordering = ["position"]
        constraints = [models.UniqueConstraint(fields=["policy", "position"],
                                               name="tier_position_unique")]


class MaintenanceWindow(models.Model):
    """A time when a monitor's (or every monitor with a tag's) notifications are
    held back; pings, runs and incidents are still recorded.

    One-off: ``starts_at`` .. ``ends_at``. Recurring: every fire time of ``schedule``
    (cron, read in ``timezone``) for ``duration``. Exactly one of ``monitor`` and
    ``tag`` says what it covers. See :mod:`alerts.maintenance`.
    """

    project = models.ForeignKey("accounts.Project", on_delete=models.CASCADE,
                                related_name="maintenance_windows")
    name = models.CharField(max_length=200)
    monitor = models.ForeignKey("monitors.Monitor", on_delete=models.CASCADE, null=True,
                                blank=True, related_name="maintenance_windows")
    tag = models.CharField(max_length=50, blank=True, default="")
    starts_at = models.DateTimeField(null=True, blank=True)
    ends_at = models.DateTimeField(null=True, blank=True)
    schedule = models.CharField(max_length=200, blank=True, default="")
    timezone = models.CharField(max_length=64, default="UTC")
    duration = models.DurationField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class Alerting(models.Model):
    """How one monitor's incidents are notified.

    ``all_channels``: every live channel of the monitor's project, as they come
    and go; otherwise the ``channels`` listed. With an ``escalation_policy`` its
    tiers are notified instead (:mod:`alerts.escalation`). ``urgency`` ``low``:
    the first tier only, as PagerDuty's low urgency. ``severity``: what the
    integrations are told (empty: from the cause, ``critical`` for missed, stuck,
    deadline and failed, ``warning`` for overlap, too_fast, slow, skipped and
    double_launch). ``renotify``: an
    open, unacknowledged incident is sent again this often to the last tier
    reached (or the channels). ``failure_threshold`` / ``recovery_threshold``:
    consecutive bad runs (failed, missed, skipped or stuck; read from the run history)
    before an incident opens, good runs before it resolves. A monitor without a
    row has the defaults.
    """

    class Urgency(models.TextChoices):
        HIGH = "high"
        LOW = "low"

    class Severity(models.TextChoices):
        CRITICAL = "critical"
        ERROR = "error"
        WARNING = "warning"
        INFO = "info"

    monitor = models.OneToOneField("monitors.Monitor", on_delete=models.CASCADE,
                                   primary_key=True, related_name="alerting")
    all_channels = models.BooleanField(default=True)
    channels = models.ManyToManyField(Channel, blank=True, related_name="alerting")
    escalation_policy = models.ForeignKey(EscalationPolicy, on_delete=models.PROTECT,
                                          null=True, blank=True, related_name="monitors")
    urgency = models.CharField(max_length=4, choices=Urgency.choices, default=Urgency.HIGH)
    severity = models.CharField(max_length=8, choices=Severity.choices, blank=True, default="")
    renotify = models.DurationField(null=True, blank=True)
    # Consecutive bad runs before an incident opens, good runs before it resolves.
    failure_threshold = models.PositiveSmallIntegerField(default=1)
    recovery_threshold = models.PositiveSmallIntegerField(default=1)
    # Flapping (alerts.flapping): since when, and when the tick checks it is over.
    flapping_since = models.DateTimeField(null=True, blank=True)
    stable_check_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["stable_check_at"], name="alerting_flapping",
                                condition=Q(stable_check_at__isnull=False))]


class Incident(models.Model):
    """A period during which a monitor is unhealthy. At most one open per monitor.

    ``last_event_at`` is the time of its latest timeline event: event times never
    go backwards within an incident (see :func:`alerts.incidents.apply`).
    Escalation (:mod:`alerts.escalation`): ``tier`` is the last tier notified
    (-1: none yet) in round ``round`` (0 = the first pass), ``renotified`` how
    many times it was sent again, ``next_escalation_at`` (indexed) when the
    evaluator's tick must take the next step (None: nothing left, acknowledged
    or resolved). ``severity`` is fixed when it opens, but for a ``slow``, ``skipped``
    or ``double_launch`` incident: another problem raises its ``cause`` and
    ``severity`` (:func:`alerts.incidents._raise`).
    """

    # The problems of monitors.detections, one vocabulary.
    Cause = models.TextChoices("Cause", [(k.name, k.value) for k in PROBLEMS])

    monitor = models.ForeignKey("monitors.Monitor", on_delete=models.CASCADE,
                                related_name="incidents")
    cause = models.CharField(max_length=16, choices=Cause.choices)
    summary = models.CharField(max_length=500)
    dedup_key = models.CharField(max_length=64, unique=True, default=uuid.uuid4)
    opened_at = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolution = models.CharField(max_length=200, blank=True, default="")
    missed_count = models.PositiveBigIntegerField(default=0)
    failure_count = models.PositiveBigIntegerField(default=0)
    last_event_at = models.DateTimeField(null=True, blank=True)
    severity = models.CharField(max_length=8, default="critical")
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    acknowledged_by = models.CharField(max_length=200, blank=True, default="")
    tier = models.SmallIntegerField(default=-1)
    round = models.PositiveSmallIntegerField(default=0)
    renotified = models.PositiveIntegerField(default=0)
    next_escalation_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            # The database, not the code, guarantees "one open incident per monitor",
            # so two evaluators racing cannot both open one.
            models.UniqueConstraint(fields=["monitor"], condition=Q(resolved_at__isnull=True),
                                    name="one_open_incident_per_monitor"),
        ]
        indexes = [
            models.Index(fields=["-opened_at"], name="incident_opened"),
            # the tick's escalation step reads only incidents whose step is due
            models.Index(fields=["next_escalation_at"], name="incident_escalation_due",
                         condition=Q(next_escalation_at__isnull=False)),
        ]

    @property
    def is_open(self) -> bool:
        return self.resolved_at is None


class IncidentEvent(models.Model):
    """One entry of an incident's timeline, or a notice of no incident.

    Every notification is of one row of this table, so its primary key is the
    ``event_id`` receivers see and no two notices share one (the ``webhook-id``
    of Standard Webhooks). A notice of no incident (``incident`` null) has a
    ``project`` (whose channels it goes to) and its facts in ``detail``:
    ``outage.summary`` (``impact``, ``outage``, ``started_at``, ``ended_at``,
    ``unknown_slots``: one per :class:`monitors.models.OutageImpact`, its
    ``step`` ``outage:<impact id>``), ``test`` (a channel's test notification,
    ``detail.channel``), ``channel.failing`` / ``channel.recovered`` (a channel's
    health). Written by :func:`alerts.notices.issue`; ``step``, when set, is
    unique among notices, so one is never issued twice.

    A problem seen again while the incident is open is counted on the incident's
    event of that kind (``count``, ``last_at``) instead of adding one, so a
    timeline has at most one event per kind besides ``opened``/``resolved`` and
    stays bounded however long the incident lasts. ``channel_removed``: a channel
    that had been notified stopped following the monitor and was sent a resolve
    (``detail.channel``). ``escalated`` (a tier notified), ``renotified`` (sent
    again), ``acknowledged``: see :mod:`alerts.escalation`.

    ``step`` names an event that notifies (``opened``, ``tier:<tier>:<round>``,
    ``renotify:<n>``, ``acknowledged``, ``resolved``): unique per incident, so two
    evaluators, a restart or a retried task can never make one step twice.
    """

    Kind = models.TextChoices("Kind", [
        ("OPENED", "opened"), *[(k.name, k.value) for k in PROBLEMS],
        ("ESCALATED", "escalated"), ("RENOTIFIED", "renotified"),
        ("ACKNOWLEDGED", "acknowledged"), ("RESOLVED", "resolved"),
        ("CHANNEL_REMOVED", "channel_removed"), ("STABLE", "stable"),
        # notices of no incident (incident is null)
        ("OUTAGE_SUMMARY", "outage.summary"), ("TEST", "test"),
        ("CHANNEL_FAILING", "channel.failing"), ("CHANNEL_RECOVERED", "channel.recovered")])
    NOTICES = ("outage.summary", "test", "channel.failing", "channel.recovered")
    # Events whose notification opens the incident on a channel (PagerDuty trigger).
    PAGING = ("opened", "escalated", "renotified")

    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="events",
                                 null=True, blank=True)
    # a notice's project (null for an incident's events: the incident's monitor says it)
    project = models.ForeignKey("accounts.Project", on_delete=models.CASCADE, null=True,
                                blank=True, related_name="notices")
    kind = models.CharField(max_length=24, choices=Kind.choices)
    at = models.DateTimeField()
    count = models.PositiveBigIntegerField(default=1)
    last_at = models.DateTimeField(null=True, blank=True)
    message = models.CharField(max_length=500, blank=True, default="")
    detail = models.JSONField(default=dict, blank=True)
    step = models.CharField(max_length=64, null=True, blank=True)

    class Meta:
        ordering = ["at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["incident", "step"], name="one_event_per_step",
                                    condition=Q(step__isnull=False)),
            models.UniqueConstraint(fields=["step"], name="one_notice_per_step",
                                    condition=Q(step__isnull=False, incident__isnull=True)),
        ]


class Delivery(models.Model):
    """One notification to one channel of one ``event``: an incident's event or a
    notice of no incident (an outage summary, a channel's health; see
    :class:`IncidentEvent`).

    The row is the schedule (see :mod:`alerts.delivery`): ``next_attempt_at``
    (indexed) is when it is due, a claim is ``status`` ``sending`` with a new
    ``lease`` and ``next_attempt_at`` moved to when that claim expires, a retry is
    ``pending`` with a later ``next_attempt_at``. ``failed`` means given up
    (dead-lettered): a non-retryable answer, or retryable failures for longer
    than ``CRONRADAR_DELIVERY_MAX_AGE``. ``incident`` (the event's) orders the
    deliveries of one incident to one channel. ``created_at`` is when it became
    due, on the clock of whoever created it.
    """

    class Status(models.TextChoices):
        PENDING = "pending"
        SENDING = "sending"
        DELIVERED = "delivered"
        FAILED = "failed"

    ACTIVE = (Status.PENDING, Status.SENDING)

    # event, channel: no index of their own, the constraints' and
    # delivery_channel_status lead with them (each claim and outcome rewrites every
    # index of the row: fewer indexes, less work per notification)
    event = models.ForeignKey(IncidentEvent, on_delete=models.CASCADE, related_name="deliveries",
                              db_index=False)
    incident = models.ForeignKey(Incident, on_delete=models.CASCADE, related_name="deliveries",
                                 null=True, blank=True)
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="deliveries",
                                db_index=False)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    lease = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True, default="")
    # A retry waiting because the receiver answered 429 (rate limited): it keeps its
    # time when the channel delivers again (others are released then: alerts.delivery).
    rate_limited = models.BooleanField(default=False)
    # What the service answered that a later delivery needs (Pushover: the receipt
    # of an emergency notification, cancelled on acknowledge and resolve); "" none.
    receipt = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["event", "channel"], name="one_delivery_per_channel"),
        ]
        indexes = [
            # claim_due(): the due rows, in the order it reads them (a window of
            # them read from the index, not every due row sorted), and for each
            # whether an earlier one of the same incident and channel is still active
            models.Index(fields=["next_attempt_at", "id"], name="delivery_due",
                         condition=Q(status__in=["pending", "sending"])),
            models.Index(fields=["incident", "channel", "id"], name="delivery_order",
                         condition=Q(status__in=["pending", "sending"])),
            models.Index(fields=["channel", "status"], name="delivery_channel_status"),
            # claim_due(): the channels with active rows and each one's first due
            # row (so one organisation's backlog never hides another's channel)
            models.Index(fields=["channel", "next_attempt_at", "id"], name="delivery_channel_due",
                         condition=Q(status__in=["pending", "sending"],
                                     next_attempt_at__isnull=False)),
        ]


class DeliveryAttempt(models.Model):
    """The log of one HTTP attempt of a delivery."""

    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="log")
    number = models.PositiveIntegerField()
    at = models.DateTimeField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True, default="")
    duration_ms = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["number"]
