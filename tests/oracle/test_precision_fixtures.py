"""The precision fixtures fail the half-precision accumulations they exist for, each by its own
mechanism (overflow, underflow, stagnation, eps placement), and a float32 accumulation passes
them: simulated here in numpy, independently of the lane model's mutants."""

from __future__ import annotations

import numpy as np
import pytest

from oracle import fixtures, scalar
from oracle.compare import TOLERANCES, compare
from oracle.dtypes import round_to_dtype
from oracle.spec import Problem


def _problem(name: str) -> Problem:
    return fixtures.get(name).build()


def _output(problem: Problem, rrms: np.ndarray) -> np.ndarray:
    return round_to_dtype(problem.x * rrms[:, None] * problem.weight[None, :], problem.dtype)


def _judge(problem: Problem, rrms: np.ndarray) -> bool:
    expected = scalar.reference(problem).y
    return compare(_output(problem, rrms), expected, TOLERANCES[problem.dtype]).passed


def _sequential_then_tree(squares: np.ndarray, share: int, dtype: str) -> float:
    """A GPU reduction in ``dtype``: each thread adds its ``share`` of the squares one after
    another, then the threads' sums meet in a pairwise tree; every addition rounded."""
    threads = -(-squares.size // share)
    padded = np.zeros(threads * share)
    padded[: squares.size] = squares
    partial = np.zeros(1 << (threads - 1).bit_length())  # idle threads hold 0
    for step in range(share):
        partial[:threads] = round_to_dtype(partial[:threads] + padded[step::share], dtype)
    while partial.size > 1:
        partial = round_to_dtype(partial[0::2] + partial[1::2], dtype)
    return float(partial[0])


def _rrms_accumulated_in(problem: Problem, dtype: str, share: int) -> np.ndarray:
    sums = []
    for row in problem.x:
        squares = round_to_dtype(row * row, dtype)
        sums.append(_sequential_then_tree(squares, share, dtype))
    mean_square = round_to_dtype(np.array(sums) / problem.width, dtype)
    return 1.0 / np.sqrt(mean_square + problem.eps)


def test_float16_overflow_fixture_squares_fit_and_their_sum_does_not() -> None:
    problem = _problem("float16_sum_overflow")
    squares = problem.x**2
    assert squares.max() < 65504
    assert (squares.sum(axis=1) > 65504).all()
    # any 512 consecutive squares already overflow: a chunked float16 sum cannot hide it
    assert (squares[:, :512].sum(axis=1) > 65504).all()


@pytest.mark.parametrize("share", [1, 8, 32])
def test_float16_accumulation_fails_the_overflow_and_underflow_fixtures(share: int) -> None:
    for name in ("float16_sum_overflow", "float16_square_underflow"):
        problem = _problem(name)
        assert not _judge(problem, _rrms_accumulated_in(problem, "float16", share)), name
        assert _judge(problem, _rrms_accumulated_in(problem, "float32", share)), name


def test_float16_underflow_fixture_squares_are_below_the_smallest_subnormal() -> None:
    problem = _problem("float16_square_underflow")
    smallest_subnormal = 2.0**-24
    assert (problem.x**2 < smallest_subnormal).all()
    assert (np.abs(problem.x) >= 2.0**-14).all()  # x itself is a normal float16


@pytest.mark.parametrize("share", [64, 256, 512, 2048])
def test_bfloat16_sequential_shares_stagnate_on_the_stagnation_fixture(share: int) -> None:
    problem = _problem("bfloat16_sum_stagnation")
    assert not _judge(problem, _rrms_accumulated_in(problem, "bfloat16", share))
    assert _judge(problem, _rrms_accumulated_in(problem, "float32", share))


def test_bfloat16_pairwise_tree_of_equal_squares_is_exact_so_the_fixture_says_so() -> None:
    # What the fixture cannot see (its description says it): a pure tree of equal values.
    problem = _problem("bfloat16_sum_stagnation")
    assert _judge(problem, _rrms_accumulated_in(problem, "bfloat16", 1))
    assert "pure pairwise tree" in fixtures.get("bfloat16_sum_stagnation").description


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_eps_outside_the_root_fails_the_near_eps_fixture_in_each_dtype(dtype: str) -> None:
    problem = _problem(f"{dtype}_mean_square_near_eps")
    mean_square = (problem.x**2).mean(axis=1)
    assert np.allclose(mean_square, problem.eps, rtol=0.5)
    assert not _judge(problem, 1.0 / (np.sqrt(mean_square) + problem.eps))
    assert not _judge(problem, 1.0 / np.sqrt(mean_square) + problem.eps)
    assert _judge(problem, 1.0 / np.sqrt(mean_square + problem.eps))


def test_each_precision_fixture_names_the_bug_it_exists_for() -> None:
    names = ["float16_sum_overflow", "float16_square_underflow", "bfloat16_sum_stagnation",
             "float32_mean_square_near_eps", "float16_mean_square_near_eps",
             "bfloat16_mean_square_near_eps", "mean_square_near_small_eps"]  # fmt: skip
    for name in names:
        description = fixtures.get(name).description
        assert "(the bug: " in description or "eps outside the root" in description, name
