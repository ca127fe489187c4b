"""Monitors, their pings and runs, and CronRadar's own liveness and outages.

Durations are ``timedelta`` here and whole seconds at the API. Every datetime is
timezone-aware UTC; a monitor's ``timezone`` only affects how its cron schedule
is read.
"""
import uuid
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from accounts.models import Project
from monitors import schedule


class Monitor(models.Model):
    """One scheduled job being watched.

    Schedule: ``kind`` is ``cron`` (``schedule`` is a 5-field expression read in
    ``timezone`` under ``cron_semantics``) or ``interval`` (``period``).
    Evaluator state: ``next_expected_at`` is the scheduled time of the next run that has
    not started yet; ``next_evaluation_at`` is the earliest moment the evaluator must
    look at this monitor again (indexed, so a tick costs O(monitors due)).

    ``deleted_at``: deleted through the API; the row stays (invisible to the API
    and the ping URLs) until nothing needs it any more (see
    :mod:`monitors.signals`), then the evaluator removes it. How its incidents
    are notified is the alerting side's (``alerts.models.Alerting``).
    """

    class Kind(models.TextChoices):
        CRON = "cron"
        INTERVAL = "interval"

    class Concurrency(models.TextChoices):
        ALLOW = "allow"
        FORBID = "forbid"
        REPLACE = "replace"

    class Semantics(models.TextChoices):
        DEBIAN = "debian"
        KUBERNETES = "kubernetes"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="monitors")
    name = models.CharField(max_length=200)
    # no index of its own (a SlugField's default): monitor_slug_unique leads with the
    # project, as every lookup by slug does, and every ping rewrites this row's
    # indexes (next_evaluation_at changes), so each index costs a ping
    slug = models.SlugField(max_length=100, db_index=False)
    # The ping URL's key. Unique among monitors not deleted (a deleted monitor frees
    # its UUID, constraint monitor_uuid_unique); a creator may choose it (issue 20:
    # Healthchecks' UUIDs kept, monitors.api). No index of its own: every read by
    # UUID is of undeleted monitors, which monitor_uuid_unique serves (migration 0024).
    uuid = models.UUIDField(default=uuid.uuid4)
    tags = models.JSONField(default=list, blank=True)
    description = models.TextField(blank=True, default="")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.INTERVAL)
    schedule = models.CharField(max_length=200, blank=True, default="")
    timezone = models.CharField(max_length=64, default="UTC")
    cron_semantics = models.CharField(
        max_length=12, choices=Semantics.choices, default=Semantics.DEBIAN
    )
    period = models.DurationField(null=True, blank=True)
    grace = models.DurationField()
    max_runtime = models.DurationField(null=True, blank=True)
    deadline = models.DurationField(null=True, blank=True)
    min_runtime = models.DurationField(null=True, blank=True)
    # Duration drift: a succeeded run longer than slow_factor x the p95 duration of
    # the latest succeeded runs is ``slow`` (monitors.drift.slow); null: off.
    slow_factor = models.DecimalField(max_digits=5, decimal_places=2, null=True, blank=True)
    concurrency = models.CharField(
        max_length=8, choices=Concurrency.choices, default=Concurrency.ALLOW
    )
    paused = models.BooleanField(default=False)
    # Which HTTP methods a ping may use: "" any; "POST" only POST (GET and HEAD
    # are refused), Healthchecks' ``methods``.
    methods = models.CharField(max_length=8, blank=True, default="",
                               choices=[("", "any"), ("POST", "POST only")])
    # Attempts a slot may take (a Kubernetes Job's backoffLimit + 1): a failed
    # attempt that a later one of the same slot may still make good raises nothing.
    max_attempts = models.PositiveSmallIntegerField(default=1)
    deleted_at = models.DateTimeField(null=True, blank=True)

    created_at = models.DateTimeField(auto_now_add=True)
    last_ping_at = models.DateTimeField(null=True, blank=True)
    last_start_at = models.DateTimeField(null=True, blank=True)
    next_expected_at = models.DateTimeField(null=True, blank=True)
    next_evaluation_at = models.DateTimeField(null=True, blank=True, db_index=True)
    # The last evaluation that raised (a bug, a schedule that cannot be computed):
    # what it raised and how many times in a row; cleared by the next good one.
    evaluation_error = models.CharField(max_length=500, blank=True, default="")
    # pings refused (429) by the ping rate limits (monitors.ratelimit), ever: added
    # by the counters' flush each minute (monitors.usage), not per refused ping
    dropped_pings = models.PositiveIntegerField(default=0)
    # The latest streak of rate-limit windows in which a ping was refused: from the
    # first refused ping (refused_since) to the end of the latest such window
    # (refused_until). Written once per window (monitors.ratelimit.refused); the
    # evaluator writes a slot whose grace this streak overlaps ``unknown``
    # (reason ``rate_limited``), not ``missed``.
    refused_since = models.DateTimeField(null=True, blank=True)
    refused_until = models.DateTimeField(null=True, blank=True)
    # pings received and stored, ever (pings are pruned, so counting rows is wrong);
    # kept by the ping's own update of this row (Healthchecks' ``n_pings``)
    n_pings = models.PositiveBigIntegerField(default=0)
    evaluation_failures = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            # A deleted monitor waiting for its last notifications frees its slug.
            models.UniqueConstraint(fields=["project", "slug"], name="monitor_slug_unique",
                                    condition=Q(deleted_at__isnull=True)),
            # ... and its UUID, on the whole installation.
            models.UniqueConstraint(fields=["uuid"], name="monitor_uuid_unique",
                                    condition=Q(deleted_at__isnull=True)),
        ]

    def __str__(self) -> str:
        return f"{self.project.name}/{self.slug}"

    def clean(self):
        """Validate the schedule as the API does (the admin saves through here), so
        no form can store a monitor the evaluator cannot compute. Raises
        ``ValidationError`` naming the field."""
        errors = {}
        try:
            schedule.validate_timezone(self.timezone)
        except schedule.ScheduleError as e:
            errors["timezone"] = str(e)
        if self.kind == self.Kind.CRON:
            if not self.schedule.strip():
                errors["schedule"] = "required for kind 'cron'"
            elif "timezone" not in errors:
                try:
                    self.schedule = schedule.validate_cron(self.schedule, self.timezone,
                                                           self.cron_semantics)
                except schedule.ScheduleError as e:
                    errors["schedule"] = str(e)
        elif not self.period or self.period <= timedelta(0):
            errors["period"] = "required for kind 'interval': a positive duration"
        if self.grace is not None and self.grace < timedelta(seconds=1):
            errors["grace"] = "must be at least 1 second"
        if errors:
            raise ValidationError(errors)

    @property
    def ping_url(self) -> str:
        return f"{settings.CRONRADAR_BASE_URL}/ping/{self.uuid}"


