"""The loaded kernel's own intermediates in the views, Qt-free: what its output implies beside
what the model computes.

A kernel's internals are not visible, but its output is: ``oracle.diagnose.inferred_rrms``
reads each row's rrms (and the mean square that implies) from ``y / (x * w)``, labelled
*inferred*. This module turns that into the row table's inferred columns, the reduction
stepper's kernel lines (at the mean, the rsqrt and the output) and the **first divergence**: the
worst row and lane, the step where kernel and model part, and ``oracle.diagnose``'s text.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from inspector.check.results import StoresOutOfBounds
from inspector.model.viewdata import ReductionStep, RowColumn
from oracle import compare as cmp
from oracle import diagnose
from oracle.scalar import ScalarResult
from oracle.spec import Problem

#: A row "parts at the rrms" when its inferred rrms is this far (relative) from the
#: reference's and its columns agree on it (the spread below); ``oracle.diagnose`` uses the same.
RRMS_PART = diagnose.SIGNATURE_TOLERANCE / 10
SPREAD_AGREE = 1e-2


@dataclass(frozen=True)
class KernelOutput:
    """The output of the loaded kernel on the current problem, and where it came from.

    Attributes:
        y: (rows, width) float64.
        source: a few words ("Run kernel, interpreter", "the check", "the session file").
        stores: where it stored out of bounds (the run's
            :class:`~inspector.check.results.StoresOutOfBounds`; none for a session's output).
        inferred: ``diagnose.inferred_rrms`` of ``y`` when already computed (off this thread).
        rstd: the bundled kernel's own per-row rrms, exact (its optional rstd output, stored
            by Run kernel); None for the check's run, a session's and a user kernel's.
    """

    y: np.ndarray
    source: str
    stores: StoresOutOfBounds = dataclasses.field(default_factory=StoresOutOfBounds)
    inferred: diagnose.Inferred | None = None
    rstd: np.ndarray | None = None


def inferred_of(problem: Problem, output: KernelOutput) -> diagnose.Inferred:
    """The output's inferred rrms and mean square (computed now unless it came with them)."""
    if output.inferred is not None:
        return output.inferred
    return diagnose.inferred_rrms(problem.x, problem.weight, output.y, problem.eps)


def exact_rstd(output: KernelOutput | None, rows: int) -> np.ndarray | None:
    """The output's rstd (the kernel's own rrms per row) when it has one for ``rows`` rows."""
    if output is None or output.rstd is None or np.shape(output.rstd) != (rows,):
        return None
    return np.asarray(output.rstd, dtype=np.float64)


class KernelSource(Protocol):
    """What :func:`kernel_columns` reads (the window's state)."""

    def kernel_output(self) -> KernelOutput | None: ...

    def kernel_inferred(self) -> diagnose.Inferred | None: ...


def kernel_columns(
    problem: Problem, reference: ScalarResult, state: KernelSource
) -> dict[str, RowColumn | tuple[RowColumn, ...]]:
    """:func:`inferred_columns` of ``state``'s kernel output, its exact rstd included."""
    rstd = exact_rstd(state.kernel_output(), problem.rows)
    return inferred_columns(problem, reference, state.kernel_inferred(), rstd)


