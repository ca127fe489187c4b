"""The overlap-policy advisor: ``GET /api/v1/monitors/<id>/advice/`` and
:mod:`insights.advisor`.

Runs are written with the ORM with known durations and outcomes; the clock is
``timezone.now`` patched to NOW. The main oracle is the document itself: its 30
nights (durations in hours, every 24 h, failure rate 0.5, a 3-night outage)
stored as a monitor's runs must come back as the document's tables.
"""
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiKey
from insights import advisor
from monitors.models import Monitor, Run
from tests.helpers import as_key, as_person, person

pytestmark = pytest.mark.django_db
S, H = timedelta(seconds=1), timedelta(hours=1)
NOW = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
# "30 nights' run durations (hours)" as the document prints them
NIGHTS = [5, 4, 7, 5, 6, 5, 5, 4, 7, 31, 3, 3, 5, 3, 50, 4, 51, 6, 5, 3, 5, 7, 47, 5, 3, 37,
          6, 5, 3, 5]


@pytest.fixture(autouse=True)
def clock(monkeypatch):
    monkeypatch.setattr(timezone, "now", lambda: NOW)


def add_runs(m: Monitor, durations, outcomes=None, missed: int = 0, every=24 * H):
    """Runs of ``m`` with these durations (seconds), oldest first, one per ``every``
    ending before NOW, then ``missed`` written-off slots (the newest)."""
    outcomes = outcomes or ["succeeded"] * len(durations)
    base = NOW - every * (len(durations) + missed + 3)
    for i, (d, outcome) in enumerate(zip(durations, outcomes, strict=True)):
        start = base + every * i
        Run.objects.create(monitor=m, slot_at=start, started_at=start,
                           ended_at=start + d * S, outcome=outcome)
    for j in range(missed):
        Run.objects.create(monitor=m, slot_at=base + every * (len(durations) + j),
                           outcome="missed")


def documents_monitor(make_monitor, **fields) -> Monitor:
    """The document's nightly job: every 24 h, its 30 durations, 15 of 30 runs failed
    (p = 0.5), the last 3 nights missed."""
    m = make_monitor(name="billing", period=24 * H, grace=60 * S, **fields)
    add_runs(m, [h * 3600 for h in NIGHTS], ["failed", "succeeded"] * 15, missed=3)
    return m


def policy_rows(body) -> dict:
    return {r["policy"]: {k: v for k, v in r.items() if k != "policy"}
            for r in body["policies"]}


