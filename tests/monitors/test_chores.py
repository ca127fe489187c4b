"""monitors.chores: a chore is claimed once per interval however many processes
ask (compare-and-set on due_at)."""
import pytest

from monitors import chores
from monitors.models import Chore
from tests.conftest import T0, s

MINUTE = s(60)


def stale(first):
    """chores._due answering ``first`` once (what this process read before the
    other one wrote), then the row as it is."""
    real, calls = chores._due, []

    def due(name):
        calls.append(name)
        return first if len(calls) == 1 else real(name)
    return due


def row():
    return Chore.objects.values("name", "due_at", "last_at", "last_result").get()


@pytest.mark.django_db
def test_a_new_chore_is_due_at_once_then_once_an_interval():
    assert chores.claim("watchdog", T0, MINUTE) == (True, T0 + s(60))
    assert chores.claim("watchdog", T0 + s(10), MINUTE) == (False, T0 + s(60))
    assert chores.claim("watchdog", T0 + s(59), MINUTE) == (False, T0 + s(60))
    assert chores.claim("watchdog", T0 + s(61), MINUTE) == (True, T0 + s(121))
    assert row() == {"name": "watchdog", "due_at": T0 + s(121), "last_at": None,
                     "last_result": ""}


@pytest.mark.django_db
def test_of_two_processes_that_read_the_same_due_at_one_gets_the_chore(monkeypatch):
    """B read due_at before A moved it: B's conditional UPDATE matches nothing, and
    B learns when the chore is next due from the row."""
    chores.claim("watchdog", T0, MINUTE)
    assert chores.claim("watchdog", T0 + s(60), MINUTE) == (True, T0 + s(120))  # A
    monkeypatch.setattr(chores, "_due", stale(T0 + s(60)))  # what B read before A's UPDATE
    assert chores.claim("watchdog", T0 + s(60), MINUTE) == (False, T0 + s(120))  # B
    assert row()["due_at"] == T0 + s(120)


@pytest.mark.django_db
def test_of_two_processes_creating_the_row_one_gets_the_chore(monkeypatch):
    """B saw no row, but A created it first: B's insert fails inside a savepoint
    (the caller's transaction goes on) and B does not do the chore."""
    assert chores.claim("watchdog", T0, MINUTE) == (True, T0 + s(60))  # A
    monkeypatch.setattr(chores, "_due", stale(None))
    assert chores.claim("watchdog", T0 + s(1), MINUTE) == (False, T0 + s(60))  # B
    assert Chore.objects.count() == 1


@pytest.mark.django_db
def test_done_records_when_and_how():
    chores.claim("watchdog", T0, MINUTE)
    chores.done("watchdog", T0 + s(2), "evaluator_lag")
    assert row() == {"name": "watchdog", "due_at": T0 + s(60), "last_at": T0 + s(2),
                     "last_result": "evaluator_lag"}


@pytest.mark.django_db
def test_chores_are_separate():
    assert chores.claim("a", T0, MINUTE) == (True, T0 + s(60))
    assert chores.claim("b", T0 + s(5), s(10)) == (True, T0 + s(15))
    assert chores.claim("a", T0 + s(15), MINUTE) == (False, T0 + s(60))
