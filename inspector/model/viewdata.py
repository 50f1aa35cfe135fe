"""Qt-free view data: lane states and images, row-table columns, compiler output (the
reduction stepper's steps: :mod:`inspector.model.reduction_steps`).

Everything here is numpy over the oracle's results, so it is tested without a window; the
widgets only draw what these functions return.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from inspector.check.stages import COMPILE_STAGES
from inspector.model import oob_view
from oracle import compare as cmp
from oracle.scalar import ScalarResult
from oracle.spec import Problem
from oracle.tiled import TiledResult

# Lane states, in increasing display priority (a downsampled cell shows its worst lane).
VALID = 0
MASKED = 1
POISON_IN = 2  # a masked lane whose poison entered the reduction (a bug)
OOB_WRITE = 3  # a store outside the row's valid elements (a bug)
CROSS_ROW = 4  # a tail lane's store into another row's data (inferred; a bug)

STATE_NAMES = {
    VALID: "valid",
    MASKED: "masked tail",
    POISON_IN: "poison in reduction",
    OOB_WRITE: "out-of-bounds write",
    CROSS_ROW: "cross-row store (inferred)",
}

# RGBA per non-value state; valid lanes take the colormap. Okabe and Ito's reddish purple, orange
# and yellow (told apart with the common colour blindnesses); the grid also marks each with a glyph.
STATE_COLORS = {
    MASKED: (70, 74, 84, 255),
    POISON_IN: (204, 121, 167, 255),
    OOB_WRITE: (230, 159, 0, 255),
    CROSS_ROW: (240, 228, 66, 255),
}
#: The pyqtgraph symbol drawn over a lane in each state (masked lanes are plain grey).
STATE_GLYPHS = {POISON_IN: "o", OOB_WRITE: "x", CROSS_ROW: "t"}
#: Most glyphs drawn (a bigger, downsampled grid shows colours only, and says so).
MAX_GLYPHS = 20000


def glyph_cells(image: LaneImage) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """(lanes, rows) of the cells that get each state's glyph, margin writes included; empty
    when the image is downsampled or has more than :data:`MAX_GLYPHS` of them."""
    if image.downsampled:
        return {}
    cells = {}
    for state in STATE_GLYPHS:
        rows, lanes = np.nonzero(image.states == state)
        cells[state] = (lanes, rows)
    margin = image.writes.margin_lanes
    if margin.size:
        lanes, rows = cells[OOB_WRITE]
        margin_row = np.full(margin.size, image.states.shape[0])
        cells[OOB_WRITE] = (np.concatenate([lanes, margin]), np.concatenate([rows, margin_row]))
    if sum(lanes.size for lanes, _ in cells.values()) > MAX_GLYPHS:
        return {}
    return cells


#: Largest image drawn at full resolution; bigger grids are downsampled (never frozen).
MAX_CELLS = 1 << 20


@dataclass(frozen=True)
class LaneCounts:
    width: int
    block: int
    valid: int
    masked: int
    row_stride: int


def lane_counts(tiled: TiledResult) -> LaneCounts:
    return LaneCounts(
        width=tiled.width,
        block=tiled.block,
        valid=tiled.valid_lanes,
        masked=tiled.masked_lanes,
        row_stride=tiled.row_stride,
    )


def oob_writes(
    tiled: TiledResult, extra_oob: tuple[int, ...] | list[int] = (), extra_stride: int = 0
) -> oob_view.OobWrites:
    """The lane model's gap writes and ``extra_oob`` (the kernel's stores, in the frame
    ``extra_stride``; 0: the problem's row stride), each placed on the lane that wrote it, with
    the kernel's stores into other rows' data they imply (:mod:`inspector.model.oob_view`)."""
    rows, block = tiled.lanes.shape
    grid = {"rows": rows, "width": tiled.width, "block": block}
    model = oob_view.place_writes(tiled.gap_writes, stride=tiled.row_stride, **grid)
    kernel = oob_view.place_run(extra_oob, stride=extra_stride or tiled.row_stride, **grid)
    return oob_view.merge(model, kernel)


def lane_states(
    tiled: TiledResult, extra_oob: tuple[int, ...] | list[int] = (), extra_stride: int = 0
) -> tuple[np.ndarray, oob_view.OobWrites]:
    """(rows, block) int8 state per lane, and every out-of-bounds write (:func:`oob_writes`).

    Args:
        tiled: the lane model's result (its gap writes are marked).
        extra_oob: more output addresses written out of bounds (e.g. from the real kernel).
        extra_stride: the frame of ``extra_oob``.
    """
    rows, block = tiled.lanes.shape
    states = np.where(tiled.mask[None, :], VALID, MASKED).astype(np.int8)
    states = np.broadcast_to(states, (rows, block)).copy()
    # A masked lane whose square reached the tree: poison got in.
    leaked = (~tiled.mask[None, :]) & (tiled.squares != 0)
    states[leaked] = POISON_IN
    writes = oob_writes(tiled, extra_oob, extra_stride)
    states[writes.cross.rows, writes.cross.lanes] = CROSS_ROW
    states[writes.rows, writes.lanes] = OOB_WRITE
    return states, writes


def downsample_factors(rows: int, block: int, max_cells: int = MAX_CELLS) -> tuple[int, int]:
    """Integer (row, lane) strides that bring rows x block under ``max_cells``."""
    row_step, lane_step = 1, 1
    while (-(-rows // row_step)) * (-(-block // lane_step)) > max_cells:
        # Shrink the longer side first so cells stay roughly square in data terms.
        if -(-block // lane_step) >= -(-rows // row_step):
            lane_step *= 2
        else:
            row_step *= 2
    return row_step, lane_step


def _block_max(array: np.ndarray, row_step: int, lane_step: int) -> np.ndarray:
    rows, lanes = array.shape
    pad_r = (-rows) % row_step
    pad_l = (-lanes) % lane_step
    padded = np.pad(array, ((0, pad_r), (0, pad_l)), mode="edge")
    shaped = padded.reshape(
        padded.shape[0] // row_step, row_step, padded.shape[1] // lane_step, lane_step
    )
    return shaped.max(axis=(1, 3))


#: The margin row's background (writes no tile reaches are drawn on it in the OOB colour).
MARGIN_COLOR = (28, 30, 36, 255)


@dataclass(frozen=True)
class LaneImage:
    """What the grid draws: an RGBA image plus how it maps back to lanes.

    Attributes:
        rgba: (image_rows, image_lanes, 4) uint8; one more row under the tiles when some write
            reached no tile (the margin).
        states: the full-resolution (rows, block) lane states.
        row_step, lane_step: the downsampling (1: every lane).
        value_limit: the colour map's span, +-value_limit (per row: the largest one).
        writes: every out-of-bounds write and where it is drawn.
        per_row: whether each row is scaled to its own largest magnitude.
    """

    rgba: np.ndarray
    states: np.ndarray
    row_step: int
    lane_step: int
    value_limit: float
    writes: oob_view.OobWrites
    per_row: bool = False

    @property
    def downsampled(self) -> bool:
        return self.row_step > 1 or self.lane_step > 1

    @property
    def margin(self) -> bool:
        """Whether the image has the margin row (writes that no tile reaches)."""
        return self.writes.margin.size > 0


def _limits(values: np.ndarray, per_row: bool) -> np.ndarray:
    """The colour span of each row (one span for all rows unless ``per_row``)."""
    magnitude = np.where(np.isfinite(values), np.abs(values), 0.0)
    limits = magnitude.max(axis=1, keepdims=True) if per_row else magnitude.max(keepdims=True)
    return np.where(limits > 0, limits, 1.0)


def lane_image(
    tiled: TiledResult,
    lut: np.ndarray,
    extra_oob: tuple[int, ...] | list[int] = (),
    max_cells: int = MAX_CELLS,
    extra_stride: int = 0,
    per_row: bool = False,
) -> LaneImage:
    """Colour every lane: valid values on ``lut`` (symmetric about 0), other states fixed.

    Args:
        tiled: the lane model's result.
        lut: (n, 4) uint8 colour table for values from -limit to +limit.
        extra_oob: output addresses written out of bounds by the kernel.
        extra_stride: their frame (0: the problem's row stride).
        max_cells: downsample above this many cells (the worst state of a block wins; values
            are taken at the block's largest magnitude).
        per_row: scale each row to its own largest magnitude (small rows stay visible).
    """
    states, writes = lane_states(tiled, extra_oob, extra_stride)
    rows, block = states.shape
    row_step, lane_step = downsample_factors(rows, block, max_cells)
    values = np.where(tiled.mask[None, :], tiled.lanes, 0.0).astype(np.float64)
    limits = _limits(values, per_row)
    values = values / limits
    if row_step > 1 or lane_step > 1:
        shown_states = _block_max(states, row_step, lane_step)
        magnitude = _block_max(np.abs(values), row_step, lane_step)
        signs = np.sign(values[::row_step, ::lane_step])
        shown_values = magnitude * np.where(signs == 0, 1.0, signs)
    else:
        shown_states = states
        shown_values = values
    scaled = (np.clip(shown_values, -1.0, 1.0) + 1.0) / 2.0
    index = np.nan_to_num(scaled * (len(lut) - 1)).astype(np.int64)
    rgba = lut[index].astype(np.uint8)
    for state, color in STATE_COLORS.items():
        rgba[shown_states == state] = color
    if writes.margin.size:
        margin = np.empty((1, rgba.shape[1], 4), dtype=np.uint8)
        margin[:] = MARGIN_COLOR
        margin[0, writes.margin_lanes // lane_step] = STATE_COLORS[OOB_WRITE]
        rgba = np.concatenate([rgba, margin])
    return LaneImage(rgba, states, row_step, lane_step, float(limits.max()), writes, per_row)


def margin_hover_text(problem: Problem, writes: oob_view.OobWrites, lanes: range) -> str:
    """The tooltip of the margin row's cell over ``lanes``: the writes no tile reaches."""
    stored = [write for lane in lanes for write in writes.in_margin(lane)]
    if not stored:
        return f"margin: out-of-bounds writes no tile reaches ({writes.margin.size} in all)"
    lines = oob_view.write_lines(stored, rows=problem.rows, width=problem.width)
    return "\n".join(["margin: a write no program's tile reaches", *lines])


def hover_text(
    problem: Problem,
    tiled: TiledResult,
    states: np.ndarray,
    row: int,
    lane: int,
    expected_y: np.ndarray | None = None,
    kernel_y: np.ndarray | None = None,
    writes: oob_view.OobWrites | None = None,
) -> str:
    """The tooltip for one lane: row, lane, address, x, x², w, the kernel's y, the expected y
    (the scalar reference's), the error, the lane's state and the out-of-bounds writes drawn
    on it.

    Args:
        expected_y: the scalar reference's output (None: not computed).
        kernel_y: the loaded kernel's output on this problem (None: not run).
        writes: the out-of-bounds writes on the grid (None: none).
    """
    address = row * problem.row_stride + lane
    value = float(tiled.lanes[row, lane])
    square = float(tiled.squares[row, lane])
    state = STATE_NAMES[int(states[row, lane])]
    stored = (
        oob_view.write_lines(writes.at(row, lane), rows=problem.rows, width=problem.width)
        + writes.cross.lines(row, lane)
        if writes is not None
        else []
    )
    if lane >= tiled.width:
        return "\n".join(
            [
                f"row {row}, lane {lane} (tail)",
                f"address {address} (not loaded: lane >= width {tiled.width})",
                f"holds poison {tiled.poison:g}",
                f"square in tree = {square:.7g}",
                *stored,
                "masked tail lane that STORED: out-of-bounds write"
                if states[row, lane] == OOB_WRITE
                else state,
            ]
        )
    lines = [
        f"row {row}, lane {lane}",
        f"address {row} * {problem.row_stride} + {lane} = {address}",
        f"x = {value:.7g}",
        f"x² = {square:.7g}",
        f"w = {float(problem.weight[lane]):.7g}",
    ]
    expected = float(expected_y[row, lane]) if expected_y is not None else None
    if kernel_y is None:
        lines.append("y (kernel) = not run yet (Run kernel)")
    else:
        lines.append(f"y (kernel) = {float(kernel_y[row, lane]):.7g}")
    if expected is not None:
        lines.append(f"expected y = {expected:.7g} (scalar reference)")
    if kernel_y is not None and expected is not None:
        error = abs(float(kernel_y[row, lane]) - expected)
        rel = error / abs(expected) if expected else error
        lines.append(f"error = {error:.3g} (relative {rel:.3g})")
    return "\n".join([*lines, *stored, state])


# ----------------------------------------------------------------------- row table


@dataclass(frozen=True)
class RowColumn:
    name: str
    values: np.ndarray
    kind: str  # "int" | "float" | "error"
    tooltip: str


def row_columns(
    problem: Problem,
    reference: ScalarResult,
    tiled: TiledResult,
    kernel_row_abs: np.ndarray | None = None,
    kernel_row_rel: np.ndarray | None = None,
    model_errors: tuple[np.ndarray, np.ndarray] | None = None,
    kernel_bound_ratio: np.ndarray | None = None,
    batch_ulp: np.ndarray | None = None,
) -> list[RowColumn]:
    """Per-row intermediates of every path, as plain arrays (the table model draws these).

    ``model_errors`` (per-row max abs / rel of tiled vs scalar y) may be passed in when they
    were computed off the GUI thread.
    """
    rows = problem.rows
    if model_errors is None:
        model_errors = cmp.max_errors(tiled.y, reference.y)
    model_abs, model_rel = model_errors
    with np.errstate(divide="ignore", invalid="ignore"):
        rrms_rel = np.abs(tiled.rrms.astype(np.float64) - reference.rrms) / np.abs(reference.rrms)
    nan = np.full(rows, np.nan)
    columns = [
        RowColumn("row", np.arange(rows), "int", "row index"),
        RowColumn("width", np.full(rows, problem.width), "int", "true width (the divisor)"),
        RowColumn("tile", np.full(rows, tiled.block), "int", "power-of-two lanes per program"),
        RowColumn("valid", np.full(rows, tiled.valid_lanes), "int", "lanes holding data"),
        RowColumn("masked", np.full(rows, tiled.masked_lanes), "int", "tail lanes (masked)"),
        RowColumn("Σx² scalar", reference.sum_squares, "float", "binary64 sequential sum"),
        RowColumn("Σx² tiled", tiled.sum_squares.astype(np.float64), "float", "fp32 tree"),
        RowColumn("mean² scalar", reference.mean_square, "float", "sum / width, binary64"),
        RowColumn("mean² tiled", tiled.mean_square.astype(np.float64), "float", "fp32"),
        RowColumn("rrms scalar", reference.rrms, "float", "1/sqrt(mean² + eps), binary64"),
        RowColumn("rrms tiled", tiled.rrms.astype(np.float64), "float", "fp32"),
        RowColumn("rrms rel Δ", rrms_rel, "error", "|tiled - scalar| / scalar"),
        RowColumn("model max abs", model_abs, "error", "tiled y vs scalar y, per row"),
        RowColumn("model max rel", model_rel, "error", "tiled y vs scalar y, per row"),
        RowColumn(
            "kernel max abs",
            nan if kernel_row_abs is None else np.asarray(kernel_row_abs, dtype=np.float64),
            "error",
            "kernel y vs scalar y, per row (blank: kernel not run)",
        ),
        RowColumn(
            "kernel max rel",
            nan if kernel_row_rel is None else np.asarray(kernel_row_rel, dtype=np.float64),
            "error",
            "kernel y vs scalar y, per row (blank: kernel not run)",
        ),
        RowColumn(
            "kernel err/bound",
            nan if kernel_bound_ratio is None else np.asarray(kernel_bound_ratio, np.float64),
            "error",
            "max |kernel y - exact y| / the derived bound for the layout that ran "
            "(oracle/error_bound.py); at most 1 is within (blank: no bound, or not run)",
        ),
        RowColumn(
            "batch Δulp",
            nan if batch_ulp is None else np.asarray(batch_ulp, dtype=np.float64),
            "int",
            "largest ulp distance of the row's output between a batch of 1 and every batch "
            "size that reaches another launch layout (the check's certificate; 0: the same "
            "bits; blank: not certified)",
        ),
    ]
    return columns


# ----------------------------------------------------------------------- compiler output


def normalize_compile_info(info: Any) -> dict[str, Any]:
    """One shape of dict from a ``CompileInfo``, its dict, or the pipeline's compile summary.

    Returns:
        The facts, with every stage's text under ``texts`` ({} for None).
    """
    if info is None:
        return {}
    if hasattr(info, "to_dict"):
        info = info.to_dict()
    info = dict(info)
    texts = dict(info.get("texts") or {})
    for stage in COMPILE_STAGES:
        if info.get(stage):
            texts[stage] = info[stage]
    info["texts"] = texts
    return info
