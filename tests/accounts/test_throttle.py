"""accounts.throttle: the sign-in cool-off per account and address and per
address, and the API key lookups' throttle per address, in the cache; the
cache down lets everything through with one log line."""
from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest

from accounts import throttle
from core import logs
from tests.helpers import hung_redis_cache

T0 = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
A, B = "192.0.2.10", "198.51.100.7"


def _fail(times: int, username: str = "ana@corp.test", address: str = A, now=T0) -> None:
    for _ in range(times):
        throttle.signin_failed(username, address, now)


def test_the_wait_starts_after_five_failures_and_doubles_to_the_cap():
    assert [throttle.cool_off(n, 5) for n in (0, 4)] == [timedelta(0)] * 2
    assert [throttle.cool_off(n, 5).total_seconds() for n in (5, 6, 7, 10, 14, 15, 10**6)] == [
        1, 2, 4, 32, 512, 900, 900]


def test_five_failures_cost_nothing_the_sixth_waits_a_second():
    _fail(4)
    assert throttle.signin_wait("ana@corp.test", A, T0) == 0
    _fail(1)
    assert throttle.signin_wait("ana@corp.test", A, T0) == 1
    assert throttle.signin_wait("ana@corp.test", A, T0 + timedelta(seconds=1)) == 0


def test_thirty_failures_wait_the_cap_and_the_wait_counts_down():
    _fail(30)
    assert throttle.signin_wait("ana@corp.test", A, T0) == 900
    assert throttle.signin_wait("ana@corp.test", A, T0 + timedelta(seconds=892.5)) == 8
    assert throttle.signin_message(8) == "too many failed sign-ins: try again in 8 seconds"
    assert throttle.signin_message(1) == "too many failed sign-ins: try again in 1 second"


def test_the_wait_grows_with_each_failure():
    waits = []
    for _ in range(5):
        _fail(1 if waits else 5)
        waits.append(throttle.signin_wait("ana@corp.test", A, T0))
    assert waits == [1, 2, 4, 8, 16]


def test_another_address_and_another_account_are_not_slowed():
    _fail(10)
    assert throttle.signin_wait("ana@corp.test", A, T0) == 32
    assert throttle.signin_wait("ana@corp.test", B, T0) == 0  # the owner elsewhere
    assert throttle.signin_wait("bob@corp.test", A, T0) == 0  # below the address's threshold
    assert throttle.signin_wait("ANA@corp.test ", A, T0) == 32  # the same account


def test_many_accounts_from_one_address_wait_past_its_threshold():
    for n in range(throttle.ADDRESS_FREE - 1):
        _fail(1, username=f"user{n}@corp.test")
    assert throttle.signin_wait("new@corp.test", A, T0) == 0
    _fail(1, username="user-last@corp.test")
    assert throttle.signin_wait("new@corp.test", A, T0) == 1
    assert throttle.signin_wait("new@corp.test", B, T0) == 0


def test_a_sign_in_resets_the_pair_not_the_address():
    for n in range(throttle.ADDRESS_FREE - 7):
        _fail(1, username=f"user{n}@corp.test")
    _fail(6)  # the address's 19th failure
    assert throttle.signin_wait("ana@corp.test", A, T0) == 2
    throttle.signin_succeeded("ana@corp.test", A)
    assert throttle.signin_wait("ana@corp.test", A, T0) == 0
    _fail(1, username="other@corp.test")  # its 20th: the address's count stayed
    assert throttle.signin_wait("new@corp.test", A, T0) == 1


def test_without_an_address_nothing_is_counted():
    _fail(30, address=None)
    assert throttle.signin_wait("ana@corp.test", None, T0) == 0
    assert throttle.signin_wait("ana@corp.test", "", T0) == 0


def test_unknown_keys_are_refused_until_the_window_ends():
    now = T0 + timedelta(seconds=15.5)
    for _ in range(throttle.KEY_FAILURES - 1):
        throttle.key_failed(A, now)
    assert throttle.key_wait(A, now) == 0
    throttle.key_failed(A, now)
    assert throttle.key_wait(A, now) == 45
    assert throttle.key_wait(B, now) == 0
    assert throttle.key_wait(A, T0 + timedelta(minutes=1)) == 0  # a new window


@pytest.fixture
def outage(monkeypatch):
    fresh = logs.Outage("cache", "sign-in or API key attempt(s) let through unthrottled",
                        level=logging.WARNING)
    monkeypatch.setattr(throttle, "cache_down", fresh)
    return fresh


def test_the_cache_down_lets_every_attempt_through_with_one_line(settings, outage, caplog):
    _fail(30)
    for _ in range(throttle.KEY_FAILURES):
        throttle.key_failed(A, T0)
    with hung_redis_cache(settings):
        assert throttle.signin_wait("ana@corp.test", A, T0) == 0
        _fail(3)
        assert throttle.key_wait(A, T0) == 0
        throttle.key_failed(A, T0)
    lines = [r for r in caplog.records if r.name == "accounts.throttle"]
    assert [(r.levelno, r.exc_info) for r in lines] == [(logging.WARNING, None)]
    assert lines[0].getMessage().startswith("cache unreachable since ")
    assert "1 sign-in or API key attempt(s) let through unthrottled" in lines[0].getMessage()
