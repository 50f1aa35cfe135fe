"""The tiled lane model held bit for bit to an independent emulation of the kernel's arithmetic.

The kernel (``kernels/jit/tile.py``, ``parts.py``) upcasts its loads to float32, squares each
lane, sums a tile by a pairwise halving tree (lane i + lane i + half), divides by the true
width, adds eps cast to float32, takes ``rsqrt`` (the lane model's: a float32 square root and a
float32 reciprocal, each rounded), multiplies ``(x * rrms) * w`` and rounds once, at the store,
to the output dtype. This file emulates that order without numpy's float32 arithmetic and
without any code of ``oracle``: every operation runs in binary64 on float32 operands and is
rounded to float32 by the arithmetic rounder below (binary64 holds 2 * 24 + 2 bits, so rounding
its correctly rounded result again is the float32 result of +, *, / and sqrt), and the float16
and bfloat16 stores use the same rounder, so no numpy cast and no bit trick is shared with the
model. Every step (lanes, squares, each tree stage, sum of squares, mean square, rrms, y) must
agree to the bit, in every dtype, on random rows and edge rows.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from oracle import tiled
from oracle.spec import make_problem

#: dtype -> (significand bits, exponent of the smallest normal, largest finite value).
FORMATS = {
    "float32": (24, -126, (2 - 2.0**-23) * 2.0**127),
    "float16": (11, -14, 65504.0),
    "bfloat16": (8, -126, (2 - 2.0**-7) * 2.0**127),
}
DTYPES = tuple(FORMATS)


def _round(values, dtype: str) -> np.ndarray:
    """Round binary64 ``values`` to the nearest ``dtype`` number, ties to even (IEEE default),
    by arithmetic: scale the quantum of each value's binade (or of the subnormals) to 1, round
    to the nearest integer (``rint`` ties to even), scale back; past the largest finite value
    the result is infinite."""
    bits, min_normal_exp, finite_max = FORMATS[dtype]
    array = np.asarray(values, dtype=np.float64)
    _, exponent = np.frexp(array)  # array = m * 2**exponent, 0.5 <= |m| < 1
    quantum = np.maximum(exponent - bits, min_normal_exp + 1 - bits)
    with np.errstate(over="ignore", invalid="ignore"):
        rounded = np.ldexp(np.rint(np.ldexp(array, -quantum)), quantum)
        rounded = np.where(np.abs(rounded) > finite_max, np.copysign(np.inf, array), rounded)
    return np.where(np.isfinite(array), rounded, array)


def _f32(values) -> np.ndarray:
    return _round(values, "float32")


def _emulate(x: np.ndarray, weight: np.ndarray, eps: float, dtype: str) -> dict[str, object]:
    """The kernel's steps on rows ``x`` (values already in ``dtype``), as binary64 arrays."""
    rows, width = x.shape
    block = 1
    while block < width:
        block *= 2
    lanes = np.zeros((rows, block))
    lanes[:, :width] = x  # the load's upcast is exact; masked lanes load 0.0
    squares = _f32(lanes * lanes)
    stages = [squares]
    while stages[-1].shape[1] > 1:
        half = stages[-1].shape[1] // 2
        stages.append(_f32(stages[-1][:, :half] + stages[-1][:, half:]))
    sum_squares = stages[-1][:, 0]
    mean_square = _f32(sum_squares / width)
    eps32 = float(_f32(eps))
    root = _f32(np.sqrt(_f32(mean_square + eps32)))
    rrms = _f32(1.0 / root)
    normalized = _f32(x * rrms[:, None])
    y32 = _f32(normalized * weight[None, :])
    return {
        "block": block,
        "squares": squares,
        "stages": stages,
        "sum_squares": sum_squares,
        "mean_square": mean_square,
        "rrms": rrms,
        "y": _round(y32, dtype),
    }


def _bits(values) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(values, dtype=np.float64)).view(np.uint64)


