"""Evaluator: missed / stuck / deadline / recovered, downtime, back-off, and the
batched path."""
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from alerts.models import Incident
from monitors import detections, evaluator, slots
from monitors.models import Monitor, Run
from monitors.pings import PingInput, ingest
from tests.conftest import T0, new_project, s

pytestmark = pytest.mark.django_db


def events(m):
    inc = Incident.objects.get(monitor=m)
    return inc, [(e.kind, e.at) for e in inc.events.all()]


def test_missed_after_slot_plus_grace(make_monitor):
    m = make_monitor(period=s(3), grace=s(1))
    ingest(m.pk, PingInput("success"), T0)
    m.refresh_from_db()
    assert (m.next_expected_at, m.next_evaluation_at) == (T0 + s(3), T0 + s(4))
    assert evaluator.tick(T0 + s(3.9)) == 0  # not due yet: O(due) query returns nothing
    assert not Incident.objects.exists()
    assert evaluator.tick(T0 + s(4)) == 1
    inc, evs = events(m)
    assert (inc.cause, inc.missed_count, inc.opened_at) == ("missed", 1, T0 + s(4))
    assert evs == [("opened", T0 + s(4))]
    assert list(Run.objects.filter(outcome="missed").values_list("slot_at", flat=True)) == [
        T0 + s(3)]
    m.refresh_from_db()
    assert (m.next_expected_at, m.next_evaluation_at) == (T0 + s(6), T0 + s(7))
    # the next missed slot is counted on the same incident, not a new alert
    evaluator.tick(T0 + s(7))
    inc, evs = events(m)
    assert inc.missed_count == 2 and evs == [("opened", T0 + s(4)), ("missed", T0 + s(7))]
    # a success resolves it
    ingest(m.pk, PingInput("success"), T0 + s(8))
    inc.refresh_from_db()
    assert (inc.resolved_at, inc.resolution) == (T0 + s(8), "a run succeeded")
    assert sorted(Run.objects.filter(outcome="missed").values_list("slot_at", flat=True)) == [
        T0 + s(3), T0 + s(6)]
    m.refresh_from_db()
    assert m.next_expected_at == T0 + s(11)  # interval: counted from the late ping


def test_evaluator_downtime_gives_one_incident_counting_slots(make_monitor):
    m = make_monitor(period=s(10), grace=s(2))
    ingest(m.pk, PingInput("success"), T0)
    evaluator.tick(T0 + s(1000))  # slots T0+10 .. T0+990 are overdue: 99 of them
    inc = Incident.objects.get(monitor=m)
    assert (inc.missed_count, inc.events.count()) == (99, 1)
    assert Run.objects.filter(outcome="missed").count() == 99
    m.refresh_from_db()
    assert m.next_expected_at == T0 + s(1000)


def test_cron_missed_counts_slots_in_zone(make_monitor):
    m = make_monitor(kind="cron", schedule="0 7 * * *", timezone="America/New_York",
                     grace=s(300), created=datetime(2024, 3, 8, 12, tzinfo=UTC))
    assert m.next_expected_at == datetime(2024, 3, 9, 12, tzinfo=UTC)  # 07:00 EST
    ingest(m.pk, PingInput("success"), datetime(2024, 3, 9, 12, 0, 5, tzinfo=UTC))
    m.refresh_from_db()
    assert m.next_expected_at == datetime(2024, 3, 10, 11, tzinfo=UTC)  # 07:00 EDT after DST
    evaluator.tick(datetime(2024, 3, 12, 11, 5, tzinfo=UTC))
    inc = Incident.objects.get(monitor=m)
    assert inc.missed_count == 3  # Mar 10, 11, 12 at 07:00 EDT
    assert sorted(Run.objects.filter(outcome="missed").values_list("slot_at", flat=True)) == [
        datetime(2024, 3, d, 11, tzinfo=UTC) for d in (10, 11, 12)]


def test_new_monitor_never_pinged_does_not_alert(make_monitor):
    m = make_monitor()
    assert m.next_evaluation_at is None
    assert evaluator.tick(T0 + s(3600)) == 0
    assert not Incident.objects.exists()


def test_stuck_run_past_max_runtime(make_monitor):
    m = make_monitor(period=s(60), grace=s(5), max_runtime=s(10))
    ingest(m.pk, PingInput("start"), T0 + s(60))
    evaluator.tick(T0 + s(69))
    assert not Incident.objects.exists()
    evaluator.tick(T0 + s(70))
    inc, evs = events(m)
    assert inc.cause == "stuck" and evs == [("opened", T0 + s(70))]
    assert Run.objects.get(monitor=m).outcome == "stuck"
    ingest(m.pk, PingInput("success"), T0 + s(80))  # it finally ends
    inc.refresh_from_db()
    assert inc.resolved_at == T0 + s(80)


