"""cronradar_sdk.celery: beat entries → monitor fields, the slot a crontab entry's
message is stamped with (controlled clock), the pings of each attempt (eager
tasks, pings recorded); and a real worker and beat on Redis against a live
`manage.py serve` (REDIS_URL, the PostgreSQL+Redis run)."""
import logging
import os
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from celery import Celery
from celery.schedules import crontab, schedule
from cronradar_sdk import celery as cr
from zoneinfo import ZoneInfo

from tests.live import ROOT, Service

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
    got = [(e.name, e.slug, e.task, cr.monitor_fields(app, e))
           for e in cr.entries(app, grace=120)]
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


@pytest.fixture(autouse=True)
def _nothing_warned_yet(monkeypatch):
    monkeypatch.setattr(cr, "_warned", set())


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
        "cronradar: beat entry 'both days' is not monitored: day of month 1 and day of week 1: "
        "the scheduler runs on days matching both, cron on days matching either",
        "cronradar: beat entry 'sunset' is not monitored: schedule <sunset>: only crontab and "
        "interval schedules",
        "cronradar: beat entry '!!!' is not monitored: '!!!': no slug can be made from its name",
    ]


def test_an_entry_left_out_is_warned_about_once_per_process(caplog):
    both_days = {"both days": {"task": "t", "schedule": crontab(0, 0, day_of_month="1",
                                                                 day_of_week="1")}}
    with caplog.at_level(logging.WARNING, "cronradar_sdk.celery"):
        # the app's module imported twice (under two names), each instrumenting its app
        for _ in range(2):
            cr.instrument(make_app(both_days)).close()
        cr.instrument(make_app({"both days": {"task": "t", "schedule": Sunset()}})).close()
    assert [r.getMessage() for r in caplog.records] == [
        "cronradar: beat entry 'both days' is not monitored: day of month 1 and day of week 1: "
        "the scheduler runs on days matching both, cron on days matching either",
        # another reason for the same name is news
        "cronradar: beat entry 'both days' is not monitored: schedule <sunset>: only crontab and "
        "interval schedules",
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


def test_beat_upserts_at_its_start_with_the_tasks_known_by_then(monkeypatch, caplog):
    monkeypatch.delenv("CRONRADAR_API_KEY", raising=False)
    upserts = []
    monkeypatch.setattr(cr.api, "ensure_monitor",
                        lambda settings, slug, fields: upserts.append((slug, fields)))
    app = make_app({"Rebuild index": {"task": "jobs.later", "schedule": 600}})
    inst = cr.instrument(app, url="http://cronradar.test", api_key="ak")
    try:
        assert not app.finalized  # instrument() in the app's module must not finalize it

        @app.task(shared=False, name="jobs.later", max_retries=4)
        def later():
            pass

        inst.on_beat_init()
        assert upserts == [("rebuild-index", {"name": "Rebuild index", "grace": 60,
                                              "kind": "interval", "period": 600,
                                              "max_attempts": 5})]
    finally:
        inst.close()
    keyless = cr.instrument(make_app({"x": {"task": "t", "schedule": 5}}), url="http://x.test")
    keyless.close()
    keyless.on_beat_init()
    assert len(upserts) == 1
    assert "monitors of the beat schedule not created or updated: set CRONRADAR_URL and " \
           "CRONRADAR_API_KEY" in caplog.text


def test_user_headers_of_an_entry_are_kept():
    app = make_app({"x": {"task": "t", "schedule": 5, "options": {"headers": {"team": "ops"},
                                                                  "queue": "slow"}}})
    cr.instrument(app).close()
    assert app.conf.beat_schedule["x"]["options"] == {
        "headers": {"team": "ops", "cronradar_entry": "x"}, "queue": "slow"}


@pytest.fixture
def pinged(monkeypatch):
    calls = []
    monkeypatch.setattr(cr.pings, "send", lambda settings, slug, state, rid, slot, body:
                        calls.append((slug, state, rid, slot, body)) or True)
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
        ("flaky", "success", second, at, b""),
        ("boom", "start", cr.rid("t-boom", 0), at, b""),
        ("boom", "fail", cr.rid("t-boom", 0), at, b"ValueError: no rows"),
    ]
    assert len({first, second, cr.rid("t-boom", 0)}) == 3


def test_a_failing_ping_never_fails_the_task(app, monkeypatch, caplog):
    def down(*args):
        raise OSError("unreachable")

    monkeypatch.setattr(cr.pings, "send", down)

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


# --- live: a real worker and beat on Redis, a real manage.py serve ------------------