def _assert_same_bits(step: str, model_values, emulated) -> None:
    got, want = np.asarray(model_values, dtype=np.float64), np.asarray(emulated)
    assert got.shape == want.shape, f"{step}: shape {got.shape}, emulated {want.shape}"
    differ = np.argwhere(_bits(got) != _bits(want))
    assert not differ.size, (
        f"{step}: {len(differ)} element(s) differ from the emulation, first at "
        f"{tuple(int(i) for i in differ[0])}: model {got[tuple(differ[0])]!r}, "
        f"emulated {want[tuple(differ[0])]!r}"
    )


def _check(problem) -> None:
    result = tiled.model(problem)
    want = _emulate(np.asarray(problem.x), np.asarray(problem.weight), problem.eps, problem.dtype)
    assert result.block == want["block"]
    lanes = np.asarray(result.lanes, dtype=np.float64)
    _assert_same_bits("lanes", lanes[:, : problem.width], problem.x)
    assert (lanes[:, problem.width :] == tiled.POISON).all(), "tail lanes hold the poison"
    _assert_same_bits("squares", result.squares, want["squares"])
    assert len(result.stages) == len(want["stages"])
    for depth, (stage, emulated) in enumerate(zip(result.stages, want["stages"], strict=True)):
        _assert_same_bits(f"tree stage {depth}", stage, emulated)
    for step in ("sum_squares", "mean_square", "rrms", "y"):
        _assert_same_bits(step, getattr(result, step), want[step])


# ---------------------------------------------------------------- the emulation's own rounding


def test_the_emulations_rounding_by_hand() -> None:
    """Ties to even, subnormals and overflow of the rounder the emulation rests on."""
    one = 1.0
    cases = [
        ("bfloat16", one + 2.0**-8, one),  # a tie, 1.0 is even
        ("bfloat16", one + 3 * 2.0**-8, one + 2.0**-6),  # a tie, rounds up to even
        ("bfloat16", one + 2.0**-8 + 2.0**-20, one + 2.0**-7),  # past the tie
        ("bfloat16", 1.5 * 2.0**-133, 2.0**-132),  # subnormal tie, to even
        ("bfloat16", (2 - 2.0**-8) * 2.0**127, math.inf),  # rounds past the largest finite
        ("float16", 65519.0, 65504.0),
        ("float16", 65520.0, math.inf),
        ("float16", -(2.0**-25), -0.0),  # half the smallest subnormal: a tie to (signed) zero
        ("float16", 3 * 2.0**-25, 2.0**-23),
        ("float32", one + 2.0**-24, one),
        ("float32", one + 3 * 2.0**-24, one + 2.0**-22),
        ("float32", 2.0**-150, 0.0),
        ("float32", 3 * 2.0**-150, 2.0**-148),
    ]
    for dtype, value, expected in cases:
        got = float(_round(np.array([value]), dtype)[0])
        assert got == expected, (dtype, value, got)
        assert math.copysign(1, got) == math.copysign(1, expected), (dtype, value, got)
    # Away from ties and edges the rounder agrees with numpy's own casts (float32, float16).
    rng = np.random.default_rng(3)
    values = rng.standard_normal(4096) * 10.0 ** rng.integers(-7, 5, 4096)
    np.testing.assert_array_equal(_round(values, "float32"), values.astype(np.float32))
    np.testing.assert_array_equal(_round(values, "float16"), values.astype(np.float16))


# ---------------------------------------------------------------- random rows


def _random_problem(seed: int, dtype: str, width: int, scale: float, eps: float, stride: int):
    rng = np.random.default_rng(seed)
    limit = 65504.0 if dtype == "float16" else 1e6
    x = np.clip(rng.standard_normal((5, width)) * scale, -limit, limit)
    weight = rng.uniform(-2.5, 2.5, width)
    return make_problem(x, weight, eps=eps, dtype=dtype, row_stride=width + stride)


RANDOM_CASES = [
    # (width, scale of x, eps, row padding): tails, power-of-two widths, every magnitude.
    (1, 1.0, 1e-6, 0),
    (2, 3.0, 1e-5, 1),
    (3, 1.0, 1e-6, 0),
    (7, 1e-3, 1e-6, 2),
    (31, 1.0, 1e-5, 0),
    (64, 1.0, 1e-6, 0),
    (70, 1.0, 1e-6, 3),
    (127, 250.0, 1e-2, 0),
    (129, 1e-2, 3e-4, 0),
    (255, 1e4, 1e-6, 1),
    (256, 1.0, 1e-12, 0),
    (300, 1e-5, 1e-12, 0),
    (513, 1.0, 7e-6, 0),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("width", "scale", "eps", "padding"), RANDOM_CASES)