def test_deadline_checked_even_if_run_never_ends(make_monitor):
    m = make_monitor(kind="cron", schedule="*/5 * * * *", grace=s(60), deadline=s(120),
                     created=T0 - s(1))
    ingest(m.pk, PingInput("start"), T0 + s(30))
    run = Run.objects.get(monitor=m)
    assert (run.slot_at, run.deadline_at) == (T0, T0 + s(120))
    evaluator.tick(T0 + s(120))
    inc, evs = events(m)
    assert inc.cause == "deadline" and evs == [("opened", T0 + s(120))]
    evaluator.tick(T0 + s(200))  # checked once only
    assert Incident.objects.get().events.count() == 1


def test_deadline_met_by_success(make_monitor):
    m = make_monitor(kind="cron", schedule="*/5 * * * *", grace=s(60), deadline=s(120),
                     created=T0 - s(1))
    ingest(m.pk, PingInput("start"), T0 + s(30))
    ingest(m.pk, PingInput("success"), T0 + s(90))
    evaluator.tick(T0 + s(120))
    assert not Incident.objects.exists()
    assert Run.objects.get().deadline_checked


def test_decide_is_pure():
    """decide() reads its arguments only: the monitor, the runs and the set of
    succeeded slots are the same afterwards, and calling it twice gives the same."""
    m = Monitor(kind="interval", period=s(3), grace=s(1), last_ping_at=T0,
                next_expected_at=T0 + s(3), max_runtime=s(5), deadline=s(4))
    runs = [Run(pk=1, slot_at=T0, started_at=T0, outcome="running", timeout_at=T0 + s(5),
                deadline_at=T0 + s(4)),
            Run(pk=2, slot_at=T0, started_at=T0 + s(1), outcome="running",
                timeout_at=T0 + s(6), deadline_at=T0 + s(4))]
    succeeded = set()
    before = (vars(m).copy(), [vars(r).copy() for r in runs], set(succeeded))
    first = evaluator.decide(m, runs, succeeded, T0 + s(10))
    assert (vars(m), [vars(r) for r in runs], succeeded) == before
    assert evaluator.decide(m, runs, succeeded, T0 + s(10)) == first
    assert [(x.kind, x.count) for x in first.detections] == [
        ("missed", 3), ("stuck", 1), ("deadline", 1), ("stuck", 1)]  # one deadline per slot
    assert first.missed_slots == [T0 + s(3), T0 + s(6), T0 + s(9)]
    assert (first.next_expected_at, first.stuck_runs, first.deadline_runs) == (
        T0 + s(12), [1, 2], [1, 2])
    assert evaluator.apply_to_runs(first, runs) == runs
    assert [(r.outcome, r.deadline_checked) for r in runs] == [("stuck", True)] * 2


def test_missed_count_is_exact_however_many_slots(make_monitor):
    m = make_monitor(kind="cron", schedule="* * * * *", grace=s(30), created=T0 - s(1))
    ingest(m.pk, PingInput("success"), T0)
    evaluator.tick(T0 + timedelta(days=20))  # the evaluator was away for 20 days
    inc = Incident.objects.get(monitor=m)
    # slots T0+1min .. T0+20d-1min (T0+20d is still within its grace)
    assert inc.missed_count == 20 * 1440 - 1
    assert Run.objects.filter(outcome="missed").count() == slots.MAX_RUN_ROWS
    m.refresh_from_db()
    assert m.next_expected_at == T0 + timedelta(days=20)


def test_a_monitor_that_cannot_be_evaluated_backs_off_and_says_why(make_monitor, api):
    healthy = make_monitor(period=s(3), grace=s(1))
    ingest(healthy.pk, PingInput("success"), T0)
    broken = [make_monitor(period=s(3), grace=s(1)) for _ in range(3)]
    for m in broken:  # saved around validation, as the admin could before
        ingest(m.pk, PingInput("success"), T0)
    Monitor.objects.filter(pk__in=[m.pk for m in broken]).update(
        kind="cron", schedule="61 * * * *")
    assert evaluator.tick(T0 + s(4)) == 1  # the healthy one
    assert Incident.objects.get().monitor_id == healthy.pk
    m = Monitor.objects.get(pk=broken[0].pk)
    assert m.evaluation_error.startswith("ScheduleError: bad minute field '61'")
    assert (m.evaluation_failures, m.next_evaluation_at) == (1, T0 + s(64))
    evaluator.tick(T0 + s(64))  # fails again: twice as long
    m.refresh_from_db()
    assert (m.evaluation_failures, m.next_evaluation_at) == (2, T0 + s(184))
    assert api.get(f"/api/v1/monitors/{m.pk}/").json()["evaluation_error"] == m.evaluation_error
    Monitor.objects.filter(pk=m.pk).update(kind="interval", schedule="")
    evaluator.tick(T0 + s(184))
    m.refresh_from_db()
    assert (m.evaluation_error, m.evaluation_failures) == ("", 0)


