"""cronradar_sdk.celery: beat entries → monitor fields, the slot a crontab entry's
message is stamped with (controlled clock), the pings of each attempt (eager
tasks, pings recorded); and a real worker and beat on Redis against a live
`manage.py serve` (REDIS_URL, the PostgreSQL+Redis run)."""
import logging
import uuid
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from celery import Celery
from celery.schedules import crontab, schedule
from cronradar_sdk import celery as cr

BERLIN = ZoneInfo("Europe/Berlin")


def make_app(schedule_, tz="Europe/Berlin", **conf):
    app = Celery(f"sdktest-{uuid.uuid4().hex}", set_as_current=False)
    app.conf.update(timezone=tz, beat_schedule=schedule_, task_always_eager=True, **conf)
    return app


@pytest.fixture
def app():
    app = make_app({
        "Nightly report": {"task": "jobs.report", "schedule": crontab(minute=0, hour=3)},
        "quarter": {"task": "jobs.poll", "schedule": crontab(minute="*/15")},
        "office hours": {"task": "jobs.poll",
                         "schedule": crontab(minute=30, hour="9-12,14", day_of_week="mon-fri")},
        "every-90s": {"task": "jobs.poll", "schedule": timedelta(seconds=90)},
        "number": {"task": "jobs.poll", "schedule": 1.5},
        "five minutes": {"task": "jobs.forever", "schedule": schedule(timedelta(minutes=5))},
    })

    @app.task(shared=False, name="jobs.report", max_retries=2)
    def report():
        pass

    @app.task(shared=False, name="jobs.forever", max_retries=None)
    def forever():
        pass

    return app


def test_each_entry_becomes_a_monitor_with_its_schedule_zone_period_and_attempts(app):
    got = [(e.name, e.slug, e.task, e.fields) for e in cr.entries(app, grace=120)]
    assert got == [
        ("Nightly report", "nightly-report", "jobs.report",
         {"name": "Nightly report", "grace": 120, "kind": "cron", "schedule": "0 3 * * *",
          "timezone": "Europe/Berlin", "max_attempts": 3}),
        ("quarter", "quarter", "jobs.poll",
         {"name": "quarter", "grace": 120, "kind": "cron", "schedule": "*/15 * * * *",
          "timezone": "Europe/Berlin"}),
        ("office hours", "office-hours", "jobs.poll",
         {"name": "office hours", "grace": 120, "kind": "cron", "schedule": "30 9-12,14 * * 1-5",
          "timezone": "Europe/Berlin"}),
        ("every-90s", "every-90s", "jobs.poll",
         {"name": "every-90s", "grace": 120, "kind": "interval", "period": 90}),
        ("number", "number", "jobs.poll",
         {"name": "number", "grace": 120, "kind": "interval", "period": 2}),
        ("five minutes", "five-minutes", "jobs.forever",
         {"name": "five minutes", "grace": 120, "kind": "interval", "period": 300,
          "max_attempts": 100}),
    ]


def test_utc_when_the_app_sets_no_timezone():
    [e] = cr.entries(make_app({"x": {"task": "t", "schedule": crontab(minute=5)}}, tz=None))
    assert (e.fields["schedule"], e.fields["timezone"]) == ("5 * * * *", "UTC")


class Sunset:
    """A schedule of its own (as celery's solar, which needs ephem)."""

    def __repr__(self):
        return "<sunset>"


def test_entries_cron_cannot_express_are_left_out_with_a_warning(caplog):
    app = make_app({
        "both days": {"task": "t", "schedule": crontab(0, 0, day_of_month="1", day_of_week="1")},
        "sunset": {"task": "t", "schedule": Sunset()},
        "!!!": {"task": "t", "schedule": 60},
        "kept": {"task": "t", "schedule": 60},
        "excluded": {"task": "t", "schedule": 60},
    })
    with caplog.at_level(logging.WARNING, "cronradar_sdk.celery"):
        assert [e.name for e in cr.entries(app, exclude=("excluded",))] == ["kept"]
    assert [r.getMessage() for r in caplog.records] == [
        "cronradar: beat entry 'both days' is not monitored: day_of_month 1 and day_of_week 1: "
        "Celery runs on days matching both, cron on days matching either",
        "cronradar: beat entry 'sunset' is not monitored: schedule <sunset>: only crontab and "
        "interval schedules",
        "cronradar: beat entry '!!!' is not monitored: entry '!!!': no slug can be made from "
        "its name",
    ]


@pytest.mark.parametrize("now, expected", [
    # 03:00:30 Berlin (CET): the 03:00 run
    (datetime(2026, 3, 10, 2, 0, 30, tzinfo=UTC), datetime(2026, 3, 10, 2, 0, tzinfo=UTC)),
    # 02:59:59 Berlin: still the day before's
    (datetime(2026, 3, 10, 1, 59, 59, tzinfo=UTC), datetime(2026, 3, 9, 2, 0, tzinfo=UTC)),
    # summer time: 03:00 CEST is 01:00 UTC
    (datetime(2026, 7, 1, 1, 0, 0, tzinfo=UTC), datetime(2026, 7, 1, 1, 0, tzinfo=UTC)),
])
def test_slot_is_the_latest_fire_time_at_or_before_now_in_the_apps_zone(now, expected):
    assert cr.slot(crontab(minute=0, hour=3), BERLIN, now) == expected


