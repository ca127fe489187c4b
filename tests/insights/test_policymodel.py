"""Tests for insights.policymodel (pure; no database); ``manage.py policymodel`` has
its own in test_commands.py.

Oracles: the output printed in "Jobs and Scheduled Jobs" (copied to
tests/data/policymodel_seed_20260813.txt), a literal port of the listing's
``policy()`` for any schedule, and hand-computed tiny cases; node running the
listing (tests/data/jobs.mjs, verbatim) checks the command's output.
"""
from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from insights import policymodel as pm
from tests.conftest import DATA
from tests.insights.conftest import EXPECTED, command_output

DOCUMENT = Path("/work/shared/seeds/jobs-and-scheduled-jobs.txt")


def table(lines: list[str], header: str) -> list[list[str]]:
    """The rows under ``header`` up to the next blank or non-table line, split on runs
    of two or more spaces (the first column is left-aligned)."""
    start = next(i for i, line in enumerate(lines) if line.startswith(header)) + 1
    rows = []
    for line in lines[start:]:
        if not line or not line[0].isdigit() and not line.startswith(pm.OVERLAP_POLICIES):
            break
        rows.append(re.split(r" {2,}", line.strip()))
    return rows


# --- the document's output -----------------------------------------------------------

@pytest.mark.skipif(not DOCUMENT.exists(), reason="the source document is not beside the repo")
def test_the_data_copies_are_verbatim_from_the_document():
    document = DOCUMENT.read_text()
    assert EXPECTED.read_text() in document + "\n"
    assert (DATA / "jobs.mjs").read_text().rstrip("\n") in document


def test_table_1_attempt_limit_matches_the_document():
    rows = pm.attempt_limit_sweep(fail_prob=0.5, nights=30, limits=(1, 3, 6), seed=20260813)
    assert [tuple(vars(r).values()) for r in rows] == [
        (1, 19, 11, 30, 11, 11), (3, 27, 3, 49, 22, 22), (6, 29, 1, 54, 25, 25)]
    printed = table(EXPECTED.read_text().splitlines(), "attempt limit")
    assert [[int(c) for c in row] for row in printed] == [list(vars(r).values()) for r in rows]


def test_table_2_parallelism_matches_the_document():
    rows = pm.parallelism_table()
    assert [(r.parallelism, r.rounds, r.empty_slots, r.rounds_one_retry, r.increase_percent)
            for r in rows] == [(1, 12, 0, 13, 8), (3, 4, 0, 5, 25), (5, 3, 3, 4, 33),
                               (6, 2, 0, 3, 50), (12, 1, 0, 2, 100)]
    printed = table(EXPECTED.read_text().splitlines(), "parallelism")
    assert printed == [[str(r.parallelism), "12", str(r.rounds), "12", str(r.empty_slots),
                        str(r.rounds_one_retry), f"%{r.increase_percent}"] for r in rows]


def test_the_run_durations_match_the_document():
    durations = pm.run_durations(nights=30, seed=20260813)
    assert durations == [5, 4, 7, 5, 6, 5, 5, 4, 7, 31, 3, 3, 5, 3, 50, 4, 51, 6, 5, 3, 5, 7,
                         47, 5, 3, 37, 6, 5, 3, 5]
    line = next(x for x in EXPECTED.read_text().splitlines() if "run durations" in x)
    assert line.split(": ")[1] == ",".join(map(str, durations))


def test_table_3_overlap_matches_the_document():
    durations = pm.run_durations(nights=30, seed=20260813)
    schedule = pm.nightly_schedule(30)
    got = {label: pm.simulate_overlap(label, schedule, durations, horizon=720)
           for label in pm.OVERLAP_POLICIES}
    assert [(r.started, r.skipped, r.peak_concurrency, r.peak_queue, r.pod_time)
            for r in got.values()] == [(25, 5, 1, 0, 266), (30, 0, 1, 2, 335),
                                       (30, 0, 2, 0, 335)]
    assert got["queue"].total_delay == 127 and got["queue"].carry_over == 0
    assert pm.js_to_fixed(got["queue"].avg_delay, 2) == "4.23"
    printed = table(EXPECTED.read_text().splitlines(), "policy")
    assert printed == [[label, str(r.started), str(r.skipped), str(r.peak_concurrency),
                        str(r.peak_queue), pm.js_to_fixed(r.avg_delay, 2), str(r.pod_time)]
                       for label, r in got.items()]


