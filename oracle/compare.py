"""Comparison with named tolerances: both maximum errors, always.

A tolerance belongs to a compare dtype. ``|actual - expected| <= atol + rtol * |expected|``
must hold element-wise; NaN never passes; infinities pass only where both sides hold the same
infinity. Both the largest absolute and the largest relative error are reported, whichever is
less flattering.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Tolerance:
    """Absolute and relative tolerance for one compare dtype, with the reason for it."""

    dtype: str
    atol: float
    rtol: float
    why: str


#: Output comparisons, per declared dtype. One unit in the last place (ulp) is 2**-23 for
#: float32, 2**-10 for float16 and 2**-7 for bfloat16 (relative, at the top of a binade).
TOLERANCES: dict[str, Tolerance] = {
    "float32": Tolerance(
        "float32",
        1e-5,
        2e-5,
        "float32 accumulation vs binary64 reference; tree vs sequential order and the "
        "kernel's approximate rsqrt stay within ~1e-6 relative",
    ),
    "float16": Tolerance(
        "float16",
        1e-3,
        2e-3,
        "two paths may round to neighbouring float16 values: one ulp is ~9.8e-4 relative",
    ),
    "bfloat16": Tolerance(
        "bfloat16",
        1e-2,
        1.6e-2,
        "two ulp of bfloat16 (7.8e-3 each): the Triton interpreter truncates float32->bfloat16 "
        "where compiled code and this oracle round to nearest, which costs up to one ulp",
    ),
}

#: Intermediates (sum of squares, mean square, rrms) are float32 in the lane model and the
#: kernel and binary64 in the scalar reference: reduction order alone moves them ~1e-6.
INTERMEDIATE_TOLERANCE = Tolerance(
    "float32", 0.0, 1e-5, "float32 pairwise tree vs binary64 sequential sum, relative only"
)


@dataclass(frozen=True)
class Comparison:
    """Result of comparing two arrays under a named tolerance.

    Attributes:
        max_abs: largest |actual - expected| over finite pairs (0 when none).
        max_rel: largest |actual - expected| / |expected| over finite pairs with expected != 0.
        mismatches: element count outside the tolerance (NaN counted).
        first_mismatch: index of the first such element, or None.
        passed: shapes equal and no mismatch.
    """

    tolerance: Tolerance
    max_abs: float
    max_rel: float
    mismatches: int
    first_mismatch: tuple[int, ...] | None
    passed: bool
    shape_ok: bool = True

    def describe(self) -> str:
        state = "pass" if self.passed else "FAIL"
        text = (
            f"{state} ({self.tolerance.dtype}: atol={self.tolerance.atol:g}, "
            f"rtol={self.tolerance.rtol:g}) max_abs={self.max_abs:.3e} max_rel={self.max_rel:.3e}"
        )
        if not self.shape_ok:
            return text + " shape mismatch"
        if self.mismatches:
            text += (
                f", {self.mismatches} element(s) differ, first at {list(self.first_mismatch or ())}"
            )
        return text


def compare(actual: np.ndarray, expected: np.ndarray, tolerance: Tolerance) -> Comparison:
    """Compare ``actual`` against ``expected`` element-wise under ``tolerance``.

    Args:
        actual: values under test.
        expected: reference values (same shape).
        tolerance: the named tolerance.

    Returns:
        A :class:`Comparison`; ``passed`` is False on any shape mismatch or NaN.
    """
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    if a.shape != e.shape:
        return Comparison(
            tolerance,
            float("inf"),
            float("inf"),
            max(a.size, e.size),
            None,
            passed=False,
            shape_ok=False,
        )
    with np.errstate(invalid="ignore", over="ignore"):
        finite = np.isfinite(a) & np.isfinite(e)
        same_inf = np.isinf(a) & np.isinf(e) & (np.sign(a) == np.sign(e))
        diff = np.where(finite, np.abs(a - e), 0.0)
        ok = np.where(finite, diff <= tolerance.atol + tolerance.rtol * np.abs(e), same_inf)
        nonzero = finite & (e != 0)
        rel = np.where(nonzero, diff / np.where(nonzero, np.abs(e), 1.0), 0.0)
    bad = np.argwhere(~ok)
    return Comparison(
        tolerance=tolerance,
        max_abs=float(diff.max()) if diff.size else 0.0,
        max_rel=float(rel.max()) if rel.size else 0.0,
        mismatches=int(bad.shape[0]),
        first_mismatch=tuple(int(i) for i in bad[0]) if bad.size else None,
        passed=bool(bad.shape[0] == 0),
    )


def max_errors(actual: np.ndarray, expected: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-row (max_abs, max_rel) of two (rows, width) arrays; NaN rows report inf."""
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        diff = np.abs(a - e)
        diff = np.where(a == e, 0.0, diff)  # equal infinities are no error
        diff = np.where(np.isnan(diff), np.inf, diff)
        rel = np.where(e != 0, diff / np.abs(e), np.where(diff == 0, 0.0, np.inf))
    return diff.max(axis=1), rel.max(axis=1)
