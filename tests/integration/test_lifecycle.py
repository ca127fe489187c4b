"""An incident never dangles, and an edit never forgives: deletion, channel removal,
pause/resume, edits of schedules and limits, ordered and bounded timelines.

Outgoing requests are answered by respx; ``sent`` first runs the delivery engine
on the test's thread (``send_due``). Nothing leaves the process.
"""
import json
import random
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import httpx
import pytest
import respx
from django.db import connections
from django.utils import timezone

from alerts.models import Channel, Delivery, Incident, IncidentEvent
from monitors import evaluator
from monitors.models import Monitor, PingLog, Run
from monitors.pings import PingInput, ingest
from tests.conftest import T0, send_due

pytestmark = pytest.mark.django_db
commits = pytest.mark.django_db(transaction=True)
PD = "https://pd.test/v2/enqueue"
HOOK = "https://hook.test/cr"


def s(n):
    return timedelta(seconds=n)


@pytest.fixture
def http():
    with respx.mock(assert_all_called=False) as router:
        router.post(PD).mock(return_value=httpx.Response(202))
        router.post(HOOK).mock(return_value=httpx.Response(200))
        yield router


def sent(http, url):
    """(event_action or webhook event, dedup_key) of each request sent to ``url``,
    once every delivery due by now has been sent."""
    send_due()
    out = []
    for call in http.calls:
        if str(call.request.url) == url:
            body = json.loads(call.request.content)
            if "event_action" in body:
                out.append((body["event_action"], body["dedup_key"]))
            else:
                out.append((body["event"], body["incident"]["dedup_key"]))
    return out


@pytest.fixture
def pagerduty(project):
    return Channel.objects.create(project=project, kind="pagerduty", name="pd",
                                  config={"routing_key": "R", "events_url": PD})


@pytest.fixture
def hook(project):
    return Channel.objects.create(project=project, kind="webhook", name="hook",
                                  config={"url": HOOK, "secret": "k"})


# --- deletion ----------------------------------------------------------------------------

def test_deleting_a_monitor_resolves_its_incident_on_every_notified_channel(
        api, http, pagerduty, client):
    m = api.post("/api/v1/monitors/", {"name": "db", "period": 60, "grace": 5},
                 format="json").json()  # channels: "all"
    assert client.get(f"/ping/{m['uuid']}/2").status_code == 200
    incident = Incident.objects.get()
    assert sent(http, PD) == [("trigger", incident.dedup_key)]

    assert api.delete(f"/api/v1/monitors/{m['id']}/").status_code == 204
    assert sent(http, PD) == [("trigger", incident.dedup_key), ("resolve", incident.dedup_key)]
    incident.refresh_from_db()
    assert incident.resolution == "monitor deleted" and incident.resolved_at is not None
    assert [e.kind for e in incident.events.all()] == ["opened", "resolved"]
    # gone for the API and the ping URL at once; the rows go once nothing is pending
    assert api.get(f"/api/v1/monitors/{m['id']}/").status_code == 404
    assert client.get(f"/ping/{m['uuid']}").status_code == 404
    assert api.get("/api/v1/incidents/").json() == []
    assert Monitor.objects.filter(pk=m["id"]).exists()
    evaluator.tick(timezone.now())
    assert not Monitor.objects.filter(pk=m["id"]).exists()
    assert not Incident.objects.exists()


def test_a_deleted_monitor_stays_until_its_resolve_is_done(make_monitor, pagerduty, http):
    m = make_monitor(channels=[pagerduty])
    ingest(m.pk, PingInput("fail"), T0)
    evaluator.delete(m.pk, T0 + s(1))
    send_due(T0 + s(1))
    resolve = Delivery.objects.get(event__kind="resolved")
    Delivery.objects.filter(pk=resolve.pk).update(status="pending")  # waiting to retry
    evaluator.tick(T0 + s(2))
    m.refresh_from_db()
    assert (m.deleted_at, m.next_evaluation_at) == (T0 + s(1), T0 + s(7))
    Delivery.objects.filter(pk=resolve.pk).update(status="failed")  # abandoned counts as done
    evaluator.tick(T0 + s(7))
    assert not Monitor.objects.filter(pk=m.pk).exists()


