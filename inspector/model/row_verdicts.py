"""Per-row verdicts the views colour and jump by: each error cell against the tolerance, and
the worst row. Qt-free numpy over ``viewdata.row_columns``."""

from __future__ import annotations

import numpy as np

from inspector.model.viewdata import RowColumn
from oracle import compare as cmp


def worst_row(kernel_rel: np.ndarray | None, model_rel: np.ndarray | None) -> int | None:
    """The row with the largest relative error: the kernel's when it ran, else the lane model's
    (NaN counts as worst: a row that became NaN is the first one to look at); None: no rows."""
    errors = kernel_rel if kernel_rel is not None else model_rel
    if errors is None or len(errors) == 0:
        return None
    values = np.asarray(errors, dtype=np.float64)
    values = np.where(np.isnan(values), np.inf, values)
    return int(np.argmax(values))


#: Per-row verdicts of the row table's error cells (:func:`tolerance_flags`).
WITHIN, OUTSIDE, NO_VALUE = 1, 0, -1


def tolerance_flags(columns: list[RowColumn], tolerance: cmp.Tolerance) -> dict[str, np.ndarray]:
    """For each error column, per row: :data:`WITHIN` / :data:`OUTSIDE` the tolerance, or
    :data:`NO_VALUE` (not run). A path's row is within when its max abs error is at most atol
    or its max rel error at most rtol (both columns of the path get the row's verdict); the
    rrms difference is held to the intermediate tolerance."""
    by_name = {column.name: np.asarray(column.values, dtype=np.float64) for column in columns}
    flags: dict[str, np.ndarray] = {}
    for path in ("model", "kernel"):
        row_abs, row_rel = by_name.get(f"{path} max abs"), by_name.get(f"{path} max rel")
        if row_abs is None or row_rel is None:
            continue
        with np.errstate(invalid="ignore"):
            within = (row_abs <= tolerance.atol) | (row_rel <= tolerance.rtol)
        verdict = np.where(within, WITHIN, OUTSIDE)
        verdict = np.where(np.isnan(row_abs) & np.isnan(row_rel), NO_VALUE, verdict)
        flags[f"{path} max abs"] = flags[f"{path} max rel"] = verdict
    ratio = by_name.get("kernel err/bound")
    if ratio is not None:
        with np.errstate(invalid="ignore"):
            verdict = np.where(ratio <= 1.0, WITHIN, OUTSIDE)
        flags["kernel err/bound"] = np.where(np.isnan(ratio), NO_VALUE, verdict)
    ulps = by_name.get("batch Δulp")
    if ulps is not None:
        with np.errstate(invalid="ignore"):
            verdict = np.where(ulps == 0, WITHIN, OUTSIDE)
        flags["batch Δulp"] = np.where(np.isnan(ulps), NO_VALUE, verdict)
    rrms = by_name.get("rrms rel Δ")
    if rrms is not None:
        with np.errstate(invalid="ignore"):
            verdict = np.where(rrms <= cmp.INTERMEDIATE_TOLERANCE.rtol, WITHIN, OUTSIDE)
        flags["rrms rel Δ"] = np.where(np.isnan(rrms), NO_VALUE, verdict)
    return flags
