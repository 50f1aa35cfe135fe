"""The lane model's memory picture: the default poison, the addresses of out-of-bounds stores,
and what a mutant computes on a hand-checkable row.

Addresses are worked out by hand: element (r, c) of a buffer with row stride s is r * s + c.
"""

from __future__ import annotations

import numpy as np

from oracle import tiled
from oracle.spec import make_problem


def test_default_poison_is_minus_3072_in_tail_lanes_and_output_gaps():
    # The kernel's checked run fills its buffers with the same -3072.0
    # (kernels.instruments.checked.POISON).
    problem = make_problem(
        [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [1.0, 1.0, 1.0], eps=1e-6, row_stride=5
    )
    result = tiled.model(problem)
    assert result.poison == -3072.0
    assert result.block == 4
    np.testing.assert_array_equal(result.lanes[:, 3], [-3072.0, -3072.0])
    # Rows start at 0 and 5; columns 3 and 4 of each row are gaps.
    np.testing.assert_array_equal(result.out_buffer[[3, 4, 8, 9]], [-3072.0] * 4)
    assert result.gap_writes == ()


def test_wrong_row_stride_reports_the_gap_addresses_it_overwrote():
    # 5 rows of width 2 in a buffer with row stride 4: row r holds addresses 4r, 4r + 1 and
    # leaves 4r + 2, 4r + 3 as gaps. Packed (stride 2), row r stores to 2r, 2r + 1, so stores
    # cover 0..9: rows 1 and 3 land on the gaps of rows 0 (2, 3) and 1 (6, 7).
    x = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0], [9.0, 10.0]]
    problem = make_problem(x, [1.0, 1.0], eps=1e-6, row_stride=4)
    result = tiled.model(problem, mutant="wrong_row_stride")
    assert result.gap_writes == (2, 3, 6, 7)
    # Packed row 1 also loads from addresses 2, 3: row 0's input padding, the poison.
    np.testing.assert_array_equal(result.lanes[1], [-3072.0, -3072.0])
    np.testing.assert_array_equal(result.lanes[2], [3.0, 4.0])


def test_faithful_model_writes_no_gap_with_a_padded_stride():
    x = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0], [9.0, 10.0]]
    problem = make_problem(x, [1.0, 1.0], eps=1e-6, row_stride=4)
    result = tiled.model(problem)
    assert result.gap_writes == ()
    np.testing.assert_array_equal(result.lanes[2], [5.0, 6.0])


def test_sum_instead_of_mean_divides_by_one():
    # x = [1, 2, 2]: squares 1 + 4 + 4 = 9; the mean square is 9 / 3 = 3, the mutant keeps 9.
    problem = make_problem([[1.0, 2.0, 2.0]], [1.0, 1.0, 1.0], eps=1e-6)
    faithful = tiled.model(problem)
    mutant = tiled.model(problem, mutant="sum_instead_of_mean")
    assert faithful.sum_squares[0] == 9.0
    assert faithful.mean_square[0] == 3.0
    assert mutant.sum_squares[0] == 9.0
    assert mutant.mean_square[0] == 9.0
    assert mutant.rrms[0] == np.float32(1) / np.sqrt(np.float32(9.0) + np.float32(1e-6))
