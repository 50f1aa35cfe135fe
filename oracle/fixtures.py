"""The fixture matrix: positive, boundary, malformed and negative cases, each with its verdict.

* positive: ordinary valid inputs that must match the scalar reference.
* boundary: the edges of the declared limits (widths, eps, zero and extreme rows, strides).
* malformed: inputs the validator must reject, naming the field.
* negative: properties that must *not* hold of a correct kernel: a row changing another row,
  poison in masked lanes changing any result.

Every fixture declares its expected outcome; :func:`oracle.matrix.evaluate` runs it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from oracle.spec import LIMITS, Problem, make_problem

CATEGORIES: tuple[str, ...] = ("positive", "boundary", "malformed", "negative")
CHECKS: tuple[str, ...] = ("reference", "row_isolation", "poison_invariance", "rejection")


@dataclass(frozen=True)
class Fixture:
    """One case of the matrix.

    Attributes:
        name: unique, stable name (receipts and the kill matrix refer to it).
        category: one of :data:`CATEGORIES`.
        description: what it proves, in a sentence.
        inputs: a zero-argument function returning :func:`make_problem` keyword arguments.
        check: "reference" (output vs scalar reference), "row_isolation", "poison_invariance",
            or "rejection" (malformed: the validator must refuse).
        reject_field: for "rejection", the field the error must name.
    """

    name: str
    category: str
    description: str
    inputs: Callable[[], dict[str, Any]] = field(repr=False)
    check: str = "reference"
    reject_field: str | None = None

    @property
    def expected(self) -> str:
        """Declared outcome: "pass" or "reject:<field>"."""
        return f"reject:{self.reject_field}" if self.check == "rejection" else "pass"

    def build(self) -> Problem:
        """Validate the inputs; raises :class:`~oracle.spec.ValidationError` when malformed."""
        return make_problem(**self.inputs(), name=self.name)


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _random(rows: int, width: int, seed: int, scale: float = 1.0) -> np.ndarray:
    return _rng(seed).standard_normal((rows, width)) * scale


def _asymmetric(width: int) -> np.ndarray:
    """0.5, 1.25, -2 repeated across the columns: a missing weight cannot hide."""
    return np.resize(np.array([0.5, 1.25, -2.0]), width)


def _ones(width: int) -> np.ndarray:
    return np.ones(width)


def _reference_case(
    name: str,
    category: str,
    description: str,
    rows: int,
    width: int,
    *,
    seed: int,
    weight: str = "asymmetric",
    dtype: str = "float32",
    eps: float = 1e-6,
    row_stride: int | None = None,
    scale: float = 1.0,
    check: str = "reference",
) -> Fixture:
    def inputs() -> dict[str, Any]:
        w = _asymmetric(width) if weight == "asymmetric" else _ones(width)
        return {
            "x": _random(rows, width, seed, scale),
            "weight": w,
            "eps": eps,
            "dtype": dtype,
            "row_stride": row_stride,
        }

    return Fixture(name, category, description, inputs, check=check)


def _rejection(name: str, description: str, field_name: str, **kwargs: Any) -> Fixture:
    defaults: dict[str, Any] = {"x": "1, 2, 3", "weight": "1, 1, 1", "eps": 1e-6}
    defaults.update(kwargs)
    return Fixture(name, "malformed", description, lambda: dict(defaults), "rejection", field_name)


def _positive() -> list[Fixture]:
    """Hand-checkable and random rows the faithful implementation must get right."""
    fixtures: list[Fixture] = [
        Fixture(
            "hand_checkable",
            "positive",
            "x = [3, 4], w = [0.5, -2]: mean square 12.5, rrms 1/sqrt(12.5 + eps)",
            lambda: {"x": [[3.0, 4.0]], "weight": [0.5, -2.0], "eps": 1e-6},
        ),
        _reference_case(
            "multiple_rows", "positive", "4 random rows x 70, asymmetric weights", 4, 70, seed=11
        ),
        _reference_case(
            "non_power_of_two_tail",
            "positive",
            "width 70 in a 128-lane tile: 58 masked lanes",
            3,
            70,
            seed=12,
        ),
        _reference_case(
            "asymmetric_weights",
            "positive",
            "weights 0.5, 1.25, -2 across the columns",
            2,
            6,
            seed=13,
        ),
        Fixture(
            "alternating_signs",
            "positive",
            "+1, -1, +2, -2, ... across 31 columns",
            lambda: {
                "x": [[(1 + c // 2) * (-1) ** c for c in range(31)]],
                "weight": _asymmetric(31),
                "eps": 1e-6,
            },
        ),
        _reference_case(
            "float16_rows",
            "positive",
            "float16 in and out, float32 accumulation",
            3,
            70,
            seed=14,
            dtype="float16",
        ),
        _reference_case(
            "bfloat16_rows",
            "positive",
            "bfloat16 in and out, float32 accumulation",
            3,
            70,
            seed=15,
            dtype="bfloat16",
        ),
    ]
    for seed, width in enumerate((2, 3, 31, 70, 127, 255, 256), start=20):
        fixtures.append(
            _reference_case(
                f"width_{width}",
                "positive",
                f"width {width}, unit weights (tile {1 << (width - 1).bit_length()})",
                2,
                width,
                seed=seed,
                weight="ones",
            )
        )
    return fixtures


def _boundary_and_negative() -> list[Fixture]:
    """Cases at each declared bound, and the row-isolation and poison-invariance checks."""
    max_w = LIMITS.max_width
    return [
        Fixture(
            "zero_row",
            "boundary",
            "an all-zero row: finite only because eps is inside the root",
            lambda: {
                "x": [[0.0] * 8, [1.0, -2.0, 3.0, -4.0, 5.0, -6.0, 7.0, -8.0]],
                "weight": _ones(8),
                "eps": 1e-6,
            },
        ),
        Fixture(
            "constant_row",
            "boundary",
            "every element 2.5: output equals the weight (to eps)",
            lambda: {"x": [[2.5] * 12], "weight": _ones(12), "eps": 1e-6},
        ),
        Fixture(
            "extreme_element",
            "boundary",
            f"one element at the declared magnitude limit {LIMITS.max_abs_x:g}, the rest ~1",
            lambda: {
                "x": np.concatenate([[LIMITS.max_abs_x], _random(1, 15, 30)[0]])[None, :],
                "weight": _asymmetric(16),
                "eps": 1e-6,
            },
        ),
        _reference_case(
            "min_width",
            "boundary",
            f"width {LIMITS.min_width}",
            3,
            LIMITS.min_width,
            seed=31,
            weight="asymmetric",
        ),
        _reference_case("max_width", "boundary", f"width {max_w}, one row", 1, max_w, seed=32),
        _reference_case(
            "min_eps",
            "boundary",
            f"eps = {LIMITS.min_eps:g} on a small row",
            2,
            40,
            seed=33,
            eps=LIMITS.min_eps,
            scale=1e-3,
        ),
        _reference_case(
            "max_eps",
            "boundary",
            f"eps = {LIMITS.max_eps:g} on a row whose mean square is ~eps",
            2,
            40,
            seed=34,
            eps=LIMITS.max_eps,
            scale=0.1,
        ),
        _reference_case(
            "padded_row_stride",
            "boundary",
            "3 rows of width 70 laid out with row stride 96",
            3,
            70,
            seed=35,
            row_stride=96,
        ),
        _reference_case(
            "row_isolation",
            "negative",
            "changing row 1 must not change row 0 (padded stride 80)",
            3,
            70,
            seed=36,
            row_stride=80,
            check="row_isolation",
        ),
        _reference_case(
            "poison_invariance",
            "negative",
            "changing the poison in masked lanes and padding must change nothing",
            2,
            70,
            seed=37,
            row_stride=72,
            check="poison_invariance",
        ),
    ]


def _signed_magnitudes(rows: int, width: int, seed: int, low: float, high: float) -> np.ndarray:
    """Magnitudes uniform in [low, high] with random signs: every square in a known range."""
    rng = _rng(seed)
    return rng.uniform(low, high, (rows, width)) * rng.choice([-1.0, 1.0], (rows, width))


#: Constant rows for the bfloat16 stagnation case: a bfloat16 running sum of their squares stops
#: growing after a few hundred terms (at 256 for 1.0), and the three values stop it at different
#: counts, so a thread's share of any length from about 64 terms on shows it.
STAGNATION_VALUES: tuple[float, ...] = (1.0, 1.0625, 1.25)


def _precision() -> list[Fixture]:
    """Rows whose float32 (or wider) sum of squares is right and a half-precision one is not,
    and rows whose mean square is near eps, in every declared dtype: the spec's "accumulate in
    safe precision" and "eps inside the root", each a fixture that fails when broken."""
    # 16384 columns: a thread's share is 64 terms or more up to 8 warps of a one-tile kernel.
    long_row = 16384
    return [
        Fixture(
            "float16_sum_overflow",
            "boundary",
            "float16 rows of |x| in [12, 16] over 4096 columns: every square fits float16, "
            "the sum of squares (~8e5; ~1e5 for any 512 of them) is past its 65504, so a "
            "kernel that sums squares in float16 gets inf and stores zeros (the bug: "
            "accumulating in the input dtype)",
            lambda: {
                "x": _signed_magnitudes(2, 4096, 40, 12.0, 16.0),
                "weight": _asymmetric(4096),
                "eps": 1e-6,
                "dtype": "float16",
            },
        ),
        Fixture(
            "float16_square_underflow",
            "boundary",
            "float16 rows of |x| in [7e-5, 2e-4], eps 1e-12: each square is below float16's "
            "smallest subnormal (6e-8), so a kernel that squares in float16 sums zeros and "
            "scales by 1/sqrt(eps) (the bug: squaring in the input dtype)",
            lambda: {
                "x": _signed_magnitudes(2, 96, 41, 7e-5, 2e-4),
                "weight": _asymmetric(96),
                "eps": LIMITS.min_eps,
                "dtype": "float16",
            },
        ),
        Fixture(
            "bfloat16_sum_stagnation",
            "boundary",
            f"bfloat16 constant rows ({', '.join(f'{v:g}' for v in STAGNATION_VALUES)}) of "
            f"width {long_row}: a bfloat16 running sum stops growing (256 + 1 rounds back to 256), "
            "so a kernel that adds squares one after another in bfloat16 (a thread's share of a "
            "long row, a loop-carried accumulator) under-counts the mean square (the bug: "
            "accumulating in the input dtype; a pure pairwise tree of equal values stays exact)",
            lambda: {
                "x": np.repeat(np.array(STAGNATION_VALUES)[:, None], long_row, axis=1),
                "weight": _asymmetric(long_row),
                "eps": 1e-6,
                "dtype": "bfloat16",
            },
        ),
        *(
            _reference_case(
                f"{dtype}_mean_square_near_eps",
                "boundary",
                f"{dtype} rows whose mean square is ~eps = {LIMITS.max_eps:g}: eps outside the "
                "root (x / (sqrt(ms) + eps), rsqrt(ms) + eps) is off by up to 40% here (the "
                "bug: eps in the wrong place)",
                2,
                48,
                seed=seed,
                dtype=dtype,
                eps=LIMITS.max_eps,
                scale=0.1,
            )
            for seed, dtype in ((42, "float32"), (43, "float16"), (44, "bfloat16"))
        ),
        _reference_case(
            "mean_square_near_small_eps",
            "boundary",
            "float32 rows of scale 1e-3 with eps 1e-6: the same mean square ~eps at the eps "
            "models use, where eps outside the root is off by ~40% (the bug: eps in the wrong "
            "place)",
            2,
            48,
            seed=45,
            eps=1e-6,
            scale=1e-3,
        ),
    ]


