"""The job / cron-job policy model of "Jobs and Scheduled Jobs", in Python.

Source: ``shared/seeds/jobs-and-scheduled-jobs.txt``, whose listing
``measure/jobs.mjs`` (node) prints four tables and three summary lines.
:func:`render_listing` reproduces that output character for character, quirks
included; the functions under it are the model, reusable with other inputs
(a monitor's observed run durations, a real schedule).

Pure: no Django, no clock, no I/O, no global random state. Every random draw
comes from a :class:`Lehmer` generator seeded by an argument.

Units
-----
The overlap functions (:func:`simulate_overlap`, :func:`simulate_replace`) take
scheduled times, durations and a horizon as plain numbers in one unit of your
choice (the listing uses hours; seconds work the same). Every time they return
(delays, pod time) is in that same unit. The attempt sweep and the startup
window count nights: one scheduled run per night.

Reproducing JavaScript
----------------------
- :class:`Lehmer`: ``s = s * 48271 % 2147483647``, draw ``s / 2147483647``;
  the seed is reduced with JavaScript's ``%`` (the sign of the dividend).
- :func:`js_to_fixed`: ``Number.prototype.toFixed``, which rounds the exact
  binary value of the double, ties away from zero: ``(1.005).toFixed(2)`` is
  ``"1.00"`` (1.005 is stored as 1.00499999999999989...), ``(2.5).toFixed(0)``
  is ``"3"``.
- :func:`js_round`: ``Math.round`` (ties towards +infinity).
- :func:`js_string`: ``String(number)`` (``335``, not ``335.0``; ``1e+21``).
- Arithmetic is done in the listing's order (``(start + d) - start`` summed left
  to right), so float inputs give the same doubles as node would.
"""
from __future__ import annotations

import bisect
import decimal
import math
from collections.abc import Sequence
from dataclasses import dataclass

# The listing's constants.
SEED = 20260813
NIGHTS = 30
FAIL_PROB = 0.5
SLICES = 12
INTERVAL = 24  # hours between scheduled runs
LIMITS = (1, 3, 6)
PARALLELISMS = (1, 3, 5, 6, 12)
OUTAGE_NIGHTS = 3  # "the controller is down from night 10 to 12"
WINDOWS = (0, 1, 3)
ITEMS_PER_NIGHT = 4  # scheduled time, run duration, attempt counter, active-run count

MODULUS = 2147483647  # 2**31 - 1
MULTIPLIER = 48271
MAX_SAFE_INTEGER = 2**53 - 1  # beyond this a JavaScript number is no longer the seed

SKIP = "skip"
QUEUE = "queue"
RUN_PARALLEL = "run parallel"
OVERLAP_POLICIES = (SKIP, QUEUE, RUN_PARALLEL)  # the listing's three, in its order
REPLACE = "replace"  # not in the listing: see simulate_replace


def _js_rem(a: int, m: int) -> int:
    """JavaScript's ``a % m`` for integers: the result takes the sign of ``a``."""
    r = abs(a) % m
    return -r if a < 0 else r


class Lehmer:
    """The listing's generator (Park-Miller "minimal standard", multiplier 48271).

    ``Lehmer(seed)`` starts at ``s = seed % 2147483647`` (JavaScript ``%``);
    each :meth:`random` sets ``s = s * 48271 % 2147483647`` and returns
    ``s / 2147483647``, a float in [0, 1) (in (-1, 0] for a negative seed, as
    in node). A seed that is a multiple of 2147483647 draws 0 forever.
    """

    def __init__(self, seed: int):
        if abs(seed) > MAX_SAFE_INTEGER:
            raise ValueError(f"seed {seed} is not a safe JavaScript integer (|seed| <= 2**53-1)")
        self.state = _js_rem(seed, MODULUS)

    def random(self) -> float:
        self.state = _js_rem(self.state * MULTIPLIER, MODULUS)
        return self.state / MODULUS  # both exact doubles: the same quotient as node


