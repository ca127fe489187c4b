"""CronRadar's own downtime: slots whose grace ended while the ping endpoint was
down are ``unknown``, not ``missed``, and each project gets one outage summary."""
import json
from datetime import timedelta

import httpx
import pytest
import respx

from alerts.models import Channel, Delivery, Incident, IncidentEvent
from monitors import evaluator, liveness
from monitors.liveness import FOREVER, Liveness, Window
from monitors.models import LivenessSpan, Outage, OutageImpact, Run
from monitors.pings import PingInput, ingest
from tests.conftest import T0, send_due

pytestmark = pytest.mark.django_db
HOOK = "https://hook.test/cr"
GAP = SETTLE = timedelta(seconds=10)
MICRO = timedelta(microseconds=1)


def s(n):
    return timedelta(seconds=n)


def web_alive(start, end):
    """The web tier beat every second from ``start`` to ``end`` (seconds after T0)."""
    LivenessSpan.objects.create(component="web", started_at=T0 + s(start), last_seen_at=T0 + s(end))


# --- reading the spans -----------------------------------------------------------------

def test_no_spans_means_always_up():
    assert Liveness.from_spans([], T0, GAP, SETTLE) == Liveness((), FOREVER)


def test_a_gap_longer_than_the_threshold_is_an_outage():
    alive = Liveness.from_spans([(T0 - s(100), T0 + s(1)), (T0 + s(16), T0 + s(30))],
                                T0 + s(30.5), GAP, SETTLE)
    assert alive == Liveness((Window(T0 + s(1), T0 + s(16), T0 + s(1), T0 + s(26)),),
                             T0 + s(30))
    assert alive.window_at(T0 + s(26)) is not None and alive.window_at(T0 + s(27)) is None


def test_short_gaps_and_overlapping_spans_are_no_outage():
    spans = [(T0, T0 + s(5)), (T0 + s(3), T0 + s(12)), (T0 + s(20), T0 + s(40))]  # 8 s silent
    assert Liveness.from_spans(spans, T0 + s(40), GAP, SETTLE) == Liveness((), T0 + s(40))


def test_a_silent_web_tier_is_an_outage_going_on():
    alive = Liveness.from_spans([(T0, T0 + s(1))], T0 + s(20), GAP, SETTLE)
    assert alive == Liveness((Window(T0 + s(1), None, T0 + s(1), None),), T0 + s(20))


def test_an_outage_right_after_another_does_not_count_a_slot_twice():
    spans = [(T0, T0 + s(1)), (T0 + s(20), T0 + s(22)), (T0 + s(40), T0 + s(50))]
    alive = Liveness.from_spans(spans, T0 + s(50), GAP, SETTLE)
    assert [(w.start, w.end) for w in alive.windows] == [
        (T0 + s(1), T0 + s(22) - MICRO), (T0 + s(22), T0 + s(50))]


def test_beat_extends_the_latest_span_or_starts_a_new_one():
    liveness.beat("web", T0)
    liveness.beat("web", T0 + s(1))
    liveness.beat("web", T0 + s(12))  # 11 s of silence
    assert list(LivenessSpan.objects.order_by("pk").values_list("started_at", "last_seen_at")) == [
        (T0, T0 + s(1)), (T0 + s(12), T0 + s(12))]



def test_last_beat_is_the_latest_span_end_of_that_component():
    assert liveness.last_beat("evaluator") is None  # never beat
    LivenessSpan.objects.create(component="evaluator", started_at=T0, last_seen_at=T0 + s(5))
    LivenessSpan.objects.create(component="evaluator", started_at=T0 + s(20),
                                last_seen_at=T0 + s(25))
    LivenessSpan.objects.create(component="evaluator", started_at=T0 + s(1),
                                last_seen_at=T0 + s(8))  # an older span, written later
    LivenessSpan.objects.create(component="web", started_at=T0, last_seen_at=T0 + s(90))
    assert liveness.last_beat("evaluator") == T0 + s(25)
    assert liveness.last_beat("web") == T0 + s(90)

# --- the evaluator -----------------------------------------------------------------------

@pytest.fixture
def http():
    with respx.mock(assert_all_called=False) as router:
        router.post(HOOK).mock(return_value=httpx.Response(200))
        yield router


