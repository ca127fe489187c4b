"""The insights side of the REST API: a monitor's run statistics
(``GET /api/v1/monitors/<id>/stats/``) and the overlap-policy advisor's answer
(``GET /api/v1/monitors/<id>/advice/``).

Thin: they read the monitor's runs, call :func:`insights.stats.summarize` or
:func:`insights.advisor.advise` and serialise the result. The decisions and the
model live in :mod:`insights.stats`, :mod:`insights.advisor` and
:mod:`insights.policymodel`.
"""
from django.conf import settings
from django.db.models import F
from django.db.models.functions import Coalesce
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, serializers
from rest_framework.response import Response

from accounts import tenancy
from core.api import flag, get_or_404, moment
from insights import advisor, stats
from monitors.models import Monitor, Run

POLICY_CHOICES = list(advisor.POLICIES)
SETTING_CHOICES = Monitor.Concurrency.choices


def observed_runs(monitor: Monitor, limit: int) -> tuple[list[int], int, int]:
    """(durations in whole seconds oldest first, succeeded, failed) of the monitor's
    last ``limit`` runs that started and ended (any outcome: a replaced run counts
    with the time it ran before it was ended, a lower bound of its duration)."""
    # run_started_end (runs with a start and an end) finds them; only they are sorted
    rows = list(Run.objects.filter(monitor=monitor, started_at__isnull=False,
                                   ended_at__isnull=False)
                .order_by("-started_at", "-pk")
                .values_list("started_at", "ended_at", "outcome")[:limit])
    rows.reverse()
    # whole seconds rounded down, as the runs list and the run statistics show them
    durations = [max(0, int((end - start).total_seconds())) for start, end, _ in rows]
    succeeded = sum(1 for *_, outcome in rows if outcome == Run.Outcome.SUCCEEDED)
    failed = sum(1 for *_, outcome in rows if outcome == Run.Outcome.FAILED)
    return durations, succeeded, failed


def missed_streak(monitor: Monitor, limit: int) -> int:
    """Consecutive newest slots missed or ``unknown`` (an outage; a ``skipped`` slot
    is not one), newest by slot (else start, else end), counted up to ``limit``."""
    at = Coalesce("slot_at", "started_at", "ended_at")
    outcomes = (Run.objects.filter(monitor=monitor).annotate(at=at)
                .order_by(F("at").desc(nulls_last=True), "-pk")
                .values_list("outcome", flat=True)[:limit])
    streak = 0
    for outcome in outcomes:
        if outcome not in (Run.Outcome.MISSED, Run.Outcome.UNKNOWN):
            break
        streak += 1
    return streak


def monitor_advice(monitor: Monitor, now, *, can_skip: bool = False,
                   parallel_safe: bool = False) -> advisor.Advice:
    """The advisor's answer for ``monitor`` at ``now`` (two queries: its last
    ``CRONRADAR_ADVICE_RUNS`` finished runs and its missed streak), as
    ``/advice/`` gives it and the dashboard's monitor page shows it."""
    durations, succeeded, failed = observed_runs(monitor, settings.CRONRADAR_ADVICE_RUNS)
    return advisor.advise(
        kind=monitor.kind, expr=monitor.schedule, tz=monitor.timezone,
        semantics=monitor.cron_semantics, period=monitor.period,
        concurrency=monitor.concurrency, max_attempts=monitor.max_attempts,
        durations=durations, succeeded=succeeded, failed=failed,
        missed_streak=missed_streak(monitor, settings.CRONRADAR_ADVICE_RUNS),
        now=now, min_runs=settings.CRONRADAR_ADVICE_MIN_RUNS,
        can_skip=can_skip, parallel_safe=parallel_safe)


# --- the answer's shape (OpenAPI through drf-spectacular) ------------------------------

class AdviceRunsSerializer(serializers.Serializer):
    observed = serializers.SerializerMethodField(
        help_text="finished runs (a start and an end) replayed, the newest "
                  "CRONRADAR_ADVICE_RUNS at most")
    minimum = serializers.IntegerField(source="min_runs",
                                       help_text="runs needed to advise "
                                                 "(CRONRADAR_ADVICE_MIN_RUNS)")
    durations = serializers.ListField(child=serializers.IntegerField(),
                                      help_text="seconds, oldest first")
    longest = serializers.IntegerField(source="longest_run", allow_null=True,
                                       help_text="seconds")
    succeeded = serializers.IntegerField()
    failed = serializers.IntegerField()
    failure_rate = serializers.FloatField(
        allow_null=True, help_text="failed / (failed + succeeded), 4 decimals; null "
                                   "without either")

    def get_observed(self, advice) -> int:
        return len(advice.durations)