# --- JavaScript number formatting -------------------------------------------------

def js_to_fixed(x: float, digits: int) -> str:
    """``x.toFixed(digits)`` as in JavaScript (ECMA-262 Number.prototype.toFixed).

    Rounds the exact value of the double to ``digits`` decimals, a tie going to
    the larger magnitude (the sign is set aside first); ``NaN`` gives "NaN",
    ``|x| >= 1e21`` gives ``String(x)``; ``-0`` gives "0.00" but ``-0.001``
    gives "-0.00".
    """
    if not 0 <= digits <= 100:
        raise ValueError("toFixed() digits argument must be between 0 and 100")
    if math.isnan(x):
        return "NaN"
    if abs(x) >= 1e21:
        return js_string(x)
    if x == 0:
        x = 0.0  # -0 prints without a sign
    with decimal.localcontext() as ctx:
        ctx.prec = 200  # 21 integer digits + up to 100 decimals, never rounded early
        exact = decimal.Decimal(float(x))  # the double's exact binary value
        rounded = exact.quantize(decimal.Decimal(1).scaleb(-digits), decimal.ROUND_HALF_UP)
    return format(rounded, "f")


def js_round(x: float) -> int:
    """``Math.round(x)`` for a finite ``x``: the nearest integer, ties towards +infinity
    (``Math.round(-2.5)`` is -2). Not ``floor(x + 0.5)``, which is wrong for
    0.49999999999999994."""
    whole = math.floor(x)
    return whole + 1 if x - whole >= 0.5 else whole  # x - floor(x) is exact