def test_the_documents_nights_come_back_as_the_documents_tables(api, make_monitor):
    m = documents_monitor(make_monitor)
    resp = api.get(f"/api/v1/monitors/{m.pk}/advice/")
    assert resp.status_code == 200
    body = resp.json()
    assert (body["monitor"], body["enough_data"], body["reason"]) == (m.pk, True, None)
    assert body["runs"] == {"observed": 30, "minimum": 20,
                            "durations": [h * 3600 for h in NIGHTS], "longest": 51 * 3600,
                            "succeeded": 15, "failed": 15, "failure_rate": 0.5}
    assert body["schedule"] == {
        "first_at": "2026-01-06T12:00:00Z", "last_at": "2026-02-04T12:00:00Z",
        "horizon_at": "2026-02-05T12:00:00Z", "shortest_interval": 86400,
        "longest_interval": 86400, "runs_longer_than_interval": 5}
    # the document's overlap table: skip 25 5 1 0 0.00 266; queue 30 0 1 2 4.23 h 335;
    # run parallel 30 0 2 0 0.00 335; and replace, which the document does not have
    common = {"cut_short": 0, "pod_hours_lost": 0.0, "runs_past_horizon": 0}
    assert policy_rows(body) == {
        "skip": {"setting": "forbid", "started": 25, "skipped": 5, "completed": 25, "lost": 5,
                 "max_concurrent": 1, "max_queue": 0, "average_delay": 0.0, "max_delay": 0,
                 "pod_hours": 266.0, "pod_seconds": 266 * 3600, "pod_seconds_lost": 0,
                 **common},
        "queue": {"setting": None, "started": 30, "skipped": 0, "completed": 30, "lost": 0,
                  "max_concurrent": 1, "max_queue": 2, "average_delay": 15240.0,  # 4.23 h
                  "max_delay": 33 * 3600, "pod_hours": 335.0, "pod_seconds": 335 * 3600,
                  "pod_seconds_lost": 0, **common},
        "run parallel": {"setting": "allow", "started": 30, "skipped": 0, "completed": 30,
                         "lost": 0, "max_concurrent": 2, "max_queue": 0, "average_delay": 0.0,
                         "max_delay": 0, "pod_hours": 335.0, "pod_seconds": 335 * 3600,
                         "pod_seconds_lost": 0, **common},
        # the 31, 50, 51, 47 and 37 h runs are ended after 24 h each: 120 pod-hours
        # spent on runs that never completed, 7+26+27+23+13 = 96 h never run
        "replace": {"setting": "replace", "started": 30, "skipped": 0, "cut_short": 5,
                    "completed": 25, "lost": 5, "max_concurrent": 1, "max_queue": 0,
                    "average_delay": 0.0, "max_delay": 0, "pod_hours": 239.0,
                    "pod_hours_lost": 120.0, "runs_past_horizon": 0,
                    "pod_seconds": 239 * 3600, "pod_seconds_lost": 120 * 3600}}
    # the document's attempt table (19/27/29 nights at p = 0.5), expectations beside it
    assert body["attempt_limits"] == {"failure_rate": 0.5, "seed": 20260813, "nights": 30,
                                      "rows": [
        {"limit": 1, "current": True, "completed": 19, "failed": 11, "attempts": 30,
         "wasted": 11, "leftover_pods": 11,
         "expected": {"p_night_completes": 0.5, "attempts_per_night": 1.0, "completed": 15.0,
                      "failed": 15.0, "attempts": 30.0, "wasted": 15.0}},
        {"limit": 3, "current": False, "completed": 27, "failed": 3, "attempts": 49,
         "wasted": 22, "leftover_pods": 22,
         "expected": {"p_night_completes": 0.875, "attempts_per_night": 1.75,
                      "completed": 26.25, "failed": 3.75, "attempts": 52.5, "wasted": 26.25}},
        {"limit": 6, "current": False, "completed": 29, "failed": 1, "attempts": 54,
         "wasted": 25, "leftover_pods": 25,
         "expected": {"p_night_completes": 0.9844, "attempts_per_night": 1.97,
                      "completed": 29.53, "failed": 0.47, "attempts": 59.06,
                      "wasted": 29.53}}]}
    # the document's startup-window table for its 3-night outage
    row = lambda w, up, drop, skip, queue, par: {  # noqa: E731
        "window": w, "made_up": up, "dropped": drop, "ran_under_skip": skip,
        "ran_under_queue": queue, "ran_under_parallel": par}
    assert body["startup_window"] == {"missed_streak": 3, "rows": [
        row(0, 0, 3, 0, 0, 0), row(1, 1, 2, 1, 1, 1), row(3, 3, 0, 1, 3, 3)]}
    # the document's choice: no missing night, no two writers -> queue at 4.23 h
    rec = body["recommendation"]
    assert (rec["recommended"], rec["setting"], rec["current"], rec["mismatch"]) == (
        "queue", None, "allow", True)
    assert "no CronJob concurrencyPolicy gives" in rec["reason"]
    assert "runs start 15240.00 s late on average (at most 118800 s), up to 2 waiting" \
        in rec["reason"]
    assert rec["why_not"] == [
        {"policy": "skip", "reason": "the job cannot lose a run: skip leaves 5 of 30 runs "
                                     "unprocessed"},
        {"policy": "run parallel", "reason": "runs must not write at once: run parallel has "
                                             "up to 2 at once"},
        {"policy": "replace", "reason": "the job cannot lose a run: replace cuts 5 of 30 "
                                        "runs short (120.00 pod-hours lost)"}]
    assert rec["warnings"] == []
    m.refresh_from_db()
    assert m.concurrency == "allow"  # shown, never changed


