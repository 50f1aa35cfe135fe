"""Where a kernel's output parts from the model, read from its output alone.

Any kernel, even one whose internals cannot be seen, reveals its per-row reciprocal RMS through
its output: ``y = x * rrms * w`` gives ``rrms = y / (x * w)`` in every column where ``x * w`` is
well away from zero. :func:`inferred_rrms` takes the median of those ratios per row (robust to a
few wrong lanes) and the mean square it implies, labelled *inferred*. :func:`diagnose` names the
worst row and lane, the step where kernel and model part (the rrms, or the output after it), and
a failure that matches a known bug's signature ("behaves like a divisor of BLOCK instead of
width: every rrms off by sqrt(BLOCK / width)").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from oracle.dtypes import round_to_dtype

# Columns whose |x * w| is at most this fraction of the row's largest are left out of the ratio
# (rounding of y to the dtype makes their ratio meaningless).
MIN_SHARE = 0.05
# A signature matches when every row's ratio agrees with it within this relative distance.
SIGNATURE_TOLERANCE = 0.02


@dataclass(frozen=True)
class Inferred:
    """Per-row values inferred from an output (NaN where a row has no usable column).

    Attributes:
        rrms: median of ``y / (x * w)`` over the usable columns.
        mean_square: ``1 / rrms**2 - eps``, the mean square that rrms implies.
        spread: largest relative distance of a usable column's ratio from the median (0 when
            every column agrees: the output is ``x * c * w`` with one ``c`` per row).
        columns: usable columns per row.
    """

    rrms: np.ndarray
    mean_square: np.ndarray
    spread: np.ndarray
    columns: np.ndarray


def inferred_rrms(x: np.ndarray, weight: np.ndarray, y: np.ndarray, eps: float) -> Inferred:
    """The per-row rrms a kernel's output ``y`` implies for input ``x`` and ``weight``."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    xw = x * np.asarray(weight, dtype=np.float64)[None, :]
    rows = x.shape[0]
    rrms = np.full(rows, np.nan)
    spread = np.full(rows, np.nan)
    columns = np.zeros(rows, dtype=np.int64)
    for row in range(rows):
        size = np.abs(xw[row])
        top = float(size.max()) if size.size else 0.0
        usable = (size > MIN_SHARE * top) & np.isfinite(y[row]) & (top > 0)
        if not usable.any():
            continue
        ratios = y[row, usable] / xw[row, usable]
        median = float(np.median(ratios))
        rrms[row] = median
        columns[row] = int(usable.sum())
        scale = abs(median) if median else 1.0
        spread[row] = float(np.max(np.abs(ratios - median)) / scale)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_square = 1.0 / (rrms * rrms) - eps
    return Inferred(rrms, mean_square, spread, columns)


def _half_mean_square(x: np.ndarray, dtype: str) -> np.ndarray:
    """Each row's mean square as a kernel that squares and sums in ``dtype`` gets it: every
    square rounded, the exact sum of those rounded once (inf past the dtype's range), the mean
    rounded. The order of a real kernel's additions moves it further; overflow and underflow,
    which this keeps, do not depend on it."""
    with np.errstate(over="ignore", invalid="ignore"):
        squares = round_to_dtype(x * x, dtype)
        total = round_to_dtype(squares.sum(axis=1), dtype)
        return round_to_dtype(total / x.shape[1], dtype)


