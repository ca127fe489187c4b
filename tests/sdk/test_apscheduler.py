"""cronradar_sdk.apscheduler: triggers → monitor fields, the listener's pings for a
real BackgroundScheduler (recorded, then against a live `manage.py serve`)."""
import logging
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger
from cronradar_sdk import apscheduler as cra
from cronradar_sdk import schedulers

from tests.live import Service


def noop():
    pass


def boom():
    raise ValueError("no rows")


def late_job(scheduler, minute: datetime) -> datetime:
    """A daily cron job "late" whose run 2 minutes before ``minute`` is still due,
    past its misfire_grace_time (1 s): APScheduler submits it and misses it. Its
    scheduled time."""
    at = minute - timedelta(minutes=2)
    scheduler.add_job(noop, "cron", minute=at.minute, hour=at.hour, id="late",
                      misfire_grace_time=1, next_run_time=at)
    return at


@pytest.fixture
def scheduler():
    s = BackgroundScheduler(timezone="UTC")
    yield s
    if s.running:
        s.shutdown(wait=True)


@pytest.mark.parametrize("trigger, fields", [
    (CronTrigger(hour=3, minute=0, timezone="Europe/Berlin"),
     {"kind": "cron", "schedule": "0 3 * * *", "timezone": "Europe/Berlin"}),
    (CronTrigger.from_crontab("*/15 9-17 * * mon-fri", timezone="UTC"),
     {"kind": "cron", "schedule": "*/15 9-17 * * 1-5", "timezone": "UTC"}),
    # APScheduler counts weekdays from Monday = 0: its 5,6 are Saturday and Sunday
    (CronTrigger(minute=30, hour="8,20", day_of_week="5,6", timezone="UTC"),
     {"kind": "cron", "schedule": "30 8,20 * * 0,6", "timezone": "UTC"}),
    (CronTrigger(minute=0, hour=0, day="1,15", month="1-6", timezone="UTC"),
     {"kind": "cron", "schedule": "0 0 1,15 1-6 *", "timezone": "UTC"}),
    (IntervalTrigger(seconds=90), {"kind": "interval", "period": 90}),
    (IntervalTrigger(seconds=1.5), {"kind": "interval", "period": 2}),
])
def test_cron_and_interval_triggers_become_monitor_fields(scheduler, trigger, fields):
    job = scheduler.add_job(noop, trigger, id="report", name="nightly report")
    assert cra.monitor_fields(job, grace=90) == {"name": "nightly report", "grace": 90, **fields}


def test_jobs_cron_cannot_express_are_left_out_with_a_warning(scheduler, caplog, monkeypatch):
    monkeypatch.setattr(cra.api, "ensure_monitor", lambda *a: None)
    scheduler.add_job(noop, CronTrigger(second="*/10"), id="seconds")
    scheduler.add_job(noop, CronTrigger(day="last"), id="last-day")
    scheduler.add_job(noop, CronTrigger(day="1", day_of_week="mon"), id="both-days")
    scheduler.add_job(noop, "date", run_date=datetime(2030, 1, 1, tzinfo=UTC), id="once")
    scheduler.add_job(noop, "interval", seconds=5)  # APScheduler's random id
    scheduler.add_job(noop, "interval", seconds=5, id="kept")
    scheduler.add_job(noop, "interval", seconds=5, id="excluded")
    with caplog.at_level(logging.WARNING, "cronradar_sdk"):
        listener = cra.instrument(scheduler, url="http://cronradar.test", api_key="k",
                                  exclude=("excluded",))
    assert list(listener.monitored) == ["kept"]
    got = [r.getMessage() for r in caplog.records if r.name.startswith("cronradar_sdk")]
    assert got[:4] == [
        "cronradar: job 'seconds' is not monitored: second */10: cron has none",
        "cronradar: job 'last-day' is not monitored: day last: cron has no such term",
        "cronradar: job 'both-days' is not monitored: day of month 1 and day of week 1: the "
        "scheduler runs on days matching both, cron on days matching either",
        "cronradar: job 'once' is not monitored: trigger date[2030-01-01 00:00:00 UTC]: only "
        "cron and interval triggers",
    ]
    assert got[4].endswith("is not monitored: it has APScheduler's random id: give it an id=")