def inferred_columns(
    problem: Problem,
    reference: ScalarResult,
    inferred: diagnose.Inferred | None,
    rstd: np.ndarray | None = None,
) -> dict[str, RowColumn | tuple[RowColumn, ...]]:
    """The row table's kernel intermediates, by the column they sit beside (NaN: not run);
    with ``rstd`` (the bundled kernel's rstd output) its exact rrms too."""
    nan = np.full(problem.rows, np.nan)
    rrms = nan if inferred is None else np.asarray(inferred.rrms, dtype=np.float64)
    mean_square = nan if inferred is None else np.asarray(inferred.mean_square, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = rrms / np.asarray(reference.rrms, dtype=np.float64)
    how = "median of y / (x · w) over the row's columns where |x · w| is not tiny"
    blank = " (blank: kernel not run)"
    rrms_columns: tuple[RowColumn, ...] = (
        RowColumn("rrms kernel (inferred)", rrms, "float", how + blank),
    )
    if rstd is not None:
        rrms_columns += (
            RowColumn(
                "rrms kernel (rstd, exact)",
                rstd,
                "float",
                "the kernel's own rrms per row, from its optional rstd output (float32, as it "
                "multiplied by it)",
            ),
        )
    return {
        "mean² tiled": RowColumn(
            "mean² kernel (inferred)", mean_square, "float", f"1 / rrms² - eps, rrms {how}{blank}"
        ),
        "rrms tiled": rrms_columns,
        "rrms rel Δ": RowColumn(
            "rrms inferred / scalar",
            ratio,
            "float",
            "the kernel's inferred rrms over the scalar reference's (1: they agree; "
            f"sqrt(BLOCK / width) = {np.sqrt(problem.block / problem.width):.4f}: the mean over "
            f"the tile){blank}",
        ),
    }


def with_inferred(
    columns: list[RowColumn], extra: dict[str, RowColumn | tuple[RowColumn, ...]]
) -> list[RowColumn]:
    """``columns`` with each of ``extra`` (one column or several) right after the column it
    is keyed by."""
    out: list[RowColumn] = []
    for column in columns:
        out.append(column)
        added = extra.get(column.name, ())
        out.extend(added if isinstance(added, tuple) else (added,))
    return out


def part_step(inferred: diagnose.Inferred, reference: ScalarResult, row: int) -> str:
    """Where kernel and model part in ``row``: "rsqrt" when the row's output is x · c · w with
    the wrong c, else "store" (the output step: the weight, the store or the lanes written)."""
    rrms, ref = float(inferred.rrms[row]), float(reference.rrms[row])
    spread = float(inferred.spread[row])
    if not np.isfinite(rrms) or not ref or not np.isfinite(spread):
        return "store"
    if spread < SPREAD_AGREE and abs(rrms / ref - 1.0) > RRMS_PART:
        return "rsqrt"
    return "store"


def _row_error(output: KernelOutput, reference: ScalarResult, row: int) -> tuple[int, float]:
    error = np.abs(np.asarray(output.y[row], dtype=np.float64) - reference.y[row])
    error[~np.isfinite(error)] = np.inf
    lane = int(np.argmax(error)) if error.size else 0
    return lane, float(error[lane]) if error.size else 0.0


def annotate_steps(
    steps: list[ReductionStep],
    problem: Problem,
    reference: ScalarResult | None,
    row: int,
    output: KernelOutput | None,
    inferred: diagnose.Inferred | None,
) -> list[ReductionStep]:
    """The stepper's steps with the kernel's value beside the model's at the mean, the rsqrt
    and the output steps ("not run yet" when there is no kernel output)."""
    if reference is None:
        return steps
    if output is None or inferred is None:
        note = "kernel: not run yet (Run kernel, Ctrl+K, shows its inferred value here)"
        notes = dict.fromkeys(("mean", "rsqrt", "store"), note)
    else:
        ref_rrms = float(reference.rrms[row])
        rrms = float(inferred.rrms[row])
        ratio = rrms / ref_rrms if ref_rrms else float("nan")
        parts = part_step(inferred, reference, row)
        lane, error = _row_error(output, reference, row)
        where = f"kernel ({output.source})"
        exact = exact_rstd(output, problem.rows)
        own = (
            ""
            if exact is None
            else f"; its own rrms (rstd output, exact) = {float(exact[row]):.9g}"
        )
        notes = {
            "mean": f"{where}: mean² = {float(inferred.mean_square[row]):.9g} inferred; the "
            f"reference's is {float(reference.mean_square[row]):.9g}",
            "rsqrt": f"{where}: rrms = {rrms:.9g} inferred from y / (x · w) over "
            f"{int(inferred.columns[row])} column(s): {ratio:.6g} × the scalar reference's "
            f"{ref_rrms:.9g}{own}" + (" — kernel and model part HERE" if parts == "rsqrt" else ""),
            "store": f"{where}: largest |kernel y − expected y| in row {row} is {error:.3g} at "
            f"lane {lane} (kernel {float(output.y[row, lane]):.7g}, expected "
            f"{float(reference.y[row, lane]):.7g})"
            + (" — kernel and model part HERE" if parts == "store" and error > 0 else ""),
        }
    return [
        dataclasses.replace(step, kernel=notes[step.key]) if step.key in notes else step
        for step in steps
    ]


@dataclass(frozen=True)
class Divergence:
    """Where the kernel's output parts from the scalar reference.

    Attributes:
        row, lane: the worst element (the first out-of-bounds store when the output agrees).
        step: the stepper's step where they part ("rsqrt" or "store"); "" when nothing differs.
        passed: whether the output is within the dtype's tolerance and stored nothing out of
            bounds.
        lines: what the window shows: a headline, then ``oracle.diagnose``'s lines.
    """

    row: int
    lane: int
    step: str
    passed: bool
    lines: tuple[str, ...]


def first_divergence(problem: Problem, reference: ScalarResult, output: KernelOutput) -> Divergence:
    """The worst row and lane of ``output``, the step where it parts from the model, and why."""
    y = np.asarray(output.y, dtype=np.float64)
    tolerance = cmp.TOLERANCES[problem.dtype]
    comparison = cmp.compare(y, reference.y, tolerance)
    stride = output.stores.row_stride or problem.row_stride
    where = diagnose.describe_stores(output.stores.output, stride, problem.rows, problem.width)
    oob_line = (
        [f"kernel stored {output.stores.count} element(s) out of bounds{where}"]
        if output.stores.count
        else []
    )
    lines = diagnose.diagnose(
        problem.x,
        problem.weight,
        y,
        reference.y,
        reference.rrms,
        problem.eps,
        problem.block,
        problem.dtype,
    )
    passed = comparison.passed and not output.stores.count
    if not lines:
        row, lane = _first_store(output.stores.output, stride, problem.rows)
        head = (
            "kernel output agrees bit for bit with the scalar reference"
            if not oob_line
            else "kernel output agrees with the scalar reference, but:"
        )
        return Divergence(row, lane, "store" if oob_line else "", passed, (head, *oob_line))
    error = np.abs(y - reference.y)
    error[~np.isfinite(error)] = np.inf
    row, lane = (int(i) for i in np.unravel_index(int(np.argmax(error)), error.shape))
    inferred = inferred_of(problem, output)
    step = part_step(inferred, reference, row)
    verdict = (
        f"within tolerance ({comparison.describe()}); the largest difference:"
        if comparison.passed
        else f"kernel vs scalar reference: {comparison.describe()}"
    )
    title = {"rsqrt": "rsqrt (the rrms)", "store": "the output (x · rrms · w, stored)"}[step]
    return Divergence(
        row,
        lane,
        step,
        passed,
        (
            verdict,
            *lines,
            f"the stepper shows row {row} at the step where they part: {title}",
            *oob_line,
        ),
    )


def _first_store(addresses: tuple[int, ...], stride: int, rows: int) -> tuple[int, int]:
    """Row and lane of the first out-of-bounds store inside the rows (0, 0 when none)."""
    for address in addresses:
        if 0 <= address < rows * stride:
            row, lane = divmod(int(address), stride)
            return row, lane
    return 0, 0