def test_a_deleted_monitors_slug_can_be_used_again(api):
    first = api.post("/api/v1/monitors/", {"name": "a", "period": 60, "grace": 1},
                     format="json").json()
    api.delete(f"/api/v1/monitors/{first['id']}/")
    again = api.post("/api/v1/monitors/", {"name": "a", "period": 60, "grace": 1}, format="json")
    assert again.status_code == 201 and again.json()["slug"] == "a"


# --- channels leaving ------------------------------------------------------------------

def test_removing_a_channel_from_a_monitor_sends_it_the_resolve(
        api, http, pagerduty, hook, make_monitor):
    m = make_monitor(channels=[pagerduty, hook])
    ingest(m.pk, PingInput("fail"), T0)
    key = Incident.objects.get().dedup_key
    resp = api.patch(f"/api/v1/monitors/{m.pk}/", {"channels": [hook.pk]}, format="json")
    assert resp.json()["channels"] == [hook.pk]
    assert sent(http, PD) == [("trigger", key), ("resolve", key)]
    assert sent(http, HOOK) == [("incident.opened", key)]
    event = IncidentEvent.objects.get(kind="channel_removed")
    assert event.detail == {"channel": pagerduty.pk}
    # the incident itself resolves later, on the channels that still hold it
    ingest(m.pk, PingInput("success"), timezone.now())
    assert sent(http, PD) == [("trigger", key), ("resolve", key)]
    assert sent(http, HOOK) == [("incident.opened", key), ("incident.resolved", key)]


def test_a_channel_that_never_saw_the_incident_gets_no_resolve(api, http, hook, pagerduty,
                                                               make_monitor):
    m = make_monitor(channels=[hook])
    ingest(m.pk, PingInput("fail"), T0)
    api.patch(f"/api/v1/monitors/{m.pk}/", {"channels": [hook.pk, pagerduty.pk]}, format="json")
    ingest(m.pk, PingInput("success"), timezone.now())
    assert sent(http, PD) == []  # joined while the incident was open: never paged


def test_deleting_a_channel_sends_it_the_resolve_then_removes_it(api, http, pagerduty,
                                                                  make_monitor):
    m = make_monitor(all_channels=True)
    ingest(m.pk, PingInput("fail"), T0)
    key = Incident.objects.get().dedup_key
    assert api.delete(f"/api/v1/channels/{pagerduty.pk}/").status_code == 204
    assert sent(http, PD) == [("trigger", key), ("resolve", key)]
    assert api.get(f"/api/v1/channels/{pagerduty.pk}/").status_code == 404
    assert api.get("/api/v1/channels/").json() == []
    evaluator.tick(timezone.now())
    assert not Channel.objects.exists()
    assert Incident.objects.get().resolved_at is None  # still open: the job is still failing


# --- pause and resume -------------------------------------------------------------------

def test_pausing_resolves_the_incident_and_resuming_starts_afresh(api, http, pagerduty,
                                                                  make_monitor):
    m = make_monitor(channels=[pagerduty], period=s(60), grace=s(5))
    ingest(m.pk, PingInput("fail"), T0)
    key = Incident.objects.get().dedup_key
    paused = api.patch(f"/api/v1/monitors/{m.pk}/", {"paused": True}, format="json").json()
    assert paused["status"] == "paused"
    incident = Incident.objects.get()
    assert incident.resolution == "monitor paused"
    assert sent(http, PD) == [("trigger", key), ("resolve", key)]
    # while paused: pings and runs are stored, nothing is raised
    ingest(m.pk, PingInput("fail"), timezone.now())
    evaluator.tick(timezone.now() + s(3600))
    assert Incident.objects.count() == 1 and Run.objects.filter(outcome="failed").count() == 2
    resumed = api.patch(f"/api/v1/monitors/{m.pk}/", {"paused": False}, format="json").json()
    assert resumed["status"] == "up"  # not "down": nothing is open
    m.refresh_from_db()
    assert m.next_expected_at > timezone.now() + s(55)  # the slots of the pause are not held


def test_an_edit_keeps_the_incident_open(make_monitor):
    m = make_monitor(period=s(60), grace=s(5))
    ingest(m.pk, PingInput("fail"), T0)
    evaluator.edit(m.pk, {"period": s(120), "grace": s(10)}, T0 + s(1))
    assert Incident.objects.get().resolved_at is None