def test_jobs_added_later_are_monitored_and_upserted(scheduler, monkeypatch):
    upserts = []
    monkeypatch.setattr(cra.api, "ensure_monitor",
                        lambda settings, slug, fields: upserts.append((slug, fields)))
    cra.instrument(scheduler, url="http://cronradar.test", api_key="k")
    scheduler.start()
    scheduler.add_job(noop, "interval", seconds=30, id="Backup DB")
    assert upserts == [("backup-db", {"name": "noop", "grace": 60, "kind": "interval",
                                      "period": 30})]


def test_each_run_pings_start_then_its_end_with_one_rid_and_a_cron_jobs_slot(scheduler,
                                                                           monkeypatch):
    calls, done = [], threading.Event()
    monkeypatch.setattr(cra.api, "ensure_monitor", lambda *a: None)

    def send(settings, slug, state, rid, slot, body):
        if state == "start":
            time.sleep(0.3)  # the job ends before its start ping is sent
        calls.append((slug, state, rid, slot, body))
        if len(calls) == 6:
            done.set()
        return True

    monkeypatch.setattr(cra.pings, "send", send)
    cra.instrument(scheduler, url="http://cronradar.test", ping_key="pk")
    now = datetime.now(UTC)
    minute = now.replace(second=0, microsecond=0)
    scheduler.add_job(noop, "cron", minute="*", id="minutely", next_run_time=minute,
                      misfire_grace_time=60)
    scheduler.add_job(boom, "interval", hours=1, id="boom", next_run_time=now)
    skipped = late_job(scheduler, minute)
    scheduler.start()
    assert done.wait(10), calls
    by_job = {slug: [c[1:] for c in calls if c[0] == slug] for slug in ("minutely", "boom", "late")}
    at = schedulers.rfc3339(minute)
    ran = schedulers.rid("minutely", minute.isoformat())
    assert by_job["minutely"] == [("start", ran, at, b""), ("success", ran, at, b"")]
    failed = schedulers.rid("boom", now.isoformat())
    assert by_job["boom"] == [("start", failed, None, b""),
                              ("fail", failed, None, b"ValueError: no rows")]
    # submitted, then not run: misfire_grace_time 1 s is past
    missed = schedulers.rid("late", skipped.isoformat())
    assert by_job["late"] == [("start", missed, schedulers.rfc3339(skipped), b""),
                              ("fail", missed, schedulers.rfc3339(skipped), b"missed")]


