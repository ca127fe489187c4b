"""The overlap-policy advisor: a monitor's observed runs replayed through the model
of "Jobs and Scheduled Jobs" (:mod:`insights.policymodel`).

Pure: plain data in (the monitor's schedule fields, its observed run durations in
seconds, failure counts, missed streak, ``now``), plain dataclasses out; no ORM,
no clock. ``GET /api/v1/monitors/<id>/advice/`` (:class:`insights.api.MonitorAdvice`)
gathers the data and serialises :class:`Advice`.

What is replayed
----------------
- **Schedule**: the monitor's next K real fire times after ``now``, K = the number
  of observed durations: cron through :func:`monitors.schedule.next_fire` in its
  time zone and semantics (so a DST night gives a 23 h or 25 h interval), interval
  every ``period`` from ``now``. The horizon is the fire after the last one (the
  last scheduled time plus one real interval). Times are seconds from the first.
- **Durations**: assigned to the fire times in the observed order, oldest first.
- **Overlap policies** (:data:`POLICIES`): ``skip`` (what ``forbid`` does),
  ``queue`` (a scheduler that serialises runs; no CronJob setting gives it),
  ``run parallel`` (``allow``) and ``replace`` ("a new run ends the running one":
  the runs cut short never complete, their pod-hours are lost).
- **Attempt limits**: the document's sweep (seed 20260813, limits 1, 3, 6 and the
  monitor's ``max_attempts``, one night per observed run) at the observed failure
  rate ``failed / (failed + succeeded)``, with the expected values beside it.
- **Startup window**: the document's table for an outage as long as the monitor's
  missed streak (windows 0, 1 and the streak, in scheduled runs).

The recommendation (:func:`recommend`)
--------------------------------------
Inputs: ``can_skip`` (may the job lose a run? default no: "the billing entry
cannot tolerate a missing night") and ``parallel_safe`` (may two runs write at
once? default no). In order:

1. No observed run is longer than the time to the next fire after its own
   (the last one against the horizon): no policy ever acts, every one starts
   every run on time, one at a time. Keep the current setting: "runs finish
   within the interval".
2. Runs may write at once: **run parallel** (``allow``). It keeps every run and
   delays none; its only cost, concurrency, was declared acceptable.
3. Runs must not write at once (run parallel ruled out) and the job cannot lose a
   run (skip ruled out, and replace too: a cut run never completes): **queue**.
   No CronJob ``concurrencyPolicy`` gives it (the job must wait for the previous
   run itself, or run under a scheduler that serialises runs), and it costs the
   measured delay. A queue that does not empty (runs pushed past the horizon) is
   warned about: then no policy keeps every run with one writer.
4. Runs must not write at once and the job may lose a run: **skip** (``forbid``)
   or **replace**, whichever completes more runs in the replay; a tie goes to
   skip, which loses no pod-hours to cutting.

``mismatch`` compares the recommended policy's setting with the monitor's
``concurrency``; queue has no setting, so it is always a mismatch (the setting
alone cannot give it). Nothing is ever changed.

Units: seconds (delays, durations, intervals), pod-hours as hours rounded to two
decimals (JavaScript's ``toFixed(2)``, as the document prints them).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from insights import policymodel as pm
from monitors import schedule as sched

SKIP, QUEUE, RUN_PARALLEL, REPLACE = pm.SKIP, pm.QUEUE, pm.RUN_PARALLEL, pm.REPLACE
POLICIES = (SKIP, QUEUE, RUN_PARALLEL, REPLACE)
# The monitor's (and a CronJob's) concurrency setting that gives each policy.
SETTING = {SKIP: "forbid", QUEUE: None, RUN_PARALLEL: "allow", REPLACE: "replace"}
POLICY_OF = {setting: policy for policy, setting in SETTING.items() if setting}
SEED = pm.SEED
LIMITS = pm.LIMITS  # the document's 1, 3, 6; the monitor's max_attempts is added


def _hours(seconds: float) -> float:
    return float(pm.js_to_fixed(seconds / 3600, 2))


def _two(x: float) -> float:
    return float(pm.js_to_fixed(x, 2))


# --- the schedule -------------------------------------------------------------------

@dataclass(frozen=True)
class Replay:
    """The scheduled times the observed durations are replayed against.

    fire_times: the K real fire times (UTC) after ``now``; horizon_at: the one after.
    offsets: seconds from the first fire time, one per fire time (the model's input).
    horizon: seconds from the first fire time to ``horizon_at``.
    intervals: per fire time, seconds to the next one (the last: to the horizon).
    """

    fire_times: tuple[datetime, ...]
    horizon_at: datetime | None
    offsets: tuple[float, ...]
    horizon: float
    intervals: tuple[float, ...]

    @property
    def first_at(self) -> datetime | None:
        return self.fire_times[0] if self.fire_times else None

    @property
    def last_at(self) -> datetime | None:
        return self.fire_times[-1] if self.fire_times else None


def fire_times(*, kind: str, expr: str, tz: str, semantics: str, period: timedelta | None,
               after: datetime, count: int) -> list[datetime]:
    """The first ``count`` scheduled times after ``after``: cron through
    :func:`monitors.schedule.next_fire` (its time zone and semantics), interval
    ``after + period``, ``after + 2 * period`` …"""
    if kind == "interval":
        if period is None or period <= timedelta(0):
            raise ValueError("an interval monitor needs a positive period")
        return [after + period * (i + 1) for i in range(count)]
    times: list[datetime] = []
    t = after
    for _ in range(count):
        t = sched.next_fire(expr, tz, t, semantics)
        times.append(t)
    return times


def replay_schedule(*, kind: str, expr: str, tz: str, semantics: str,
                    period: timedelta | None, now: datetime, runs: int) -> Replay:
    """:class:`Replay` for ``runs`` observed runs (K + 1 fire times: the last is the
    horizon). ``runs`` 0 gives an empty replay."""
    if runs <= 0:
        return Replay((), None, (), 0.0, ())
    times = fire_times(kind=kind, expr=expr, tz=tz, semantics=semantics, period=period,
                       after=now, count=runs + 1)
    first = times[0]
    offsets = [(t - first).total_seconds() for t in times]
    intervals = tuple(b - a for a, b in zip(offsets, offsets[1:], strict=False))
    return Replay(tuple(times[:-1]), times[-1], tuple(offsets[:-1]), offsets[-1], intervals)


# --- the overlap table ----------------------------------------------------------------

@dataclass(frozen=True)
class PolicyOutcome:
    """One overlap policy over the replay (seconds, except pod-hours).

    setting: the ``concurrency`` value that gives it (None for queue: no CronJob
      setting serialises runs).
    started / skipped: as the document's table (skipped: skip only).
    cut_short: runs ended by the next one before finishing (replace only).
    completed: runs that ran to their end (started - cut_short); lost = runs - completed.
    max_concurrent, max_queue: the document's peaks, sampled at the scheduled times.
    average_delay: mean of start - scheduled over started runs, 2 decimals (None when
      none started); max_delay: the largest.
    pod_hours: hours of run time spent; pod_hours_lost: of those, hours spent by
      runs cut short (work that never completed); pod_seconds, pod_seconds_lost: the
      same in whole seconds (short jobs round to 0.00 hours).
    runs_past_horizon: runs starting at or after the horizon (queue's carry-over).
    """

    policy: str
    setting: str | None
    started: int
    skipped: int
    cut_short: int
    completed: int
    lost: int
    max_concurrent: int
    max_queue: int
    average_delay: float | None
    max_delay: float
    pod_hours: float
    pod_hours_lost: float
    runs_past_horizon: int
    pod_seconds: int = 0
    pod_seconds_lost: int = 0


def _peak_concurrency(scheduled: Sequence[float], starts: Sequence[float | None],
                      ends: Sequence[float | None]) -> int:
    """Runs in progress (start <= t < end) at each scheduled time t, at most (the
    document's "max concurrent", as :func:`policymodel.simulate_overlap` samples it)."""
    spans = [(b, e) for b, e in zip(starts, ends, strict=True) if b is not None]
    return max((sum(1 for b, e in spans if b <= t < e) for t in scheduled), default=0)


def overlap_table(offsets: Sequence[float], durations: Sequence[float],
                  horizon: float) -> list[PolicyOutcome]:
    """The four policies (:data:`POLICIES`, in that order) over one replay."""
    runs = len(durations)
    rows = []
    for label in (SKIP, QUEUE, RUN_PARALLEL):
        r = pm.simulate_overlap(label, offsets, durations, horizon=horizon)
        delays = [b - t for b, t in zip(r.starts, offsets, strict=True) if b is not None]
        rows.append(PolicyOutcome(
            label, SETTING[label], r.started, r.skipped, 0, r.started, runs - r.started,
            r.peak_concurrency, r.peak_queue,
            _two(r.avg_delay) if r.started else None, max(delays, default=0),
            _hours(r.pod_time), 0.0, r.carry_over, round(r.pod_time), 0))
    r = pm.simulate_replace(offsets, durations, horizon=horizon)
    rows.append(PolicyOutcome(
        REPLACE, SETTING[REPLACE], r.started, 0, r.cut_short, r.completed, runs - r.completed,
        _peak_concurrency(offsets, r.starts, r.ends), 0, 0.0 if r.started else None, 0,
        _hours(r.pod_time), _hours(r.time_lost), r.carry_over, round(r.pod_time),
        round(r.time_lost)))
    return rows


# --- the attempt-limit table ------------------------------------------------------------

@dataclass(frozen=True)
class Expected:
    """Expectations for one limit L at failure rate p over ``nights`` nights:
    P(night completes) = 1 - p^L; attempts per night = (1 - p^L) / (1 - p) (L when
    p = 1); completed = nights * P; failed = nights - completed; attempts = nights *
    attempts per night; wasted = attempts - completed. Two decimals (P: four)."""

    p_night_completes: float
    attempts_per_night: float
    completed: float
    failed: float
    attempts: float
    wasted: float


@dataclass(frozen=True)
class AttemptLimit:
    """The document's row for one limit (a simulation with the fixed seed) and the
    expected values beside it. ``current``: the monitor's ``max_attempts``."""

    limit: int
    current: bool
    completed: int
    failed: int
    attempts: int
    wasted: int
    leftover_pods: int
    expected: Expected


def expected(p: float, limit: int, nights: int) -> Expected:
    """:class:`Expected` for failure rate ``p`` (0..1) and ``limit`` attempts."""
    complete = 1 - p ** limit
    per_night = complete / (1 - p) if p < 1 else float(limit)
    return Expected(float(pm.js_to_fixed(complete, 4)), _two(per_night), _two(nights * complete),
                    _two(nights - nights * complete), _two(nights * per_night),
                    _two(nights * per_night - nights * complete))


def attempt_table(*, fail_prob: float, nights: int, max_attempts: int,
                  seed: int = SEED) -> list[AttemptLimit]:
    """:func:`policymodel.attempt_limit_sweep` over limits 1, 3, 6 and ``max_attempts``
    (sorted, once each), with :func:`expected` beside each row."""
    limits = sorted({*LIMITS, max_attempts})
    rows = pm.attempt_limit_sweep(fail_prob=fail_prob, nights=nights, limits=limits, seed=seed)
    return [AttemptLimit(r.limit, r.limit == max_attempts, r.completed, r.failed, r.attempts,
                         r.wasted, r.leftover_pods, expected(fail_prob, r.limit, nights))
            for r in rows]


# --- the startup window ------------------------------------------------------------------

@dataclass(frozen=True)
class StartupWindow:
    """The document's table for an outage of ``missed_streak`` scheduled runs; windows
    (in scheduled runs) 0, 1 and the streak. See :class:`policymodel.StartupWindowRow`."""

    missed_streak: int
    rows: list[pm.StartupWindowRow]


def startup_window(missed_streak: int) -> StartupWindow:
    windows = sorted({0, 1, missed_streak})
    return StartupWindow(missed_streak,
                         pm.startup_window_sweep(outage=missed_streak, windows=windows))


# --- the recommendation ------------------------------------------------------------------

@dataclass(frozen=True)
class WhyNot:
    """Why ``policy`` is not the one recommended."""

    policy: str
    reason: str


@dataclass(frozen=True)
class Recommendation:
    """recommended: a policy of :data:`POLICIES`; setting: the ``concurrency`` that
    gives it (None for queue); current: the monitor's ``concurrency``; mismatch:
    setting != current (always for queue); reason: why, in the document's terms;
    why_not: every other policy with why not (empty when runs finish within the
    interval: they all do the same); warnings: costs that may not be bearable."""

    recommended: str
    setting: str | None
    current: str
    mismatch: bool
    reason: str
    why_not: list[WhyNot] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _s(x: float) -> str:
    """Seconds as the API gives them: whole when whole."""
    return pm.js_string(x)


def recommend(outcomes: Sequence[PolicyOutcome], *, overruns: int, longest_run: float,
              shortest_interval: float, current: str, can_skip: bool,
              parallel_safe: bool) -> Recommendation:
    """The rule of the module docstring, over :func:`overlap_table`'s rows.
    ``overruns``: runs longer than the time to the next fire after their own."""
    o = {r.policy: r for r in outcomes}
    runs = o[RUN_PARALLEL].started
    if overruns == 0:
        return Recommendation(
            POLICY_OF[current], current, current, False,
            f"runs finish within the interval: the longest run ({_s(longest_run)} s) ends "
            f"before the next one is due (shortest interval {_s(shortest_interval)} s), so "
            "skip, queue, run parallel and replace all start every run on time, one at a "
            f"time; the current setting ({current}) is fine")

    skip, queue, parallel, replace = o[SKIP], o[QUEUE], o[RUN_PARALLEL], o[REPLACE]
    skips = f"skip leaves {skip.skipped} of {runs} runs unprocessed"
    cuts = (f"replace cuts {replace.cut_short} of {runs} runs short "
            f"({replace.pod_hours_lost:.2f} pod-hours lost)")
    queue_cost = (f"runs start {queue.average_delay:.2f} s late on average (at most "
                  f"{_s(queue.max_delay)} s), up to {queue.max_queue} waiting at once")
    overrun = f"{overruns} of {runs} runs are longer than the interval"
    # what rules a policy out (the document's two questions), else what it costs
    why = {
        SKIP: f"the job cannot lose a run: {skips}" if not can_skip else skips,
        REPLACE: f"the job cannot lose a run: {cuts}" if not can_skip else cuts,
        RUN_PARALLEL: (f"runs must not write at once: run parallel has up to "
                       f"{parallel.max_concurrent} at once"),
        QUEUE: f"queue keeps every run but costs the delay: {queue_cost}",
    }
    warnings = []
    if parallel_safe:
        chosen = RUN_PARALLEL
        reason = (f"{overrun}; runs may write at once, so run parallel (allow) keeps every "
                  f"run and delays none ({parallel.started} of {runs} started, up to "
                  f"{parallel.max_concurrent} at once, {parallel.pod_hours:.2f} pod-hours)")
    elif not can_skip:
        chosen = QUEUE
        reason = (f"{overrun}; the job cannot lose a run (rules out skip and replace) and its "
                  "runs must not write at once (rules out run parallel), so what is left is "
                  "queue, which no CronJob concurrencyPolicy gives: the job must wait for the "
                  "previous run itself (a lock) or run under a scheduler that serialises runs. "
                  f"Its cost is the measured delay: {queue_cost}")
        if queue.runs_past_horizon:
            warnings.append(
                f"the queue does not empty: {queue.runs_past_horizon} runs start past the "
                "horizon, so the delay grows with every long run; no policy keeps every run "
                "with one writer: the runs must get shorter or the schedule sparser")
    else:
        # the one that completes more runs; a tie goes to skip (nothing lost to cutting)
        chosen = REPLACE if replace.completed > skip.completed else SKIP
        other = SKIP if chosen == REPLACE else REPLACE
        why[other] += (f": {o[other].completed} completed, "
                       + ("fewer" if o[other].completed < o[chosen].completed else "no more")
                       + f" than {chosen}'s {o[chosen].completed}")
        lost = skips if chosen == SKIP else cuts
        reason = (f"{overrun}; runs must not write at once (rules out run parallel) and the "
                  f"job may lose a run, so {chosen} ({SETTING[chosen]}) completes the most "
                  f"runs with one writer and no delay: {o[chosen].completed} of {runs} "
                  f"({lost}); queue would keep all {runs} at the cost of the delay")
    setting = SETTING[chosen]
    return Recommendation(chosen, setting, current, setting != current, reason,
                          [WhyNot(p, why[p]) for p in POLICIES if p != chosen], warnings)


# --- all of it -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Advice:
    """Everything ``GET /api/v1/monitors/<id>/advice/`` answers (see the serializer
    :class:`insights.api.AdviceSerializer` for the field list)."""

    now: datetime
    can_skip: bool
    parallel_safe: bool
    concurrency: str
    max_attempts: int
    durations: list[float]
    succeeded: int
    failed: int
    failure_rate: float | None
    min_runs: int
    enough_data: bool
    reason: str | None
    replay: Replay
    longest_run: float | None
    shortest_interval: float | None
    longest_interval: float | None
    runs_longer_than_interval: int
    policies: list[PolicyOutcome]
    attempt_limits: list[AttemptLimit]
    startup: StartupWindow
    recommendation: Recommendation | None


def advise(*, kind: str, expr: str, tz: str, semantics: str, period: timedelta | None,
           concurrency: str, max_attempts: int, durations: Sequence[float], succeeded: int,
           failed: int, missed_streak: int, now: datetime, min_runs: int,
           can_skip: bool = False, parallel_safe: bool = False) -> Advice:
    """The advice for one monitor.

    durations: seconds, oldest first (the runs that started and ended).
    succeeded, failed: outcomes among those runs (the failure rate's counts).
    missed_streak: consecutive newest slots missed or unknown.
    With fewer than ``min_runs`` durations the tables are still computed from what
    there is, but ``enough_data`` is false, ``reason`` says why, and there is no
    recommendation.
    """
    durations = list(durations)
    replay = replay_schedule(kind=kind, expr=expr, tz=tz, semantics=semantics, period=period,
                             now=now, runs=len(durations))
    policies = overlap_table(replay.offsets, durations, replay.horizon)
    overruns = sum(1 for d, gap in zip(durations, replay.intervals, strict=True) if d > gap)
    rate = failed / (failed + succeeded) if failed + succeeded else None
    attempts = ([] if rate is None else
                attempt_table(fail_prob=rate, nights=len(durations), max_attempts=max_attempts))
    longest = max(durations, default=None)
    shortest_gap = min(replay.intervals, default=None)
    enough = len(durations) >= min_runs
    reason = None
    recommendation = None
    if not enough:
        reason = (f"too little data to advise: {len(durations)} finished runs with a start "
                  f"and an end, advice needs at least {min_runs} "
                  "(CRONRADAR_ADVICE_MIN_RUNS)")
    else:
        recommendation = recommend(policies, overruns=overruns, longest_run=longest,
                                   shortest_interval=shortest_gap, current=concurrency,
                                   can_skip=can_skip, parallel_safe=parallel_safe)
    return Advice(now, can_skip, parallel_safe, concurrency, max_attempts, durations, succeeded,
                  failed, None if rate is None else float(pm.js_to_fixed(rate, 4)), min_runs,
                  enough, reason, replay, longest, shortest_gap,
                  max(replay.intervals, default=None), overruns, policies, attempts,
                  startup_window(missed_streak), recommendation)


__all__ = ["Advice", "POLICIES", "SETTING", "advise", "attempt_table", "expected",
           "fire_times", "overlap_table", "recommend", "replay_schedule", "startup_window"]
