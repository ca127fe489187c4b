"""``manage.py policymodel``: the document's output line for line, node's outputs,
and the parameters it refuses."""
from __future__ import annotations

import shutil
import subprocess

import pytest
from django.core.management import CommandError

from tests.conftest import DATA
from tests.insights.conftest import EXPECTED, command_output

LISTING_CONSTANTS = ("const NIGHTS = 30, SLICES = 12, INTERVAL = 24, SEED = 20260813, "
                     "FAIL_PROB = 0.5;")


def test_the_command_prints_the_documents_output_line_for_line():
    got = command_output().splitlines()
    expected = EXPECTED.read_text().splitlines()
    assert len(got) == len(expected)
    for number, (g, e) in enumerate(zip(got, expected, strict=True), 1):
        assert g == e, f"line {number}"
    assert command_output() == EXPECTED.read_text()  # trailing newline included


def test_the_defaults_are_the_documents_parameters():
    assert command_output("--seed", "20260813", "--nights", "30", "--fail-prob", "0.5") == \
        command_output()


def test_another_output_printed_by_node_from_the_listing():
    """Seed 25, 60 nights, fail 0.3: a queue that carries 3 runs past the horizon,
    a peak queue of 4, three runs in parallel (printed by node v20 from jobs.mjs)."""
    expected = (DATA / "policymodel_seed_25_nights_60_p_0.3.node.txt").read_text()
    assert "runs carrying past the horizon 3" in expected
    assert command_output("--seed", "25", "--nights", "60", "--fail-prob", "0.3") == expected


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.parametrize(("seed", "nights", "fail_prob"), [
    (20260813, 30, 0.5), (1, 0, 0.5), (1, 1, 0.5), (-5, 30, 0.5), (2147483647, 10, 0.5),
    (-2147483647, 5, 0.3), (7, 200, 0.0), (7, 200, 1.0), (9007199254740991, 40, 0.75),
    (-123456789012, 333, 0.123456789), (424242, 365, 0.9),
])
def test_the_command_agrees_with_node_running_the_listing(seed, nights, fail_prob):
    source = (DATA / "jobs.mjs").read_text()
    assert LISTING_CONSTANTS in source
    source = source.replace(LISTING_CONSTANTS, f"const NIGHTS = {nights}, SLICES = 12, "
                            f"INTERVAL = 24, SEED = {seed}, FAIL_PROB = {fail_prob!r};")
    node = subprocess.run(["node", "--input-type=module"], input=source, capture_output=True,
                          text=True, check=True, timeout=60)
    assert command_output("--seed", str(seed), "--nights", str(nights),
                          "--fail-prob", repr(fail_prob)) == node.stdout


@pytest.mark.parametrize("args, message", [
    (["--nights", "-1"], "--nights must be from 0 to 100000"),
    (["--nights", "100001"], "--nights must be from 0 to 100000"),
    (["--fail-prob", "1.5"], None), (["--fail-prob", "nan"], None),
    (["--seed", str(2**53)], None)])
def test_the_command_refuses_parameters_the_model_cannot_take(args, message):
    with pytest.raises(CommandError) as refused:
        command_output(*args)
    if message:
        assert str(refused.value) == message
