"""What a comparison reports: both maximum errors, the mismatch count, the first mismatch, the
one-line description, the per-row errors, and the cut of a value shown in an error message.

Every expected number is worked out by hand in the test (float32 tolerance: atol 1e-5,
rtol 2e-5), not read back from the code under test.
"""

from __future__ import annotations

import numpy as np

from oracle.compare import TOLERANCES, compare, max_errors
from oracle.limits import ValidationError, short

FLOAT32 = TOLERANCES["float32"]
INF, NAN = float("inf"), float("nan")


def test_failure_reports_largest_errors_count_and_first_index():
    # Differences 0, 0.5, 0, 0.5; relative 0.5 / 2 = 0.25 and 0.5 / 4 = 0.125.
    result = compare([1.0, 2.5, 3.0, 4.5], [1.0, 2.0, 3.0, 4.0], FLOAT32)
    assert result.max_abs == 0.5
    assert result.max_rel == 0.25
    assert result.mismatches == 2
    assert result.first_mismatch == (1,)
    assert not result.passed
    assert result.describe() == (
        "FAIL (float32: atol=1e-05, rtol=2e-05) max_abs=5.000e-01 max_rel=2.500e-01, "
        "2 element(s) differ, first at [1]"
    )


def test_first_mismatch_of_a_matrix_is_its_row_and_column():
    # Row-major order: (0, 2) comes before (1, 0); three elements are off by 1.
    actual = [[1.0, 2.0, 4.0], [5.0, 5.0, 7.0]]
    expected = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    result = compare(actual, expected, FLOAT32)
    assert result.mismatches == 3
    assert result.first_mismatch == (0, 2)
    assert result.describe().endswith("3 element(s) differ, first at [0, 2]")


def test_pass_reports_no_mismatch():
    result = compare([1.0, 2.0], [1.0, 2.0], FLOAT32)
    assert result.passed
    assert result.mismatches == 0
    assert result.first_mismatch is None
    assert result.describe() == (
        "pass (float32: atol=1e-05, rtol=2e-05) max_abs=0.000e+00 max_rel=0.000e+00"
    )


def test_shape_mismatch_fails_and_says_so():
    result = compare(np.zeros(3), np.zeros(4), FLOAT32)
    assert not result.passed
    assert not result.shape_ok
    assert result.mismatches == 4
    assert result.describe() == (
        "FAIL (float32: atol=1e-05, rtol=2e-05) max_abs=inf max_rel=inf shape mismatch"
    )


def test_equal_infinities_pass_and_add_no_error():
    result = compare([INF, -INF, 1.0], [INF, -INF, 1.0], FLOAT32)
    assert result.passed
    assert result.max_abs == 0.0
    assert result.max_rel == 0.0


def test_opposite_infinities_fail():
    result = compare([1.0, INF], [1.0, -INF], FLOAT32)
    assert not result.passed
    assert result.mismatches == 1
    assert result.first_mismatch == (1,)


def test_nan_fails_but_its_pair_is_left_out_of_the_errors():
    # Only the finite pair (2.0, 2.25) measures: 0.25 absolute, 0.25 / 2.25 relative.
    result = compare([NAN, 2.0], [1.0, 2.25], FLOAT32)
    assert not result.passed
    assert result.first_mismatch == (0,)
    assert result.max_abs == 0.25
    assert result.max_rel == 0.25 / 2.25


def test_relative_error_leaves_out_zero_expected_values():
    # 3e-6 against 0 is within atol (1e-5); it has no relative error to report.
    result = compare([3e-6, 2.0], [0.0, 2.0], FLOAT32)
    assert result.passed
    assert result.max_abs == 3e-6
    assert result.max_rel == 0.0


def test_empty_arrays_pass_with_zero_errors():
    result = compare(np.zeros(0), np.zeros(0), FLOAT32)
    assert result.passed
    assert result.max_abs == 0.0
    assert result.max_rel == 0.0
    assert result.mismatches == 0
    assert result.first_mismatch is None


def test_max_errors_per_row_by_hand():
    actual = [
        [1.5, -1.5],  # off by 0.5 from 1 and -1: 0.5 absolute, 0.5 relative
        [0.0, 3.0],  # 0 against 0 is no error; 3 against 2: 1 absolute, 0.5 relative
        [INF, 1.0],  # equal infinities are no error
        [NAN, 1.0],  # NaN is an infinite error
        [1e-3, 0.0],  # 1e-3 against 0: finite absolute, infinite relative
    ]
    expected = [[1.0, -1.0], [0.0, 2.0], [INF, 1.0], [1.0, 1.0], [0.0, 0.0]]
    row_abs, row_rel = max_errors(actual, expected)
    np.testing.assert_array_equal(row_abs, [0.5, 1.0, 0.0, INF, 1e-3])
    np.testing.assert_array_equal(row_rel, [0.5, 0.5, 0.0, INF, INF])


def test_short_keeps_a_repr_of_40_characters_whole():
    text = "a" * 38  # its repr adds two quotes: 40 characters
    assert short(text) == "'" + "a" * 38 + "'"


def test_short_cuts_a_longer_repr_to_40_characters_ending_in_dots():
    text = "a" * 39  # repr: 41 characters
    assert short(text) == "'" + "a" * 36 + "..."
    assert short(12345678901, limit=10) == "1234567..."


def test_validation_message_shows_a_long_value_cut():
    error = ValidationError("x", "a" * 50, "finite values")
    assert str(error) == "x: '" + "a" * 36 + "... is out of bounds; expected finite values"