# The one answer to a chosen UUID another monitor (not deleted) has, whoever holds
# it: the caller's project or another tenant's (never revealed).
UUID_TAKEN = "this UUID cannot be used: choose another one, or leave it out for a new one"


def uuid_taken(value: uuid.UUID, exclude_pk: int | None = None) -> bool:
    """Whether a monitor not deleted (other than ``exclude_pk``) has the ping
    UUID ``value``, anywhere on the installation (constraint monitor_uuid_unique)."""
    return (Monitor.objects.filter(uuid=value, deleted_at__isnull=True)
            .exclude(pk=exclude_pk).exists())


def chosen_uuids_allowed() -> bool:
    """Whether a creator may choose a monitor's UUID without proving it owns it:
    only on an installation whose sign-up is closed (``CRONRADAR_SIGNUP``, default
    ``closed``: a self-hosted team, whose people are invited). Elsewhere only
    ``manage.py importhealthchecks`` fetching with the Healthchecks key that owns the
    check may (issue 20's Decisions: a stranger could otherwise take a UUID
    another tenant's jobs will ping)."""
    return getattr(settings, "CRONRADAR_SIGNUP", "closed") == "closed"


class RunQuerySet(models.QuerySet):
    def open(self):
        """Runs still open: started (``running``, or ``stuck`` past max_runtime) and
        not ended."""
        return self.filter(outcome__in=Run.OPEN_OUTCOMES, ended_at__isnull=True)