def test_table_4_startup_window_matches_the_document():
    rows = pm.startup_window_sweep(outage=3, windows=(0, 1, 3))
    assert [tuple(vars(r).values()) for r in rows] == [
        (0, 0, 3, 0, 0, 0), (1, 1, 2, 1, 1, 1), (3, 3, 0, 1, 3, 3)]
    printed = table(EXPECTED.read_text().splitlines(), "startup window")
    assert [[int(c) for c in row] for row in printed] == [list(vars(r).values()) for r in rows]


def test_the_summary_lines_match_the_document():
    lines = pm.render_listing(pm.model_listing())
    assert lines[-1].endswith("= 120 (seed 20260813)")
    assert ("unprocessed nights: skip 5, queue 0, run parallel 0; "
            "runs carrying past the horizon 0") in lines


def test_no_night_prints_nan_for_the_average_delay_as_node_does():
    lines = pm.render_listing(pm.model_listing(nights=0))
    assert "0 nights' run durations (hours): " in lines
    assert lines[lines.index("0 nights' run durations (hours): ") + 2].split()[-2] == "NaN"


def test_the_module_imports_no_django():
    code = "import sys, insights.policymodel; print('django' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).parents[2])
    assert out.stdout.strip() == "False"


# --- JavaScript arithmetic and formatting -----------------------------------------------

def test_lehmer_is_minstd_rand():
    rng = pm.Lehmer(1)
    states = []
    for _ in range(10_000):
        draw = rng.random()
        assert draw == rng.state / pm.MODULUS
        states.append(rng.state)
    assert states[:3] == [48271, 182605794, 1291394886]
    assert states[-1] == 399268537  # C++ [rand.predef]: the 10000th minstd_rand value


def test_lehmer_reduces_the_seed_with_javascripts_remainder():
    assert pm.Lehmer(-5).state == -5
    assert pm.Lehmer(pm.MODULUS + 3).state == 3
    zero = pm.Lehmer(2 * pm.MODULUS)
    assert [zero.random() for _ in range(3)] == [0, 0, 0]
    with pytest.raises(ValueError):
        pm.Lehmer(2**53)


@pytest.mark.parametrize(("x", "digits", "expected"), [  # each printed by node v20
    (1.005, 2, "1.00"), (2.5, 0, "3"), (0.5, 0, "1"), (-2.5, 0, "-3"), (1.5, 0, "2"),
    (-1.5, 0, "-2"), (1.45, 1, "1.4"), (8.345, 2, "8.35"), (1.255, 2, "1.25"),
    (0.125, 2, "0.13"), (0.375, 2, "0.38"), (2.675, 2, "2.67"), (0.045, 2, "0.04"),
    (4.235, 2, "4.24"), (127 / 30, 2, "4.23"), (-0.0, 2, "0.00"), (-0.001, 2, "-0.00"),
    (math.nan, 2, "NaN"), (1e21, 2, "1e+21"), (123.456, 0, "123"), (1e-10, 3, "0.000"),
    (0.0, 0, "0"), (999.995, 2, "1000.00"), (5e-7, 6, "0.000000"),
    (1.0000000000000002, 20, "1.00000000000000022204"),
])
def test_to_fixed_rounds_the_exact_double_like_javascript(x, digits, expected):
    assert pm.js_to_fixed(x, digits) == expected


@pytest.mark.parametrize(("x", "expected"), [
    (0.49999999999999994, 0), (2.5, 3), (-2.5, -2), (-0.5, 0), (0.5, 1),
    (1.4999999999999998, 1), ((13 / 12 - 1) * 100, 8), ((4 / 3 - 1) * 100, 33),
])
def test_math_round_ties_go_up(x, expected):
    assert pm.js_round(x) == expected


