"""The reduction stepper's data, Qt-free: one row's reduction as steps (load, square, sum per
chunk, mean, rrms, output), each with the model's value, the reference's and, where a kernel ran,
where the two part; the widget (:mod:`inspector.qt.widgets.stepper`) draws what these return."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oracle import compare as cmp
from oracle.scalar import ScalarResult
from oracle.spec import Problem
from oracle.tiled import TiledResult


@dataclass(frozen=True)
class ReductionStep:
    """One step of the reduction for one row.

    Attributes:
        key: stable id ("load", "square", "stage1", ..., "sum", "mean", "eps", "rsqrt",
            "scale", "store").
        title: short heading.
        detail: the numbers, in words.
        values: per-lane values drawn for this step (None for the scalar steps).
        active: bool per drawn lane: True where the lane holds data in this step.
        scalar: the step's single value where it has one.
        lines: horizontal reference lines for the plot (the mean square over the squares,
            +-rms over the loaded values).
        kernel: what the loaded kernel's output implies at this step ("" where it says
            nothing).
    """

    key: str
    title: str
    detail: str
    values: np.ndarray | None
    active: np.ndarray | None
    scalar: float | None
    lines: tuple[float, ...] = ()  # horizontal guides drawn over ``values``
    kernel: str = (
        ""  # the loaded kernel's value at this step, in words (inspector.model.kernel_view)
    )


def _reference_rrms_note(rrms: float, reference: ScalarResult | None, row: int) -> str:
    """The scalar reference's rrms of ``row`` and how far the model's is from it."""
    if reference is None:
        return ""
    ref_rrms = float(reference.rrms[row])
    rel = abs(rrms - ref_rrms) / abs(ref_rrms) if ref_rrms else abs(rrms - ref_rrms)
    ok = rel <= cmp.INTERMEDIATE_TOLERANCE.rtol
    return (
        f"; scalar reference rrms = {ref_rrms:.9g}, relative difference {rel:.2e} "
        f"({'within' if ok else 'OUTSIDE'} {cmp.INTERMEDIATE_TOLERANCE.rtol:g})"
    )


def reduction_steps(
    problem: Problem, tiled: TiledResult, row: int, reference: ScalarResult | None = None
) -> list[ReductionStep]:
    """Every step of the lane model for ``row``, from the load to the masked store."""
    mutant = tiled.mutant
    width, block = tiled.width, tiled.block
    mask = tiled.mask
    lanes = tiled.lanes[row].astype(np.float64)
    steps: list[ReductionStep] = []
    base = row * tiled.row_stride
    row_stride = width if mutant == "wrong_row_stride" else tiled.row_stride
    load_note = (
        f" (mutant wrong_row_stride: base {row} * {width} = {row * width})"
        if mutant == "wrong_row_stride"
        else ""
    )
    steps.append(
        ReductionStep(
            "load",
            "load",
            f"lanes 0..{width - 1} load x[{row}, c] from address {row} * {row_stride} + c "
            f"(base {base}){load_note}; {block - width} tail lane(s) are masked and hold "
            f"poison {tiled.poison:g}",
            np.where(mask, lanes, 0.0),
            mask.copy(),
            None,
        )
    )
    squares = tiled.squares[row].astype(np.float64)
    square_note = "x, not x² (mutant missing_square)" if mutant == "missing_square" else "x²"
    tail_note = (
        "tail lanes squared too: poison enters (mutant masked_tail_inclusion)"
        if mutant == "masked_tail_inclusion"
        else "masked lanes contribute 0"
    )
    steps.append(
        ReductionStep(
            "square",
            "square (fp32)",
            f"each lane upcasts to float32 and computes {square_note}; {tail_note}",
            squares,
            mask | (squares != 0),
            None,
        )
    )
    for k, stage in enumerate(tiled.stages[1:], start=1):
        values = stage[row].astype(np.float64)
        half = values.shape[0]
        steps.append(
            ReductionStep(
                f"stage{k}",
                f"tree stage {k}",
                f"{half} lane(s): s{k}[i] = s{k - 1}[i] + s{k - 1}[i + {half}]",
                values,
                np.ones(half, dtype=bool),
                float(values[0]) if half == 1 else None,
            )
        )
    sum_squares = float(tiled.sum_squares[row])
    steps.append(
        ReductionStep(
            "sum",
            "sum of squares",
            f"sum_squares = {sum_squares:.9g} (the last tree stage)",
            None,
            None,
            sum_squares,
        )
    )
    mean_square = float(tiled.mean_square[row])
    divisor = "1 (mutant sum_instead_of_mean)" if mutant == "sum_instead_of_mean" else str(width)
    steps.append(
        ReductionStep(
            "mean",
            "/ true width",
            f"mean_square = {sum_squares:.9g} / {divisor} = {mean_square:.9g}"
            f" (the divisor is the true width, never the tile {block}); the line is the mean"
            " over the lane squares",
            squares,
            mask | (squares != 0),
            mean_square,
            (mean_square,),
        )
    )
    eps = 0.0 if mutant == "missing_epsilon" else float(np.float32(problem.eps))
    denominator = float(np.float32(mean_square) + np.float32(eps))
    eps_note = " (mutant missing_epsilon: eps dropped)" if mutant == "missing_epsilon" else ""
    steps.append(
        ReductionStep(
            "eps",
            "+ eps",
            f"mean_square + eps = {mean_square:.9g} + {eps:g} = {denominator:.9g}{eps_note}",
            squares,
            mask | (squares != 0),
            denominator,
            (denominator,),
        )
    )
    rrms = float(tiled.rrms[row])
    ref_note = _reference_rrms_note(rrms, reference, row)
    steps.append(
        ReductionStep(
            "rsqrt",
            "rsqrt",
            f"rrms = 1 / sqrt({denominator:.9g}) = {rrms:.9g}{ref_note}; the lines are "
            f"±rms = ±{1.0 / rrms if rrms else float('inf'):.7g} over the loaded x",
            np.where(mask, lanes, 0.0),
            mask.copy(),
            rrms,
            (1.0 / rrms, -1.0 / rrms) if rrms and np.isfinite(rrms) else (),
        )
    )
    weight = np.zeros(block)
    weight[:width] = problem.weight
    scaled = lanes * rrms if mutant == "missing_weight" else lanes * rrms * weight
    weight_note = " (mutant missing_weight: w ignored)" if mutant == "missing_weight" else ""
    steps.append(
        ReductionStep(
            "scale",
            "x · rrms · w",
            f"every lane: x * {rrms:.7g} * w[c]{weight_note}",
            np.where(mask, scaled, 0.0),
            mask.copy(),
            None,
        )
    )
    stored = np.zeros(block)
    stored[:width] = tiled.y[row]
    gap_here = [a for a in tiled.gap_writes if a // tiled.row_stride == row]
    steps.append(
        ReductionStep(
            "store",
            "masked store",
            f"{width} value(s) rounded to {problem.dtype} and stored at {base} + c for c < "
            f"{width}; {block - width} masked lane(s) store nothing"
            + (f"; {len(gap_here)} gap write(s) in this row!" if gap_here else ""),
            stored,
            mask.copy(),
            None,
        )
    )
    return steps
