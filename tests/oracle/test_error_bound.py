"""The derived error bound (oracle.error_bound): the numbers by hand, the lane model within
it on every fixture, and the tolerance table never tighter than it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from oracle import compare as cmp
from oracle import error_bound as eb
from oracle import fixtures, scalar, tiled


def test_gamma_and_the_float32_bound_by_hand() -> None:
    u = 2.0**-24
    assert eb.gamma(0) == 0.0
    assert eb.gamma(10) == pytest.approx(10 * u / (1 - 10 * u), rel=1e-15)
    with pytest.raises(ValueError, match=r"k must be in \[0, 2\*\*24\)"):
        eb.gamma(2**24)
    # A 128-lane tree: 7 additions; first order, (7 + 3) u / 2 + 2**-22 + 2 u + u.
    first_order = 10 * u / 2 + 2.0**-22 + 3 * u
    assert eb.relative_bound("float32", 7) == pytest.approx(first_order, rel=1e-6)
    assert eb.relative_bound("bfloat16", 7, truncating=True) == pytest.approx(
        first_order - u + 2.0**-7, rel=1e-6
    )


@pytest.mark.parametrize(
    ("width", "chunks", "peeled", "adds"),
    [(1, 1, False, 0), (70, 1, False, 7), (128, 1, False, 7), (129, 1, False, 8),
     (65536, 16, False, 27), (70, 1, True, 9)],
)  # fmt: skip
def test_tree_adds(width: int, chunks: int, peeled: bool, adds: int) -> None:
    assert eb.tree_adds(width, chunks, peeled) == adds


def _case_fixtures():
    return [f for f in fixtures.FIXTURES if f.check != "rejection"]


@pytest.mark.parametrize("fixture", _case_fixtures(), ids=lambda f: f.name)
def test_the_lane_model_is_within_the_bound_on_every_fixture(fixture) -> None:
    problem = fixture.build()
    exact = scalar.reference(problem).y_exact
    model = tiled.model(problem)
    bound = eb.element_bounds(problem, exact, eb.tree_adds(problem.width))
    error = np.abs(model.y - exact)
    assert (error <= bound).all(), float((error / bound).max())


def test_the_bound_is_not_vacuous_a_float32_sum_of_the_wrong_order_of_magnitude_breaks_it():
    """A float16 accumulation (the kind of change a bound must see) exceeds the float32
    bound on a row of many small squares."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal(4096)
    exact = 1 / math.sqrt(float(np.sum(x * x)) / 4096 + 1e-6)
    half = np.float16(0)
    for value in (x * x).astype(np.float16):
        half = np.float16(half + value)
    wrong = 1 / math.sqrt(float(half) / 4096 + 1e-6)
    assert abs(wrong - exact) / exact > eb.relative_bound("float32", eb.tree_adds(4096))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_the_tolerance_table_is_never_tighter_than_the_bound(dtype: str) -> None:
    """The widest row (65536 lanes as a column loop of 16 chunks, peeled) under the
    interpreter's truncation: the tolerance covers it, plus the reference's own rounding to
    the dtype (half a unit) that the comparison adds; the table's stated reason says why the
    rest of its margin is there."""
    worst = eb.relative_bound(dtype, eb.tree_adds(65536, 16, True), truncating=True)
    assert cmp.TOLERANCES[dtype].rtol >= worst + eb.UNIT[dtype]
    assert cmp.TOLERANCES[dtype].why


@pytest.mark.parametrize(
    ("width", "path", "block", "peel", "adds"),
    [(70, "one_row", 128, 0, 7), (70, "multi_row", 128, 0, 7), (70, "one_row", 128, 8, 9),
     (70, "column_loop", 32, 0, 5 + 2), (65536, "column_loop", 4096, 0, 12 + 15)],
)  # fmt: skip
def test_layout_adds_of_each_path(width, path, block, peel, adds) -> None:
    assert eb.layout_adds(width, path, block, peel) == adds


def test_layout_adds_refuses_a_path_it_does_not_know() -> None:
    with pytest.raises(ValueError, match="path must be a kernel path; got 'user'"):
        eb.layout_adds(70, "user", 128)


def test_row_errors_against_exact_are_each_rows_worst_and_keep_nan() -> None:
    y = np.array([[1.0, 2.5], [np.nan, 0.0]])
    exact = np.array([[1.25, 2.0], [0.0, 0.0]])
    got = eb.row_errors_against_exact(y, exact)
    assert got[0] == 0.5
    assert np.isnan(got[1])
