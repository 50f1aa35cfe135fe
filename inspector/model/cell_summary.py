"""The hover text of one cell of a downsampled lane grid: every lane the cell stands for.

A large problem's grid draws one cell per ``row_step x lane_step`` block, coloured by its worst
lane; a tooltip naming only the lane under the cursor would hide the block's other lanes (the
one wrong lane that made the cell loud among them). So the tooltip says what the block holds:
how many lanes of each state, where its largest |x| and its largest error are, how many
out-of-bounds writes are drawn in it, and then the lane under the cursor in full. Qt-free.
"""

from __future__ import annotations

import numpy as np

from inspector.model import oob_view
from inspector.model.viewdata import STATE_NAMES, hover_text
from oracle.spec import Problem
from oracle.tiled import TiledResult


def block_of(
    row: int, lane: int, row_step: int, lane_step: int, shape: tuple[int, int]
) -> tuple[range, range]:
    """The rows and lanes of the drawn cell holding (row, lane), clipped to ``shape``."""
    first_row, first_lane = row - row % row_step, lane - lane % lane_step
    return (
        range(first_row, min(first_row + row_step, shape[0])),
        range(first_lane, min(first_lane + lane_step, shape[1])),
    )


def _where(block: np.ndarray, rows: range, lanes: range) -> tuple[int, int]:
    r, c = np.unravel_index(int(np.argmax(block)), block.shape)
    return rows[int(r)], lanes[int(c)]


def block_hover_text(
    problem: Problem,
    tiled: TiledResult,
    states: np.ndarray,
    row: int,
    lane: int,
    steps: tuple[int, int],
    expected_y: np.ndarray | None = None,
    kernel_y: np.ndarray | None = None,
    writes: oob_view.OobWrites | None = None,
) -> str:
    """What the downsampled cell over (row, lane) holds, then :func:`viewdata.hover_text` of
    the lane itself.

    Args:
        steps: (row_step, lane_step) of the drawn image; (1, 1) gives the lane's text alone.
    """
    lane_text = hover_text(
        problem, tiled, states, row, lane, expected_y=expected_y, kernel_y=kernel_y, writes=writes
    )
    if steps == (1, 1):
        return lane_text
    rows, lanes = block_of(row, lane, *steps, states.shape)
    cell = states[rows.start : rows.stop, lanes.start : lanes.stop]
    lines = [
        f"cell: rows {rows.start}-{rows.stop - 1}, lanes {lanes.start}-{lanes.stop - 1} "
        f"({cell.size} lanes; downsampled x{steps[0]} rows, x{steps[1]} lanes)",
        " · ".join(
            f"{STATE_NAMES[state]} {int(count)}"
            for state, count in zip(*np.unique(cell, return_counts=True), strict=True)
        ),
    ]
    valid = min(lanes.stop, tiled.width)
    if valid > lanes.start:
        loaded = np.abs(tiled.lanes[rows.start : rows.stop, lanes.start : valid])
        at = _where(loaded, rows, range(lanes.start, valid))
        lines.append(f"max |x| = {float(loaded.max()):.7g} at row {at[0]}, lane {at[1]}")
        if kernel_y is not None and expected_y is not None:
            error = np.abs(
                kernel_y[rows.start : rows.stop, lanes.start : valid].astype(np.float64)
                - expected_y[rows.start : rows.stop, lanes.start : valid]
            )
            at = _where(error, rows, range(lanes.start, valid))
            lines.append(
                f"max error = {float(error.max()):.3g} at row {at[0]}, lane {at[1]} "
                "(kernel vs scalar reference)"
            )
    if writes is not None and writes.rows.size:
        inside = (
            (writes.rows >= rows.start)
            & (writes.rows < rows.stop)
            & (writes.lanes >= lanes.start)
            & (writes.lanes < lanes.stop)
        )
        lines.append(f"out-of-bounds writes drawn in this cell: {int(inside.sum())}")
    return "\n".join([*lines, "", "under the cursor:", lane_text])