class Run(models.Model):
    """One execution of a monitored job, from its first ping to its end.

    ``slot_at`` is the scheduled time the run belongs to. ``timeout_at`` (start +
    max_runtime) and ``deadline_at`` (slot + deadline) are precomputed so the
    evaluator finds overdue runs by index.
    """

    class Outcome(models.TextChoices):
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        STUCK = "stuck"
        REPLACED = "replaced"
        MISSED = "missed"
        # concurrency forbid: no run started for the slot because a run that began
        # earlier was still open at it (judged at slot + grace, as missed is)
        SKIPPED = "skipped"
        # the slot's grace ended while CronRadar's ping endpoint was down: we
        # cannot know whether the job ran (see monitors.liveness)
        UNKNOWN = "unknown"

    class Reason(models.TextChoices):
        """Why a run is ``unknown`` (empty for every other run); the sentence of
        each is :data:`monitors.runs.REASONS`."""

        NONE = "", "none"
        # CronRadar's ping endpoint was down when the slot's grace ended
        OUTAGE = "outage"
        # the slot's first ping was refused by a ping rate limit (429)
        RATE_LIMITED = "rate_limited"

    OPEN_OUTCOMES = (Outcome.RUNNING, Outcome.STUCK)
    # slots written off without a run; a late run takes such a row over
    WRITTEN_OFF = (Outcome.MISSED, Outcome.UNKNOWN, Outcome.SKIPPED)
    objects = RunQuerySet.as_manager()

    # no index of its own: the indexes below lead with it (one on monitor alone
    # would also be what a generic plan of pending_runs() picked, reading the history)
    monitor = models.ForeignKey(Monitor, on_delete=models.CASCADE, related_name="runs",
                                db_index=False)
    rid = models.UUIDField(null=True, blank=True)
    slot_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=10, choices=Outcome.choices, default=Outcome.RUNNING)
    exit_status = models.SmallIntegerField(null=True, blank=True)
    timeout_at = models.DateTimeField(null=True, blank=True)
    deadline_at = models.DateTimeField(null=True, blank=True)
    deadline_checked = models.BooleanField(default=False)
    reason = models.CharField(max_length=16, choices=Reason.choices, blank=True, default="")
    # The ping kept in this row (PostgreSQL: a heartbeat stores its run alone, see
    # monitors.pings._kept_in_run): its HTTP method, address and User-Agent; its
    # kind, exit status and time are the run's outcome, exit_status and ended_at.
    # Null on every other run. Read as a ping through PingLog.
    ping_method = models.CharField(max_length=8, null=True, blank=True)
    ping_remote_addr = models.GenericIPAddressField(null=True, blank=True)
    ping_user_agent = models.CharField(max_length=300, null=True, blank=True)

    class Meta:
        indexes = [
            # pending_runs() reads runs whose deadline is not checked yet on every
            # ping; without this it scans the monitor's whole history (bench/README.md).
            # deadline_at in it too: SQLite (no statistics) then prefers it to
            # run_monitor_latest, which reads the whole history.
            models.Index(fields=["monitor", "deadline_at"], name="run_deadline_unchecked",
                         condition=Q(deadline_at__isnull=False, deadline_checked=False)),
            # pending_runs() on every ping also reads the open runs and a written-off
            # row of the new run's slot. Partial indexes, whose conditions are in its
            # SQL text: a prepared statement's generic plan (core.sql) knows
            # nothing of one monitor's history and picked an index that reads all of it.
            models.Index(fields=["monitor"], name="run_open",
                         condition=Q(outcome__in=["running", "stuck"])),
            models.Index(fields=["monitor", "slot_at"], name="run_written_off_slot",
                         condition=Q(outcome__in=["missed", "unknown", "skipped"])),
            # monitors.drift.slow reads a monitor's latest succeeded runs by end on
            # every success of a monitor with a slow_factor: no history scan. Only runs
            # with a start have a duration: a heartbeat's run (no start) is not in it.
            models.Index(fields=["monitor", "-ended_at"], name="run_started_end",
                         condition=Q(started_at__isnull=False, ended_at__isnull=False)),
            # Time-ordered reads of a monitor's runs (monitors.history) use an index
            # of each database's own, made by migration 0023 outside the model state
            # (neither can be declared for both): on PostgreSQL run_monitor_hour,
            # (monitor_id, date_trunc('hour', COALESCE(started_at, ended_at, slot_at)
            # AT TIME ZONE 'UTC')), whose repeated keys deduplicate to a few bytes a
            # run; on SQLite run_monitor_time, (monitor_id, COALESCE(started_at,
            # ended_at, slot_at) DESC, id DESC).
        ]
        constraints = [
            # partial: a heartbeat's run (no rid) adds nothing to it
            models.UniqueConstraint(fields=["monitor", "rid"], name="run_rid_unique",
                                    condition=Q(rid__isnull=False)),
        ]

    @property
    def duration(self):
        """``timedelta`` from start to end, or None while open / without a start ping."""
        if self.started_at and self.ended_at:
            return self.ended_at - self.started_at
        return None