@pytest.mark.live
def test_a_background_scheduler_reports_to_a_live_server(scheduler, tmp_path):
    service = Service(tmp_path)
    try:
        api = service.api
        settings = {"url": service.url, "ping_key": api.get("/projects/").json()[0]["ping_key"],
                    "api_key": api.headers["Authorization"].split()[1]}
        now = datetime.now(UTC)
        minute = now.replace(second=0, microsecond=0)
        scheduler.add_job(noop, "interval", seconds=1, id="every second")
        scheduler.add_job(boom, "interval", hours=1, id="boom", next_run_time=now)
        # a grace of 5 minutes: on a loaded machine the set-up below may take until
        # after the next minute starts, and the run of `minute` must still be made
        scheduler.add_job(noop, "cron", minute="*", id="minutely", next_run_time=minute,
                          misfire_grace_time=300)
        skipped = late_job(scheduler, minute)
        cra.instrument(scheduler, grace=30, **settings)
        monitors = {m["slug"]: m for m in api.get("/monitors/").json()}
        assert {slug: (m["kind"], m["schedule"] if m["kind"] == "cron" else m["period"])
                for slug, m in monitors.items()} == {
            "every-second": ("interval", 1), "boom": ("interval", 3600),
            "minutely": ("cron", "* * * * *"),
            "late": ("cron", f"{skipped.minute} {skipped.hour} * * *")}
        scheduler.start()

        def runs(slug):
            return list(reversed(api.get(f"/monitors/{monitors[slug]['id']}/runs/").json()))

        end = time.time() + 60  # the loop ends as soon as all is there
        while time.time() < end and not (
                len([r for r in runs("every-second") if r["outcome"] == "succeeded"]) >= 2
                and runs("boom") and runs("minutely") and runs("late")
                and runs("minutely")[0]["ended_at"]):
            time.sleep(0.25)
        scheduler.shutdown(wait=True)
        for r in [r for r in runs("every-second") if r["outcome"] == "succeeded"]:
            assert r["started_at"] and r["ended_at"] and r["rid"], runs("every-second")
        [failed] = runs("boom")
        assert (failed["outcome"], failed["rid"]) == ("failed",
                                                      schedulers.rid("boom", now.isoformat()))
        # (at a minute boundary the next minute's run may be there too)
        [ran] = [r for r in runs("minutely")
                 if r["rid"] == schedulers.rid("minutely", minute.isoformat())]
        assert (ran["outcome"], datetime.fromisoformat(ran["slot_at"])) == ("succeeded", minute)
        [missed] = runs("late")
        assert (missed["outcome"], datetime.fromisoformat(missed["slot_at"])) == (
            "failed", skipped)
    finally:
        service.stop()


def test_an_end_whose_start_never_comes_is_sent_after_the_timeout(scheduler, monkeypatch):
    from apscheduler.events import EVENT_JOB_EXECUTED, JobExecutionEvent

    calls, sent = [], threading.Event()
    monkeypatch.setattr(cra.api, "ensure_monitor", lambda *a: None)
    monkeypatch.setattr(cra.pings, "send", lambda *a: calls.append(a[2:]) or sent.set())
    scheduler.add_job(noop, "interval", seconds=60, id="job")
    listener = cra.instrument(scheduler, url="http://cronradar.test", ping_key="pk",
                              timeout=0.2)
    at = datetime(2026, 3, 10, 2, 0, tzinfo=UTC)
    begun = time.monotonic()
    # a run submitted before instrument(): its end comes, its start never will
    listener(JobExecutionEvent(EVENT_JOB_EXECUTED, "job", "default", at))
    assert calls == []
    assert sent.wait(5)
    assert time.monotonic() - begun >= 1.2
    assert calls == [("success", schedulers.rid("job", at.isoformat()), None, b"")]


def test_a_malformed_url_never_fails_the_scheduler_or_a_job(scheduler, caplog):
    ran = threading.Event()
    scheduler.add_job(ran.set, "interval", seconds=3600, id="hourly",
                      next_run_time=datetime.now(UTC))
    with caplog.at_level(logging.WARNING, "cronradar_sdk"):
        listener = cra.instrument(scheduler, url="notaurl", ping_key="pk", api_key="ak")
        scheduler.start()
        assert ran.wait(10)
        _wait_for(lambda: [r.getMessage().startswith("cronradar: not pinging")
                           for r in caplog.records].count(True) == 2)
    listener.close()
    warned = [r.getMessage() for r in caplog.records if r.name.startswith("cronradar")]
    upsert = ("cronradar: not calling the API, the URL must be http(s)://host/...: "
              "'notaurl/api/v1/monitors/by-slug/hourly/'")
    ping = ("cronradar: not pinging hourly, the URL must be http(s)://host/...: "
            "'notaurl/ping/pk/hourly'")
    # the upsert when instrumented (again as the scheduler's start adds the job, in its
    # own order with the run's two pings)
    assert set(warned) == {upsert, ping} and warned.count(ping) == 2


def _wait_for(predicate, timeout: float = 10):
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "not within the time"
        time.sleep(0.05)
