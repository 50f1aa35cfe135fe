"""What a switched-on mutant changes on this input, in words: where to look when it changes
something, and why it cannot show when it does not (with the fixture that shows it). Qt-free.

A mutant of the formula changes ``y``, which the lane grid does not draw (it draws ``x``), so
the answer points at the views that show ``y``: the stepper's last steps and the row table.
"""

from __future__ import annotations

import numpy as np

from oracle import compare as cmp
from oracle.spec import Problem

#: The kernel-only mutants: they change nothing in the lane model.
KERNEL_ONLY = ("unmasked_store",)


def _quiet_reason(problem: Problem, mutant: str) -> str:
    """Why ``mutant`` leaves every row of this input within tolerance, and what shows it."""
    x = np.asarray(problem.x, dtype=np.float64)
    mean_square = (x * x).mean(axis=1)
    weights = np.asarray(problem.weight, dtype=np.float64)
    if mutant == "missing_epsilon":
        return (
            f"it acts only where the mean square is near eps ({problem.eps:g}); the smallest "
            f"mean square here is {mean_square.min():.3g}: load zero_row"
        )
    if mutant == "missing_weight":
        if np.all(weights == 1.0):
            return "every weight is 1, so dropping w changes nothing: load asymmetric_weights"
        return "every weight is within the tolerance of 1: load asymmetric_weights"
    if mutant == "masked_tail_inclusion":
        return (
            f"width {problem.width} fills its tile: there is no masked tail to leak; load "
            "non_power_of_two_tail"
            if problem.width == problem.block
            else "the poisoned tail squares to nothing measurable here: load poison_invariance"
        )
    if mutant == "wrong_row_stride":
        return (
            "the row stride equals the width, so the wrong stride reads the same elements: "
            "load padded_row_stride"
            if problem.row_stride == problem.width
            else "one row starts at offset 0 whatever the stride: load multiple_rows"
        )
    if mutant == "sum_instead_of_mean":
        return "a width of 1 makes the sum the mean: load hand_checkable"
    if mutant == "half_accumulation":
        if problem.dtype == "float32":
            return "on float32 the input dtype is float32, so nothing changes: load a float16 case"
        return (
            f"these {problem.dtype} squares neither overflow, underflow nor stagnate in "
            f"{problem.dtype}: load float16_sum_overflow or float16_square_underflow"
        )
    if mutant == "eps_outside_root":
        return (
            f"eps ({problem.eps:g}) moves the root only near the mean square; the smallest "
            f"here is {mean_square.min():.3g}: load float32_mean_square_near_eps"
        )
    return "no row moves beyond the tolerance on this input: load hand_checkable"


def mutant_effect(
    problem: Problem | None,
    mutant: str | None,
    model_errors: tuple[np.ndarray, np.ndarray] | None,
) -> str:
    """One or two sentences on what ``mutant`` visibly changes here ("" when none is on).

    Args:
        problem: the input on show.
        mutant: the switched-on mutant.
        model_errors: per-row (max abs, max rel) of the lane model with the mutant against the
            scalar reference (``Analysis.errors``), None while it is being computed.
    """
    if not mutant or problem is None:
        return ""
    if mutant in KERNEL_ONLY:
        where = (
            "press Run kernel; its stores show on the grid as out-of-bounds writes (x)"
            if problem.width < problem.block
            else f"width {problem.width} fills its tile, so it stores nothing extra here: load "
            "non_power_of_two_tail and press Run kernel"
        )
        only = "is in the real kernel only (the lane model cannot store out of bounds)"
        return f"{mutant} {only}: {where}"
    if model_errors is None:
        return f"{mutant}: analysing…"
    tolerance = cmp.TOLERANCES[problem.dtype]
    row_abs, row_rel = (np.asarray(e, dtype=np.float64) for e in model_errors)
    moved = ~((row_abs <= tolerance.atol) | (row_rel <= tolerance.rtol))
    moved |= np.isnan(row_rel)
    if not moved.any():
        return f"{mutant} has no visible effect on this input: {_quiet_reason(problem, mutant)}."
    worst = int(np.argmax(np.where(np.isnan(row_rel), np.inf, row_rel)))
    return (
        f"{mutant} changes y in {int(moved.sum())} of {problem.rows} row(s) (worst row {worst}, "
        f"relative error {row_rel[worst]:.3g}): see the stepper's last steps and the row "
        "table's model columns (Worst row selects it)"
    )
