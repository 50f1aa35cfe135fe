"""What a check finds in one kernel run: the derived bound is its own judge, tighter than the
tolerance, and a user's kernel gets no bound (its reduction order is not known)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from inspector.check import findings, pipeline
from oracle import compare as cmp
from oracle import error_bound as eb
from oracle import fixtures, scalar


def _run(problem, y, path="one_row"):
    exact = scalar.reference(problem).y_exact
    fields = findings.bound_fields(
        problem, y, exact, path=path, block=problem.block, peel=0, mode="compiled"
    )
    return SimpleNamespace(**fields)


def test_an_output_within_tolerance_but_past_the_bound_is_a_failure() -> None:
    problem = fixtures.get("multiple_rows").build()
    exact = scalar.reference(problem).y_exact
    bound = eb.row_bounds(problem, exact, eb.tree_adds(problem.width))
    y = exact.copy()
    y[1, 0] += 2 * bound[1]  # well inside float32's atol 1e-5, twice the bound
    assert cmp.compare(y, scalar.reference(problem).y, cmp.TOLERANCES["float32"]).passed
    line = findings.bound_failure(_run(problem, y))
    assert line is not None
    assert line.startswith("kernel error past the derived bound in 1 row(s); row 1: ")
    y[1, 0] = exact[1, 0] + 0.999 * bound[1]  # just inside
    assert findings.bound_failure(_run(problem, y)) is None
    y[1, 0] = exact[1, 0] + 1.001 * bound[1]  # just past
    assert findings.bound_failure(_run(problem, y)) is not None


def test_a_nan_output_is_never_within_the_bound() -> None:
    problem = fixtures.get("hand_checkable").build()
    y = scalar.reference(problem).y_exact.copy()
    y[0, 1] = np.nan
    assert "in 1 row(s); row 0: nan" in findings.bound_failure(_run(problem, y))


def test_a_user_kernel_gets_its_exact_error_and_no_bound() -> None:
    problem = fixtures.get("hand_checkable").build()
    run = _run(problem, scalar.reference(problem).y, path="user")
    assert run.row_error_bound is None
    assert run.bound_adds is None
    assert run.row_exact_error.shape == (problem.rows,)
    assert findings.bound_failure(run) is None
    assert findings.bound_ratio(run) is None


@pytest.mark.parametrize(("mode", "truncating"), [("interpreter", True), ("compiled", False)])
def test_only_the_interpreters_bfloat16_rounding_counts_as_truncating(mode, truncating) -> None:
    problem = fixtures.get("bfloat16_rows").build()
    exact = scalar.reference(problem).y_exact
    fields = findings.bound_fields(
        problem, exact, exact, path="one_row", block=problem.block, peel=0, mode=mode
    )
    assert fields["bound_truncating"] is truncating
    want = eb.row_bounds(problem, exact, fields["bound_adds"], truncating)
    assert np.array_equal(fields["row_error_bound"], want)


def test_the_bundled_kernel_on_the_input_is_within_its_bound() -> None:
    problem = fixtures.get("non_power_of_two_tail").build()
    reference = scalar.reference(problem)
    run = pipeline.run_and_judge_kernel(problem, reference.y, y_exact=reference.y_exact)
    assert run.row_error_bound is not None
    assert (run.row_exact_error <= run.row_error_bound).all()
    assert findings.kernel_run_findings(run, problem, reference) == ([], ())
    ratio = findings.bound_ratio(run)
    assert ratio.shape == (problem.rows,)
    assert (ratio <= 1).all()
