"""The loaded kernel's own intermediates in the views, Qt-free: what its output implies beside
what the model computes.

A kernel's internals are not visible, but its output is: ``oracle.diagnose.inferred_rrms``
reads each row's rrms (and the mean square that implies) from ``y / (x * w)``, labelled
*inferred*. This module turns that into the row table's inferred columns, the reduction
stepper's kernel lines (at the mean, the rsqrt and the output) and the **first divergence**: the
worst row and lane, the step where kernel and model part, and ``oracle.diagnose``'s text.

Kernel and model *part* only where the dtype's tolerance (``oracle.compare.TOLERANCES``) says
so, the way the check judges the output: a float32 rounding difference inside it is no
divergence, and the step where a row parts is the rrms only when the rrms alone takes its
output past that tolerance. A stray store parts at the masked store whatever the output.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from inspector.check.results import StoresOutOfBounds
from inspector.model import oob_view
from inspector.model.reduction_steps import ReductionStep
from inspector.model.viewdata import RowColumn
from oracle import compare as cmp
from oracle import diagnose
from oracle.scalar import ScalarResult
from oracle.spec import Problem

#: A row's output is x · c · w with one c (the rrms) when its columns' ratios agree this well
#: (``oracle.diagnose`` uses the same).
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


def tolerance_ratio(
    actual: np.ndarray, expected: np.ndarray, tolerance: cmp.Tolerance
) -> np.ndarray:
    """Each element's ``|actual - expected| / (atol + rtol * |expected|)``: at most 1 exactly
    where ``oracle.compare`` passes it; 0 where both hold the same infinity, inf for a NaN or an
    infinity on one side only."""
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        finite = np.isfinite(a) & np.isfinite(e)
        same_inf = np.isinf(a) & np.isinf(e) & (np.sign(a) == np.sign(e))
        allowed = tolerance.atol + tolerance.rtol * np.abs(np.where(finite, e, 0.0))
        ratio = np.abs(np.where(finite, a - e, 0.0)) / allowed
    return np.where(finite, ratio, np.where(same_inf, 0.0, np.inf))


def describe_lane(
    y: np.ndarray, expected: np.ndarray, tolerance: cmp.Tolerance, row: int, lane: int
) -> str:
    """'row r, lane l: kernel v, expected e, |error| E = N× its tolerance T (dtype: atol + rtol ·
    |expected|)'."""
    got, want = float(y[row, lane]), float(expected[row, lane])
    allowed = tolerance.atol + tolerance.rtol * abs(want)
    error = abs(got - want) if np.isfinite(got - want) else float("inf")
    return (
        f"row {row}, lane {lane}: kernel {got:.9g}, expected {want:.9g}, |error| {error:.3g} = "
        f"{error / allowed:.3g}× its tolerance {allowed:.3g} ({tolerance.dtype}: "
        f"atol={tolerance.atol:g} + rtol={tolerance.rtol:g} · |expected|)"
    )


def part_step(
    inferred: diagnose.Inferred, reference: ScalarResult, row: int, rrms_rtol: float
) -> str:
    """Where kernel and model part in ``row`` (whose output is outside the tolerance): "rsqrt"
    when its output is x · c · w with a c further than ``rrms_rtol`` (relative) from the rrms
    (that alone takes the output past the tolerance), else "store" (the output step: the weight,
    the store or the lanes written)."""
    rrms, ref = float(inferred.rrms[row]), float(reference.rrms[row])
    spread = float(inferred.spread[row])
    if not np.isfinite(rrms) or not ref or not np.isfinite(spread):
        return "store"
    if spread < SPREAD_AGREE and abs(rrms / ref - 1.0) > rrms_rtol:
        return "rsqrt"
    return "store"


def row_part(
    problem: Problem, reference: ScalarResult, y: np.ndarray, inferred: diagnose.Inferred, row: int
) -> str:
    """Where kernel and model part in ``row``, judged by the dtype's tolerance: "" when its
    output is within it, else :func:`part_step`."""
    tolerance = cmp.TOLERANCES[problem.dtype]
    if np.all(tolerance_ratio(y[row], reference.y[row], tolerance) <= 1.0):
        return ""
    return part_step(inferred, reference, row, tolerance.rtol)


def placed_stores(problem: Problem, stores: StoresOutOfBounds) -> oob_view.OobWrites:
    """A run's out-of-bounds stores where the grid draws them, with the cross-row stores they
    imply (:mod:`inspector.model.oob_view`)."""
    return oob_view.place_run(
        stores.output,
        rows=problem.rows,
        width=problem.width,
        block=problem.block,
        stride=stores.row_stride or problem.row_stride,
    )


