"""Shared pieces of the RMSNorm Triton kernels (:mod:`kernels.jit`, :mod:`kernels.jit.loop`): the
``MUTANT`` codes and the ``@triton.jit`` helpers both kernels call (row geometry, masks, loads and
stores with their cache hints, the square, the rrms of a square sum).

Import through ``kernels``, which decides between the compiled path and the Triton interpreter
before ``@triton.jit`` decorates.
"""

# Inside @triton.jit bodies an `if` on a constexpr is a compile-time branch; explicit blocks keep
# each mutant's change on its own lines.
# ruff: noqa: SIM108

from __future__ import annotations

import triton
import triton.language as tl

# MUTANT codes: 0 is the real kernel; each other code changes one thing (docs/INTERFACES.md).
FAITHFUL = tl.constexpr(0)
SUM_INSTEAD_OF_MEAN = tl.constexpr(1)  # divides the square sum by 1 instead of the width
MISSING_SQUARE = tl.constexpr(2)  # sums x instead of x * x
MISSING_EPSILON = tl.constexpr(3)  # rsqrt(mean square), no eps: a zero row gives NaN
MASKED_TAIL_INCLUSION = tl.constexpr(4)  # loads every lane of the tile, past the row too
MISSING_WEIGHT = tl.constexpr(5)  # y = x * rrms
WRONG_ROW_STRIDE = tl.constexpr(6)  # addresses rows as if packed (stride == width)
UNMASKED_STORE = tl.constexpr(7)  # stores every lane of the tile, past the row too
# half_accumulation: the squares (and so the sums over them) in the input dtype; the launcher
# picks the code of the launch's dtype (a float32 launch runs the real kernel).
HALF_ACCUMULATION_FLOAT16 = tl.constexpr(8)
HALF_ACCUMULATION_BFLOAT16 = tl.constexpr(9)
EPS_OUTSIDE_ROOT = tl.constexpr(10)  # 1 / (sqrt(mean square) + eps)


@triton.jit
def _row_geometry(width_v, x_stride_v, y_stride_v, VEC: tl.constexpr, MUTANT: tl.constexpr):
    """``(width, x_row_stride, y_row_stride)`` in elements from the launcher's values / ``VEC``."""
    width = width_v * VEC
    x_row_stride = x_stride_v * VEC
    y_row_stride = y_stride_v * VEC
    if MUTANT == WRONG_ROW_STRIDE:
        x_row_stride = width
        y_row_stride = width
    return width, x_row_stride, y_row_stride


@triton.jit
def _lane_mask(offsets, width, LANES: tl.constexpr, ALL_LANES: tl.constexpr):
    """The lanes inside the row, ``offsets < width``; ``ALL_LANES``: every one of ``LANES``."""
    if ALL_LANES:
        mask = offsets < LANES
    else:
        mask = offsets < width
    return mask


@triton.jit
def _load(pointers, mask, MASKED: tl.constexpr, EVICTION: tl.constexpr):
    """``tl.load`` with ``EVICTION`` (``""``: none); ``MASKED``: under ``mask``, 0.0 outside."""
    if MASKED:
        values = tl.load(pointers, mask=mask, other=0.0, eviction_policy=EVICTION)
    else:
        values = tl.load(pointers, eviction_policy=EVICTION)
    return values


@triton.jit
def _store(pointers, values, mask, MASKED: tl.constexpr, CACHE: tl.constexpr):
    """``tl.store`` with the cache modifier ``CACHE`` (``""``: none); ``MASKED``: under ``mask``."""
    if MASKED:
        tl.store(pointers, values, mask=mask, cache_modifier=CACHE)
    else:
        tl.store(pointers, values, cache_modifier=CACHE)


@triton.jit
def _square(x, MUTANT: tl.constexpr):
    """``x * x`` of float32 lanes."""
    if MUTANT == MISSING_SQUARE:
        squares = x
    elif MUTANT == HALF_ACCUMULATION_FLOAT16:
        squares = x.to(tl.float16) * x.to(tl.float16)
    elif MUTANT == HALF_ACCUMULATION_BFLOAT16:
        squares = x.to(tl.bfloat16) * x.to(tl.bfloat16)
    else:
        squares = x * x
    return squares


@triton.jit
def _rrms_of_sum(sum_squares, width, eps, MUTANT: tl.constexpr):
    """``rsqrt(sum_squares / width + eps)``, float32, of a row's (or rows') sum of squares."""
    # The true width, not the tile's lanes: the masked lanes are not part of the row.
    if MUTANT == SUM_INSTEAD_OF_MEAN:
        mean_square = sum_squares
    else:
        mean_square = sum_squares / width
    if MUTANT == MISSING_EPSILON:
        rrms = tl.rsqrt(mean_square)
    elif MUTANT == EPS_OUTSIDE_ROOT:
        rrms = 1.0 / (tl.sqrt(mean_square) + tl.cast(eps, tl.float32))
    else:
        # eps as float32 whatever the caller passed (Inductor passes Python floats as fp64,
        # which would promote the sum and the rsqrt to fp64).
        rrms = tl.rsqrt(mean_square + tl.cast(eps, tl.float32))
    return rrms


@triton.jit
def _rrms(squares, width, eps, ROWS: tl.constexpr, MUTANT: tl.constexpr):
    """``rsqrt(mean square + eps)`` per row of float32 ``squares`` (``[BLOCK]`` for one row, else
    ``[ROWS, BLOCK]``), shaped to multiply the row's lanes (``[ROWS, 1]`` for several rows)."""
    if ROWS == 1:
        sum_squares = tl.sum(squares, axis=0)
    else:
        sum_squares = tl.sum(squares, axis=1)
    rrms = _rrms_of_sum(sum_squares, width, eps, MUTANT)
    if ROWS > 1:
        rrms = rrms[:, None]
    return rrms


@triton.jit
def _tile_mask(row_ok, lane_mask, EVEN: tl.constexpr, ROW_MASK: tl.constexpr):
    """Mask of a ``ROWS x BLOCK`` tile: its rows below ``rows`` (``ROW_MASK``) and, unless
    ``EVEN``, the lanes of ``lane_mask``."""
    if not ROW_MASK:
        mask = lane_mask[None, :]
    elif EVEN:
        mask = row_ok
    else:
        mask = row_ok & lane_mask[None, :]
    return mask


@triton.jit
def _placed(values, first, count, LANES: tl.constexpr, PEEL: tl.constexpr):
    """``values`` (a ``[PEEL]`` tile) at lanes ``first .. first + count - 1`` of a ``[LANES]``
    tile, in order, and 0.0 in every other lane: a register gather (``count`` <= PEEL)."""
    index = tl.arange(0, LANES) - first
    inside = (index >= 0) & (index < count)
    picked = tl.gather(values, tl.minimum(tl.maximum(index, 0), PEEL - 1), 0)
    return tl.where(inside, picked, 0.0)


@triton.jit
def _body_mask(cols, body, row_end, tile_end, PAST_ROW: tl.constexpr):
    """The body lanes of a peeled row, ``cols < body``; ``PAST_ROW`` (the tail mutants) adds the
    lanes past the row's end (``row_end``) up to the tile's (``tile_end``), both counted from
    the body's start, so a mutant touches exactly the lanes it touches in an unpeeled tile: the
    tail itself stays with the tail's own accesses."""
    if PAST_ROW:
        mask = (cols < body) | ((cols >= row_end) & (cols < tile_end))
    else:
        mask = cols < body
    return mask