class Ping(models.Model):
    """One received ping (check-in), stored exactly as it arrived."""

    class Kind(models.TextChoices):
        SUCCESS = "success"
        START = "start"
        FAIL = "fail"
        LOG = "log"

    # neither has an index of its own: every read of pings is one monitor's, by
    # ping_monitor_time (below), and each index costs every ping an insert
    monitor = models.ForeignKey(Monitor, on_delete=models.CASCADE, related_name="pings",
                                db_index=False)
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL,
                            related_name="pings")
    received_at = models.DateTimeField()
    kind = models.CharField(max_length=8, choices=Kind.choices)
    exit_status = models.SmallIntegerField(null=True, blank=True)
    rid = models.UUIDField(null=True, blank=True)
    method = models.CharField(max_length=8)
    remote_addr = models.GenericIPAddressField(null=True, blank=True)
    user_agent = models.CharField(max_length=300, blank=True, default="")
    body = models.BinaryField(blank=True, default=b"")
    body_size = models.PositiveIntegerField(default=0)
    body_truncated = models.BooleanField(default=False)
    duplicate = models.BooleanField(default=False)

    class Meta:
        indexes = [models.Index(fields=["monitor", "-received_at"], name="ping_monitor_time")]


class PingLog(models.Model):
    """Every stored ping, one place to read them (the view ``monitors_pinglog``,
    made by migration 0023; read-only): the :class:`Ping` rows, and on PostgreSQL
    the pings kept in their run (a heartbeat's: :func:`monitors.pings._kept_in_run`)
    shaped as pings: id and run the run's id (pings and runs share one id sequence
    there, so ids never collide), received_at its ``ended_at``, kind ``fail`` when
    the run failed else ``success`` (:func:`monitors.pings._kept_in_run` keeps only
    pings whose kind says that), no rid or body.

    ``hour``: the UTC hour of ``received_at`` (a naive UTC datetime, what
    PostgreSQL's ``date_trunc`` gives), by which time-ordered reads find the pings
    kept in runs through the runs' index (:mod:`monitors.history`); never compare
    it with an aware datetime, use :func:`monitors.history.hour_of`.
    """

    monitor = models.ForeignKey(Monitor, on_delete=models.DO_NOTHING, related_name="+",
                                db_constraint=False)
    run = models.ForeignKey(Run, null=True, on_delete=models.DO_NOTHING, related_name="+",
                            db_constraint=False)
    received_at = models.DateTimeField()
    kind = models.CharField(max_length=8, choices=Ping.Kind.choices)
    exit_status = models.SmallIntegerField(null=True)
    rid = models.UUIDField(null=True)
    method = models.CharField(max_length=8)
    remote_addr = models.GenericIPAddressField(null=True)
    user_agent = models.CharField(max_length=300)
    body = models.BinaryField()
    body_size = models.PositiveIntegerField()
    body_truncated = models.BooleanField()
    duplicate = models.BooleanField()
    hour = models.DateTimeField()

    class Meta:
        managed = False
        db_table = "monitors_pinglog"