@pytest.mark.parametrize(("x", "expected"), [  # each printed by node v20
    (335, "335"), (335.0, "335"), (0.1 + 0.2, "0.30000000000000004"), (1e21, "1e+21"),
    (1.5e-7, "1.5e-7"), (1e-7, "1e-7"), (0.000001, "0.000001"), (1.23e22, "1.23e+22"),
    (1e20, "100000000000000000000"), (-0.0, "0"), (123.456, "123.456"),
    (-1.5e-7, "-1.5e-7"), (2**53 + 2, "9007199254740994"), (1 / 3, "0.3333333333333333"),
    (5e-324, "5e-324"), (1.7976931348623157e308, "1.7976931348623157e+308"), (100.0, "100"),
    (math.nan, "NaN"), (-math.inf, "-Infinity"),
])
def test_string_of_a_number_like_javascript(x, expected):
    assert pm.js_string(x) == expected


# --- table 1: invariants for any seed, length and probability ---------------------------

@given(seed=st.integers(-(2**53) + 1, 2**53 - 1), nights=st.integers(0, 120),
       fail_prob=st.floats(0, 1), limits=st.lists(st.integers(0, 8), max_size=4))
def test_attempt_sweep_invariants(seed, nights, fail_prob, limits):
    for r in pm.attempt_limit_sweep(fail_prob=fail_prob, nights=nights, limits=limits,
                                    seed=seed):
        assert r.completed + r.failed == nights
        assert r.wasted == r.attempts - r.completed == r.leftover_pods
        assert r.failed * r.limit + r.completed <= r.attempts <= r.limit * nights
        if r.limit >= 1:
            assert r.attempts >= nights


def test_attempt_sweep_at_the_extremes():
    never_fails = pm.attempt_limit_sweep(fail_prob=0, nights=10, limits=[1, 4], seed=3)
    assert [(r.completed, r.attempts, r.wasted) for r in never_fails] == [(10, 10, 0)] * 2
    always_fails = pm.attempt_limit_sweep(fail_prob=1, nights=10, limits=[0, 1, 4], seed=3)
    assert [(r.completed, r.failed, r.attempts, r.wasted) for r in always_fails] == [
        (0, 10, 0, 0), (0, 10, 10, 10), (0, 10, 40, 40)]


def test_attempt_sweep_restarts_the_generator_for_every_limit():
    """Limit 2 on 1 night uses the first two draws of the seed, whatever came before."""
    rng = pm.Lehmer(99)
    draws = [rng.random(), rng.random()]
    (row,) = pm.attempt_limit_sweep(fail_prob=0.5, nights=1, limits=[2], seed=99)
    first_fails = draws[0] < 0.5
    assert row.attempts == (2 if first_fails else 1)
    assert row.completed == int(draws[0] >= 0.5 or draws[1] >= 0.5)
    assert pm.attempt_limit_sweep(fail_prob=0.5, nights=1, limits=[5, 2], seed=99)[1] == row


# --- table 2 and table 4 with other inputs ----------------------------------------------

def test_parallelism_with_other_slices():
    rows = pm.parallelism_table(slices=10, parallelisms=[3, 4, 10, 20])
    assert [(r.rounds, r.pod_rounds, r.empty_slots, r.rounds_one_retry, r.increase_percent)
            for r in rows] == [(4, 10, 2, 5, 25), (3, 10, 2, 4, 33), (1, 10, 0, 2, 100),
                               (1, 10, 10, 2, 100)]


def test_startup_window_with_another_outage():
    rows = pm.startup_window_sweep(outage=5, windows=[0, 2, 5, 7])
    assert [tuple(vars(r).values()) for r in rows] == [
        (0, 0, 5, 0, 0, 0), (2, 2, 3, 1, 2, 2), (5, 5, 0, 1, 5, 5), (7, 5, 0, 1, 5, 5)]


# --- the run durations ------------------------------------------------------------------

@given(seed=st.integers(0, 2**53 - 1), nights=st.integers(0, 200))
def test_run_durations_are_short_or_long_hours_and_a_prefix_of_longer_runs(seed, nights):
    durations = pm.run_durations(nights=nights, seed=seed)
    assert len(durations) == nights
    assert all(3 <= d <= 7 or 30 <= d <= 54 for d in durations)
    assert pm.run_durations(nights=nights + 5, seed=seed)[:nights] == durations


def test_run_durations_of_a_negative_seed_follow_node_out_of_range():
    # Draws are in (-1, 0]: always "long", 30 + floor(r * 25) in 5..30 (node agrees).
    assert set(pm.run_durations(nights=50, seed=-5)) <= set(range(5, 31))


