"""The derived error bound's values by hand: gamma at points where it is exact, the additions
of small trees, the rsqrt step's rigour, the absolute floor below each dtype's smallest normal,
and a float32 emulation of an 8-lane tile that the bound covers and nearly reaches.

The numbers are written out here, not read from ``oracle.error_bound``. Comparisons are exact
or use ``abs=0``: ``pytest.approx``'s default ``abs=1e-12`` is larger than a whole bound of
this size and would pass almost any value.
"""

from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest

from oracle import error_bound as eb
from oracle import scalar
from oracle.dtypes import from_bfloat16_bits, round_float32_to_dtype, round_to_dtype
from oracle.spec import make_problem

U = 2.0**-24  # float32 unit roundoff, to nearest


def test_gamma_is_exact_where_k_u_is_a_power_of_two() -> None:
    # gamma(k) = k u / (1 - k u): k u = 1/4 gives 1/3, k u = 1/2 gives 1, k u = 1 - u gives
    # (1 - u) / u = 2**24 - 1.
    assert eb.gamma(0) == 0.0
    assert eb.gamma(1) == 1 / (2**24 - 1)
    assert eb.gamma(2**22) == 1 / 3
    assert eb.gamma(2**23) == 1.0
    assert eb.gamma(2**24 - 1) == 16777215.0


@pytest.mark.parametrize("k", [-1, -2, 2**24, 2**24 + 1])
def test_gamma_refuses_k_outside_0_to_2_to_the_24(k: int) -> None:
    with pytest.raises(ValueError, match=rf"k must be in \[0, 2\*\*24\); got {k}"):
        eb.gamma(k)


@pytest.mark.parametrize(("width", "adds"), [(1, 0), (2, 1), (3, 2), (5, 3), (8, 3), (9, 4)])
def test_a_pairwise_tree_over_up_to_8_lanes_adds_each_square_log2_times(width, adds) -> None:
    # A tile of 8 lanes: lane pairs, then pairs of pairs, then the last pair: 3 additions.
    assert eb.tree_adds(width) == adds


@pytest.mark.parametrize(("width", "chunks"), [(0, 1), (-1, 1), (5, 0), (5, -1)])
def test_tree_adds_refuses_no_lanes_or_no_chunks(width: int, chunks: int) -> None:
    with pytest.raises(ValueError, match=rf"width and chunks must be >= 1; got {width}, {chunks}"):
        eb.tree_adds(width, chunks)


@pytest.mark.parametrize("path", ["one_row", "multi_row"])
def test_a_single_lane_row_makes_no_addition(path: str) -> None:
    assert eb.layout_adds(1, path, 128) == 0
    assert eb.layout_adds(2, path, 128) == 1


def _worst_relative_error(adds: int, dtype_unit: Fraction) -> Decimal:
    """The worst case of each step composed exactly (Decimal, 50 digits): the sum, mean and
    + eps within r = gamma(adds + 3); the root of v (1 - r) is 1 / sqrt(1 - r) too large; the
    rsqrt's own 2**-22; two float32 products; the dtype rounding."""
    k = Fraction(adds + 3) * Fraction(1, 2**24)
    r = k / (1 - k)
    u = Fraction(1, 2**24)
    rest = (1 + Fraction(1, 2**22)) * (1 + u) ** 2 * (1 + dtype_unit)
    with localcontext() as context:
        context.prec = 50
        one_minus_r = Decimal(r.denominator - r.numerator) / Decimal(r.denominator)
        rest_decimal = Decimal(rest.numerator) / Decimal(rest.denominator)
        return rest_decimal / one_minus_r.sqrt() - 1


@pytest.mark.parametrize(
    ("dtype", "unit"),
    [("float32", Fraction(1, 2**24)), ("float16", Fraction(1, 2**11)),
     ("bfloat16", Fraction(1, 2**8))],
)  # fmt: skip
@pytest.mark.parametrize("adds", [0, 3, 7, 27])
def test_the_relative_bound_covers_the_exact_worst_case_of_the_root(dtype, unit, adds) -> None:
    """The root step's first-order e / 2 is not enough: 1 / sqrt(1 - e) - 1 is e / 2 +
    3 e**2 / 8 + ...; the bound's e / (2 (1 - e)) is above it, by about e**2 / 8 (a few 1e-14
    here), never below."""
    worst = _worst_relative_error(adds, unit)
    bound = Decimal(eb.relative_bound(dtype, adds))
    assert bound >= worst, (bound, worst)
    assert bound - worst <= Decimal("1e-12"), (bound, worst)


def test_relative_bound_by_hand_for_a_128_lane_tree() -> None:
    # 7 additions: r = 10 u / (1 - 10 u); (1 + r / (2 (1 - r))) (1 + 2**-22) (1 + u)**2 - 1.
    r = 10 * U / (1 - 10 * U)
    by_hand = (1 + 0.5 * r / (1 - r)) * (1 + 2.0**-22) * (1 + U) ** 2 * (1 + U) - 1
    assert eb.relative_bound("float32", 7) == pytest.approx(by_hand, rel=1e-12, abs=0)


def _problem(dtype: str, weight: np.ndarray):
    x = np.array([[1.0, -0.75, 0.5, 0.25]])
    return make_problem(x, weight, eps=1e-6, dtype=dtype)