@pytest.mark.parametrize("query,recommended,setting,mismatch", [
    ("", "queue", None, True),
    ("?parallel_safe=true", "run parallel", "allow", False),
    ("?can_skip=true&parallel_safe=1", "run parallel", "allow", False),
    # skip and replace both complete 25 of 30: the tie goes to skip
    ("?can_skip=yes", "skip", "forbid", True),
])
def test_the_recommendation_follows_what_the_job_can_bear(api, make_monitor, query,
                                                          recommended, setting, mismatch):
    m = documents_monitor(make_monitor)
    body = api.get(f"/api/v1/monitors/{m.pk}/advice/{query}").json()
    rec = body["recommendation"]
    assert (rec["recommended"], rec["setting"], rec["current"], rec["mismatch"]) == (
        recommended, setting, "allow", mismatch)
    assert (body["can_skip"], body["parallel_safe"]) == ("can_skip" in query,
                                                        "parallel_safe" in query)


def test_mismatch_is_against_the_monitors_own_setting(api, make_monitor):
    m = documents_monitor(make_monitor, concurrency="forbid")
    rec = api.get(f"/api/v1/monitors/{m.pk}/advice/?can_skip=true").json()["recommendation"]
    assert (rec["recommended"], rec["current"], rec["mismatch"]) == ("skip", "forbid", False)
    rec = api.get(f"/api/v1/monitors/{m.pk}/advice/?parallel_safe=true").json()[
        "recommendation"]
    assert (rec["recommended"], rec["current"], rec["mismatch"]) == (
        "run parallel", "forbid", True)
    m.refresh_from_db()
    assert m.concurrency == "forbid"


def test_runs_within_the_interval_keep_the_current_setting(api, make_monitor):
    m = make_monitor(period=3600 * S, concurrency="replace")
    add_runs(m, [600 + 60 * i for i in range(25)], every=H)
    body = api.get(f"/api/v1/monitors/{m.pk}/advice/").json()
    rows = policy_rows(body)
    assert {p: (r["started"], r["lost"], r["max_concurrent"], r["average_delay"], r["pod_hours"])
            for p, r in rows.items()} == {p: (25, 0, 1, 0.0, 9.17) for p in advisor.POLICIES}
    assert body["schedule"]["runs_longer_than_interval"] == 0
    assert body["recommendation"] == {
        "recommended": "replace", "setting": "replace", "current": "replace",
        "mismatch": False, "why_not": [], "warnings": [],
        "reason": "runs finish within the interval: the longest run (2040 s) ends before the "
                  "next one is due (shortest interval 3600 s), so skip, queue, run parallel "
                  "and replace all start every run on time, one at a time; the current "
                  "setting (replace) is fine"}


def test_thin_data_says_so_and_advises_nothing(api, make_monitor, settings):
    m = make_monitor(period=3600 * S)
    add_runs(m, [7200] * 19, every=H)
    resp = api.get(f"/api/v1/monitors/{m.pk}/advice/")
    assert resp.status_code == 200
    body = resp.json()
    assert (body["enough_data"], body["recommendation"]) == (False, None)
    assert body["reason"] == ("too little data to advise: 19 finished runs with a start and "
                              "an end, advice needs at least 20 (CRONRADAR_ADVICE_MIN_RUNS)")
    assert policy_rows(body)["skip"]["skipped"] == 9  # the replay is still shown
    settings.CRONRADAR_ADVICE_MIN_RUNS = 19
    assert api.get(f"/api/v1/monitors/{m.pk}/advice/").json()["enough_data"] is True