# --- table 3: overlap policies on hand-computed cases -----------------------------------
# Scheduled 0, 10, 20, 30; durations 15, 3, 25, 2; horizon 40.
SCHEDULE, DURATIONS = [0, 10, 20, 30], [15, 3, 25, 2]


def test_skip_on_a_hand_computed_case():
    # 0-15 runs; 10 finds it running: skipped; 20-45 runs; 30 finds it running: skipped.
    r = pm.simulate_overlap("skip", SCHEDULE, DURATIONS, horizon=40)
    assert (r.started, r.skipped, r.not_started) == (2, 2, 2)
    assert (r.peak_concurrency, r.peak_queue, r.total_delay, r.pod_time) == (1, 0, 0, 40)
    assert r.starts == (0, None, 20, None) and r.ends == (15, None, 45, None)
    assert r.carry_over == 0


def test_queue_on_a_hand_computed_case():
    # 0-15, 15-18 (5 late), 20-45, 45-47 (15 late, and after the horizon 40).
    r = pm.simulate_overlap("queue", SCHEDULE, DURATIONS, horizon=40)
    assert r.starts == (0, 15, 20, 45) and r.ends == (15, 18, 45, 47)
    assert (r.started, r.skipped, r.total_delay, r.avg_delay, r.pod_time) == (4, 0, 20, 5, 45)
    assert (r.peak_concurrency, r.peak_queue, r.carry_over) == (1, 1, 1)


def test_queue_counts_every_due_run_that_waits_including_the_one_due_now():
    # 0-25; at 20 the runs due at 10 and at 20 both wait: 25-26 and 26-27.
    r = pm.simulate_overlap("queue", [0, 10, 20], [25, 1, 1], horizon=26)
    assert r.starts == (0, 25, 26)
    assert (r.peak_queue, r.total_delay, r.avg_delay) == (2, 21, 7)
    # carry-over counts starts at or after the horizon: 26 yes; 25 (ending at 26) no.
    assert r.carry_over == 1


def test_run_parallel_on_a_hand_computed_case():
    # 0-15, 10-13, 20-45, 30-32: two at 10 and two at 30.
    r = pm.simulate_overlap("run parallel", SCHEDULE, DURATIONS, horizon=40)
    assert (r.started, r.skipped, r.total_delay, r.pod_time) == (4, 0, 0, 45)
    assert (r.peak_concurrency, r.peak_queue, r.carry_over) == (2, 0, 0)


def test_replace_on_a_hand_computed_case():
    # 0-15 is ended at 10 (10 used, 5 cut off); 10-13 completes; 20-45 is ended at 30
    # (10 used, 15 cut off); 30-32 completes.
    r = pm.simulate_replace(SCHEDULE, DURATIONS, horizon=40)
    assert (r.started, r.cut_short, r.completed) == (4, 2, 2)
    assert (r.time_lost, r.time_cut_off, r.pod_time) == (20, 20, 25)
    assert r.ends == (10, 13, 30, 32) and r.carry_over == 0


def test_a_run_ending_exactly_at_the_next_scheduled_time_does_not_conflict():
    for label in pm.OVERLAP_POLICIES:
        r = pm.simulate_overlap(label, [0, 10], [10, 1], horizon=20)
        assert (r.started, r.total_delay, r.peak_concurrency, r.peak_queue) == (2, 0, 1, 0)
    assert pm.simulate_replace([0, 10], [10, 1], horizon=20).cut_short == 0


def test_replace_is_not_in_the_listing():
    assert "replace" not in command_output()
    with pytest.raises(ValueError):
        pm.simulate_overlap("replace", SCHEDULE, DURATIONS, horizon=40)


def test_overlap_works_in_seconds_with_floats():
    hours = pm.simulate_overlap("queue", SCHEDULE, DURATIONS, horizon=40)
    seconds = pm.simulate_overlap("queue", [t * 3600.0 for t in SCHEDULE],
                                  [d * 3600.0 for d in DURATIONS], horizon=40 * 3600.0)
    assert seconds.avg_delay == hours.avg_delay * 3600
    assert seconds.pod_time == hours.pod_time * 3600
    assert (seconds.peak_queue, seconds.carry_over) == (hours.peak_queue, hours.carry_over)