# --- the batched path (evaluate_many) writes what evaluating one by one writes ---------

def _burst(project, now):
    """Monitors of ``project`` all due at ``now`` (slot T0, grace 30 s), one of each
    kind of opening: alone, with a policy (two tiers; one delayed tier at low
    urgency), in a maintenance window (its own; a tag's), under a failure
    threshold (reached; not), with an incident open, following every channel,
    renotify, a severity, a stuck run, flapping, interval, another time zone, no
    Alerting row. Returns their ids."""
    from alerts.models import Alerting, Channel, EscalationPolicy, EscalationTier, MaintenanceWindow

    hooks = [Channel.objects.create(project=project, kind="webhook", name=f"hook-{i}",
                                    config={"url": "https://hook.test/h", "secret": "k"})
             for i in range(4)]
    policy = EscalationPolicy.objects.create(project=project, name="on-call", repeat=1)
    EscalationTier.objects.create(policy=policy, position=0, delay=s(0)).channels.set(hooks[:2])
    EscalationTier.objects.create(policy=policy, position=1, delay=s(300)).channels.set(
        hooks[2:3])
    later = EscalationPolicy.objects.create(project=project, name="later")
    EscalationTier.objects.create(policy=later, position=0, delay=s(120)).channels.set(
        hooks[3:4])
    MaintenanceWindow.objects.create(project=project, name="db nights", tag="db",
                                     schedule="0 12 * * *", duration=s(600))
    variants = ["plain", "policy", "later", "window", "threshold met", "threshold not met",
                "open", "all channels", "renotify", "severity", "stuck", "flapping",
                "interval", "berlin", "tag window", "no alerting"]
    ids = []
    for i, v in enumerate(variants):
        m = Monitor.objects.create(
            project=project, name=v, slug=f"m{i}", kind="cron", schedule="0 * * * *",
            grace=s(30), last_ping_at=T0 - s(3595), next_expected_at=T0,
            next_evaluation_at=now, tags=["db"] if v == "tag window" else [])
        ids.append(m.pk)
        if v == "interval":
            m.kind, m.schedule, m.period = "interval", "", s(1800)
        if v == "berlin":
            m.timezone, m.schedule = "Europe/Berlin", "0 13 * * *"
        m.save()
        if v == "no alerting":
            continue
        a = Alerting.objects.create(
            monitor=m, all_channels=v == "all channels",
            escalation_policy={"policy": policy, "later": later}.get(v),
            urgency="low" if v == "later" else "high",
            failure_threshold=2 if v.startswith("threshold") else 1,
            renotify=s(600) if v == "renotify" else None,
            severity="warning" if v == "severity" else "")
        a.channels.set(hooks[i % 4:i % 4 + 1])
        if v == "window":
            MaintenanceWindow.objects.create(project=project, name="mw", monitor=m,
                                             starts_at=T0, ends_at=T0 + s(3600))
        if v == "threshold met":
            Run.objects.create(monitor=m, slot_at=T0 - s(3600), outcome="failed")
        if v == "open":
            Incident.objects.create(monitor=m, cause="failed", summary="down", opened_at=T0,
                                    last_event_at=T0 + s(40), tier=0)
        if v == "stuck":
            Run.objects.create(monitor=m, slot_at=T0 - s(3600), started_at=T0 - s(3600),
                               outcome="running", timeout_at=T0 + s(10))
        if v == "flapping":
            for k in range(5):
                Incident.objects.create(monitor=m, cause="failed", summary="flap",
                                        opened_at=T0 - s(3000 - 60 * k),
                                        resolved_at=T0 - s(2990 - 60 * k))
    return ids


