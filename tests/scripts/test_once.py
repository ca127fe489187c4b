"""scripts/_once.sh: the pytest arguments of scripts/test's second pass
(PostgreSQL+Redis) deselect the tests marked ``once``, which ran in the first."""
import subprocess

import pytest

from tests.live import ROOT


def second_pass(*args: str) -> list[str]:
    out = subprocess.run(
        ["bash", "-c", '. scripts/_once.sh; once_deselected "$@"; '
                       'printf "%s\\0" "${ONCE_ARGS[@]}"', "_", *args],
        cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return out.split("\0")[:-1]


@pytest.mark.parametrize("given, second", [
    ((), ["-m", "not once"]),
    (("-q", "tests/site"), ["-q", "tests/site", "-m", "not once"]),
    (("-m", "not live", "-x"), ["-m", "(not live) and not once", "-x"]),
    (("-mlive or slow",), ["-m", "(live or slow) and not once"]),
    (("-m", "a", "-m", "b"), ["-m", "(a) and not once", "-m", "(b) and not once"]),
])
def test_the_second_pass_deselects_once(given, second):
    assert second_pass(*given) == second