@pytest.mark.parametrize(("schedule", "durations"), [
    ([0, 1], [1]), ([10, 0], [1, 1]), ([0, 1], [1, -1]), ([0, 1], [1, math.inf]),
])
def test_overlap_refuses_inputs_it_cannot_model(schedule, durations):
    with pytest.raises(ValueError):
        pm.simulate_overlap("queue", schedule, durations, horizon=10)
    with pytest.raises(ValueError):
        pm.simulate_replace(schedule, durations, horizon=10)


# --- table 3: the listing's policy() as an oracle, on any schedule ----------------------

def listing_policy(label, scheduled, durations, last):
    """``policy(label)`` from measure/jobs.mjs, line by line, with ``g * INTERVAL``
    replaced by ``scheduled[g]`` and ``NIGHTS * INTERVAL`` by ``last``."""
    n = len(scheduled)
    start, end = [None] * n, [None] * n
    finish = started = skipped = delay = 0
    for g in range(n):
        t = scheduled[g]
        if label == "skip" and finish > t:
            skipped += 1
            continue
        b = max(t, finish) if label == "queue" else t
        start[g] = b
        end[g] = b + durations[g]
        finish = end[g]
        delay += b - t
        started += 1
    max_concurrent = max_queue = 0
    for g in range(n):
        t = scheduled[g]
        max_concurrent = max(max_concurrent, sum(
            1 for i, b in enumerate(start) if b is not None and b <= t and end[i] > t))
        max_queue = max(max_queue, sum(
            1 for i, b in enumerate(start) if b is not None and b > t and scheduled[i] <= t))
    pod_hours = 0
    for i, b in enumerate(start):
        pod_hours += 0 if b is None else end[i] - b
    return (started, skipped, delay, max_concurrent, max_queue,
            sum(1 for b in start if b is not None and b >= last), pod_hours)


runs = st.lists(st.tuples(st.integers(0, 50), st.integers(0, 80)), max_size=40)


@given(gaps_and_durations=runs, as_float=st.booleans())
def test_overlap_equals_the_listings_policy_on_any_schedule(gaps_and_durations, as_float):
    scheduled, t = [], 0
    for gap, _ in gaps_and_durations:
        t += gap
        scheduled.append(t / 7 if as_float else t)  # sevenths: inexact float sums
    durations = [d / 3 if as_float else d for _, d in gaps_and_durations]
    last = scheduled[-1] if scheduled else 0
    for label in pm.OVERLAP_POLICIES:
        r = pm.simulate_overlap(label, scheduled, durations, horizon=last)
        assert (r.started, r.skipped, r.total_delay, r.peak_concurrency, r.peak_queue,
                r.carry_over, r.pod_time) == listing_policy(label, scheduled, durations, last)


@given(gaps_and_durations=runs)
def test_overlap_invariants(gaps_and_durations):
    scheduled, t = [], 0
    for gap, _ in gaps_and_durations:
        t += gap
        scheduled.append(t)
    durations = [d for _, d in gaps_and_durations]
    n, total = len(scheduled), sum(durations)
    skip, queue, parallel = (pm.simulate_overlap(label, scheduled, durations, horizon=t)
                             for label in pm.OVERLAP_POLICIES)
    assert skip.started + skip.skipped == n and skip.total_delay == 0
    assert skip.peak_concurrency <= 1 and skip.peak_queue == 0
    assert queue.started == n and queue.skipped == 0 and queue.pod_time == total
    assert queue.peak_concurrency <= 1
    for i in range(1, n):
        assert queue.starts[i] == max(scheduled[i], queue.ends[i - 1])
    assert parallel.started == n and parallel.total_delay == 0 and parallel.pod_time == total
    assert parallel.peak_queue == 0 and parallel.peak_concurrency >= skip.peak_concurrency
    assert (parallel.peak_concurrency >= 1) == any(durations)
    replace = pm.simulate_replace(scheduled, durations, horizon=t)
    assert replace.started == n and replace.completed + replace.cut_short == n
    assert replace.pod_time + replace.time_cut_off == total
    assert replace.time_lost <= replace.pod_time
    assert all(e <= nxt for e, nxt in zip(replace.ends, scheduled[1:], strict=False))
