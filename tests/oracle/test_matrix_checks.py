"""The fixture matrix's own checks, each shown to fail a run that breaks only what it checks.

Each adversary below matches the scalar reference within tolerance on every fixture, so only
the check under test can catch it: poison that moves the output by 1e-12 of its value, one
store past the row, row 0 nudged by row 1. Were a check dropped from ``oracle.matrix.evaluate``,
its adversary would pass and the test would fail.
"""

from __future__ import annotations

import numpy as np
import pytest

from oracle import fixtures, matrix
from oracle.matrix import RunOutput, evaluate, model_implementation


def _poison_leaks(problem, poison, mutant):
    out = model_implementation(problem, poison, mutant)
    return RunOutput(y=out.y + poison * 1e-12, oob_writes=out.oob_writes)


def _stores_past_the_row(problem, poison, mutant):
    out = model_implementation(problem, poison, mutant)
    return RunOutput(y=out.y, oob_writes=1)


def _row_0_reads_row_1(problem, poison, mutant):
    out = model_implementation(problem, poison, mutant)
    y = out.y.copy()
    if problem.rows > 1:
        y[0] += 1e-9 * float(np.asarray(problem.x[1]).sum())
    return RunOutput(y=y, oob_writes=out.oob_writes)


def test_the_faithful_model_passes_the_three_checked_fixtures() -> None:
    for name in ("poison_invariance", "row_isolation", "hand_checkable"):
        assert evaluate(fixtures.get(name), model_implementation).passed, name


def test_poison_reaching_the_output_fails_poison_invariance_only_there() -> None:
    outcome = evaluate(fixtures.get("poison_invariance"), _poison_leaks)
    assert not outcome.passed
    assert f"poison {matrix.tiled.POISON:g} -> {matrix.ALTERNATE_POISON:g} changed" in (
        outcome.detail
    )
    # Within tolerance everywhere: a fixture without the check does not see it.
    assert evaluate(fixtures.get("hand_checkable"), _poison_leaks).passed


@pytest.mark.parametrize("name", ["hand_checkable", "non_power_of_two_tail", "row_isolation"])
def test_one_out_of_bounds_store_fails_every_fixture(name: str) -> None:
    outcome = evaluate(fixtures.get(name), _stores_past_the_row)
    assert not outcome.passed
    assert "1 out-of-bounds store(s)" in outcome.detail


def test_a_row_that_reads_another_fails_row_isolation() -> None:
    outcome = evaluate(fixtures.get("row_isolation"), _row_0_reads_row_1)
    assert not outcome.passed
    assert "changing row 1 changed row 0" in outcome.detail


def _configs(*offsets):
    """An autotuned kernel's run: the model's output, and one config per offset added to it."""

    def run(problem, poison, mutant):
        out = model_implementation(problem, poison, mutant)
        configs = tuple((f"BLOCK={64 << i}", out.y + offset) for i, offset in enumerate(offsets))
        return RunOutput(y=out.y, oob_writes=out.oob_writes, variants=configs)

    return run


def test_every_config_of_an_autotuned_kernel_is_judged() -> None:
    # Two configs within tolerance pass with the fixture; a second config off by 1.0 fails it
    # by name, though the first config (the one y) is right.
    fixture = fixtures.get("hand_checkable")
    passing = evaluate(fixture, _configs(0.0, 1e-9))
    assert passing.passed
    assert "every one of 2 configs judged" in passing.detail
    failing = evaluate(fixture, _configs(0.0, 1.0))
    assert not failing.passed
    assert "config BLOCK=128: output vs scalar reference" in failing.detail
    assert "config BLOCK=64" not in failing.detail