def test_slot_skips_a_wall_time_the_clock_jumps_over_and_takes_a_repeated_ones_first():
    half_past_two = crontab(minute=30, hour=2)
    # 2026-03-29: Berlin jumps from 02:00 to 03:00; at 03:45 CEST the last 02:30 was the 28th's
    assert (cr.slot(half_past_two, BERLIN, datetime(2026, 3, 29, 1, 45, tzinfo=UTC))
            == datetime(2026, 3, 28, 1, 30, tzinfo=UTC))
    # 2026-10-25: 02:30 happens twice (00:30Z CEST, 01:30Z CET): the first
    assert (cr.slot(half_past_two, BERLIN, datetime(2026, 10, 25, 1, 40, tzinfo=UTC))
            == datetime(2026, 10, 25, 0, 30, tzinfo=UTC))


def test_weekdays_and_months_follow_celerys_numbering():
    # Mondays of January, 09:00 Berlin; 2026-02-02 is a Monday, but in February
    mondays = crontab(minute=0, hour=9, day_of_week="mon", month_of_year=1)
    assert cr.cron_expression(mondays) == "0 9 * 1 1"
    assert (cr.slot(mondays, BERLIN, datetime(2026, 2, 2, 10, 0, tzinfo=UTC))
            == datetime(2026, 1, 26, 8, 0, tzinfo=UTC))


def test_instrument_tags_the_entries_and_beat_stamps_only_crontab_messages(app):
    inst = cr.instrument(app, url="http://cronradar.test", ping_key="pk", api_key="ak")
    try:
        options = app.conf.beat_schedule["Nightly report"]["options"]
        assert options == {"headers": {"cronradar_entry": "Nightly report"}}
        now = datetime(2026, 3, 10, 2, 0, 0, 400000, tzinfo=UTC)
        cron_headers = {"cronradar_entry": "Nightly report", "id": "t1"}
        inst.on_publish(headers=cron_headers, now=now)
        assert cron_headers["cronradar_slot"] == "2026-03-10T02:00:00Z"
        interval_headers = {"cronradar_entry": "every-90s"}
        inst.on_publish(headers=interval_headers, now=now)
        assert interval_headers == {"cronradar_entry": "every-90s"}
        retried = {"cronradar_entry": "Nightly report", "cronradar_slot": "2026-03-09T02:00:00Z"}
        inst.on_publish(headers=retried, now=now)  # a retry keeps the slot beat gave it
        assert retried["cronradar_slot"] == "2026-03-09T02:00:00Z"
    finally:
        inst.close()


def test_user_headers_of_an_entry_are_kept():
    app = make_app({"x": {"task": "t", "schedule": 5, "options": {"headers": {"team": "ops"},
                                                                  "queue": "slow"}}})
    cr.instrument(app).close()
    assert app.conf.beat_schedule["x"]["options"] == {
        "headers": {"team": "ops", "cronradar_entry": "x"}, "queue": "slow"}


@pytest.fixture
def pinged(monkeypatch):
    calls = []
    monkeypatch.setattr(cr, "_ping", lambda settings, slug, action, rid, slot, body: calls.append(
        (slug, action, rid, slot, body)) or True)
    return calls


def test_each_attempt_pings_start_then_its_end_with_one_rid_and_the_slot(app, pinged):
    attempts = []

    @app.task(shared=False, name="jobs.flaky", bind=True, max_retries=2)
    def flaky(self):
        attempts.append(self.request.retries)
        if self.request.retries < 1:
            raise self.retry(exc=OSError("disk busy"), countdown=0)

    @app.task(shared=False, name="jobs.boom")
    def boom():
        raise ValueError("no rows")

    inst = cr.instrument(app, url="http://cronradar.test", ping_key="pk")
    inst.entries["flaky"] = cr.Entry("flaky", "flaky", "jobs.flaky", {})
    inst.entries["boom"] = cr.Entry("boom", "boom", "jobs.boom", {})
    slot = {"cronradar_slot": "2026-03-10T02:00:00Z"}
    try:
        flaky.apply(task_id="t-flaky", headers={"cronradar_entry": "flaky", **slot})
        boom.apply(task_id="t-boom", headers={"cronradar_entry": "boom", **slot})
        flaky.apply(task_id="t-adhoc")  # no entry header: not beat's
    finally:
        inst.close()
    first, second = cr.rid("t-flaky", 0), cr.rid("t-flaky", 1)
    assert attempts == [0, 1, 0, 1]  # the ad-hoc run retries too, unreported
    at = "2026-03-10T02:00:00Z"
    assert pinged == [
        ("flaky", "start", first, at, b""),
        ("flaky", "fail", first, at, b"retrying: OSError: disk busy"),
        ("flaky", "start", second, at, b""),
        ("flaky", "0", second, at, b""),
        ("boom", "start", cr.rid("t-boom", 0), at, b""),
        ("boom", "fail", cr.rid("t-boom", 0), at, b"ValueError: no rows"),
    ]
    assert len({first, second, cr.rid("t-boom", 0)}) == 3


def test_a_failing_ping_never_fails_the_task(app, monkeypatch, caplog):
    def down(*args):
        raise OSError("unreachable")

    monkeypatch.setattr(cr, "_ping", down)

    @app.task(shared=False, name="jobs.fine")
    def fine():
        return 42

    inst = cr.instrument(app)
    inst.entries["fine"] = cr.Entry("fine", "fine", "jobs.fine", {})
    try:
        assert fine.apply(headers={"cronradar_entry": "fine"}).get() == 42
    finally:
        inst.close()
    assert "cronradar: could not report start of fine" in caplog.text