def _malformed() -> list[Fixture]:
    """Inputs the validator must reject, each naming the field it rejects."""
    max_w = LIMITS.max_width
    return [
        _rejection("width_mismatch", "rows of different widths", "x", x="1, 2, 3; 4, 5"),
        _rejection("declared_width_mismatch", "declared width 4, rows of 3", "width", width=4),
        _rejection("wrong_weight_count", "2 weights for width 3", "weight", weight="1, 2"),
        _rejection(
            "excessive_rows",
            f"{LIMITS.max_rows + 1} rows",
            "rows",
            x=";".join(["1"] * (LIMITS.max_rows + 1)),
            weight="1",
        ),
        _rejection("zero_rows", "declared rows 0", "rows", rows=0),
        _rejection("noninteger_rows", "declared rows 2.5", "rows", rows="2.5"),
        _rejection("zero_width", "declared width 0", "width", width=0),
        _rejection("oversized_width", f"declared width {max_w + 1}", "width", width=max_w + 1),
        _rejection(
            "row_stride_below_width", "row stride 2 for width 3", "row_stride", row_stride=2
        ),
        _rejection("oversized_magnitude", "an x element of 1e7", "x", x="1, 1e7, 3"),
        _rejection("oversized_weight", "a weight of 2e6", "weight", weight="1, 2e6, 1"),
        _rejection("nan_text", "x contains 'nan'", "x", x="1, nan, 3"),
        _rejection("inf_text", "x contains 'inf'", "x", x="1, inf, 3"),
        _rejection(
            "overflow_text", "x contains '1e400' (overflows to infinity)", "x", x="1, 1e400, 3"
        ),
        _rejection("nonnumeric_text", "x contains 'abc'", "x", x="1, abc, 3"),
        _rejection("empty_text", "x is empty", "x", x="  "),
        _rejection("nonfinite_weight", "a weight of nan", "weight", weight="1, nan, 1"),
        _rejection("missing_eps", "eps not given", "eps", eps=None),
        _rejection("nonnumeric_eps", "eps = 'abc'", "eps", eps="abc"),
        _rejection("infinite_eps", "eps = inf", "eps", eps="inf"),
        _rejection("eps_below_min", f"eps = 1e-13 < {LIMITS.min_eps:g}", "eps", eps=1e-13),
        _rejection("eps_above_max", f"eps = 0.1 > {LIMITS.max_eps:g}", "eps", eps=0.1),
        _rejection("unknown_dtype", "dtype float64 is not declared", "dtype", dtype="float64"),
        _rejection(
            "float16_overflow",
            "x element 7e4 exceeds the float16 maximum",
            "x",
            x="1, 7e4, 3",
            dtype="float16",
        ),
    ]


def _build_fixtures() -> tuple[Fixture, ...]:
    fixtures = _positive() + _boundary_and_negative() + _precision() + _malformed()
    names = [f.name for f in fixtures]
    if len(set(names)) != len(names):
        raise RuntimeError("duplicate fixture names")
    return tuple(fixtures)


FIXTURES: tuple[Fixture, ...] = _build_fixtures()
BY_NAME: dict[str, Fixture] = {fixture.name: fixture for fixture in FIXTURES}


def get(name: str) -> Fixture:
    """Look a fixture up by name.

    Raises:
        ValueError: naming the field "fixture" and the known names.
    """
    try:
        return BY_NAME[name]
    except KeyError:
        raise ValueError(f"fixture: {name!r} is not a known fixture name") from None