def test_a_monitor_without_runs(api, make_monitor):
    m = make_monitor(kind="cron", schedule="0 3 * * *", period=None)
    body = api.get(f"/api/v1/monitors/{m.pk}/advice/").json()
    assert (body["enough_data"], body["recommendation"], body["runs"]["failure_rate"]) == (
        False, None, None)
    assert body["schedule"] == {"first_at": None, "last_at": None, "horizon_at": None,
                                "shortest_interval": None, "longest_interval": None,
                                "runs_longer_than_interval": 0}
    assert [r["started"] for r in body["policies"]] == [0, 0, 0, 0]
    assert [r["average_delay"] for r in body["policies"]] == [None, None, None, None]
    assert body["attempt_limits"]["rows"] == []
    assert body["startup_window"]["rows"][0]["window"] == 0


def test_the_observed_runs_are_the_last_n_that_started_and_ended(api, make_monitor, settings):
    settings.CRONRADAR_ADVICE_RUNS = 5
    settings.CRONRADAR_ADVICE_MIN_RUNS = 1
    m = make_monitor(period=3600 * S)
    add_runs(m, [10, 20, 30, 40, 50, 60, 70],
             ["succeeded", "failed", "failed", "stuck", "replaced", "succeeded", "failed"],
             every=H)
    Run.objects.create(monitor=m, slot_at=NOW - H, started_at=NOW - H, outcome="running")
    Run.objects.create(monitor=m, slot_at=NOW - 2 * H, ended_at=NOW, outcome="failed")  # no start
    runs = api.get(f"/api/v1/monitors/{m.pk}/advice/").json()["runs"]
    assert runs == {"observed": 5, "minimum": 1, "durations": [30, 40, 50, 60, 70],
                    "longest": 70, "succeeded": 1, "failed": 2, "failure_rate": 0.6667}


def test_the_missed_streak_is_the_newest_slots_written_off(api, make_monitor):
    m = make_monitor(period=3600 * S)
    add_runs(m, [60] * 3, missed=2, every=H)
    Run.objects.create(monitor=m, slot_at=NOW - 2 * H, outcome="unknown")
    body = api.get(f"/api/v1/monitors/{m.pk}/advice/").json()
    assert body["startup_window"]["missed_streak"] == 3
    assert [r["window"] for r in body["startup_window"]["rows"]] == [0, 1, 3]
    Run.objects.create(monitor=m, slot_at=NOW - H, started_at=NOW - H, outcome="running")
    body = api.get(f"/api/v1/monitors/{m.pk}/advice/").json()
    assert body["startup_window"] == {"missed_streak": 0, "rows": [
        {"window": w, "made_up": 0, "dropped": 0, "ran_under_skip": 0, "ran_under_queue": 0,
         "ran_under_parallel": 0} for w in (0, 1)]}


def test_the_attempt_table_adds_the_monitors_max_attempts(api, make_monitor):
    m = make_monitor(period=3600 * S, max_attempts=2)
    add_runs(m, [60] * 20, ["failed"] + ["succeeded"] * 3 + ["failed"] + ["succeeded"] * 15,
             every=H)
    attempts = api.get(f"/api/v1/monitors/{m.pk}/advice/").json()["attempt_limits"]
    assert (attempts["failure_rate"], attempts["nights"]) == (0.1, 20)
    assert [(r["limit"], r["current"]) for r in attempts["rows"]] == [
        (1, False), (2, True), (3, False), (6, False)]
    # p = 0.1: P = 1 - 0.1^L, attempts per night (1 - 0.1^L) / 0.9
    assert [r["expected"] for r in attempts["rows"]] == [
        {"p_night_completes": 0.9, "attempts_per_night": 1.0, "completed": 18.0,
         "failed": 2.0, "attempts": 20.0, "wasted": 2.0},
        {"p_night_completes": 0.99, "attempts_per_night": 1.1, "completed": 19.8,
         "failed": 0.2, "attempts": 22.0, "wasted": 2.2},
        {"p_night_completes": 0.999, "attempts_per_night": 1.11, "completed": 19.98,
         "failed": 0.02, "attempts": 22.2, "wasted": 2.22},
        {"p_night_completes": 1.0, "attempts_per_night": 1.11, "completed": 20.0,
         "failed": 0.0, "attempts": 22.22, "wasted": 2.22}]
    for r in attempts["rows"]:  # the simulation's own bookkeeping
        assert r["completed"] + r["failed"] == 20
        assert r["wasted"] == r["attempts"] - r["completed"] == r["leftover_pods"]