def _signatures(
    width: int,
    block: int,
    mean_square: np.ndarray,
    eps: float,
    x: np.ndarray | None = None,
    dtype: str = "float32",
) -> list[tuple[str, np.ndarray]]:
    """(description, each row's rrms under that bug) of known bugs, from the model's mean
    squares: a bug changes what goes under the square root, and eps stays inside it, so the
    factor it makes depends on the row where the mean square is near eps."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        found = [
            (
                "a sum instead of a mean: the square sum divided by 1, not by the width: every "
                f"rrms off by 1 / sqrt(width) = {1.0 / math.sqrt(width):.4f}",
                1.0 / np.sqrt(mean_square * width + eps),
            )
        ]
        if block != width:
            found.append(
                (
                    f"a divisor of BLOCK ({block}) instead of width ({width}): every rrms off by "
                    f"sqrt(BLOCK / width) = {math.sqrt(block / width):.4f}",
                    1.0 / np.sqrt(mean_square * width / block + eps),
                )
            )
        found.append(
            (
                "eps left out of the square root (rows near zero blow up)",
                1.0 / np.sqrt(mean_square),
            )
        )
        found.append(
            (
                "eps outside the square root: 1 / (sqrt(mean square) + eps)",
                1.0 / (np.sqrt(mean_square) + eps),
            )
        )
        if x is not None and dtype != "float32":
            half = _half_mean_square(np.asarray(x, dtype=np.float64), dtype)
            found.append(
                (
                    f"squares summed in {dtype}, not float32 (a half-precision accumulation: "
                    "its sum overflows, underflows or loses terms)",
                    1.0 / np.sqrt(half + eps),
                )
            )
    return found


def _apart(inferred: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Relative distance of inferred from expected rrms; 0 where both are 0 (a zeroed row)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        apart = np.abs(inferred / expected - 1.0)
    both_zero = (inferred == 0) & (expected == 0)
    return np.where(both_zero, 0.0, apart)


def _weight_variants(
    x: np.ndarray, weight: np.ndarray, y: np.ndarray, reference_rrms: np.ndarray, eps: float
) -> list[str]:
    """The weight conventions ``y`` follows instead of ``w``: read with the weight left out, or
    with ``(1 + w)``, every row's lanes agree on one rrms, the model's (within the signature
    tolerance)."""
    found = []
    for name, applied in (
        ("the weight left out: y = x * rrms in every row", np.ones_like(weight)),
        ("weights applied as (1 + w): y = x * rrms * (1 + w) (the Gemma convention)",
         1.0 + np.asarray(weight, dtype=np.float64)),
    ):  # fmt: skip
        read = inferred_rrms(x, applied, y, eps)
        ratio = read.rrms / np.asarray(reference_rrms, dtype=np.float64)
        finite = np.isfinite(ratio)
        if (
            finite.any()
            and np.all(read.spread[finite] < 1e-2)
            and np.all(np.abs(ratio[finite] - 1.0) <= SIGNATURE_TOLERANCE)
        ):
            found.append(name)
    return found


def _cast_before_weight(
    x: np.ndarray, weight: np.ndarray, y: np.ndarray, reference_y: np.ndarray,
    reference_rrms: np.ndarray, dtype: str,
) -> list[str]:  # fmt: skip
    """``y`` matches ``(x * rrms).to(dtype) * w`` (two roundings; a half dtype only) within the
    dtype's tolerance and lies closer to it than to the reference: the double rounding explains
    the lanes that differ."""
    from oracle.compare import TOLERANCES, compare

    if dtype == "float32":
        return []
    rrms = np.asarray(reference_rrms, dtype=np.float64)[:, None]
    w = np.asarray(weight, dtype=np.float64)[None, :]
    with np.errstate(over="ignore", invalid="ignore"):
        early = round_to_dtype(round_to_dtype(x * rrms, dtype) * w, dtype)
        to_early = np.nanmax(np.abs(y - early), initial=0.0)
        to_reference = np.nanmax(np.abs(y - reference_y), initial=0.0)
    if not to_early < to_reference or not compare(y, early, TOLERANCES[dtype]).passed:
        return []
    return [f"the cast to {dtype} before the weight: y = (x * rrms).to({dtype}) * w"]


def diagnose(
    x: np.ndarray,
    weight: np.ndarray,
    y: np.ndarray,
    reference_y: np.ndarray,
    reference_rrms: np.ndarray,
    eps: float,
    block: int,
    dtype: str = "float32",
    rrms_agree: float = SIGNATURE_TOLERANCE / 10,
) -> list[str]:
    """Lines that say where ``y`` parts from the reference and what that looks like; empty when
    every element agrees exactly enough to leave nothing to say (the caller judges tolerance).
    The variants it tests the output against: the divisor (BLOCK, 1), eps left out or outside
    the root, squares summed in ``dtype``, the weight left out or applied as ``(1 + w)``, and the
    cast to ``dtype`` before the weight. Every row's rrms "agrees" (they part after it) when
    its inferred rrms is within ``rrms_agree`` (relative) of the reference's: the output
    tolerance's ``rtol`` judges it as the output is judged (an rrms that close moves no output
    past that tolerance)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    reference_y = np.asarray(reference_y, dtype=np.float64)
    error = np.abs(y - reference_y)
    error[~np.isfinite(error)] = np.inf
    if not error.size or not np.any(error > 0):
        return []
    width = y.shape[1]
    row, lane = np.unravel_index(int(np.argmax(error)), error.shape)
    lines = [
        f"first divergence: worst at row {row}, lane {lane}: kernel {y[row, lane]:.6g}, "
        f"reference {reference_y[row, lane]:.6g}"
    ]
    inferred = inferred_rrms(x, weight, y, eps)
    ratio = inferred.rrms / np.asarray(reference_rrms, dtype=np.float64)
    consistent = np.isfinite(ratio) & (inferred.spread < 1e-2)
    if np.all(~np.isfinite(ratio)):
        return [*lines, "inferred rrms: no row has a usable column (x * w is zero everywhere)"]
    worst_rrms = int(np.nanargmax(np.abs(ratio - 1.0)))
    lines.append(
        f"row {worst_rrms}: inferred rrms {inferred.rrms[worst_rrms]:.6g} (from y / (x * w), "
        f"{inferred.columns[worst_rrms]} columns) against the model's "
        f"{reference_rrms[worst_rrms]:.6g}: ratio {ratio[worst_rrms]:.6g}"
    )
    if np.all(consistent) and np.nanmax(np.abs(ratio - 1.0)) <= rrms_agree:
        lines.append(
            "they part after the rrms: every row's rrms agrees, so the output step (the weight, "
            "the store, or the lanes written) differs"
        )
        early = _cast_before_weight(x, weight, y, reference_y, reference_rrms, dtype)
        return lines + [f"behaves like {name}" for name in early]
    if np.all(consistent):
        lines.append("they part at the rrms: each row's output is x * c * w with the wrong c")
        known = np.isfinite(ratio)
        mean_square = 1.0 / np.asarray(reference_rrms, dtype=np.float64) ** 2 - eps
        # The closest signature within the tolerance (two can be: eps left out and eps outside
        # the root part by eps / sqrt(mean square) only); the first listed wins a tie.
        matches = []
        signatures = _signatures(width, block, mean_square, eps, x, dtype)
        for order, (description, expected) in enumerate(signatures):
            apart = float(np.max(_apart(inferred.rrms[known], expected[known]), initial=0.0))
            if apart <= SIGNATURE_TOLERANCE:
                matches.append((apart, order, description))
        if matches:
            lines.append(f"behaves like {min(matches)[2]}")
    else:
        off = int(np.sum(~consistent & np.isfinite(ratio)))
        named = _weight_variants(x, weight, y, reference_rrms, eps)
        if named:
            return lines + [f"behaves like {name}" for name in named]
        lines.append(
            f"{off} row(s) are not x * c * w for any one c: the lanes of a row disagree (a "
            "tail, a mask, a stride or a wrong weight)"
        )
        scale = np.maximum(np.abs(reference_y[row]), 1e-30)
        wrong = np.flatnonzero(error[row] > 1e-3 * scale)
        if wrong.size:
            lines.append(
                f"row {row}: {wrong.size} of {width} lanes differ, lanes {wrong[0]}..{wrong[-1]}"
            )
    return lines


def describe_stores(
    addresses: tuple[int, ...], stride: int, rows: int, width: int, shown: int = 3
) -> str:
    """' (row 0 lane 70 (padding), ...)': where the first of ``addresses`` (row * ``stride`` +
    lane; negative before row 0) landed, for a failure line."""
    where = []
    for address in addresses[:shown]:
        if address < 0:
            where.append(f"{-address} element(s) before row 0")
            continue
        row, lane = divmod(address, stride)
        if row >= rows:
            where.append(f"{address - rows * stride + 1} element(s) past the last row")
        else:
            where.append(f"row {row} lane {lane}" + (" (padding)" if lane >= width else ""))
    more = ", ..." if len(addresses) > shown else ""
    return f" ({', '.join(where)}{more})" if where else ""