class AdviceScheduleSerializer(serializers.Serializer):
    first_at = serializers.DateTimeField(source="replay.first_at", allow_null=True,
                                         help_text="the first fire time replayed")
    last_at = serializers.DateTimeField(source="replay.last_at", allow_null=True,
                                        help_text="the K-th (K = observed runs)")
    horizon_at = serializers.DateTimeField(source="replay.horizon_at", allow_null=True,
                                           help_text="the fire after the last: the end "
                                                     "of the replay")
    shortest_interval = serializers.IntegerField(allow_null=True, help_text="seconds")
    longest_interval = serializers.IntegerField(allow_null=True, help_text="seconds")
    runs_longer_than_interval = serializers.IntegerField(
        help_text="observed runs longer than the time from their fire time to the next")


class AdvicePolicySerializer(serializers.Serializer):
    policy = serializers.ChoiceField(choices=POLICY_CHOICES)
    setting = serializers.ChoiceField(choices=SETTING_CHOICES, allow_null=True,
                                      help_text="the concurrency that gives it; null for "
                                                "queue (no CronJob setting)")
    started = serializers.IntegerField()
    skipped = serializers.IntegerField(help_text="not started: the previous run was "
                                                 "still running (skip)")
    cut_short = serializers.IntegerField(help_text="ended by the next run (replace)")
    completed = serializers.IntegerField()
    lost = serializers.IntegerField(help_text="runs never completed: skipped or cut short")
    max_concurrent = serializers.IntegerField()
    max_queue = serializers.IntegerField()
    average_delay = serializers.FloatField(allow_null=True,
                                           help_text="seconds late on average, 2 decimals")
    max_delay = serializers.IntegerField(help_text="seconds")
    pod_hours = serializers.FloatField(help_text="hours of run time, 2 decimals")
    pod_hours_lost = serializers.FloatField(help_text="of those, spent by runs cut short")
    pod_seconds = serializers.IntegerField(help_text="run time in seconds")
    pod_seconds_lost = serializers.IntegerField(help_text="of those, spent by runs cut short")
    runs_past_horizon = serializers.IntegerField()


class AdviceExpectedSerializer(serializers.Serializer):
    p_night_completes = serializers.FloatField(help_text="1 - p^limit")
    attempts_per_night = serializers.FloatField(help_text="(1 - p^limit) / (1 - p)")
    completed = serializers.FloatField()
    failed = serializers.FloatField()
    attempts = serializers.FloatField()
    wasted = serializers.FloatField()


class AdviceAttemptLimitSerializer(serializers.Serializer):
    limit = serializers.IntegerField()
    current = serializers.BooleanField(help_text="the monitor's max_attempts")
    completed = serializers.IntegerField()
    failed = serializers.IntegerField()
    attempts = serializers.IntegerField()
    wasted = serializers.IntegerField()
    leftover_pods = serializers.IntegerField()
    expected = AdviceExpectedSerializer()


class AdviceAttemptsSerializer(serializers.Serializer):
    failure_rate = serializers.FloatField(allow_null=True)
    seed = serializers.SerializerMethodField()
    nights = serializers.SerializerMethodField(help_text="one per observed run")
    rows = AdviceAttemptLimitSerializer(source="attempt_limits", many=True,
                                  help_text="empty without a failure rate")

    def get_seed(self, advice) -> int:
        return advisor.SEED

    def get_nights(self, advice) -> int:
        return len(advice.durations)


class AdviceStartupRowSerializer(serializers.Serializer):
    window = serializers.IntegerField(help_text="scheduled runs")
    made_up = serializers.IntegerField()
    dropped = serializers.IntegerField()
    ran_under_skip = serializers.IntegerField(source="ran_skip")
    ran_under_queue = serializers.IntegerField(source="ran_queue")
    ran_under_parallel = serializers.IntegerField(source="ran_parallel")