def test_a_dst_night_is_a_23_hour_interval(api, make_monitor, monkeypatch):
    """``0 3 * * *`` in Europe/Berlin: 03:00 CET is 02:00 UTC until 2026-03-28, 03:00
    CEST is 01:00 UTC from 2026-03-29: that one interval is 23 h. Runs of 23.5 h fit
    every night but that one."""
    now = datetime(2026, 3, 20, 12, 0, tzinfo=UTC)
    monkeypatch.setattr(timezone, "now", lambda: now)
    m = make_monitor(kind="cron", schedule="0 3 * * *", timezone="Europe/Berlin",
                     period=None, concurrency="forbid")
    add_runs(m, [84600] * 20)
    body = api.get(f"/api/v1/monitors/{m.pk}/advice/").json()
    assert body["schedule"] == {
        "first_at": "2026-03-21T02:00:00Z", "last_at": "2026-04-09T01:00:00Z",
        "horizon_at": "2026-04-10T01:00:00Z", "shortest_interval": 23 * 3600,
        "longest_interval": 24 * 3600, "runs_longer_than_interval": 1}
    rows = policy_rows(body)
    assert (rows["skip"]["skipped"], rows["replace"]["cut_short"],
            rows["run parallel"]["max_concurrent"]) == (1, 1, 2)
    # the 2026-03-28 run ends at 01:30 UTC, half an hour after the 03-29 run is due
    assert (rows["queue"]["average_delay"], rows["queue"]["max_delay"],
            rows["queue"]["max_queue"]) == (90.0, 1800, 1)
    assert rows["replace"]["pod_hours_lost"] == 23.0
    # the same runs in UTC never overlap
    Monitor.objects.filter(pk=m.pk).update(timezone="UTC")
    body = api.get(f"/api/v1/monitors/{m.pk}/advice/").json()
    assert body["schedule"]["runs_longer_than_interval"] == 0
    assert body["recommendation"]["recommended"] == "skip"  # forbid kept: it is fine


def test_fire_times_follow_the_zone_both_ways():
    spring = advisor.replay_schedule(kind="cron", expr="0 3 * * *", tz="Europe/Berlin",
                                     semantics="debian", period=None,
                                     now=datetime(2026, 3, 27, tzinfo=UTC), runs=3)
    assert spring.intervals == (86400.0, 82800.0, 86400.0)
    autumn = advisor.replay_schedule(kind="cron", expr="0 3 * * *", tz="Europe/Berlin",
                                     semantics="debian", period=None,
                                     now=datetime(2026, 10, 23, tzinfo=UTC), runs=3)
    assert autumn.intervals == (86400.0, 90000.0, 86400.0)
    assert autumn.offsets == (0.0, 86400.0, 176400.0) and autumn.horizon == 262800.0
    every = advisor.replay_schedule(kind="interval", expr="", tz="UTC", semantics="debian",
                                    period=90 * S, now=NOW, runs=2)
    assert (every.fire_times, every.horizon_at) == ((NOW + 90 * S, NOW + 180 * S),
                                                   NOW + 270 * S)


