"""cronradar.guard: the probes' reads on one background thread, waited for at most
CRONRADAR_READY_TIMEOUT seconds; a stuck read answers at once and starts nothing."""
import threading
import time

import pytest

from cronradar import guard
from tests.helpers import StuckRead


@pytest.fixture
def stuck():
    read = StuckRead()
    yield read
    read.free()


def timed(fn):
    began = time.monotonic()
    result = fn()
    return result, time.monotonic() - began


def test_a_timeout_of_0_reads_inline():
    assert guard.within(threading.current_thread, 0) == (True, threading.current_thread())


def test_a_read_that_answers_in_time_gives_its_value_from_another_thread():
    answered, thread = guard.within(threading.current_thread, 1)
    assert answered is True
    assert thread is not threading.current_thread()
    assert thread.name == "cronradar-probe-reads"
    assert guard.within(threading.current_thread, 1) == (True, thread)  # one thread, kept


def test_what_the_read_raised_is_raised():
    def broken():
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        guard.within(broken, 1)


def test_the_setting_is_the_timeout(settings, stuck):
    settings.CRONRADAR_READY_TIMEOUT = 0.3
    result, took = timed(lambda: guard.within(stuck))
    assert result == (False, None)
    assert 0.3 <= took < 0.8


def test_a_stuck_read_answers_in_time_and_later_ones_at_once_starting_nothing(stuck):
    result, took = timed(lambda: guard.within(stuck, 1))
    assert result == (False, None)
    assert 1 <= took < 1.3
    assert len(stuck.threads) == 1
    again = StuckRead()
    result, took = timed(lambda: guard.within(again, 1))
    assert result == (False, None)
    assert took < 0.2
    assert (len(stuck.threads), len(again.threads)) == (1, 0)
    stuck.free()  # the database answers again: so do the reads, once it is done
    assert guard.within(lambda: "fresh", 1) == (True, "fresh")
    assert len(again.threads) == 0


def test_a_concurrent_read_during_a_stuck_one_answers_at_once(stuck):
    first = threading.Thread(target=guard.within, args=(stuck, 2))
    first.start()
    while not stuck.threads:
        time.sleep(0.01)
    time.sleep(0.1)
    again = StuckRead()
    result, took = timed(lambda: guard.within(again, 0.05))  # the stuck one: 0.1 s > 0.05 s
    assert (result, len(again.threads)) == ((False, None), 0)
    assert took < 0.2
    first.join()


def test_a_read_asked_for_while_another_runs_waits_its_turn_within_its_timeout():
    slow = threading.Event()

    def first():
        slow.wait(0.2)
        return 1

    out = []
    runner = threading.Thread(target=lambda: out.append(guard.within(first, 1)))
    runner.start()
    time.sleep(0.05)
    assert guard.within(lambda: 2, 1) == (True, 2)
    runner.join()
    assert out == [(True, 1)]


def test_reads_queued_behind_one_found_stuck_answer_when_its_caller_gives_up(stuck):
    """A second probe while the first still waits: it is answered as the first
    gives up (about 1 s after the first began), not a second later."""
    first = threading.Thread(target=guard.within, args=(stuck, 1))
    began = time.monotonic()
    first.start()
    while not stuck.threads:
        time.sleep(0.01)
    time.sleep(0.3)
    queued = StuckRead()
    assert guard.within(queued, 1) == (False, None)
    assert 1 <= time.monotonic() - began < 1.3
    assert (len(stuck.threads), queued.threads) == (1, [])
    first.join()
