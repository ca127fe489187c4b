"""cronradar/management/commands/beatalive.py: Celery beat's liveness file and
`manage.py beatalive`, the beat service's health check."""
import os
import subprocess
import sys
import time

import pytest
from celery import Celery
from django.core.management import CommandError, call_command

from cronradar.management.commands.beatalive import (
    TOUCH_EVERY,
    LivenessScheduler,
    age,
    liveness_path,
)
from tests.live import ROOT


def test_the_liveness_file_sits_beside_the_schedule(tmp_path):
    assert liveness_path(tmp_path / "celerybeat-schedule") == tmp_path / "celerybeat-schedule.alive"
    assert liveness_path("/app/data/s") == liveness_path(os.fspath("/app/data/s"))


def test_age_of_the_liveness_file(tmp_path):
    schedule = tmp_path / "s"
    assert age(schedule, 1_000_000) is None
    liveness_path(schedule).touch()
    os.utime(liveness_path(schedule), (999_970, 999_970))
    assert age(schedule, 1_000_000) == 30


def _check(schedule, *args) -> str:
    from io import StringIO

    out = StringIO()
    call_command("beatalive", "--schedule", str(schedule), *args, stdout=out)
    return out.getvalue()


def test_check_passes_while_fresh_and_fails_when_stale_or_missing(tmp_path):
    schedule = tmp_path / "s"
    with pytest.raises(CommandError, match=r"^stale: no .*s\.alive \(beat not started"):
        _check(schedule)
    path = liveness_path(schedule)
    path.touch()
    now = time.time()
    os.utime(path, (now - 29, now - 29))
    assert _check(schedule).startswith("alive: beat passed 29.")
    os.utime(path, (now - 31, now - 31))
    with pytest.raises(CommandError, match=r"^stale: beat last passed 31 s ago \(max 30\)$"):
        _check(schedule)
    assert _check(schedule, "--max-age", "40").startswith("alive: beat passed 31.")


def test_the_check_exits_1_when_stale(tmp_path):
    """What compose's health check sees: the exit status of manage.py."""
    schedule = tmp_path / "s"
    run = [sys.executable, "manage.py", "beatalive", "--schedule", str(schedule)]
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "cronradar.settings"}
    stale = subprocess.run(run, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert stale.returncode == 1 and "stale: no" in stale.stderr
    liveness_path(schedule).touch()
    fresh = subprocess.run(run, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert (fresh.returncode, fresh.stdout.split()[:3]) == (0, ["alive:", "beat", "passed"])


@pytest.fixture
def scheduler(tmp_path):
    """A LivenessScheduler of an app with nothing scheduled (no task is sent)."""
    app = Celery("beatalive-test", set_as_current=False, broker="memory://")
    app.conf.beat_schedule = {}
    s = LivenessScheduler(app=app, schedule_filename=str(tmp_path / "s"))
    yield s
    s.close()


def test_the_scheduler_touches_the_file_at_start(scheduler, tmp_path):
    assert liveness_path(tmp_path / "s").exists()


def test_the_scheduler_touches_the_file_on_its_ticks_at_most_every_second(scheduler, tmp_path):
    path = liveness_path(tmp_path / "s")
    os.utime(path, (1000, 1000))
    scheduler.tick()                       # within TOUCH_EVERY of the start: not again
    assert path.stat().st_mtime == 1000
    scheduler._touched -= TOUCH_EVERY      # a second later
    scheduler.tick()
    assert time.time() - path.stat().st_mtime < 5


@pytest.mark.live
@pytest.mark.skipif(not os.environ.get("REDIS_URL"),
                    reason="needs Redis (REDIS_URL), see scripts/test")
def test_real_beat_keeps_its_check_passing_until_it_stops(tmp_path):
    """celery beat with the liveness scheduler, as compose runs it: healthy while
    it runs, stale once it is stopped (SIGSTOP: stuck, not dead)."""
    import signal

    schedule = tmp_path / "celerybeat-schedule"
    beat = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "cronradar", "beat", "-l", "warning",
         "--scheduler", "cronradar.management.commands.beatalive:LivenessScheduler",
         "--schedule", str(schedule)],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while age(schedule, time.time()) is None and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(2.5)                     # beat's loop has passed since the start
        assert age(schedule, time.time()) < 2 * TOUCH_EVERY + 0.5
        assert _check(schedule, "--max-age", "2").startswith("alive:")
        beat.send_signal(signal.SIGSTOP)
        time.sleep(3)
        with pytest.raises(CommandError, match=r"^stale: beat last passed [345] s ago"):
            _check(schedule, "--max-age", "2")
    finally:
        beat.send_signal(signal.SIGCONT)
        beat.terminate()
        beat.wait(timeout=20)
