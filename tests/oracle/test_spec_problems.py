"""The validated problem: what ``make_problem`` and ``synthetic_problem`` accept, what they build
and how each rejection reads.

Bounds and expected messages are written out as numbers, not read from ``oracle.limits.LIMITS``
(README: rows in [1, 4096], width in [1, 65536], rows * row_stride <= 4194304; synthetic input
x ~ N(0, 1), weights uniform in [-2, 2], seed an integer in [0, 2**32 - 1]).
"""

from __future__ import annotations

import numpy as np
import pytest

from oracle.limits import ValidationError
from oracle.spec import make_problem, synthetic_problem


def _refusal(call, *args, **kwargs) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        call(*args, **kwargs)
    return info.value


# ---------------------------------------------------------------- missing and empty


@pytest.mark.parametrize("missing", [None, "", "   "])
def test_a_missing_count_is_called_missing_not_a_non_number(missing) -> None:
    error = _refusal(synthetic_problem, missing, 3)
    assert error.field == "rows"
    assert str(error) == "rows: missing; expected an integer in [1, 4096]"
    error = _refusal(synthetic_problem, 2, 3, seed=missing)
    assert str(error) == "seed: missing; expected an integer in [0, 4294967295]"


@pytest.mark.parametrize("missing", ["", "  "])
def test_a_blank_declared_width_is_called_missing(missing: str) -> None:
    error = _refusal(make_problem, np.ones((2, 3)), np.ones(3), eps=1e-6, width=missing)
    assert str(error) == "width: missing; expected an integer in [1, 65536]"


@pytest.mark.parametrize("empty", [[], np.zeros((0, 3)), np.zeros((2, 0))])
def test_an_empty_x_is_refused_as_empty(empty) -> None:
    error = _refusal(make_problem, empty, [], eps=1e-6)
    assert error.field == "x"
    assert str(error) == "x: empty; expected at least one value"


# ---------------------------------------------------------------- shapes


def test_a_flat_list_is_one_row() -> None:
    problem = make_problem([1.0, 2.0, 3.0], [0.5, 1.0, 2.0], eps=1e-6)
    assert (problem.rows, problem.width) == (1, 3)
    assert problem.x.tolist() == [[1.0, 2.0, 3.0]]
    assert problem.row_stride == 3


def test_a_flat_list_of_even_length_is_still_one_row() -> None:
    problem = make_problem([1.0, 2.0, 3.0, 4.0], np.ones(4), eps=1e-6, rows=1, width=4)
    assert problem.x.tolist() == [[1.0, 2.0, 3.0, 4.0]]


def test_a_scalar_x_is_refused_for_its_dimensions() -> None:
    error = _refusal(make_problem, 5.0, [1.0], eps=1e-6)
    assert error.field == "x"
    assert "0 dimensions" in str(error)


def test_declared_rows_and_width_that_match_a_non_square_x_are_accepted() -> None:
    problem = make_problem(np.ones((2, 3)), np.ones(3), eps=1e-6, rows=2, width=3)
    assert (problem.rows, problem.width) == (2, 3)
    problem = make_problem(np.ones((3, 2)), np.ones(2), eps=1e-6, rows=3, width=2)
    assert (problem.rows, problem.width) == (3, 2)


def test_declared_rows_that_differ_from_x_name_both_counts() -> None:
    error = _refusal(make_problem, np.ones((2, 3)), np.ones(3), eps=1e-6, rows=5)
    assert error.field == "rows"
    assert error.value == 5
    assert error.bound == "2 (rows given in x)"
    assert str(error) == "rows: declared 5 but x has 2 rows"


def test_declared_width_that_differs_from_x_names_both_counts() -> None:
    error = _refusal(make_problem, np.ones((2, 3)), np.ones(3), eps=1e-6, width=5)
    assert error.field == "width"
    assert error.value == 5
    assert error.bound == "3 (values per row in x)"
    assert str(error) == "width: declared 5 but x rows have 3 values (width mismatch)"


def test_a_weight_of_the_wrong_length_names_both_lengths() -> None:
    error = _refusal(make_problem, np.ones((2, 3)), np.ones(4), eps=1e-6)
    assert error.field == "weight"
    assert error.value == 4
    assert str(error) == "weight: 4 values, expected exactly width = 3"


# ---------------------------------------------------------------- row_stride


