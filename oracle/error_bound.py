"""An a-priori bound on the kernel's error, derived from its arithmetic, per element.

The kernel computes, in float32 from inputs already in the dtype:

1. each square ``x*x`` (one rounding), summed by additions in which every square takes part
   in at most ``adds`` of them (a pairwise tree over a tile of B lanes: log2(B); a column loop
   of C chunks adds C - 1 lane-wise sums before its tree; a peeled row adds its head and tail);
2. the mean (one division by the true width), ``+ eps`` (one addition), ``rsqrt`` (relative
   error at most ``RSQRT_REL``: PTX's ``rsqrt.approx.f32``, 2**-22.9, rounded up to 2**-22);
3. ``x * rrms * w`` (two roundings) and one rounding to the output dtype: half an ulp to
   nearest, a whole ulp where the Triton interpreter truncates float32 -> bfloat16.

With ``u = 2**-24`` and ``gamma(k) = k u / (1 - k u)`` (Higham, *Accuracy and Stability of
Numerical Algorithms*, 2nd ed., Lemma 3.1 and section 4.2): the sum of nonnegative squares is
within ``gamma(adds + 1)`` relative; the mean and ``+ eps`` add two roundings (eps > 0 cannot
amplify a relative error); the root halves it; so the float32 output is within ``rel`` below of
the exact ``y``, relative, and the dtype rounding adds its own unit. Below the dtype's smallest
normal the rounding is absolute, so that much is added as an absolute floor. Numpy only.
"""

from __future__ import annotations

import math

import numpy as np

from oracle.spec import Problem

#: float32 unit roundoff (round to nearest).
U32 = 2.0**-24
#: Largest relative error of the kernel's rsqrt (PTX rsqrt.approx.f32: 2**-22.9).
RSQRT_REL = 2.0**-22
#: Unit roundoff of each output dtype, to nearest (a truncation costs twice this).
UNIT = {"float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8}
#: Smallest normal number of each output dtype (rounding below it is absolute).
MIN_NORMAL = {"float32": 2.0**-126, "float16": 2.0**-14, "bfloat16": 2.0**-126}


def gamma(k: int) -> float:
    """Higham's ``gamma_k = k u / (1 - k u)`` for float32 (``k u < 1``)."""
    if k < 0 or k * U32 >= 1:
        raise ValueError(f"gamma: k must be in [0, 2**24); got {k}")
    return k * U32 / (1 - k * U32)


def tree_adds(width: int, chunks: int = 1, peeled: bool = False) -> int:
    """Additions each square takes part in: the tree over ``ceil(width / chunks)`` lanes
    rounded up to a power of two, the ``chunks - 1`` lane-wise chunk sums before it, and two
    more where a peeled row adds its head and tail."""
    if width < 1 or chunks < 1:
        raise ValueError(f"tree_adds: width and chunks must be >= 1; got {width}, {chunks}")
    lanes = -(-width // chunks)
    return math.ceil(math.log2(lanes)) + (chunks - 1) + (2 if peeled else 0)


def relative_bound(dtype: str, adds: int, truncating: bool = False) -> float:
    """The relative bound on each output element (before the absolute floor)."""
    # The squares' rounding and ``adds`` additions, then the mean's division and + eps.
    root_input_rel = gamma(adds + 3)
    # rsqrt of v (1 + e) is rsqrt(v) (1 + e)**-1/2, |(1 + e)**-1/2 - 1| <= e / (2 (1 - e));
    # the approximate rsqrt multiplies in its own (1 + a).
    rrms_rel = (1 + 0.5 * root_input_rel / (1 - root_input_rel)) * (1 + RSQRT_REL) - 1
    float32_rel = (1 + rrms_rel) * (1 + U32) ** 2 - 1  # x * rrms, then * w
    dtype_unit = UNIT[dtype] * (2 if truncating else 1)
    return (1 + float32_rel) * (1 + dtype_unit) - 1


def element_bounds(
    problem: Problem, y_exact: np.ndarray, adds: int, truncating: bool = False
) -> np.ndarray:
    """(rows, width) bound on ``|y_kernel - y_exact|`` for every element.

    Args:
        problem: the validated problem (its dtype).
        y_exact: the exact output, binary64 (``oracle.scalar.reference(problem).y_exact``).
        adds: :func:`tree_adds` of the launch layout.
        truncating: the output rounding truncates (the interpreter's float32 -> bfloat16).
    """
    rel = relative_bound(problem.dtype, adds, truncating)
    floor = MIN_NORMAL[problem.dtype] * UNIT[problem.dtype] * (4 if truncating else 2)
    return np.abs(np.asarray(y_exact, dtype=np.float64)) * rel + floor


def row_bounds(
    problem: Problem, y_exact: np.ndarray, adds: int, truncating: bool = False
) -> np.ndarray:
    """(rows,) the largest element bound of each row, beside each row's largest observed
    error (``max_abs_error``) in a table or a receipt."""
    return element_bounds(problem, y_exact, adds, truncating).max(axis=1)


def layout_adds(width: int, path: str, block: int, peel: int = 0) -> int:
    """:func:`tree_adds` of one launch layout: ``path`` one of ``one_row``, ``multi_row``,
    ``column_loop`` (``block`` is then CHUNK), ``peel`` the tile's PEEL (0: not peeled)."""
    if path not in ("one_row", "multi_row", "column_loop"):
        raise ValueError(f"layout_adds: path must be a kernel path; got {path!r}")
    chunks = -(-width // block) if path == "column_loop" else 1
    return tree_adds(width, chunks, peeled=peel > 0)


def row_errors_against_exact(y: np.ndarray, y_exact: np.ndarray) -> np.ndarray:
    """(rows,) each row's largest ``|y - y_exact|``: the figure the bound limits (NaN where
    an output is NaN, so a NaN never passes as within)."""
    diff = np.abs(np.asarray(y, dtype=np.float64) - np.asarray(y_exact, dtype=np.float64))
    return diff.max(axis=1)  # a NaN propagates