def _lane_span(lanes: np.ndarray) -> str:
    lanes = np.unique(lanes)
    return f"lane {lanes[0]}" if lanes.size == 1 else f"lanes {lanes[0]}..{lanes[-1]}"


def _row_store_note(placed: oob_view.OobWrites, row: int) -> str:
    """What ``row``'s tail lanes stored out of bounds, for the stepper's store step ("")."""
    seen = placed.lanes[placed.rows == row]
    cross = placed.cross.target_rows[placed.cross.rows == row]
    parts = []
    if seen.size:
        parts.append(f"{seen.size} into a guard ({_lane_span(seen)})")
    if cross.size:
        lanes = placed.cross.lanes[placed.cross.rows == row]
        parts.append(
            f"{cross.size} into row {int(cross.min())}'s data ({_lane_span(lanes)}; cross-row, "
            "inferred)"
        )
    if not parts:
        return ""
    return (
        f"; this row's tail stored out of bounds: {', '.join(parts)} — kernel and model part "
        "HERE, at the masked store"
    )


def annotate_steps(
    steps: list[ReductionStep],
    problem: Problem,
    reference: ScalarResult | None,
    row: int,
    output: KernelOutput | None,
    inferred: diagnose.Inferred | None,
) -> list[ReductionStep]:
    """The stepper's steps with the kernel's value beside the model's at the mean, the rsqrt
    and the output steps ("not run yet" when there is no kernel output); "part HERE" only at
    the step where the row leaves the tolerance, or at the store that stored out of bounds."""
    if reference is None:
        return steps
    if output is None or inferred is None:
        note = "kernel: not run yet (Run kernel, Ctrl+K, shows its inferred value here)"
        notes = dict.fromkeys(("mean", "rsqrt", "store"), note)
    else:
        notes = _kernel_notes(problem, reference, row, output, inferred)
    return [
        dataclasses.replace(step, kernel=notes[step.key]) if step.key in notes else step
        for step in steps
    ]


def _kernel_notes(
    problem: Problem,
    reference: ScalarResult,
    row: int,
    output: KernelOutput,
    inferred: diagnose.Inferred,
) -> dict[str, str]:
    """The kernel's lines at the mean, the rsqrt and the store step of ``row``."""
    ref_rrms = float(reference.rrms[row])
    rrms = float(inferred.rrms[row])
    ratio = rrms / ref_rrms if ref_rrms else float("nan")
    y = np.asarray(output.y, dtype=np.float64)
    parts = row_part(problem, reference, y, inferred, row)
    tolerance = cmp.TOLERANCES[problem.dtype]
    lane = int(np.argmax(tolerance_ratio(y[row], reference.y[row], tolerance)))
    where = f"kernel ({output.source})"
    exact = exact_rstd(output, problem.rows)
    own = "" if exact is None else f"; its own rrms (rstd output, exact) = {float(exact[row]):.9g}"
    here = " — kernel and model part HERE"
    stores = ""
    if output.stores.count:
        stores = _row_store_note(placed_stores(problem, output.stores), row)
    if not parts:
        judged = "; this row's output is within tolerance" + (
            "" if stores else ": nothing parts here"
        )
    else:
        judged = here if parts == "store" else ""
    return {
        "mean": f"{where}: mean² = {float(inferred.mean_square[row]):.9g} inferred; the "
        f"reference's is {float(reference.mean_square[row]):.9g}",
        "rsqrt": f"{where}: rrms = {rrms:.9g} inferred from y / (x · w) over "
        f"{int(inferred.columns[row])} column(s): {ratio:.6g} × the scalar reference's "
        f"{ref_rrms:.9g}{own}" + (here if parts == "rsqrt" else ""),
        "store": f"{where}: worst lane of this row against the tolerance: "
        + describe_lane(y, reference.y, tolerance, row, lane)
        + judged
        + stores,
    }


@dataclass(frozen=True)
class Divergence:
    """Where the kernel's output parts from the scalar reference, judged by the tolerance.

    Attributes:
        row, lane: the lane to show: the worst against the tolerance, or the first stray
            store (where the grid draws it; ``row`` is the margin row, ``problem.rows``, for a
            store no tile reaches).
        step: the stepper's step where they part ("rsqrt" or "store"); "" when nothing does.
        passed: whether the output is within the dtype's tolerance and stored nothing out of
            bounds.
        lines: what the window shows: a headline, then ``oracle.diagnose``'s lines.
        kind: "none" (within tolerance everywhere, nothing stored astray), "stores" (the output
            agrees, a store went astray) or "output" (the output is outside the tolerance).
    """

    row: int
    lane: int
    step: str
    passed: bool
    lines: tuple[str, ...]
    kind: str = "output"