LIVE_APP = '''
import os
import pathlib

from celery import Celery
from celery.schedules import crontab

from cronradar_sdk.celery import instrument

app = Celery("liveapp", broker=os.environ["REDIS_URL"], set_as_current=True)
app.conf.update(
    timezone="UTC", task_default_queue=os.environ["QUEUE"], worker_hijack_root_logger=False,
    broker_connection_retry_on_startup=True, beat_max_loop_interval=1,
    beat_schedule={
        "ok every 2s": {"task": "liveapp.ok", "schedule": 2.0},
        "boom": {"task": "liveapp.boom", "schedule": 2.0},
        "flaky": {"task": "liveapp.flaky", "schedule": 2.0},
        "minutely": {"task": "liveapp.ok", "schedule": crontab()},
    })
RAN = pathlib.Path(os.environ["RAN"])


def ran(request):
    with RAN.open("a") as f:
        f.write(f"{request.id} {request.retries}\\n")


@app.task(name="liveapp.ok", bind=True)
def ok(self):
    ran(self.request)


@app.task(name="liveapp.boom", bind=True, max_retries=0)
def boom(self):
    ran(self.request)
    raise ValueError("no rows")


@app.task(name="liveapp.flaky", bind=True, max_retries=2)
def flaky(self):
    ran(self.request)
    if self.request.retries == 0:
        raise self.retry(exc=OSError("disk busy"), countdown=0)


instrument(app, grace=30)
'''


def _wait(predicate, timeout: float, what: str):
    end = time.time() + timeout
    while time.time() < end:
        got = predicate()
        if got:
            return got
        time.sleep(0.25)
    raise AssertionError(f"{what}: not within {timeout}s")


@pytest.fixture
def live_celery(tmp_path):
    """A manage.py serve, and a worker and beat of LIVE_APP on REDIS_URL reporting to
    it (a queue of their own, so concurrent runs share the Redis)."""
    redis_url = os.environ.get("REDIS_URL")
    if not redis_url:
        pytest.skip("REDIS_URL unset: the PostgreSQL+Redis run of scripts/test has a Redis")
    service = Service(tmp_path)
    procs = []
    try:
        api = service.api
        ping_key = api.get("/projects/").json()[0]["ping_key"]
        (tmp_path / "liveapp.py").write_text(LIVE_APP)
        env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}",
               "REDIS_URL": redis_url, "QUEUE": f"sdk-{uuid.uuid4().hex}",
               "RAN": str(tmp_path / "ran.txt"), "CRONRADAR_URL": service.url,
               "CRONRADAR_PING_KEY": ping_key,
               "CRONRADAR_API_KEY": api.headers["Authorization"].split()[1]}
        env.pop("DJANGO_SETTINGS_MODULE", None)
        celery = [sys.executable, "-m", "celery", "-A", "liveapp"]
        for name, args in (("worker", ["worker", "--pool=solo", "-Q", env["QUEUE"]]),
                           ("beat", ["beat", "-s", str(tmp_path / "beat-schedule")])):
            log = open(tmp_path / f"{name}.log", "w+")  # noqa: SIM115 (closed below)
            procs.append((subprocess.Popen([*celery, *args, "--loglevel=INFO"], cwd=tmp_path,
                                           env=env, stdout=log, stderr=subprocess.STDOUT), log))
        yield service, env, tmp_path
    finally:
        for proc, log in procs:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
            log.seek(0)
            print(log.read()[-5000:])  # shown when the test fails
            log.close()
        service.stop()


def _ran(path) -> list[tuple[str, int]]:
    if not path.exists():
        return []
    return [(tid, int(n)) for tid, n in (line.split() for line in path.read_text().split("\n")
                                          if line)]