def _written(project) -> dict:
    """What the evaluation wrote for ``project``'s monitors, keyed by names."""
    from alerts.models import Alerting, Delivery, IncidentEvent

    mine = {"monitor__project": project}
    return {
        "monitors": sorted(Monitor.objects.filter(project=project).values_list(
            "name", "next_expected_at", "next_evaluation_at", "evaluation_error",
            "evaluation_failures")),
        "alerting": sorted(Alerting.objects.filter(**mine).values_list(
            "monitor__name", "flapping_since", "stable_check_at")),
        "runs": sorted(Run.objects.filter(**mine).values_list(
            "monitor__name", "slot_at", "started_at", "outcome", "timeout_at",
            "deadline_checked")),
        "incidents": sorted(Incident.objects.filter(**mine).values_list(
            "monitor__name", "cause", "summary", "severity", "opened_at", "resolved_at",
            "last_event_at", "missed_count", "failure_count", "tier", "round", "renotified",
            "next_escalation_at")),
        "events": sorted(
            (name, kind, at, count, message, step,
             sorted((k, str(v)) for k, v in detail.items() if k != "run"))
            for name, kind, at, count, message, step, detail in IncidentEvent.objects.filter(
                incident__monitor__project=project).values_list(
                "incident__monitor__name", "kind", "at", "count", "message", "step",
                "detail")),
        "deliveries": sorted(Delivery.objects.filter(incident__monitor__project=project)
                             .values_list("incident__monitor__name", "event__kind",
                                          "channel__name", "status", "attempts",
                                          "created_at", "next_attempt_at")),
    }


def test_a_batch_writes_what_evaluating_one_by_one_writes():
    from monitors.liveness import Liveness
    from tests.conftest import new_project

    now = T0 + s(30)
    batched, alone = new_project("batched"), new_project("alone")
    ids = _burst(batched, now)
    assert evaluator.evaluate_many(ids, now, Liveness()) == len(ids)
    for pk in _burst(alone, now):
        assert evaluator.evaluate_monitor(pk, now, Liveness()) is not None
    got, want = _written(batched), _written(alone)
    assert got == want
    opened = {e[0] for e in got["events"] if e[1] == "opened"}
    assert opened == {m[0] for m in got["monitors"]} - {"open", "threshold not met"}
    assert len(got["deliveries"]) == 18  # the others held back (a window, a delayed tier)


# --- skipped slots (concurrency: forbid) -------------------------------------------------

def runs_of_monitor(m):
    return list(Run.objects.filter(monitor=m).order_by("slot_at", "pk").values_list(
        "slot_at", "started_at", "ended_at", "outcome"))


def test_a_slot_that_comes_due_while_a_forbid_run_is_open_is_skipped(make_monitor):
    m = make_monitor(period=s(3), grace=s(1), concurrency="forbid")
    ingest(m.pk, PingInput("success"), T0)
    ingest(m.pk, PingInput("start"), T0 + s(3))  # open for 9 s: past the T0+6s and T0+9s slots
    evaluator.tick(T0 + s(7))
    inc = Incident.objects.get(monitor=m)
    assert (inc.cause, inc.severity, inc.missed_count, inc.opened_at) == (
        "skipped", "warning", 0, T0 + s(7))
    assert inc.summary == ("job-1: the 12:00:06 run was skipped: the run that started at "
                           "12:00:03 was still running")
    opened = inc.events.get(kind="opened")
    long_run = Run.objects.get(monitor=m, started_at=T0 + s(3))
    assert opened.detail == {
        "code": "still_running", "first_slot": (T0 + s(6)).isoformat(),
        "last_slot": (T0 + s(6)).isoformat(), "running_since": (T0 + s(3)).isoformat(),
        "blocking_run": long_run.pk, "skipped_count": 1, "cause": "skipped"}
    evaluator.tick(T0 + s(10))
    inc.refresh_from_db()
    assert [(e.kind, e.at, e.count) for e in inc.events.all()] == [
        ("opened", T0 + s(7), 1), ("skipped", T0 + s(10), 1)]
    ingest(m.pk, PingInput("success"), T0 + s(12))  # the long run's own success ...
    inc.refresh_from_db()
    assert inc.resolved_at is None  # ... does not make the skipped slots good
    ingest(m.pk, PingInput("start"), T0 + s(12.5))  # the next run, started after them
    evaluator.tick(T0 + s(13))
    ingest(m.pk, PingInput("success"), T0 + s(14))
    inc.refresh_from_db()
    assert (inc.resolved_at, inc.resolution) == (T0 + s(14), "a run succeeded")
    assert runs_of_monitor(m) == [
        (T0, None, T0, "succeeded"),
        (T0 + s(3), T0 + s(3), T0 + s(12), "succeeded"),
        (T0 + s(6), None, None, "skipped"), (T0 + s(9), None, None, "skipped"),
        (T0 + s(12), T0 + s(12.5), T0 + s(14), "succeeded")]
    assert Incident.objects.count() == 1