class PruneCursor(models.Model):
    """How far :mod:`monitors.retention` has looked at a table (``name``: ``pings``
    or ``runs``): rows with a primary key below ``position`` were looked at."""

    name = models.CharField(max_length=16, unique=True)
    position = models.BigIntegerField(default=0)


class LivenessSpan(models.Model):
    """A stretch of time during which a CronRadar component was seen alive.

    ``component`` is ``web`` (a process able to receive pings) or ``evaluator``.
    Each live process extends the latest span every few seconds
    (``CRONRADAR_LIVENESS_INTERVAL``); after a silence longer than
    ``CRONRADAR_OUTAGE_THRESHOLD`` a new span starts, so the time between two
    spans is an outage. See :mod:`monitors.liveness`.
    """

    component = models.CharField(max_length=16)
    started_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["component", "-last_seen_at"], name="liveness_latest")]


class Outage(models.Model):
    """A gap in the web tier's liveness longer than ``CRONRADAR_OUTAGE_THRESHOLD``.

    Slots whose grace ended in it (or within the threshold after it, while
    clients retry) are recorded ``unknown`` instead of ``missed``;
    ``summarized_at`` is set once each affected project was sent its
    ``outage.summary``. ``ended_at`` is None while the outage goes on.
    """

    started_at = models.DateTimeField(unique=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    summarized_at = models.DateTimeField(null=True, blank=True)


class OutageImpact(models.Model):
    """How many slots of one project an outage turned into ``unknown`` runs."""

    outage = models.ForeignKey(Outage, on_delete=models.CASCADE, related_name="impacts")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="outages")
    unknown_slots = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["outage", "project"], name="one_impact_per_project"),
        ]


class Chore(models.Model):
    """Site work done once per interval by whichever process gets to it first (the
    watchdog's ping, :mod:`cronradar.watchdog`), however many evaluators run.

    ``name`` says which chore (e.g. ``watchdog``); ``due_at`` when it is next due
    (indexed; a process claims the chore with a compare-and-set on it, see
    :func:`monitors.chores.claim`); ``last_at`` when it was last done and
    ``last_result`` a coded value of how it went, defined by the chore's owner
    (the watchdog: ``ok``, ``evaluator_lag``, ``delivery_backlog``); empty before
    the first time.
    """

    name = models.CharField(max_length=32, unique=True)
    due_at = models.DateTimeField(db_index=True)
    last_at = models.DateTimeField(null=True, blank=True)
    last_result = models.CharField(max_length=32, blank=True, default="")

    def __str__(self):
        return self.name


class PingUsage(models.Model):
    """Pings of one monitor in one UTC calendar month: ``pings`` accepted and stored,
    ``refused`` over a rate limit (429). Counted in Redis (or memory) on the ping
    path and added here each minute by :func:`monitors.usage.flush`."""

    monitor = models.ForeignKey(Monitor, on_delete=models.CASCADE, related_name="usage")
    month = models.DateField()  # the month's first day
    pings = models.PositiveBigIntegerField(default=0)
    refused = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["monitor", "month"], name="ping_usage_month"),
        ]