# --- edits never forgive an overdue slot ----------------------------------------------

def test_lowering_grace_on_an_overdue_interval_monitor(make_monitor):
    m = make_monitor(period=s(4), grace=s(3))
    ingest(m.pk, PingInput("success"), T0)
    m = evaluator.edit(m.pk, {"grace": s(2)}, T0 + s(5.5))
    assert (m.next_expected_at, m.next_evaluation_at) == (T0 + s(4), T0 + s(6))
    evaluator.tick(T0 + s(5.9))
    assert not Incident.objects.exists()
    evaluator.tick(T0 + s(6))
    assert Incident.objects.get().opened_at == T0 + s(6)  # slot 4 + new grace 2


def test_lowering_grace_past_a_missed_cron_slot_reports_it_at_once(make_monitor):
    m = make_monitor(kind="cron", schedule="* * * * *", grace=s(40), created=T0 - s(61))
    ingest(m.pk, PingInput("success"), T0 - s(60))  # the T0 slot is the next one
    evaluator.edit(m.pk, {"grace": s(5)}, T0 + s(10))
    incident = Incident.objects.get()
    assert (incident.cause, incident.opened_at, incident.missed_count) == ("missed", T0 + s(10), 1)
    assert list(Run.objects.filter(outcome="missed").values_list("slot_at", flat=True)) == [T0]


def test_a_slot_overdue_under_the_old_grace_is_reported_even_if_grace_grows(make_monitor):
    m = make_monitor(period=s(4), grace=s(3))
    ingest(m.pk, PingInput("success"), T0)
    evaluator.edit(m.pk, {"grace": s(30)}, T0 + s(8))  # the evaluator had not got to it
    assert Incident.objects.get().opened_at == T0 + s(8)


def test_changing_the_time_zone_keeps_a_due_slot(make_monitor):
    m = make_monitor(kind="cron", schedule="* * * * *", grace=s(40), created=T0 - s(61))
    ingest(m.pk, PingInput("success"), T0 - s(60))
    m = evaluator.edit(m.pk, {"timezone": "Europe/Berlin"}, T0 + s(10))
    assert (m.next_expected_at, m.next_evaluation_at) == (T0, T0 + s(40))
    evaluator.tick(T0 + s(40))
    assert Incident.objects.get().opened_at == T0 + s(40)


def test_a_new_schedule_does_not_hold_its_past_fire_times_against_the_job(make_monitor):
    # daily at 03:00, run today; changed to hourly at 10:30: 04:00-10:00 were never due
    day = datetime(2026, 1, 5, tzinfo=UTC)
    m = make_monitor(kind="cron", schedule="0 3 * * *", grace=s(300), created=day)
    ingest(m.pk, PingInput("success"), day + s(3 * 3600 + 10))
    m = evaluator.edit(m.pk, {"schedule": "0 * * * *"}, day + s(10.5 * 3600))
    assert m.next_expected_at == day + s(11 * 3600)
    assert not Incident.objects.exists()


def test_a_shorter_period_counts_from_the_last_run(make_monitor):
    m = make_monitor(period=s(3600), grace=s(60))
    ingest(m.pk, PingInput("success"), T0)
    m = evaluator.edit(m.pk, {"period": s(60)}, T0 + s(600))
    incident = Incident.objects.get()  # due at T0+60 (+60 grace): already late
    assert (incident.opened_at, incident.missed_count) == (T0 + s(600), 9)
    assert m.next_expected_at == T0 + s(600)


def test_open_runs_follow_a_raised_max_runtime(make_monitor):
    m = make_monitor(period=s(3600), grace=s(60), max_runtime=s(3))
    ingest(m.pk, PingInput("start"), T0)
    evaluator.edit(m.pk, {"max_runtime": s(100)}, T0 + s(1))
    evaluator.tick(T0 + s(3))
    assert not Incident.objects.exists()
    evaluator.tick(T0 + s(100))
    incident = Incident.objects.get()
    assert (incident.cause, incident.opened_at) == ("stuck", T0 + s(100))
    assert incident.summary.endswith("is still open after max_runtime 100s")


