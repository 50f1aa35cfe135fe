"""Tiled lane model: the Triton program's arithmetic, lane by lane, in numpy float32.

One program per row; a power-of-two tile of ``BLOCK`` lanes; lane ``c`` of row ``r`` reads
address ``r * row_stride + c`` when ``c < width``. Tail lanes hold a poison value so that any
path that lets them into the reduction shows it. The sum of squares is a pairwise tree whose
every stage is kept (a viewer steps through it). The divisor is the true width, eps sits
inside the square root, the store is masked and lands in an output buffer laid out with the
row stride, whose gaps stay poisoned (a changed gap is an out-of-bounds store).

Shares validation with :mod:`oracle.scalar`; no normalization code is shared.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oracle.dtypes import round_float32_to_dtype
from oracle.mutants import check_mutant
from oracle.spec import Problem

#: Default poison: exactly representable in float32, float16 and bfloat16, loud when squared.
POISON = -3072.0


@dataclass(frozen=True)
class TiledResult:
    """Everything the lane model computed, per row and per lane.

    Attributes:
        block: tile lanes per program (power of two >= width).
        width: valid lanes per row.
        lanes: (rows, block) float32 tile as loaded; tail lanes hold the poison.
        mask: (block,) bool, lane < width.
        squares: (rows, block) float32 lane squares entering the tree (0 on masked lanes).
        stages: tree stages; stage k is (rows, block >> k); the last is (rows, 1).
        sum_squares, mean_square, rrms: (rows,) float32.
        y: (rows, width) float64 values read back from the output buffer with the row stride.
        out_buffer: (rows * row_stride,) float64 output allocation after the stores.
        gap_writes: addresses in the buffer's gaps (column >= width) that changed.
        mutant: the mutant applied, or None.
    """

    block: int
    width: int
    row_stride: int
    poison: float
    lanes: np.ndarray
    mask: np.ndarray
    squares: np.ndarray
    stages: tuple[np.ndarray, ...]
    sum_squares: np.ndarray
    mean_square: np.ndarray
    rrms: np.ndarray
    y: np.ndarray
    out_buffer: np.ndarray
    gap_writes: tuple[int, ...]
    mutant: str | None

    @property
    def valid_lanes(self) -> int:
        return self.width

    @property
    def masked_lanes(self) -> int:
        return self.block - self.width


def _input_buffer(problem: Problem, poison: float) -> np.ndarray:
    """The input allocation: rows laid out with the row stride, padding poisoned."""
    buffer = np.full(problem.rows * problem.row_stride, poison, dtype=np.float32)
    view = buffer.reshape(problem.rows, problem.row_stride)
    view[:, : problem.width] = problem.x.astype(np.float32)
    return buffer


def _tree_stages(squares: np.ndarray, dtype: str = "float32") -> tuple[np.ndarray, ...]:
    """Pairwise halving tree: stage k+1 lane i = stage k lane i + stage k lane i + half, each
    sum rounded to ``dtype`` (float32 in the kernel; the input dtype in ``half_accumulation``)."""
    stages = [squares]
    current = squares
    while current.shape[1] > 1:
        half = current.shape[1] // 2
        current = round_float32_to_dtype(current[:, :half] + current[:, half:], dtype)
        stages.append(current)
    return tuple(stages)


def model(problem: Problem, *, poison: float = POISON, mutant: str | None = None) -> TiledResult:
    """Run the lane model of the kernel over every row.

    Args:
        problem: a validated problem.
        poison: value in tail lanes, input padding and output gaps.
        mutant: one of :data:`oracle.mutants.MODEL_MUTANTS`, or None for the faithful model.

    Returns:
        The lanes, the reduction stages, the per-row intermediates and the stored output.
    """
    check_mutant(mutant)
    rows, width, block = problem.rows, problem.width, problem.block
    # The wrong-row-stride bug: rows addressed as if packed (stride = width).
    stride = width if mutant == "wrong_row_stride" else problem.row_stride
    in_buffer = _input_buffer(problem, poison)
    lane_ids = np.arange(block)
    mask = lane_ids < width
    addresses = np.arange(rows)[:, None] * stride + lane_ids[None, :]
    in_bounds = mask[None, :] & (addresses < in_buffer.size)
    lanes = np.full((rows, block), np.float32(poison), dtype=np.float32)
    lanes[in_bounds] = in_buffer[addresses[in_bounds]]

    # Square in float32 (the kernel upcasts on load) and keep masked lanes out of the tree;
    # the half_accumulation bug rounds each square, sum and the mean to the input dtype.
    accumulate = problem.dtype if mutant == "half_accumulation" else "float32"
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        lane_terms = lanes if mutant == "missing_square" else lanes * lanes
        keep = np.ones_like(mask) if mutant == "masked_tail_inclusion" else mask
        squares = np.where(keep[None, :], lane_terms, np.float32(0)).astype(np.float32)
        squares = round_float32_to_dtype(squares, accumulate)
        stages = _tree_stages(squares, accumulate)
        sum_squares = stages[-1][:, 0].astype(np.float32)
        divisor = np.float32(1) if mutant == "sum_instead_of_mean" else np.float32(width)
        mean_square = round_float32_to_dtype(sum_squares / divisor, accumulate)
        eps32 = np.float32(0) if mutant == "missing_epsilon" else np.float32(problem.eps)
        if mutant == "eps_outside_root":
            rrms = (np.float32(1) / (np.sqrt(mean_square) + eps32)).astype(np.float32)
        else:
            rrms = (np.float32(1) / np.sqrt(mean_square + eps32)).astype(np.float32)
        weight32 = np.zeros(block, dtype=np.float32)
        weight32[:width] = problem.weight.astype(np.float32)
        normalized = lanes * rrms[:, None]
        scaled = normalized if mutant == "missing_weight" else normalized * weight32[None, :]
        stored = round_float32_to_dtype(scaled, problem.dtype)

    out_buffer = np.full(rows * problem.row_stride, poison, dtype=np.float64)
    store_mask = mask[None, :] & (addresses < out_buffer.size)
    out_buffer[addresses[store_mask]] = stored[store_mask]
    readback = out_buffer.reshape(rows, problem.row_stride)
    y = readback[:, :width].copy()
    gaps = readback[:, width:]
    changed = np.argwhere(~((gaps == poison) | (np.isnan(gaps) & np.isnan(poison))))
    gap_writes = tuple(int(r * problem.row_stride + width + c) for r, c in changed)
    return TiledResult(
        block=block,
        width=width,
        row_stride=problem.row_stride,
        poison=float(poison),
        lanes=lanes,
        mask=mask,
        squares=squares,
        stages=stages,
        sum_squares=sum_squares,
        mean_square=mean_square,
        rrms=rrms,
        y=y,
        out_buffer=out_buffer,
        gap_writes=gap_writes,
        mutant=mutant,
    )