def test_replace_is_chosen_when_it_completes_more_runs_than_skip():
    """One 2.5 h run on an hourly job: skip drops the two runs due while it runs;
    replace cuts it after an hour and loses only it."""
    durations = [600] * 20
    durations[5] = 9000
    kw = dict(kind="interval", expr="", tz="UTC", semantics="debian", period=H,
              concurrency="forbid", max_attempts=1, durations=durations, succeeded=20,
              failed=0, missed_streak=0, now=NOW, min_runs=20)
    advice = advisor.advise(**kw, can_skip=True)
    o = {r.policy: r for r in advice.policies}
    assert (o["skip"].completed, o["replace"].completed) == (18, 19)
    assert (o["replace"].cut_short, o["replace"].pod_hours_lost) == (1, 1.0)
    rec = advice.recommendation
    assert (rec.recommended, rec.setting, rec.mismatch) == ("replace", "replace", True)
    assert {r.policy: r.reason for r in rec.why_not} == {
        "skip": "skip leaves 2 of 20 runs unprocessed: 18 completed, fewer than replace's 19",
        "queue": "queue keeps every run but costs the delay: runs start 390.00 s late on "
                 "average (at most 5400 s), up to 2 waiting at once",  # 5400 + 2400 over 20
        "run parallel": "runs must not write at once: run parallel has up to 2 at once"}
    assert rec.reason == (
        "1 of 20 runs are longer than the interval; runs must not write at once (rules out "
        "run parallel) and the job may lose a run, so replace (replace) completes the most "
        "runs with one writer and no delay: 19 of 20 (replace cuts 1 of 20 runs short (1.00 "
        "pod-hours lost)); queue would keep all 20 at the cost of the delay")
    assert advisor.advise(**kw).recommendation.recommended == "queue"


def test_a_queue_that_does_not_empty_is_warned_about():
    kw = dict(kind="interval", expr="", tz="UTC", semantics="debian", period=H,
              concurrency="allow", max_attempts=1, durations=[5400] * 20, succeeded=20,
              failed=0, missed_streak=0, now=NOW, min_runs=20)
    rec = advisor.advise(**kw).recommendation
    assert rec.recommended == "queue"
    assert rec.warnings == [
        "the queue does not empty: 6 runs start past the horizon, so the delay grows with "
        "every long run; no policy keeps every run with one writer: the runs must get "
        "shorter or the schedule sparser"]


def test_bad_flags_are_400s_and_the_route_only_reads(api, make_monitor):
    m = make_monitor()
    url = f"/api/v1/monitors/{m.pk}/advice/"
    assert api.get(url + "?can_skip=maybe").json() == {"can_skip": ["must be true or false"]}
    assert api.get(url + "?parallel_safe=2").status_code == 400
    assert api.post(url).status_code == 405
    assert api.get("/api/v1/monitors/999999/advice/").status_code == 404
    assert APIClient().get(url).status_code == 401


def test_viewers_and_read_only_keys_may_read_it(project, make_monitor):
    m = documents_monitor(make_monitor)
    url = f"/api/v1/monitors/{m.pk}/advice/"
    viewer = as_person(person("vera", project.organisation, "viewer"))
    read_only = as_key(ApiKey.issue(project, "ro", read_only=True)[1])
    answers = [c.get(url) for c in (viewer, read_only)]
    assert [a.status_code for a in answers] == [200, 200]
    assert answers[0].json() == answers[1].json()
    assert answers[0].json()["recommendation"]["recommended"] == "queue"


def test_the_schema_documents_the_answer(client):
    doc = client.get("/api/v1/schema/?format=json").json()
    op = doc["paths"]["/api/v1/monitors/{id}/advice/"]["get"]
    assert {p["name"] for p in op["parameters"]} == {"id", "can_skip", "parallel_safe"}
    advice = doc["components"]["schemas"]["Advice"]["properties"]
    assert {"enough_data", "reason", "runs", "schedule", "policies", "attempt_limits",
            "startup_window", "recommendation"} <= set(advice)
    policy = doc["components"]["schemas"]["AdvicePolicy"]["properties"]
    assert {"started", "skipped", "max_concurrent", "max_queue", "average_delay",
            "pod_hours", "cut_short", "pod_hours_lost"} <= set(policy)
    rec = doc["components"]["schemas"]["AdviceRecommendation"]["properties"]
    assert {"recommended", "setting", "current", "mismatch", "reason"} <= set(rec)