def test_a_run_that_ended_after_the_slot_but_within_its_grace_skipped_it(make_monitor):
    """Open at the slot is what counts: the run ended before the slot's grace did,
    and no run started for the slot; the next slot, with nothing open, is missed
    and raises the skipped incident (the lowest precedence) to missed."""
    m = make_monitor(period=s(3), grace=s(1), concurrency="forbid")
    ingest(m.pk, PingInput("success"), T0)
    ingest(m.pk, PingInput("start"), T0 + s(3))
    ingest(m.pk, PingInput("success"), T0 + s(6.5))
    evaluator.tick(T0 + s(7))
    inc = Incident.objects.get(monitor=m)
    assert (inc.cause, inc.severity) == ("skipped", "warning")
    evaluator.tick(T0 + s(10))
    inc.refresh_from_db()
    assert (inc.cause, inc.severity, inc.missed_count) == ("missed", "critical", 1)
    assert [(e.kind, e.message) for e in inc.events.all()] == [
        ("opened", "the 12:00:06 run was skipped: the run that started at 12:00:03 was still "
                   "running"),
        ("missed", "1 expected run did not start (grace 1s)"),
        ("escalated", "cause raised from skipped to missed, severity critical: 1 expected run "
                      "did not start (grace 1s)")]
    assert [o for *_, o in runs_of_monitor(m)] == ["succeeded", "succeeded", "skipped", "missed"]


def test_without_forbid_a_slot_while_a_run_is_open_is_missed(make_monitor):
    m = make_monitor(period=s(3), grace=s(1))
    ingest(m.pk, PingInput("success"), T0)
    ingest(m.pk, PingInput("start"), T0 + s(3))
    evaluator.tick(T0 + s(7))
    assert Incident.objects.get(monitor=m).cause == "missed"


def test_a_cron_slot_skipped_under_forbid_is_taken_over_by_a_late_run(make_monitor):
    h = timedelta(hours=1)
    m = make_monitor(kind="cron", schedule="0 * * * *", timezone="Europe/Berlin", grace=s(300),
                     concurrency="forbid", created=T0 - s(1))
    ingest(m.pk, PingInput("start"), T0 + s(5))  # 13:00:05 in Berlin, for 80 minutes
    evaluator.tick(T0 + h + s(300))
    inc = Incident.objects.get(monitor=m)
    assert (inc.cause, inc.summary) == (
        "skipped", "job-1: the 14:00 run was skipped: the run that started at 13:00:05 was "
                   "still running (Europe/Berlin time)")
    ingest(m.pk, PingInput("success"), T0 + h + s(1200))
    inc.refresh_from_db()
    assert inc.resolved_at is None
    ingest(m.pk, PingInput("start"), T0 + h + s(1800))  # late: takes over the skipped row
    ingest(m.pk, PingInput("success"), T0 + h + s(2400))
    inc.refresh_from_db()
    assert (inc.resolved_at, inc.resolution) == (T0 + h + s(2400), "a run succeeded")
    assert runs_of_monitor(m) == [(T0, T0 + s(5), T0 + h + s(1200), "succeeded"),
                                  (T0 + h, T0 + h + s(1800), T0 + h + s(2400), "succeeded")]
    assert [e.kind for e in inc.events.all()] == ["opened", "resolved"]  # no double launch