def test_row_stride_starts_at_1() -> None:
    assert make_problem([[2.0]], [1.0], eps=1e-6, row_stride=1).row_stride == 1
    error = _refusal(make_problem, [[2.0]], [1.0], eps=1e-6, row_stride=0)
    assert error.field == "row_stride"
    assert str(error) == ("row_stride: 0 is out of range; expected an integer in [1, 4194304]")


def test_rows_times_row_stride_past_the_limit_shows_the_product() -> None:
    x = np.ones((2, 1))
    assert make_problem(x, [1.0], eps=1e-6, row_stride=2097152).row_stride == 2097152
    error = _refusal(make_problem, x, [1.0], eps=1e-6, row_stride=2097153)
    assert str(error) == "row_stride: rows * row_stride = 4194306 exceeds 4194304"


# ---------------------------------------------------------------- values


def test_the_first_non_finite_element_in_row_order_is_named() -> None:
    x = np.ones((3, 3))
    x[0, 2] = np.nan
    x[1, 0] = np.inf
    x[2, 1] = np.nan
    error = _refusal(make_problem, x, np.ones(3), eps=1e-6)
    assert error.field == "x"
    assert str(error).startswith("x: element [0, 2] is nan, not finite;")
    weight = np.array([1.0, -np.inf, np.nan])
    error = _refusal(make_problem, np.ones((1, 3)), weight, eps=1e-6)
    assert str(error).startswith("weight: element [1] is -inf, not finite;")


def test_the_first_value_over_the_limit_in_row_order_is_named() -> None:
    x = np.ones((3, 3))
    x[0, 1] = 2e6
    x[2, 2] = -3e6
    error = _refusal(make_problem, x, np.ones(3), eps=1e-6)
    assert str(error) == "x: element [0, 1] = 2e+06 exceeds 1e+06 (float32)"
    weight = np.array([1.0, 70000.0, -80000.0])
    error = _refusal(make_problem, np.ones((1, 3)), weight, eps=1e-6, dtype="float16")
    assert str(error) == "weight: element [1] = 70000 exceeds 65504 (float16)"


# ---------------------------------------------------------------- synthetic input


def test_synthetic_seed_from_0_to_4294967295() -> None:
    assert synthetic_problem(1, 3, seed=0).name == "synthetic(seed=0)"
    top = synthetic_problem(1, 3, seed=4294967295)
    assert top.name == "synthetic(seed=4294967295)"
    assert top.x.shape == (1, 3)
    for past in (-1, 4294967296):
        error = _refusal(synthetic_problem, 1, 3, seed=past)
        assert error.field == "seed"
        assert str(error) == (
            f"seed: {past} is out of range; expected an integer in [0, 4294967295]"
        )


def test_synthetic_rows_times_width_at_most_4194304() -> None:
    # 397 * 10565 = 4194305: one element past, each factor inside its own range.
    error = _refusal(synthetic_problem, 397, 10565)
    assert error.field == "rows"
    assert error.bound == "rows * width <= 4194304"
    assert str(error) == "rows: rows * width = 4194305 exceeds 4194304"
    error = _refusal(synthetic_problem, 4096, 1025)
    assert str(error) == "rows: rows * width = 4198400 exceeds 4194304"
    problem = synthetic_problem(64, 65536, dtype="bfloat16")
    assert (problem.rows, problem.width, problem.row_stride) == (64, 65536, 65536)


def test_synthetic_weights_are_uniform_over_minus_2_to_2() -> None:
    weight = synthetic_problem(1, 4096, seed=3).weight
    assert weight.min() >= -2.0
    assert weight.max() <= 2.0
    # 4096 uniform draws: each tenth of the range holds about 410 of them.
    counts, _ = np.histogram(weight, bins=10, range=(-2.0, 2.0))
    assert counts.min() > 300, counts


def test_synthetic_x_is_standard_normal() -> None:
    x = synthetic_problem(16, 1024, seed=5).x
    assert abs(float(x.mean())) < 0.05
    assert abs(float(x.std()) - 1.0) < 0.05
    assert (x < 0).any()
    assert (x > 0).any()


def test_synthetic_input_is_reproducible_by_seed() -> None:
    first = synthetic_problem(3, 70, seed=11)
    again = synthetic_problem(3, 70, seed=11)
    other = synthetic_problem(3, 70, seed=12)
    assert np.array_equal(first.x, again.x)
    assert np.array_equal(first.weight, again.weight)
    assert not np.array_equal(first.x, other.x)