def first_divergence(problem: Problem, reference: ScalarResult, output: KernelOutput) -> Divergence:
    """The kernel's first divergence from the model, judged by the dtype's tolerance: none when
    the output is within it and nothing stored out of bounds; the first stray store when only
    the stores are wrong; else the worst lane outside the tolerance and the step where its row
    parts (the rrms, or the output after it), with ``oracle.diagnose``'s account."""
    y = np.asarray(output.y, dtype=np.float64)
    tolerance = cmp.TOLERANCES[problem.dtype]
    comparison = cmp.compare(y, reference.y, tolerance)
    ratio = tolerance_ratio(y, reference.y, tolerance)
    row, lane = (int(i) for i in np.unravel_index(int(np.argmax(ratio)), ratio.shape))
    worst = describe_lane(y, reference.y, tolerance, row, lane)
    placed = placed_stores(problem, output.stores)
    store_lines = _store_lines(problem, output.stores, placed)
    if comparison.passed:
        within = f"within tolerance everywhere (worst: {worst})"
        if not output.stores.count:
            return Divergence(row, lane, "", True, (f"no divergence: {within}",), kind="none")
        store_row, store_lane = _first_store_cell(placed, problem.rows)
        return Divergence(
            store_row,
            store_lane,
            "store",
            False,
            (
                f"kernel output {within}, but it stored out of bounds:",
                *store_lines,
                f"the stepper shows row {min(store_row, problem.rows - 1)} at the masked store, "
                "where they part",
            ),
            kind="stores",
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
        rrms_agree=tolerance.rtol,
    )
    step = part_step(inferred_of(problem, output), reference, row, tolerance.rtol)
    outside = ratio > 1.0
    first = np.argwhere(outside)[0]
    title = {"rsqrt": "rsqrt (the rrms)", "store": "the output (x · rrms · w, stored)"}[step]
    return Divergence(
        row,
        lane,
        step,
        False,
        (
            f"kernel vs scalar reference: {comparison.describe()}",
            f"first divergence: worst lane outside tolerance: {worst}",
            f"{int(outside.sum())} element(s) in {int(outside.any(axis=1).sum())} row(s) outside "
            f"tolerance; the first at row {first[0]}, lane {first[1]}",
            *lines[1:],
            f"the stepper shows row {row} at the step where they part: {title}",
            *store_lines,
        ),
    )


def _store_lines(
    problem: Problem, stores: StoresOutOfBounds, placed: oob_view.OobWrites
) -> list[str]:
    """The stray stores in words: how many, where the first ones landed, the first one's lane
    and the cross-row stores they imply."""
    if not stores.count:
        return []
    stride = stores.row_stride or problem.row_stride
    where = diagnose.describe_stores(stores.output, stride, problem.rows, problem.width)
    lines = [f"kernel stored {stores.count} element(s) out of bounds{where}"]
    first = min(stores.output)
    row, lane = _first_store_cell(placed, problem.rows)
    by = (
        f"the margin row, lane {lane} (no tile reaches it)"
        if row >= problem.rows
        else f"row {row}'s tail lane {lane}"
    )
    place = oob_view.where_text(first, rows=problem.rows, width=problem.width, stride=stride)
    lines.append(f"first stray store: address {first} ({place}), drawn on {by}")
    if placed.cross.count:
        rows = np.unique(placed.cross.rows)
        lines.append(
            f"and {placed.cross.count} cross-row store(s) (inferred, ▼ on the grid): rows "
            f"{rows[0]}..{rows[-1]} store the same tail lanes into the next row's data, where "
            "no guard sees them"
        )
    return lines


def _first_store_cell(placed: oob_view.OobWrites, rows: int) -> tuple[int, int]:
    """(row, lane) where the grid draws the lowest stray address (the margin row: ``rows``)."""
    candidates = []
    if placed.addresses.size:
        at = int(np.argmin(placed.addresses))
        candidates.append((int(placed.addresses[at]), int(placed.rows[at]), int(placed.lanes[at])))
    if placed.margin.size:
        at = int(np.argmin(placed.margin))
        candidates.append((int(placed.margin[at]), rows, int(placed.margin_lanes[at])))
    if not candidates:
        return 0, 0
    _, row, lane = min(candidates)
    return row, lane