@pytest.mark.live
def test_a_real_worker_and_beat_report_each_entrys_runs(live_celery):
    service, env, tmp = live_celery
    api = service.api

    def monitor(slug):
        answer = api.get(f"/monitors/by-slug/{slug}/")
        return answer.json() if answer.status_code == 200 else None

    def runs(m):
        return list(reversed(api.get(f"/monitors/{m['id']}/runs/").json()))

    _wait(lambda: monitor("minutely"), 30, "beat upserts the monitors (the last)")
    ok, boom, flaky, minutely = map(monitor, ("ok-every-2s", "boom", "flaky", "minutely"))
    assert [(m["kind"], m["period"], m["grace"], m["max_attempts"]) for m in (ok, boom, flaky)] \
        == [("interval", 2, 30, 4), ("interval", 2, 30, 1), ("interval", 2, 30, 3)]
    assert (minutely["kind"], minutely["schedule"], minutely["timezone"]) == (
        "cron", "* * * * *", "UTC")

    # two successful runs of ok: each a start and a success with one rid
    ok_runs = _wait(lambda: [r for r in runs(ok) if r["outcome"] == "succeeded"][2:] and runs(ok),
                    60, "ok's runs")
    ran = _ran(tmp / "ran.txt")
    for r in [r for r in ok_runs if r["outcome"] == "succeeded"]:
        assert r["started_at"] and r["ended_at"] and r["exit_status"] is None  # success
        assert r["rid"] in {cr.rid(tid, n) for tid, n in ran}
    # boom fails (max_retries=0: its only attempt), the monitor goes down
    failed = _wait(lambda: [r for r in runs(boom) if r["outcome"] == "failed"], 30, "boom fails")
    assert failed[0]["started_at"] is not None
    fail_ping = [p for p in reversed(api.get(f"/monitors/{boom['id']}/pings/").json())
                 if p["kind"] == "fail"][0]
    assert fail_ping["body"] == "ValueError: no rows"
    assert api.get(f"/monitors/{boom['id']}/").json()["status"] == "down"
    # flaky: attempt 1 fails and retries, attempt 2 succeeds; the failed attempt
    # (1 of max_attempts 3) opens nothing
    flaky_runs = _wait(lambda: (lambda rs: rs if [r["outcome"] for r in rs][:2]
                                == ["failed", "succeeded"] else None)(runs(flaky)),
                       30, "flaky's two attempts")
    [tid] = [t for t, n in _ran(tmp / "ran.txt") if cr.rid(t, n) == flaky_runs[0]["rid"]]
    assert (tid, 1) in _ran(tmp / "ran.txt") and flaky_runs[1]["rid"] == cr.rid(tid, 1)
    assert api.get(f"/incidents/?monitor={flaky['id']}").json() == []
    assert api.get(f"/monitors/{flaky['id']}/").json()["status"] == "up"

    # an ad-hoc send of ok's task runs on the worker and pings nothing; a message
    # published for the crontab entry gets its slot (the publisher's handler, as
    # in beat) and its run files under that minute
    client = Celery("liveapp", broker=env["REDIS_URL"], set_as_current=False)
    client.conf.update(timezone="UTC", beat_schedule={
        "minutely": {"task": "liveapp.ok", "schedule": crontab()}})
    inst = cr.instrument(client)
    try:
        adhoc = client.send_task("liveapp.ok", queue=env["QUEUE"]).id
        stamped = client.send_task("liveapp.ok", queue=env["QUEUE"],
                                   headers={"cronradar_entry": "minutely"})
        published = datetime.now(UTC)
    finally:
        inst.close()
    _wait(lambda: {adhoc, stamped.id} <= {t for t, _ in _ran(tmp / "ran.txt")}, 30,
          "the worker runs both")
    # (beat's own minutely runs may be there too, at a minute boundary)
    [minute_run] = _wait(lambda: [r for r in runs(minutely) if r["rid"] == cr.rid(stamped.id, 0)
                                  and r["ended_at"]], 30, "the stamped run")
    expected = published.replace(second=0, microsecond=0)
    assert minute_run["outcome"] == "succeeded"
    assert datetime.fromisoformat(minute_run["slot_at"]) == expected
    time.sleep(1)  # an ad-hoc ping would have come by now
    every_rid = {r["rid"] for m in (ok, boom, flaky, minutely) for r in runs(m)}
    assert cr.rid(adhoc, 0) not in every_rid


def test_a_malformed_url_never_fails_beat_or_a_task(app, caplog):
    @app.task(shared=False, name="jobs.fine")
    def fine():
        return 42

    inst = cr.instrument(app, url="notaurl", ping_key="pk", api_key="ak")
    inst.entries["fine"] = cr.Entry("fine", "fine", "jobs.fine", {})
    try:
        with caplog.at_level(logging.WARNING, "cronradar_sdk"):
            inst.on_beat_init()
            assert fine.apply(headers={"cronradar_entry": "fine"}).get() == 42
    finally:
        inst.close()
    warned = [r.getMessage() for r in caplog.records if r.name.startswith("cronradar")]
    assert warned[0] == ("cronradar: not calling the API, the URL must be http(s)://host/...: "
                         "'notaurl/api/v1/monitors/by-slug/nightly-report/'")
    assert len(warned) == 7 + 2  # each entry's upsert, then the task's start and success
    assert warned[-2:] == ["cronradar: not pinging fine, the URL must be http(s)://host/...: "
                           "'notaurl/ping/pk/fine'"] * 2
