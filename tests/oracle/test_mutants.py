"""Each named mutant dies on a named fixture; the matrix itself can fail."""

from __future__ import annotations

import math

import numpy as np
import pytest

from oracle import fixtures, matrix, scalar, tiled
from oracle.mutants import DESCRIPTIONS, MODEL_MUTANTS
from oracle.spec import make_problem


@pytest.fixture(scope="module")
def model_matrix():
    return matrix.kill_matrix(matrix.model_implementation, MODEL_MUTANTS, fixtures.FIXTURES)


def test_the_named_mutants():
    assert MODEL_MUTANTS == (
        "sum_instead_of_mean",
        "missing_square",
        "missing_epsilon",
        "masked_tail_inclusion",
        "missing_weight",
        "wrong_row_stride",
        "half_accumulation",
        "eps_outside_root",
    )
    assert set(MODEL_MUTANTS) <= set(DESCRIPTIONS)


def test_faithful_model_passes_every_fixture(model_matrix):
    failures = [(o.fixture, o.actual, o.detail) for o in model_matrix.baseline if not o.passed]
    assert failures == []
    assert model_matrix.passed


@pytest.mark.parametrize(
    ("mutant", "killer"),
    [
        ("sum_instead_of_mean", "hand_checkable"),
        ("missing_square", "alternating_signs"),
        ("missing_epsilon", "zero_row"),
        ("missing_epsilon", "max_eps"),
        ("masked_tail_inclusion", "non_power_of_two_tail"),
        ("masked_tail_inclusion", "poison_invariance"),
        ("missing_weight", "asymmetric_weights"),
        ("wrong_row_stride", "padded_row_stride"),
        ("wrong_row_stride", "row_isolation"),
        ("half_accumulation", "float16_sum_overflow"),
        ("half_accumulation", "float16_square_underflow"),
        ("eps_outside_root", "max_eps"),
        ("eps_outside_root", "float32_mean_square_near_eps"),
        ("eps_outside_root", "float16_mean_square_near_eps"),
        ("eps_outside_root", "bfloat16_mean_square_near_eps"),
        ("eps_outside_root", "mean_square_near_small_eps"),
    ],
)
def test_mutant_killed_by_named_fixture(model_matrix, mutant, killer):
    assert killer in model_matrix.killed_by(mutant)


@pytest.mark.parametrize(
    ("mutant", "survives_on"),
    [
        # What each fixture cannot see, which is why the matrix needs the others.
        ("masked_tail_inclusion", "width_256"),  # power of two: no tail
        ("missing_weight", "width_70"),  # unit weights
        ("missing_epsilon", "multiple_rows"),  # eps is 1e-6 of a mean square ~1
        ("wrong_row_stride", "multiple_rows"),  # packed rows: stride == width
        # 3x70 N(0, 1) rows: a float16 sum of ~70 squares neither overflows nor underflows.
        ("half_accumulation", "float16_rows"),
        ("half_accumulation", "bfloat16_rows"),
        ("eps_outside_root", "multiple_rows"),  # eps 1e-6 next to a mean square ~1
    ],
)
def test_mutant_invisible_to_some_fixtures(model_matrix, mutant, survives_on):
    assert survives_on not in model_matrix.killed_by(mutant)


def test_weakened_fixture_set_lets_a_named_mutant_survive():
    eps_fixtures = {"zero_row", "max_eps", "min_eps"}
    weak = [f for f in fixtures.FIXTURES if f.name not in eps_fixtures and "near" not in f.name]
    result = matrix.kill_matrix(matrix.model_implementation, MODEL_MUTANTS, weak)
    # eps outside the root acts where eps is near the mean square too: both now survive.
    assert result.survivors == ("missing_epsilon", "eps_outside_root")
    assert not result.passed
    assert "model mutant missing_epsilon: SURVIVED" in result.summary_lines()


def test_a_failing_baseline_fails_the_matrix():
    def broken(problem, poison, mutant):
        out = matrix.model_implementation(problem, poison, mutant)
        return matrix.RunOutput(y=out.y * 1.01, oob_writes=0)

    result = matrix.kill_matrix(broken, ["missing_weight"], [fixtures.get("hand_checkable")])
    assert result.baseline_failures == ("hand_checkable",)
    assert not result.passed


def test_poison_changes_nothing_unless_the_tail_is_included():
    problem = fixtures.get("non_power_of_two_tail").build()
    first = tiled.model(problem, poison=-3072.0)
    second = tiled.model(problem, poison=7.0)
    np.testing.assert_array_equal(first.y, second.y)
    np.testing.assert_array_equal(first.rrms, second.rrms)
    bad_first = tiled.model(problem, poison=-3072.0, mutant="masked_tail_inclusion")
    bad_second = tiled.model(problem, poison=7.0, mutant="masked_tail_inclusion")
    assert not np.array_equal(bad_first.y, bad_second.y)
    assert not np.array_equal(bad_first.sum_squares, first.sum_squares)


def test_wrong_row_stride_is_an_out_of_bounds_store_in_the_model():
    problem = fixtures.get("padded_row_stride").build()
    result = tiled.model(problem, mutant="wrong_row_stride")
    assert result.gap_writes  # row 1 landed in row 0's padding
    out = matrix.model_implementation(problem, tiled.POISON, "wrong_row_stride")
    assert out.oob_writes == len(result.gap_writes)


def test_row_isolation_detects_a_cross_row_implementation():
    def leaky(problem, poison, mutant):
        # A bug that normalizes every row by the first two rows' pooled mean square.
        ref = scalar.reference(problem)
        pooled = ref.mean_square[:2].mean()
        y = problem.x / np.sqrt(pooled + problem.eps) * problem.weight
        return matrix.RunOutput(y=y)

    outcome = matrix.evaluate(fixtures.get("row_isolation"), leaky)
    assert not outcome.passed
    assert "changing row 1 changed row 0" in outcome.detail


def test_an_implementation_that_raises_is_a_failed_fixture_not_a_crash():
    def raising(problem, poison, mutant):
        raise RuntimeError("boom")

    outcome = matrix.evaluate(fixtures.get("hand_checkable"), raising)
    assert outcome.actual == "fail"
    assert "RuntimeError: boom" in outcome.detail


def test_the_eps_outside_root_mutant_adds_eps_to_the_root():
    # x = (0.125, -0.125): mean square 2**-6, its root 0.125, eps 2**-7 (all exact in float32):
    # the mutant's rrms is 1 / (0.125 + 2**-7), the faithful one 1 / sqrt(2**-6 + 2**-7).
    problem = make_problem([[0.125, -0.125]], [1.0, 2.0], eps=2.0**-7)
    outside = tiled.model(problem, mutant="eps_outside_root")
    assert outside.rrms[0] == np.float32(1.0 / (0.125 + 2.0**-7))
    np.testing.assert_array_equal(outside.y[0], np.float32([0.125, -0.25]) * outside.rrms[0])
    faithful = tiled.model(problem)
    assert faithful.rrms[0] == pytest.approx(1.0 / math.sqrt(2.0**-6 + 2.0**-7), rel=1e-6)