def test_forbid_with_grace_wider_than_the_gap_skips_the_slots_a_long_run_covers(make_monitor):
    m = make_monitor(kind="cron", schedule="*/5 * * * *", grace=s(600), concurrency="forbid",
                     created=T0 - s(60))
    ingest(m.pk, PingInput("start"), T0 + s(2))  # 12:00, runs for 26 minutes
    ingest(m.pk, PingInput("start"), T0 + s(602))  # 12:10 (12:05 is open too): an overlap
    m.refresh_from_db()
    assert m.next_expected_at == T0 + s(300)  # 12:05 has no run; 12:10 is claimed
    for t in (900, 1200, 1500):
        evaluator.tick(T0 + s(t))
    first, second = Run.objects.filter(monitor=m, started_at__isnull=False).order_by("pk")
    assert runs_of_monitor(m) == [(T0, T0 + s(2), None, "running"),
                                  (T0 + s(300), None, None, "skipped"),
                                  (T0 + s(600), T0 + s(602), None, "running"),
                                  (T0 + s(900), None, None, "skipped")]
    inc = Incident.objects.get(monitor=m)
    assert (inc.cause, inc.missed_count) == ("overlap", 0)  # skipped ranks lower: counted
    assert inc.events.get(kind="opened").detail == {"open_runs": [first.pk], "cause": "overlap"}
    skipped = inc.events.get(kind="skipped")
    assert (skipped.count, skipped.at, skipped.detail) == (2, T0 + s(900), {
        "code": "still_running", "first_slot": (T0 + s(900)).isoformat(),
        "last_slot": (T0 + s(900)).isoformat(), "running_since": (T0 + s(2)).isoformat(),
        "blocking_run": first.pk, "skipped_count": 1})
    ingest(m.pk, PingInput("success"), T0 + s(1550))  # closes the later-started run
    ingest(m.pk, PingInput("success"), T0 + s(1560))  # and the long one
    evaluator.tick(T0 + s(1800))  # 12:20: still open then
    assert runs_of_monitor(m)[-1] == (T0 + s(1200), None, None, "skipped")
    inc.refresh_from_db()
    assert (inc.resolved_at, inc.events.get(kind="skipped").count) == (None, 3)
    # a late start naming 12:05 takes over its skipped row; started after the skipped
    # slots, its success resolves the incident
    ingest(m.pk, PingInput("start", slot=T0 + s(300)), T0 + s(1850))
    ingest(m.pk, PingInput("success"), T0 + s(1860))
    inc.refresh_from_db()
    assert (inc.resolved_at, inc.resolution) == (T0 + s(1860), "a run succeeded")
    assert runs_of_monitor(m) == [(T0, T0 + s(2), T0 + s(1560), "succeeded"),
                                  (T0 + s(300), T0 + s(1850), T0 + s(1860), "succeeded"),
                                  (T0 + s(600), T0 + s(602), T0 + s(1550), "succeeded"),
                                  (T0 + s(900), None, None, "skipped"),
                                  (T0 + s(1200), None, None, "skipped")]
    assert [e.kind for e in inc.events.order_by("pk")] == ["opened", "skipped", "resolved"]
    m.refresh_from_db()
    assert m.next_expected_at == T0 + s(1500)


def test_skipped_counts_are_exact_however_many_slots(make_monitor):
    m = make_monitor(kind="cron", schedule="* * * * *", grace=s(30), concurrency="forbid",
                     created=T0 - s(1))
    ingest(m.pk, PingInput("start"), T0)  # hung
    evaluator.tick(T0 + timedelta(days=1))  # the evaluator was away for a day
    inc = Incident.objects.get(monitor=m)
    assert (inc.cause, inc.missed_count) == ("skipped", 0)
    assert inc.summary == ("job-1: 1439 runs were skipped, the last the 2026-01-06 11:59 run: "
                           "the run that started at 2026-01-05 12:00 was still running")
    assert inc.events.get(kind="opened").detail["skipped_count"] == 1439
    assert Run.objects.filter(outcome="skipped").count() == slots.MAX_RUN_ROWS
    assert not Run.objects.filter(outcome="missed").exists()


def test_skipped_slots_count_towards_the_failure_threshold(make_monitor):
    from alerts.models import Alerting

    m = make_monitor(period=s(3), grace=s(1), concurrency="forbid")
    Alerting.objects.filter(monitor=m).update(failure_threshold=2)
    ingest(m.pk, PingInput("success"), T0)
    ingest(m.pk, PingInput("start"), T0 + s(3))
    evaluator.tick(T0 + s(7))
    assert not Incident.objects.exists()  # one skipped slot: under the threshold
    evaluator.tick(T0 + s(10))
    assert Incident.objects.get(monitor=m).cause == "skipped"


def test_stuck_and_deadline_summaries_give_times_in_the_monitors_zone(make_monitor):
    """Times in a summary are the monitor's local time with its offset (UTC ones
    say UTC)."""
    m = make_monitor(kind="cron", schedule="*/5 * * * *", grace=s(60), deadline=s(120),
                     max_runtime=s(90), timezone="Asia/Kolkata", created=T0 - s(1))
    ingest(m.pk, PingInput("start"), T0 + s(30))
    evaluator.tick(T0 + s(120))
    inc = Incident.objects.get(monitor=m)
    stuck = inc.events.get(kind="opened").message
    deadline = inc.events.get(kind="deadline").message
    local = (T0 + s(30)).astimezone(ZoneInfo("Asia/Kolkata"))
    assert stuck == (f"run started at {local:%Y-%m-%d %H:%M:%S} Asia/Kolkata (UTC+05:30) is "
                     "still open after max_runtime 90s")
    assert deadline == (f"the run for {T0.astimezone(ZoneInfo('Asia/Kolkata')):%Y-%m-%d %H:%M:%S}"
                        " Asia/Kolkata (UTC+05:30) had not succeeded 120s after its scheduled time")
    assert detections.local_time(T0, "UTC") == f"{T0:%Y-%m-%d %H:%M:%S} UTC"