def test_open_runs_follow_a_lowered_max_runtime(make_monitor):
    m = make_monitor(period=s(7200), grace=s(60), max_runtime=s(3600))
    ingest(m.pk, PingInput("start"), T0)
    evaluator.edit(m.pk, {"max_runtime": s(2)}, T0 + s(5))
    incident = Incident.objects.get()
    assert (incident.cause, incident.opened_at) == ("stuck", T0 + s(5))
    assert incident.summary.endswith("is still open after max_runtime 2s")


def test_a_pending_deadline_follows_the_new_deadline(make_monitor):
    m = make_monitor(kind="cron", schedule="0 * * * *", grace=s(60), deadline=s(3000),
                     created=T0 - s(1))
    ingest(m.pk, PingInput("start"), T0 + s(10))
    evaluator.edit(m.pk, {"deadline": s(600)}, T0 + s(20))
    evaluator.tick(T0 + s(600))
    incident = Incident.objects.get()
    assert (incident.cause, incident.opened_at) == ("deadline", T0 + s(600))
    assert "had not succeeded 600s after its scheduled time" in incident.summary


def test_an_api_edit_is_judged_at_once(api, make_monitor):
    m = make_monitor(period=s(60), grace=s(30), created=timezone.now() - s(100))
    ingest(m.pk, PingInput("success"), timezone.now() - s(75))  # slot 15 s ago
    assert api.patch(f"/api/v1/monitors/{m.pk}/", {"grace": 5},
                     format="json").json()["status"] == "down"
    assert Incident.objects.get().cause == "missed"


# --- timelines ---------------------------------------------------------------------------

def test_event_times_never_go_backwards_when_pings_take_the_lock_out_of_order(make_monitor):
    m = make_monitor(period=s(60), grace=s(5))
    arrivals = [(T0 + s(i / 10), "fail" if i % 3 else "success") for i in range(200)]
    random.Random(5).shuffle(arrivals)  # the order they got the monitor's lock in
    for at, kind in arrivals:
        ingest(m.pk, PingInput(kind), at)
    assert sorted(PingLog.objects.values_list("received_at", flat=True)) == sorted(
        a for a, _ in arrivals)  # pings keep their arrival time
    for incident in Incident.objects.all():
        times = list(incident.events.order_by("pk").values_list("at", flat=True))
        assert times == sorted(times)
        assert incident.resolved_at is None or incident.resolved_at >= incident.opened_at
        assert incident.last_event_at == max(times + list(
            incident.events.exclude(last_at=None).values_list("last_at", flat=True)))


def test_missed_slots_are_counted_on_one_event(make_monitor):
    m = make_monitor(period=s(1), grace=s(1))
    ingest(m.pk, PingInput("success"), T0)
    for i in range(2, 62):
        evaluator.tick(T0 + s(i))
    incident = Incident.objects.get()
    assert incident.missed_count == 60
    assert list(incident.events.values_list("kind", "count", "at", "last_at")) == [
        ("opened", 1, T0 + s(2), None), ("missed", 59, T0 + s(3), T0 + s(61))]
    assert Run.objects.filter(outcome="missed").count() == 60


def test_repeated_failures_are_counted_on_one_event(make_monitor):
    m = make_monitor(period=s(60), grace=s(5))
    for i in range(50):
        ingest(m.pk, PingInput("fail", exit_status=1 + i % 2), T0 + s(i))
    incident = Incident.objects.get()
    assert incident.failure_count == 50
    assert list(incident.events.values_list("kind", "count", "last_at")) == [
        ("opened", 1, None), ("failed", 49, T0 + s(49))]
    assert incident.events.get(kind="failed").detail["exit_status"] == 2


@commits
def test_200_parallel_pings_keep_every_timeline_ordered(make_monitor):
    m = make_monitor(period=s(60), grace=s(5))

    def ping(i):
        try:  # the arrival time is taken before the monitor's lock, as the ping view does
            ingest(m.pk, PingInput("fail" if i % 3 else "success"), timezone.now())
        finally:
            connections.close_all()

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(ping, range(200)))
    assert PingLog.objects.count() == 200
    incidents = list(Incident.objects.all())
    assert len(incidents) > 1
    for incident in incidents:
        times = list(incident.events.order_by("pk").values_list("at", flat=True))
        assert times == sorted(times), incident.pk
        assert incident.resolved_at is None or incident.resolved_at >= incident.opened_at
