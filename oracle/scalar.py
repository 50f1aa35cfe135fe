"""Direct scalar reference: two plain loops per row, no tiles, no masks, no vectorization.

Accumulation is in Python floats (IEEE binary64), i.e. strictly more precise than the
float32 accumulation the kernel and the tiled model use; only the final output is rounded to
the declared dtype. This path shares validation with :mod:`oracle.tiled`, never arithmetic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from oracle.dtypes import round_to_dtype
from oracle.spec import Problem


@dataclass(frozen=True)
class ScalarResult:
    """Per-row intermediates and the output of the scalar reference.

    Attributes:
        sum_squares: (rows,) sum of x**2, binary64.
        mean_square: (rows,) sum_squares / width.
        rrms: (rows,) 1 / sqrt(mean_square + eps).
        y_exact: (rows, width) x * rrms * w before rounding, binary64.
        y: (rows, width) y_exact rounded to the problem's dtype (as float64).
    """

    sum_squares: np.ndarray
    mean_square: np.ndarray
    rrms: np.ndarray
    y_exact: np.ndarray
    y: np.ndarray


def reference(problem: Problem) -> ScalarResult:
    """Compute RMSNorm row by row with two explicit loops.

    Args:
        problem: a validated problem.

    Returns:
        The per-row intermediates and the output.
    """
    weight = problem.weight.tolist()
    width = problem.width
    sums: list[float] = []
    means: list[float] = []
    rrms_values: list[float] = []
    outputs: list[list[float]] = []
    for row in problem.x.tolist():
        sum_squares = 0.0
        for value in row:  # loop 1: sum of squares
            sum_squares += value * value
        mean_square = sum_squares / width  # the true width, never the tile
        rrms = 1.0 / math.sqrt(mean_square + problem.eps)  # eps inside the root
        out_row = [0.0] * width
        for col, value in enumerate(row):  # loop 2: normalize and scale
            out_row[col] = value * rrms * weight[col]
        sums.append(sum_squares)
        means.append(mean_square)
        rrms_values.append(rrms)
        outputs.append(out_row)
    y_exact = np.array(outputs, dtype=np.float64).reshape(problem.rows, width)
    return ScalarResult(
        sum_squares=np.array(sums),
        mean_square=np.array(means),
        rrms=np.array(rrms_values),
        y_exact=y_exact,
        y=round_to_dtype(y_exact, problem.dtype),
    )