def test_oldest_due_is_the_earliest_evaluation_time_that_has_come(make_monitor):
    assert evaluator.oldest_due(T0) is None  # no monitor
    for at in (T0 - s(7), T0 - s(40), T0 + s(1)):
        Monitor.objects.filter(pk=make_monitor().pk).update(next_evaluation_at=at)
    Monitor.objects.filter(pk=make_monitor().pk).update(next_evaluation_at=None)  # paused
    assert evaluator.oldest_due(T0) == T0 - s(40)
    assert evaluator.oldest_due(T0 - s(41)) is None  # nothing due yet then
    assert evaluator.oldest_due(T0 - s(40)) == T0 - s(40)  # due at the moment itself


def test_due_monitors_are_taken_round_robin_across_organisations(make_monitor, project,
                                                                monkeypatch):
    """Organisation A's five monitors (in two projects), due first, and B's one,
    due later: a batch takes each organisation's first due monitor, then each
    one's second, ..., so B's is in the first batch, second (not after all of A's);
    the tick evaluates in that order."""
    a = [make_monitor() for _ in range(3)]
    second = project.organisation.projects.create(name="A's other project")
    a += [Monitor.objects.create(project=second, name=f"a{i}", slug=f"a{i}", period=s(3),
                                 grace=s(1)) for i in range(2)]
    other = new_project("globex")
    b = Monitor.objects.create(project=other, name="b", slug="b", period=s(3), grace=s(1))
    Monitor.objects.filter(pk__in=[m.pk for m in a]).update(next_evaluation_at=T0 - s(10))
    Monitor.objects.filter(pk=b.pk).update(next_evaluation_at=T0)
    ids = [m.pk for m in a]
    assert evaluator.fair_due(T0, 3) == [ids[0], b.pk, ids[1]]
    assert evaluator.fair_due(T0, 100) == [ids[0], b.pk, *ids[1:]]
    assert evaluator.fair_due(T0 - s(1), 100) == ids  # B's not due yet
    batches = []
    many = evaluator.evaluate_many
    monkeypatch.setattr(evaluator, "evaluate_many",
                        lambda pks, *args: batches.append(pks) or many(pks, *args))
    monkeypatch.setattr(evaluator, "BATCH", 2)
    monkeypatch.setattr(evaluator, "CHUNK", 2)
    assert evaluator.tick(T0) == 6
    assert batches == [[ids[0], b.pk], ids[1:3], ids[3:5]]


@pytest.mark.django_db
def test_a_failing_monitors_log_lines_carry_its_id(make_monitor, monkeypatch, caplog):
    from core import logs

    caplog.handler.addFilter(logs.ContextFilter())
    make_monitor(name="good")
    bad = make_monitor(name="bad")
    Monitor.objects.update(next_evaluation_at=T0)
    real = evaluator._judge

    def judge(m, *args):
        if m.pk == bad.pk:
            raise ValueError("cannot compute")
        return real(m, *args)

    monkeypatch.setattr(evaluator, "_judge", judge)
    evaluator.tick(T0 + s(1))
    said = [(r.getMessage(), r.__dict__.get("monitor")) for r in caplog.records
            if r.name == "monitors.evaluator"]
    assert said == [(f"evaluating monitor {bad.pk} failed", bad.pk)]
    assert logs.current() == {}


# --- slots whose first ping a rate limit refused ---------------------------------------

@pytest.mark.parametrize("since,until,limited", [
    (s(60.5), s(120), True),    # refused during the slot's grace
    (s(30), s(60.001), True),   # a streak that began before the slot reaches into it
    (s(70), s(120), True),      # refused at the grace's very end
    (s(70.001), s(120), False),  # refused only after the grace ended
    (s(0), s(60), False),       # the streak's last window ended at the slot
])
def test_refused_in_is_the_refusal_streak_overlapping_the_slots_grace(since, until, limited):
    monitor = Monitor(grace=s(10), refused_since=T0 + since, refused_until=T0 + until)
    assert evaluator.refused_in(monitor, T0 + s(60)) is limited