@pytest.mark.parametrize(
    ("dtype", "nearest", "truncating"),
    [("float32", 2.0**-149, 2.0**-148), ("float16", 2.0**-24, 2.0**-23),
     ("bfloat16", 2.0**-133, 2.0**-132)],
)  # fmt: skip
def test_the_absolute_floor_is_one_subnormal_step_of_the_dtype(dtype, nearest, truncating) -> None:
    """Below the smallest normal (2**-126, 2**-14, 2**-126) the dtype's numbers are one step
    apart: 2**-149, 2**-24, 2**-133. An exact zero output is allowed that step (twice the half
    step rounding to nearest can cost) or two steps where the store truncates."""
    problem = _problem(dtype, np.ones(4))
    zeros = np.zeros((2, 3))
    assert (eb.element_bounds(problem, zeros, 3) == nearest).all()
    assert (eb.element_bounds(problem, zeros, 3, truncating=True) == truncating).all()
    if dtype != "bfloat16":
        assert nearest == float(np.finfo(dtype).smallest_subnormal)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_rounding_below_the_smallest_normal_stays_within_the_floor(dtype: str) -> None:
    """Outputs spread over the subnormal range, rounded to the dtype: every error is within
    the element bound, and the largest is half the floor (a half step), not less."""
    floor = {"float32": 2.0**-149, "float16": 2.0**-24, "bfloat16": 2.0**-133}[dtype]
    # Every sixteenth of a step over 64 steps, shifted half a step: each whole step a tie.
    y_exact = floor * (np.arange(64 * 16 + 1)[None, :] / 16 + 0.5)
    problem = _problem(dtype, np.ones(4))
    error = np.abs(round_to_dtype(y_exact, dtype) - y_exact)
    bound = eb.element_bounds(problem, y_exact, 3)
    assert (error <= bound).all()
    assert error.max() == floor / 2


def test_the_element_bound_grows_with_the_output_as_relative_plus_floor() -> None:
    problem = _problem("bfloat16", np.ones(4))
    rel = eb.relative_bound("bfloat16", 3)
    y_exact = np.array([[1.0, -2.0, 0.0], [4.0, 0.5, -0.25]])
    bound = eb.element_bounds(problem, y_exact, 3)
    np.testing.assert_array_equal(bound, np.abs(y_exact) * rel + 2.0**-133)
    # bfloat16 to nearest: a relative 2**-8 and a few float32 units.
    assert 2.0**-8 < rel < 2.0**-8 * 1.001
    np.testing.assert_array_equal(
        eb.row_bounds(problem, y_exact, 3), [2 * rel + 2.0**-133, 4 * rel + 2.0**-133]
    )


def _tile_of_8_lanes(x: np.ndarray, w: np.ndarray, eps: float, store) -> np.ndarray:
    """The kernel's arithmetic in float32 on a tile of 8 lanes: the squares, a pairwise tree
    (lane i + lane i + 4, then + 2, then + 1) over zero padding, the mean over the true
    width, + eps, the root, x * rrms * w, and ``store`` to the output dtype."""
    width = x.shape[1]
    x32, w32 = x.astype(np.float32), w.astype(np.float32)
    tile = np.zeros((x.shape[0], 8), dtype=np.float32)
    tile[:, :width] = x32 * x32
    while tile.shape[1] > 1:
        half = tile.shape[1] // 2
        tile = tile[:, :half] + tile[:, half:]
    inside = tile[:, 0] / np.float32(width) + np.float32(eps)
    rrms = (1.0 / np.sqrt(inside.astype(np.float64))).astype(np.float32)
    return store((x32 * rrms[:, None]) * w32[None, :])


def _truncate_to_bfloat16(values32: np.ndarray) -> np.ndarray:
    bits = np.ascontiguousarray(values32, dtype=np.float32).view(np.uint32) >> np.uint32(16)
    return from_bfloat16_bits(bits.astype(np.uint16))


@pytest.mark.parametrize(
    ("dtype", "truncating", "reached"),
    [("float32", False, 0.25), ("float16", False, 0.95), ("bfloat16", False, 0.95),
     ("bfloat16", True, 0.95)],
)  # fmt: skip
def test_an_8_lane_float32_tile_is_within_the_bound_and_nearly_reaches_it(
    dtype: str, truncating: bool, reached: float
) -> None:
    """4096 rows of 7 lanes (3 additions each) with widely spread magnitudes: no element
    leaves its bound, and the worst comes within ``reached`` of it. The bound carries the
    hardware rsqrt's 2**-22 that this emulation (a correctly rounded root) does not have,
    so float32 outputs reach only a quarter of it; a 16-bit output's own rounding dominates
    and the worst element reaches it within 5%."""
    rng = np.random.default_rng(2024)
    x = rng.standard_normal((4096, 7)) * np.exp2(rng.integers(-8, 8, (4096, 1)))
    weight = rng.uniform(0.5, 2.0, 7)
    problem = make_problem(x, weight, eps=1e-6, dtype=dtype)
    y_exact = scalar.reference(problem).y_exact

    def store(values32):
        if truncating:
            return _truncate_to_bfloat16(values32)
        return round_float32_to_dtype(values32, dtype).astype(np.float64)

    y = _tile_of_8_lanes(problem.x, problem.weight, problem.eps, store)
    bound = eb.element_bounds(problem, y_exact, eb.tree_adds(7), truncating)
    share = np.abs(y - y_exact) / bound
    assert share.max() <= 1.0
    assert share.max() >= reached, share.max()
    if truncating:  # the to-nearest bound cannot hold a truncating store
        nearest = eb.element_bounds(problem, y_exact, eb.tree_adds(7))
        assert (np.abs(y - y_exact) > nearest).any()