class AdviceStartupSerializer(serializers.Serializer):
    missed_streak = serializers.IntegerField(help_text="newest slots missed or unknown in "
                                                       "a row: the outage")
    rows = AdviceStartupRowSerializer(many=True)


class AdviceWhyNotSerializer(serializers.Serializer):
    policy = serializers.ChoiceField(choices=POLICY_CHOICES)
    reason = serializers.CharField()


class AdviceRecommendationSerializer(serializers.Serializer):
    recommended = serializers.ChoiceField(choices=POLICY_CHOICES)
    setting = serializers.ChoiceField(choices=SETTING_CHOICES, allow_null=True,
                                      help_text="the concurrency that gives it; null for "
                                                "queue")
    current = serializers.ChoiceField(choices=SETTING_CHOICES)
    mismatch = serializers.BooleanField(help_text="setting != current (shown, never "
                                                  "changed)")
    reason = serializers.CharField()
    why_not = AdviceWhyNotSerializer(many=True, help_text="every other policy, with why "
                                                            "not (empty when runs finish "
                                                            "within the interval)")
    warnings = serializers.ListField(child=serializers.CharField())


class AdviceSerializer(serializers.Serializer):
    """The advisor's answer (:class:`insights.advisor.Advice`)."""

    monitor = serializers.SerializerMethodField()
    now = serializers.DateTimeField(help_text="the replay starts after this")
    can_skip = serializers.BooleanField()
    parallel_safe = serializers.BooleanField()
    concurrency = serializers.ChoiceField(choices=SETTING_CHOICES,
                                          help_text="the monitor's current setting")
    max_attempts = serializers.IntegerField()
    enough_data = serializers.BooleanField()
    reason = serializers.CharField(allow_null=True, help_text="why there is no "
                                                              "recommendation")
    runs = AdviceRunsSerializer(source="*")
    schedule = AdviceScheduleSerializer(source="*")
    policies = AdvicePolicySerializer(many=True)
    attempt_limits = AdviceAttemptsSerializer(source="*")
    startup_window = AdviceStartupSerializer(source="startup")
    recommendation = AdviceRecommendationSerializer(allow_null=True)

    def get_monitor(self, advice) -> int:
        return self.context["monitor"].pk


FLAGS = [OpenApiParameter("can_skip", bool, description="may the job lose a run? (default "
                          "false: it cannot lose a night, which rules out skip and replace)"),
         OpenApiParameter("parallel_safe", bool, description="may two runs write at once? "
                          "(default false, which rules out run parallel)")]


class MonitorAdvice(generics.GenericAPIView):
    """``GET /api/v1/monitors/<id>/advice/``: the monitor's observed run durations and
    failure rate replayed against its next fire times under skip, queue, run parallel
    and replace; the attempt-limit table; the startup-window table for its missed
    streak; a recommendation with its reason (``?can_skip=``, ``?parallel_safe=``),
    compared with its ``concurrency`` and never applied. See :mod:`insights.advisor`.
    Anyone who can read the monitor may read it."""

    serializer_class = AdviceSerializer
    queryset = Monitor.objects.none()  # for the schema's path parameter

    @extend_schema(parameters=FLAGS)
    def get(self, request, pk):
        monitor = get_or_404(tenancy.visible(request, Monitor.objects), pk,
                             deleted_at__isnull=True)
        can_skip, parallel_safe = flag(request, "can_skip"), flag(request, "parallel_safe")
        advice = monitor_advice(monitor, timezone.now(), can_skip=bool(can_skip),
                                parallel_safe=bool(parallel_safe))
        return Response(AdviceSerializer(advice, context={"monitor": monitor,
                                                          "request": request}).data)


# --- run statistics ----------------------------------------------------------------------

class SpreadSerializer(serializers.Serializer):
    """A spread of whole seconds: nearest-rank ``p50`` and ``p95`` and ``max`` of
    ``count`` values (null when there are none)."""

    count = serializers.IntegerField()
    p50 = serializers.IntegerField(allow_null=True, help_text="seconds")
    p95 = serializers.IntegerField(allow_null=True, help_text="seconds")
    max = serializers.IntegerField(allow_null=True, help_text="seconds")


