"""The kill matrix as a user drives it: its progress, its shared references, its verdicts.

The progress is counted by hand: every fixture once for the faithful implementation, then every
fixture that runs an implementation once per mutant. The poison and row-isolation adversaries
below each stay within tolerance of the scalar reference, so only the check under test sees them.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from oracle import fixtures
from oracle.fixtures import Fixture
from oracle.matrix import (
    KillMatrix,
    ReferenceCache,
    RunOutput,
    evaluate,
    kill_matrix_steps,
    model_implementation,
)

MUTANTS = ("missing_weight", "missing_square")


def _three_fixtures() -> list[Fixture]:
    # Two that run an implementation, one malformed that only the validator sees.
    return [
        fixtures.get("hand_checkable"),
        fixtures.get("width_mismatch"),
        fixtures.get("row_isolation"),
    ]


def _counting(fixture: Fixture, builds: Counter) -> Fixture:
    """The same fixture, counting how often its problem is built."""

    def inputs():
        builds[fixture.name] += 1
        return fixture.inputs()

    return Fixture(
        fixture.name,
        fixture.category,
        fixture.description,
        inputs,
        fixture.check,
        fixture.reject_field,
    )


def test_progress_counts_every_evaluation_from_zero_before_it_runs() -> None:
    items = list(kill_matrix_steps(model_implementation, MUTANTS, _three_fixtures()))
    # 3 baseline evaluations + 2 mutants x 2 runnable fixtures = 7 steps, numbered 0..6.
    assert items[:-1] == [
        (0, 7, "model: hand_checkable"),
        (1, 7, "model: width_mismatch"),
        (2, 7, "model: row_isolation"),
        (3, 7, "model mutant missing_weight: hand_checkable"),
        (4, 7, "model mutant missing_weight: row_isolation"),
        (5, 7, "model mutant missing_square: hand_checkable"),
        (6, 7, "model mutant missing_square: row_isolation"),
    ]
    result = items[-1]
    assert isinstance(result, KillMatrix)
    assert result.fixtures == ("hand_checkable", "width_mismatch", "row_isolation")
    assert result.killed_by("missing_weight") == ("hand_checkable", "row_isolation")
    assert result.passed


def test_progress_total_of_a_kernel_matrix_with_one_mutant() -> None:
    items = list(
        kill_matrix_steps(
            model_implementation, ["missing_weight"], _three_fixtures(), target="kernel"
        )
    )
    assert [item[:2] for item in items[:-1]] == [(0, 5), (1, 5), (2, 5), (3, 5), (4, 5)]
    assert items[3][2] == "kernel mutant missing_weight: hand_checkable"


def test_one_matrix_builds_each_fixture_once_for_the_baseline_and_every_mutant() -> None:
    builds: Counter = Counter()
    counted = [_counting(f, builds) for f in _three_fixtures()]
    for _ in kill_matrix_steps(model_implementation, MUTANTS, counted):
        pass
    assert builds == {"hand_checkable": 1, "width_mismatch": 1, "row_isolation": 1}


def test_two_matrices_sharing_a_cache_build_each_fixture_once() -> None:
    builds: Counter = Counter()
    counted = [_counting(f, builds) for f in _three_fixtures()]
    cache = ReferenceCache()
    for target in ("model", "kernel"):
        for _ in kill_matrix_steps(
            model_implementation, MUTANTS, counted, target=target, cache=cache
        ):
            pass
    # The malformed fixture raises, so nothing is cached for it: one attempt per matrix.
    assert builds == {"hand_checkable": 1, "width_mismatch": 2, "row_isolation": 1}


def test_an_implementation_that_reports_no_oob_count_has_made_no_stray_store() -> None:
    def y_only(problem, poison, mutant):
        return RunOutput(y=model_implementation(problem, poison, mutant).y)

    outcome = evaluate(fixtures.get("hand_checkable"), y_only)
    assert outcome.passed, outcome.detail
    assert "out-of-bounds" not in outcome.detail


def test_poison_invariance_sees_a_leak_that_squares_the_poison() -> None:
    # Padding pulled into the mean square: the sign of the poison is lost, its size is not.
    def squared_leak(problem, poison, mutant):
        out = model_implementation(problem, poison, mutant)
        return RunOutput(y=out.y + 1e-13 * poison**2, oob_writes=out.oob_writes)

    outcome = evaluate(fixtures.get("poison_invariance"), squared_leak)
    assert not outcome.passed
    assert "changed the output" in outcome.detail
    assert "scalar reference" not in outcome.detail
    assert evaluate(fixtures.get("hand_checkable"), squared_leak).passed


def test_poison_invariance_sees_a_leak_that_clamps_the_poison_at_zero() -> None:
    # Padding pulled into a running maximum that starts at zero: a negative poison hides.
    def clamped_leak(problem, poison, mutant):
        out = model_implementation(problem, poison, mutant)
        return RunOutput(y=out.y + 1e-12 * max(poison, 0.0), oob_writes=out.oob_writes)

    outcome = evaluate(fixtures.get("poison_invariance"), clamped_leak)
    assert not outcome.passed
    assert "changed the output" in outcome.detail
    assert "scalar reference" not in outcome.detail
    assert evaluate(fixtures.get("hand_checkable"), clamped_leak).passed


def test_row_isolation_names_a_wrong_answer_for_the_altered_problem() -> None:
    # Results cached by problem name: the altered problem (same name) gets the first answer,
    # so row 0 stays put but row 1 no longer matches its reference.
    answers: dict[str, RunOutput] = {}

    def stale(problem, poison, mutant):
        if problem.name not in answers:
            answers[problem.name] = model_implementation(problem, poison, mutant)
        return answers[problem.name]

    outcome = evaluate(fixtures.get("row_isolation"), stale)
    assert not outcome.passed
    assert outcome.detail.startswith("altered problem vs reference: FAIL (float32: atol=1e-05")
    assert "changing row 1 changed row 0" not in outcome.detail
    assert np.isfinite(outcome.max_abs)
