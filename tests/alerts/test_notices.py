"""alerts.notices: notices of no incident take their ids from the one sequence of
events, with one delivery per channel, built by the kinds' build_notice."""
import json
from datetime import timedelta

import httpx
import pytest
import respx

from alerts import channels, notices, retention
from alerts.models import Channel, Delivery, IncidentEvent
from monitors.models import Outage, OutageImpact
from tests.alerts.conftest import HOOK, NOW, new_delivery, new_incident, webhook
from tests.conftest import send_due

pytestmark = pytest.mark.django_db


def _impact(project, unknown=4):
    outage = Outage.objects.create(started_at=NOW, ended_at=NOW + timedelta(seconds=30),
                                   summarized_at=NOW + timedelta(seconds=60))
    return OutageImpact.objects.create(outage=outage, project=project, unknown_slots=unknown)


def test_an_incident_event_an_outage_summary_and_a_test_never_share_an_id(monitor, project):
    hook = webhook(project)
    opened = new_delivery(new_incident(monitor), hook).event
    summary = channels.notify_outage(_impact(project))
    with respx.mock(assert_all_called=False) as mock:
        mock.post(HOOK).respond(200)
        assert channels.send_test(hook, NOW) == (200, "")
    test = IncidentEvent.objects.get(kind="test")
    resolved = new_delivery(opened.incident, hook, kind="resolved").event
    ids = [opened.pk, summary.pk, test.pk, resolved.pk]
    assert ids == sorted(set(ids))  # one sequence: distinct, in the order they were made
    assert [(e.kind, e.incident_id, e.project_id) for e in (summary, test)] == [
        ("outage.summary", None, project.pk), ("test", None, project.pk)]


def test_issue_stores_the_notice_and_one_delivery_per_channel_due_at_its_time(project):
    a, b = webhook(project), webhook(project, "https://b.example.com/")
    notice = notices.issue("outage.summary", project.pk, NOW, {"unknown_slots": 1},
                           [a.pk, b.pk])
    assert (notice.kind, notice.at, notice.detail, notice.incident_id, notice.step) == (
        "outage.summary", NOW, {"unknown_slots": 1}, None, None)
    assert sorted(Delivery.objects.values_list("event_id", "incident_id", "channel_id",
                                               "status", "next_attempt_at")) == [
        (notice.pk, None, a.pk, "pending", NOW), (notice.pk, None, b.pk, "pending", NOW)]


def test_a_notice_with_a_step_is_issued_once(project):
    hook = webhook(project)
    first = notices.issue("channel.failing", project.pk, NOW, {}, [hook.pk], step="s:1")
    again = notices.issue("channel.failing", project.pk, NOW, {}, [hook.pk], step="s:1")
    assert again.pk == first.pk
    assert Delivery.objects.count() == 1


def test_issue_refuses_a_kind_that_is_not_a_notice(project):
    with pytest.raises(ValueError, match="'opened' is not a notice kind"):
        notices.issue("opened", project.pk, NOW, {}, [])


def test_an_outage_summary_is_one_notice_per_impact_delivered_with_its_integer_id(project):
    webhook(project)
    impact = _impact(project)
    notice = channels.notify_outage(impact)
    assert channels.notify_outage(impact).pk == notice.pk  # a repeated signal: no second one
    assert notice.detail == {"impact": impact.pk, "outage": impact.outage_id,
                             "started_at": "2025-01-01T12:00:06Z",
                             "ended_at": "2025-01-01T12:00:36Z", "unknown_slots": 4}
    with respx.mock() as mock:
        route = mock.post(HOOK).mock(return_value=httpx.Response(200))
        assert send_due(NOW + timedelta(seconds=60)) == 1
    body = json.loads(route.calls[0].request.content)
    assert (body["schema"], body["event_id"], body["outage"]["unknown_slots"]) == (
        "cronradar.outage.v2", notice.pk, 4)
    assert route.calls[0].request.headers["X-CronRadar-Event"] == "outage.summary"
    assert Delivery.objects.get().status == "delivered"


def test_a_kind_without_a_builder_for_a_notice_fails_the_delivery_clearly(project):
    hook = webhook(project)
    # not a notice's kind (notices.issue refuses it), stored without an incident
    odd = IncidentEvent.objects.create(kind="resolved", project=project, at=NOW)
    Delivery.objects.create(event=odd, channel=hook, created_at=NOW, next_attempt_at=NOW)
    assert send_due(NOW) == 1
    d = Delivery.objects.get()
    assert (d.status, d.last_error) == (
        "failed", "build error: ValueError: notice kind 'resolved' has no builder")


def test_the_deliveries_api_names_a_notice_by_its_kind(api, project):
    hook = webhook(project)
    notice = notices.issue("outage.summary", project.pk, NOW, {}, [hook.pk])
    [row] = api.get("/api/v1/deliveries/").json()
    assert (row["event"], row["incident"], row["channel"]) == ("outage.summary", None, hook.pk)
    assert notice.deliveries.get().pk == row["id"]


def test_old_notices_are_pruned_with_their_deliveries_unless_still_sending(settings, project):
    settings.CRONRADAR_INCIDENT_RETENTION_DAYS = 1
    hook = webhook(project)
    old = notices.issue("test", project.pk, NOW, {}, [hook.pk])
    Delivery.objects.filter(event=old).update(status="delivered")
    pending = notices.issue("test", project.pk, NOW, {}, [hook.pk])
    recent = notices.issue("test", project.pk, NOW + timedelta(days=2), {}, [])
    assert retention.prune(NOW + timedelta(days=2, seconds=1)) == 1
    assert sorted(IncidentEvent.objects.values_list("pk", flat=True)) == [pending.pk, recent.pk]
    assert Delivery.objects.get().event_id == pending.pk
    assert Channel.objects.filter(pk=hook.pk).exists()