class BucketSerializer(serializers.Serializer):
    """``count`` late starts in [``from``, ``to``) seconds; null: unbounded."""

    to = serializers.IntegerField(allow_null=True)
    count = serializers.IntegerField()

    def get_fields(self):
        fields = super().get_fields()
        fields["from"] = serializers.IntegerField(source="from_", allow_null=True)
        return {"from": fields.pop("from"), **fields}


class LateStartSerializer(SpreadSerializer):
    """First ping minus slot (seconds, negative when early), with a histogram."""

    histogram = BucketSerializer(many=True)


class SelectionSerializer(serializers.Serializer):
    """Which runs the figures cover: the newest ``runs``, or those whose time
    (start, else end, else slot) is in [``since``, ``until``); ``limited``: the
    range held more than 10000 runs and only the newest 10000 are covered."""

    runs = serializers.IntegerField(allow_null=True)
    since = serializers.DateTimeField(allow_null=True)
    until = serializers.DateTimeField(allow_null=True)
    limited = serializers.BooleanField()


class StatsSerializer(serializers.Serializer):
    """A monitor's run statistics (definitions: :mod:`insights.stats`)."""

    monitor = serializers.IntegerField()
    selection = SelectionSerializer()
    runs = serializers.IntegerField(help_text="runs covered")
    outcomes = serializers.DictField(child=serializers.IntegerField(),
                                     help_text="runs per outcome (every outcome)")
    duration = SpreadSerializer(help_text="end minus start of runs with both, seconds")
    judged = serializers.IntegerField(help_text="succeeded + failed + stuck + missed")
    succeeded = serializers.IntegerField()
    success_rate = serializers.FloatField(allow_null=True,
                                          help_text="succeeded / judged, 4 decimals")
    failures_by_exit_status = serializers.DictField(
        child=serializers.IntegerField(),
        help_text='failed runs per exit status ("none": without one)')
    overlaps = serializers.IntegerField(help_text="runs that started while an earlier run "
                                                  "was open")
    missed = serializers.IntegerField()
    skipped = serializers.IntegerField(help_text="slots skipped under concurrency forbid: "
                                                 "an earlier run was still open")
    double_launches = serializers.IntegerField(help_text="runs started for a slot that had "
                                                         "another run open, a succeeded run "
                                                         "or max_attempts runs already")
    late_start = LateStartSerializer()


class MonitorStats(generics.GenericAPIView):
    """``GET /api/v1/monitors/<id>/stats/``: run statistics over the newest ``?runs=``
    runs (default ``CRONRADAR_STATS_RUNS``), or over ``?since=``/``?until=``."""

    serializer_class = StatsSerializer
    pagination_class = None

    @extend_schema(parameters=[
        OpenApiParameter("runs", int, description=f"the newest this many runs, 1-"
                         f"{stats.MAX_RUNS} (default 100, CRONRADAR_STATS_RUNS); not "
                         "with since/until"),
        OpenApiParameter("since", str, description="runs from this time on (ISO 8601 with "
                         "an offset; a run's time is its start, else end, else slot)"),
        OpenApiParameter("until", str, description="runs before this time (ISO 8601)")])
    def get(self, request, pk):
        monitor = get_or_404(tenancy.visible(request, Monitor.objects), pk,
                             deleted_at__isnull=True)
        since, until = moment(request, "since"), moment(request, "until")
        raw = request.query_params.get("runs")
        if raw is not None and (since or until):
            raise serializers.ValidationError(
                {"runs": ["give runs or since/until, not both"]})
        if since and until and since >= until:
            raise serializers.ValidationError({"since": ["must be before until"]})
        runs = None
        if not (since or until):
            raw = raw if raw is not None else str(settings.CRONRADAR_STATS_RUNS)
            if not (raw.isascii() and raw.isdigit() and 1 <= int(raw) <= stats.MAX_RUNS):
                raise serializers.ValidationError(
                    {"runs": [f"must be an integer from 1 to {stats.MAX_RUNS}"]})
            runs = int(raw)
        rows, limited = stats.select_runs(monitor, runs, since, until)
        figures = stats.summarize(rows, monitor.max_attempts)
        data = {"monitor": monitor.pk, "selection": {"runs": runs, "since": since,
                                                     "until": until, "limited": limited},
                **vars(figures)}
        return Response(self.get_serializer(data).data)