def js_string(x: float | int) -> str:
    """``String(x)`` for a JavaScript number (ECMA-262 Number::toString, radix 10).

    Integers print without ".0"; the shortest digits that round-trip (Python's
    ``repr`` finds the same ones); plain notation for 1e-7 < |x| < 1e21,
    otherwise ``1.5e+21`` / ``1e-7``. A Python int is read as the double it
    would be in JavaScript.
    """
    if isinstance(x, int) and abs(x) <= MAX_SAFE_INTEGER:
        return str(x)
    x = float(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    _, digit_tuple, exponent = decimal.Decimal(repr(abs(x))).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    exponent += len(digit_tuple) - len(digits)
    k = len(digits)
    n = exponent + k  # the value is 0.digits * 10**n
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + digits
    e = n - 1
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{sign}{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"


# --- 1. completion guarantee: attempt limit ---------------------------------------

@dataclass(frozen=True)
class AttemptRow:
    """One attempt limit, over ``nights`` nights (table 1; counts, not rates).

    completed: nights with a successful attempt within the limit.
    failed: nights whose ``limit`` attempts all failed (= nights - completed).
    attempts: attempts made, all nights together (a night stops at its first success).
    wasted: failed attempts, including those of nights that later succeeded
      (= attempts - completed: a completed night has exactly one success).
    leftover_pods: pods left behind by failed attempts, kept for their logs and
      never collected (= wasted; the listing prints the same number again).
    """

    limit: int
    completed: int
    failed: int
    attempts: int
    wasted: int
    leftover_pods: int


def attempt_limit_sweep(*, fail_prob: float, nights: int, limits: Sequence[int],
                        seed: int) -> list[AttemptRow]:
    """Table 1: each night retries until an attempt succeeds or ``limit`` attempts fail.

    An attempt fails when its draw is ``< fail_prob`` (succeeds when ``>=``).
    The generator restarts from ``seed`` for every limit, so every limit sees the
    same sequence of draws, but not the same draws per night: a night that uses
    more attempts shifts every later night's draws. (So completed nights need
    not grow with the limit for every seed.)
    """
    rows = []
    for limit in limits:
        rng = Lehmer(seed)
        completed = attempts = wasted = 0
        for _ in range(nights):
            tries, ok = 0, False
            while tries < limit and not ok:
                tries += 1
                attempts += 1
                if rng.random() >= fail_prob:
                    ok = True
                else:
                    wasted += 1
            if ok:
                completed += 1
        rows.append(AttemptRow(limit, completed, nights - completed, attempts, wasted, wasted))
    return rows


# --- 2. parallelism and completion count ------------------------------------------

@dataclass(frozen=True)
class ParallelismRow:
    """One parallelism for a job of ``completions`` slices, one round each (table 2).

    rounds: ``ceil(completions / parallelism)``.
    pod_rounds: total work, one pod-round per slice (= completions, whatever
      the parallelism; the listing prints the slice count).
    empty_slots: ``parallelism * rounds - completions`` slot-rounds left idle.
    rounds_one_retry: rounds when one slice needs a second attempt (= rounds + 1).
    increase_percent: ``Math.round((rounds_one_retry / rounds - 1) * 100)``, an
      integer percentage (printed as "%8": the sign comes first in the listing).
    """

    parallelism: int
    completions: int
    rounds: int
    pod_rounds: int
    empty_slots: int
    rounds_one_retry: int
    increase_percent: int


def parallelism_table(*, slices: int = SLICES,
                      parallelisms: Sequence[int] = PARALLELISMS) -> list[ParallelismRow]:
    """Table 2 (no randomness: it depends on neither seed, nights nor fail_prob)."""
    rows = []
    for p in parallelisms:
        rounds = math.ceil(slices / p)
        delayed = rounds + 1
        rows.append(ParallelismRow(p, slices, rounds, slices, p * rounds - slices, delayed,
                                   js_round((delayed / rounds - 1) * 100)))
    return rows


# --- 3. overlap policies -----------------------------------------------------------

def run_durations(*, nights: int, seed: int) -> list[int]:
    """The listing's run durations, whole hours, one per night, from a fresh
    generator on ``seed``: each night draws once; below 0.25 (roughly a quarter
    of nights) a second draw gives ``30 + floor(r * 25)`` (30-54 h), otherwise
    ``3 + floor(r * 5)`` (3-7 h)."""
    rng = Lehmer(seed)
    return [30 + math.floor(rng.random() * 25) if rng.random() < 0.25
            else 3 + math.floor(rng.random() * 5)
            for _ in range(nights)]


def nightly_schedule(nights: int, interval: float = INTERVAL) -> list[float]:
    """Scheduled times ``0, interval, 2*interval, ...`` for ``nights`` runs."""
    return [g * interval for g in range(nights)]


@dataclass(frozen=True)
class OverlapResult:
    """One overlap policy over one list of scheduled runs (table 3).

    All times are in the unit of the inputs (hours in the listing).

    started: runs that started (a queued run counts, whenever it started).
    skipped: runs not started because the previous run was still running at
      their scheduled time (skip only; 0 otherwise). ``not_started`` = runs
      minus started ("unprocessed nights" in the listing's summary).
    peak_concurrency ("max concurrent"): the largest number of started runs in
      progress (``start <= t < end``) at any scheduled time ``t`` of the list.
      Sampled at the scheduled times only (a queued run that starts between them
      is seen at the next one); a run of zero duration is never in progress.
    peak_queue ("max queue"): the largest number of runs that are due but not
      yet started (``scheduled <= t < start``) at any scheduled time ``t``,
      counting the run that falls due at ``t`` itself; skipped runs never wait.
      Only queue can make it non-zero.
    total_delay: the sum of ``start - scheduled`` over started runs;
      ``avg_delay`` = total_delay / started (NaN when nothing started, as 0/0 in node).
    pod_time ("pod-hours" for hours): the sum of ``end - start`` over started
      runs, i.e. their durations: each started run is assumed to finish.
    carry_over ("runs carrying past the horizon"): started runs whose *start*
      is at or after ``horizon`` (``start >= horizon``): queue spilled them past
      the window. A run that starts before the horizon and ends after it is not
      counted.
    starts, ends: per scheduled run, its start and end, or None if skipped.
    """

    policy: str
    started: int
    skipped: int
    peak_concurrency: int
    peak_queue: int
    total_delay: float
    pod_time: float
    carry_over: int
    starts: tuple[float | None, ...]
    ends: tuple[float | None, ...]

    @property
    def avg_delay(self) -> float:
        return self.total_delay / self.started if self.started else math.nan

    @property
    def not_started(self) -> int:
        return len(self.starts) - self.started


def _check_runs(scheduled: Sequence[float], durations: Sequence[float]) -> None:
    if len(scheduled) != len(durations):
        raise ValueError(f"{len(scheduled)} scheduled times but {len(durations)} durations")
    if any(b < a for a, b in zip(scheduled, scheduled[1:], strict=False)):
        raise ValueError("scheduled times must not decrease")
    if any(not math.isfinite(t) for t in scheduled):
        raise ValueError("scheduled times must be finite")
    if any(not (math.isfinite(d) and d >= 0) for d in durations):
        raise ValueError("durations must be finite and >= 0")


def simulate_overlap(policy: str, scheduled: Sequence[float], durations: Sequence[float],
                     *, horizon: float) -> OverlapResult:
    """Run ``scheduled[i]`` for ``durations[i]`` under one of the listing's policies.

    Runs are taken in list order (``scheduled`` must not decrease). "Still
    running" at ``t`` means the previously started run ends after ``t``
    (``end > t``): a run ending exactly at the next scheduled time does not
    conflict.

    - ``"skip"``: a run whose scheduled time finds the previous started run still
      running is not started (and never made up).
    - ``"queue"``: a run starts at ``max(scheduled, end of the previous started
      run)``: one at a time, first in first out, none dropped.
    - ``"run parallel"``: every run starts at its scheduled time.

    ``horizon`` is the end of the observed window (the listing: nights * 24 h);
    it only decides ``carry_over``. See :class:`OverlapResult` for every field.
    """
    if policy not in OVERLAP_POLICIES:
        raise ValueError(f"unknown policy {policy!r}; one of {OVERLAP_POLICIES}")
    _check_runs(scheduled, durations)
    starts: list[float | None] = []
    ends: list[float | None] = []
    finish = None  # end of the previously started run (the listing's 0 for times >= 0)
    started = skipped = 0
    delay = 0
    for t, d in zip(scheduled, durations, strict=True):
        if policy == SKIP and finish is not None and finish > t:
            skipped += 1
            starts.append(None)
            ends.append(None)
            continue
        b = max(t, finish) if policy == QUEUE and finish is not None else t
        starts.append(b)
        ends.append(b + d)
        finish = b + d
        delay += b - t
        started += 1

    # Counting at each scheduled time with sorted lists instead of the listing's
    # scan of every run (same numbers: start >= scheduled and end >= start).
    ran = [(b, e, t) for b, e, t in zip(starts, ends, scheduled, strict=True) if b is not None]
    start_sorted = sorted(b for b, _, _ in ran)
    end_sorted = sorted(e for _, e, _ in ran)
    due_sorted = sorted(t for _, _, t in ran)
    peak_concurrency = peak_queue = 0
    for t in scheduled:
        begun = bisect.bisect_right(start_sorted, t)
        peak_concurrency = max(peak_concurrency, begun - bisect.bisect_right(end_sorted, t))
        peak_queue = max(peak_queue, bisect.bisect_right(due_sorted, t) - begun)

    pod_time = 0
    for b, e in zip(starts, ends, strict=True):
        if b is not None:
            pod_time += e - b  # not d: (b + d) - b, as node sums it
    carry_over = sum(1 for b in starts if b is not None and b >= horizon)
    return OverlapResult(policy, started, skipped, peak_concurrency, peak_queue, delay,
                         pod_time, carry_over, tuple(starts), tuple(ends))


@dataclass(frozen=True)
class ReplaceResult:
    """The ``replace`` policy ("a new run ends the running one"); not in the listing.

    All times are in the unit of the inputs.

    started: every scheduled run starts at its scheduled time (= runs).
    cut_short: runs still running (``end > t``) when the next scheduled time
      ``t`` came, and ended there; completed = started - cut_short.
    time_lost ("pod-hours lost to cutting"): pod time the cut-short runs had
      used before they were ended (``t - start``), work that never completed.
    time_cut_off: what the cut-short runs still needed (``planned end - t``),
      never run.
    pod_time: pod time actually used, by all runs (= sum of durations - time_cut_off).
    carry_over: runs starting at or after ``horizon`` (runs never wait, so only
      runs scheduled there).
    starts, ends: per run, its start and its actual end (the cut when cut short).
    """

    started: int
    cut_short: int
    time_lost: float
    time_cut_off: float
    pod_time: float
    carry_over: int
    starts: tuple[float, ...]
    ends: tuple[float, ...]

    @property
    def completed(self) -> int:
        return self.started - self.cut_short


def simulate_replace(scheduled: Sequence[float], durations: Sequence[float],
                     *, horizon: float) -> ReplaceResult:
    """Kubernetes' ``concurrencyPolicy: Replace``: each run starts at its scheduled
    time; a run still running then (``end > t``, the same test as skip) is ended at
    ``t``. Same inputs and units as :func:`simulate_overlap`."""
    _check_runs(scheduled, durations)
    starts = list(scheduled)
    ends = [t + d for t, d in zip(scheduled, durations, strict=True)]
    cut_short = 0
    lost = cut_off = 0
    for i in range(1, len(starts)):
        t = starts[i]
        if ends[i - 1] > t:  # only the previous run can still be running: it was cut
            cut_short += 1
            lost += t - starts[i - 1]
            cut_off += ends[i - 1] - t
            ends[i - 1] = t
    pod_time = 0
    for b, e in zip(starts, ends, strict=True):
        pod_time += e - b
    return ReplaceResult(len(starts), cut_short, lost, cut_off, pod_time,
                         sum(1 for b in starts if b >= horizon), tuple(starts), tuple(ends))


# --- 4. missed runs: startup window -----------------------------------------------

@dataclass(frozen=True)
class StartupWindowRow:
    """One startup window after a controller outage (table 4; counts of runs).

    made_up: missed runs still inside the window when the controller returns,
      ``min(window, outage)``; dropped = outage - made_up.
    ran_skip: made-up runs that run under skip: they become due at the same
      moment and only one may run, ``min(made_up, 1)`` (assumes nothing else is
      running then).
    ran_queue: all made-up runs, one after another (= made_up).
    ran_parallel: all made-up runs, at once (= made_up).
    """

    window: int
    made_up: int
    dropped: int
    ran_skip: int
    ran_queue: int
    ran_parallel: int


def startup_window_sweep(*, outage: int = OUTAGE_NIGHTS,
                         windows: Sequence[int] = WINDOWS) -> list[StartupWindowRow]:
    """Table 4: the controller misses ``outage`` consecutive scheduled runs (one per
    night); a window of ``w`` nights lets the ``w`` most recent of them run late.
    Both in nights (= scheduled runs). No randomness."""
    rows = []
    for window in windows:
        made_up = min(window, outage)
        rows.append(StartupWindowRow(window, made_up, outage - made_up, min(made_up, 1),
                                     made_up, made_up))
    return rows


# --- the listing -------------------------------------------------------------------

@dataclass(frozen=True)
class Listing:
    """Everything ``measure/jobs.mjs`` prints, as numbers."""

    seed: int
    nights: int
    fail_prob: float
    attempts: list[AttemptRow]
    parallelism: list[ParallelismRow]
    durations: list[int]
    overlap: dict[str, OverlapResult]
    startup: list[StartupWindowRow]

    @property
    def information_items(self) -> int:
        return self.nights * ITEMS_PER_NIGHT


def model_listing(*, seed: int = SEED, nights: int = NIGHTS,
                  fail_prob: float = FAIL_PROB) -> Listing:
    """The listing's four tables for these parameters (the rest is its constants:
    12 slices, a 24-hour interval, limits 1/3/6, a 3-night outage, windows 0/1/3)."""
    if nights < 0:
        raise ValueError("nights must be >= 0")
    durations = run_durations(nights=nights, seed=seed)
    schedule = nightly_schedule(nights)
    overlap = {label: simulate_overlap(label, schedule, durations, horizon=nights * INTERVAL)
               for label in OVERLAP_POLICIES}
    return Listing(seed, nights, fail_prob,
                   attempt_limit_sweep(fail_prob=fail_prob, nights=nights, limits=LIMITS,
                                       seed=seed),
                   parallelism_table(), durations, overlap, startup_window_sweep())


def render_listing(listing: Listing) -> list[str]:
    """The listing's output lines (without newlines), exactly as node prints them:
    its column widths, the "%8" column, ``toFixed(2)`` for the average delay and
    ``String()`` for every other number."""
    s = js_string
    lines = [
        f"{'attempt limit':<14}{'completed nights':>17}{'failed nights':>15}"
        f"{'total attempts':>16}{'wasted attempts':>17}{'leftover pods':>15}",
    ]
    for r in listing.attempts:
        lines.append(f"{s(r.limit):<14}{s(r.completed):>17}{s(r.failed):>15}"
                     f"{s(r.attempts):>16}{s(r.wasted):>17}{s(r.leftover_pods):>15}")

    lines += ["", f"{'parallelism':<12}{'completions':>13}{'rounds':>8}{'pod-rounds':>12}"
                  f"{'empty slots':>13}{'one slice needs 2 tries':>25}{'increase':>10}"]
    for r in listing.parallelism:
        lines.append(f"{s(r.parallelism):<12}{s(r.completions):>13}{s(r.rounds):>8}"
                     f"{s(r.pod_rounds):>12}{s(r.empty_slots):>13}{s(r.rounds_one_retry):>25}"
                     f"{'%' + s(r.increase_percent):>10}")

    lines += ["", f"{listing.nights} nights' run durations (hours): "
                  + ",".join(s(d) for d in listing.durations),
              f"{'policy':<14}{'started':>9}{'skipped':>9}{'max concurrent':>17}"
              f"{'max queue':>12}{'avg delay (hours)':>20}{'pod-hours':>12}"]
    for label, r in listing.overlap.items():
        lines.append(f"{label:<14}{s(r.started):>9}{s(r.skipped):>9}{s(r.peak_concurrency):>17}"
                     f"{s(r.peak_queue):>12}{js_to_fixed(r.avg_delay, 2):>20}"
                     f"{s(r.pod_time):>12}")
    o = listing.overlap
    lines.append(f"unprocessed nights: skip {s(o[SKIP].not_started)}, "
                 f"queue {s(o[QUEUE].not_started)}, "
                 f"run parallel {s(o[RUN_PARALLEL].not_started)}; "
                 f"runs carrying past the horizon {s(o[QUEUE].carry_over)}")

    lines += ["", f"{'startup window':<16}{'made up':>11}{'dropped':>11}"
                  f"{'ran under skip':>17}{'ran under queue':>18}{'ran under parallel':>21}"]
    for r in listing.startup:
        lines.append(f"{s(r.window):<16}{s(r.made_up):>11}{s(r.dropped):>11}"
                     f"{s(r.ran_skip):>17}{s(r.ran_queue):>18}{s(r.ran_parallel):>21}")
    lines.append("information items: 4 per night (scheduled time, run duration, attempt "
                 f"counter, active-run count) = {s(listing.information_items)} "
                 f"(seed {s(listing.seed)})")
    return lines