def test_random_rows_step_for_step(dtype: str, width: int, scale: float, eps, padding) -> None:
    for seed in range(3):
        _check(_random_problem(seed * 1000 + width, dtype, width, scale, eps, padding))


@pytest.mark.parametrize("dtype", DTYPES)
def test_rows_whose_mean_square_is_near_eps(dtype: str) -> None:
    """eps is as large as the mean square: ``mean + eps`` and its rounding decide rrms (an eps
    or a sum carried in binary64 moves it)."""
    rng = np.random.default_rng(11)
    for eps in (1e-6, 1e-5, 3.3e-4, 1e-2, 1e-12):
        for width in (3, 37, 100):
            x = rng.standard_normal((6, width)) * math.sqrt(eps) * rng.uniform(0.3, 3, (6, 1))
            weight = rng.uniform(-2, 2, width)
            _check(make_problem(x, weight, eps=eps, dtype=dtype))


# ---------------------------------------------------------------- edge rows


def _edge_problems(dtype: str):
    top = 65504.0 if dtype == "float16" else 1e6
    tiny = {"float32": 1e-38, "float16": 6e-8, "bfloat16": 1e-38}[dtype]
    width = 45
    rng = np.random.default_rng(7)
    rows = [
        np.zeros(width),  # rrms = rsqrt(eps)
        np.full(width, 0.75),  # constant row
        np.where(np.arange(width) % 2 == 0, 1.0, -1.0) * 3.0,  # alternating signs
        np.concatenate([[top], np.zeros(width - 1)]),  # one element at the magnitude limit
        np.full(width, top),  # every element at it
        rng.standard_normal(width) * tiny,  # squares below float32's normal range
        np.concatenate([[-0.0, 0.0], rng.standard_normal(width - 2)]),  # signed zeros
        np.concatenate([[top], rng.standard_normal(width - 1) * tiny]),  # many binades apart
    ]
    weight = rng.uniform(-3, 3, width)
    yield make_problem(np.array(rows), weight, eps=1e-6, dtype=dtype, row_stride=width + 5)
    # A weight at the dtype's top: x * rrms * w overflows at the store in float16.
    big = np.full(width, top)
    yield make_problem(rng.standard_normal((3, width)), big, eps=1e-12, dtype=dtype)
    # rrms exactly 1 (mean square 9 / 9 with eps below half an ulp of 1), so y = 1.5 * w sits
    # exactly halfway between two neighbours of the 2-byte dtypes: the store's ties.
    x = np.array([[1.5, 1.5, 1.5, 1.5, 0, 0, 0, 0, 0]])
    fraction = 2.0 ** -{"float32": 23, "float16": 10, "bfloat16": 7}[dtype]
    ties = [1 + fraction, 1 + 3 * fraction, -(1 + fraction), 2 + 2 * fraction, 1, 1, 1, 1, 1]
    yield make_problem(x, ties, eps=1e-12, dtype=dtype)
    # Width 1 and the widest tile a cheap test affords, with eps at both bounds.
    yield make_problem(rng.standard_normal((4, 1)), [0.5], eps=1e-2, dtype=dtype)
    yield make_problem(
        rng.standard_normal((2, 1025)), rng.uniform(-1, 1, 1025), eps=1e-12, dtype=dtype
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_edge_rows_step_for_step(dtype: str) -> None:
    for problem in _edge_problems(dtype):
        _check(problem)


def test_the_tie_rows_reach_ties_at_the_store() -> None:
    """The tie rows above are ties: 1.5 * (1 + one ulp) lies exactly half an ulp from the 2-byte
    dtype's neighbours (else they would test nothing the random rows do not)."""
    for dtype, ulp in (("bfloat16", 2.0**-7), ("float16", 2.0**-10)):
        y32 = 1.5 * (1 + ulp)
        assert abs(float(_round(np.array([y32]), dtype)[0]) - y32) == ulp / 2