def test_a_slot_whose_first_ping_was_refused_is_unknown_not_missed(make_monitor):
    from monitors.ratelimit import Rate, Refusal, refused

    m = make_monitor(period=s(60), grace=s(10))
    ingest(m.pk, PingInput("success"), T0)  # slots at T0+60, T0+120, ...
    refused(m.pk, Refusal("monitor", Rate(1, 60), "free", T0 + s(60), T0 + s(120), 58),
            T0 + s(62))  # the job's ping at T0+62 was refused
    assert evaluator.tick(T0 + s(70)) == 1
    assert not Incident.objects.exists()
    assert list(Run.objects.filter(monitor=m, outcome="unknown")
                .values_list("slot_at", "reason")) == [(T0 + s(60), "rate_limited")]
    evaluator.tick(T0 + s(130))  # no ping refused for this one: missed
    inc, _ = events(m)
    assert (inc.cause, inc.missed_count, inc.opened_at) == ("missed", 1, T0 + s(130))
    assert list(Run.objects.filter(monitor=m, outcome="missed")
                .values_list("slot_at", "reason")) == [(T0 + s(120), "")]


def test_rate_limited_slots_never_count_in_an_outage(make_monitor, project):
    from monitors.models import LivenessSpan, OutageImpact
    from monitors.ratelimit import Rate, Refusal, refused

    m = make_monitor(period=s(5), grace=s(2))
    ingest(m.pk, PingInput("success"), T0)  # slots at T0+5, +10, ..., +25
    LivenessSpan.objects.create(component="web", started_at=T0 - s(100), last_seen_at=T0 + s(1))
    LivenessSpan.objects.create(component="web", started_at=T0 + s(16),
                                last_seen_at=T0 + s(60))  # down from T0+1 to T0+16
    # (an outage's window covers the grace ends until T0+26: slots 5 to 20)
    refused(m.pk, Refusal("organisation", Rate(1, 60), "free", T0 + s(24), T0 + s(27), 2),
            T0 + s(25.5))
    evaluator.tick(T0 + s(28))
    runs = list(Run.objects.filter(monitor=m).exclude(outcome="succeeded").order_by("slot_at")
                .values_list("slot_at", "outcome", "reason"))
    assert runs == [(T0 + s(5), "unknown", "outage"), (T0 + s(10), "unknown", "outage"),
                    (T0 + s(15), "unknown", "outage"), (T0 + s(20), "unknown", "outage"),
                    (T0 + s(25), "unknown", "rate_limited")]
    assert OutageImpact.objects.get(project=project).unknown_slots == 4
    assert not Incident.objects.exists()


def test_the_migration_gives_the_unknown_runs_so_far_reason_outage(make_monitor):
    import importlib
    from types import SimpleNamespace

    from django.apps import apps
    from django.db import connection

    migration = importlib.import_module("monitors.migrations.0020_run_reason")
    m = make_monitor()
    for outcome in ("unknown", "missed", "succeeded"):
        Run.objects.create(monitor=m, slot_at=T0, outcome=outcome)
    migration.outage_reason(apps, SimpleNamespace(connection=connection))
    assert sorted(Run.objects.values_list("outcome", "reason")) == [
        ("missed", ""), ("succeeded", ""), ("unknown", "outage")]


def test_a_batch_checks_foreign_keys_per_statement_and_defers_them_again(make_monitor):
    """PostgreSQL: inside a batch's transaction a row whose foreign key points
    nowhere fails at its statement (not at COMMIT); after the batch, inside an
    enclosing transaction, the checks are deferred again, as Django made them."""
    from django.db import IntegrityError, connection, transaction
    if connection.vendor != "postgresql":
        pytest.skip("SET CONSTRAINTS: PostgreSQL")
    monitor = make_monitor()
    nowhere = Monitor.objects.order_by("-pk").values_list("pk", flat=True).first() + 1000
    with transaction.atomic():
        with evaluator._batch_transaction():
            with pytest.raises(IntegrityError), transaction.atomic():
                Run.objects.create(monitor_id=nowhere, slot_at=T0, outcome="missed")
            Run.objects.create(monitor=monitor, slot_at=T0, outcome="missed")
        orphan = Run.objects.create(monitor_id=nowhere, slot_at=T0, outcome="missed")
        orphan.delete()  # deferred: checked at COMMIT, by when the row is gone
    assert list(Run.objects.values_list("monitor_id", flat=True)) == [monitor.pk]