def test_cronradar_down_15s_gives_unknown_slots_and_one_summary(project, make_monitor, http):
    """The issue's storm: two 5 s monitors (grace 2), CronRadar stopped for 15 s while
    the jobs keep trying, then restarted."""
    Channel.objects.create(project=project, kind="webhook", config={"url": HOOK, "secret": "k"})
    monitors = [make_monitor(period=s(5), grace=s(2), all_channels=True) for _ in range(2)]
    web_alive(-100, 1)  # up until T0+1, down until T0+16
    for m in monitors:
        ingest(m.pk, PingInput("success"), T0)
    for t in range(16, 61):
        liveness.beat("web", T0 + s(t))
        if t % 5 == 0 and t >= 20:  # the jobs' pings get through again
            for m in monitors:
                ingest(m.pk, PingInput("success"), T0 + s(t))
        evaluator.tick(T0 + s(t) + s(0.5))
        send_due(T0 + s(t) + s(0.5))
    assert not Incident.objects.exists()
    for m in monitors:
        assert list(Run.objects.filter(monitor=m, outcome="unknown").order_by("slot_at")
                    .values_list("slot_at", flat=True)) == [T0 + s(5), T0 + s(10), T0 + s(15)]
        assert not Run.objects.filter(monitor=m, outcome="missed").exists()
    outage = Outage.objects.get()
    assert (outage.started_at, outage.ended_at) == (T0 + s(1), T0 + s(16))
    assert outage.summarized_at == T0 + s(36.5)  # settled: end + 2 x threshold
    [call] = http.calls
    assert json.loads(call.request.content) == {
        "schema": "cronradar.outage.v2", "event": "outage.summary",
        "event_id": IncidentEvent.objects.get(kind="outage.summary", incident=None).pk,
        "occurred_at": "2026-01-05T12:00:36.500000Z",
        "outage": {"started_at": "2026-01-05T12:00:01Z", "ended_at": "2026-01-05T12:00:16Z",
                   "unknown_slots": 6},
        "project": "acme"}
    assert Delivery.objects.get().status == "delivered"


def test_a_stopped_evaluator_with_live_pings_still_reports_misses(make_monitor):
    m = make_monitor(period=s(5), grace=s(2))
    ingest(m.pk, PingInput("success"), T0)
    web_alive(-100, 30)  # the ping endpoint was up the whole time
    evaluator.tick(T0 + s(30))  # the first tick in 30 s
    incident = Incident.objects.get()
    assert (incident.cause, incident.missed_count) == ("missed", 5)
    assert not Run.objects.filter(outcome="unknown").exists()


def test_a_grace_end_after_the_last_web_beat_waits_for_the_next_one(make_monitor):
    m = make_monitor(period=s(5), grace=s(2))
    ingest(m.pk, PingInput("success"), T0)
    web_alive(-100, 6.5)
    evaluator.tick(T0 + s(7.5))  # grace ended at T0+7; the web tier was last seen at 6.5
    m.refresh_from_db()
    assert not Incident.objects.exists()
    assert (m.next_expected_at, m.next_evaluation_at) == (T0 + s(5), T0 + s(8.5))
    liveness.beat("web", T0 + s(8.4))
    evaluator.tick(T0 + s(8.5))
    assert Incident.objects.get().opened_at == T0 + s(8.5)


def test_during_an_outage_going_on_slots_are_unknown_and_summarized_after_it(make_monitor,
                                                                           project):
    m = make_monitor(period=s(5), grace=s(2))
    ingest(m.pk, PingInput("success"), T0)
    web_alive(-100, 1)
    evaluator.tick(T0 + s(30))  # the evaluator runs, the web tier does not
    assert not Incident.objects.exists()
    assert Run.objects.filter(outcome="unknown").count() == 5  # grace ends 7 .. 27
    outage = Outage.objects.get()
    assert (outage.ended_at, outage.summarized_at) == (None, None)
    assert OutageImpact.objects.get(outage=outage, project=project).unknown_slots == 5
    web_alive(40, 60)  # back at T0+40
    evaluator.tick(T0 + s(59))
    assert Outage.objects.get().summarized_at is None  # 2 x threshold after the end: 60
    evaluator.tick(T0 + s(60))
    assert Outage.objects.get().ended_at == T0 + s(40)
    assert Outage.objects.get().summarized_at == T0 + s(60)


def test_late_pings_take_over_unknown_slots(make_monitor):
    m = make_monitor(kind="cron", schedule="* * * * *", grace=s(10), created=T0 - s(1))
    ingest(m.pk, PingInput("success"), T0 + s(1))
    web_alive(-100, 50)
    web_alive(65, 100)
    evaluator.tick(T0 + s(76))  # the T0+60 slot's grace ended at 70, 5 s after the outage
    assert list(Run.objects.order_by("slot_at").values_list("slot_at", "outcome")) == [
        (T0, "succeeded"), (T0 + s(60), "unknown")]
    ingest(m.pk, PingInput("success"), T0 + s(80))  # its retried ping, late
    assert list(Run.objects.order_by("slot_at").values_list("slot_at", "outcome")) == [
        (T0, "succeeded"), (T0 + s(60), "succeeded")]


def test_a_database_outage_in_a_celery_task_is_one_line_not_a_traceback(monkeypatch, caplog):
    """monitors.tasks.evaluate and alerts.tasks.deliver (run by Celery): an
    unreachable database inside is logged once, the task returns None."""
    from django.db import OperationalError

    from alerts import senders
    from alerts import tasks as alert_tasks
    from core import logs
    from monitors import evaluator, tasks

    def down(*args):
        raise OperationalError("connection refused")

    monkeypatch.setattr(logs, "database", logs.DatabaseDown())
    monkeypatch.setattr(evaluator, "tick", down)
    monkeypatch.setattr(senders, "deliver_in_burst", down)
    assert [tasks.evaluate.apply().get(), alert_tasks.deliver.apply().get(),
            tasks.evaluate.apply().get()] == [None, None, None]
    assert [(r.name, r.getMessage().split(" since ")[0], bool(r.exc_info))
            for r in caplog.records if "database" in r.getMessage()] == [
        ("monitors.tasks", "database unreachable", False)]
