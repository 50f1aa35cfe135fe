"""A float32 emulation of the kernels' order of operations, written from their documented
layout, not from their code: which lanes hold which elements (a ``BLOCK``-lane tile, a row
split in a ``BLOCK`` and a ``BLOCK2`` tile, a peeled row's head / aligned body / tail, a column
loop's lane-wise chunk accumulator), in which order the partial sums are added, the mean as a
float32 *division* by the true width, ``eps`` added in float32 and the rsqrt as ``1 / sqrt``
(the Triton interpreter's), then ``(x * rrms) * w``.

The interpreter reduces a float32 tile with ``numpy.sum`` over the reduced axis, so a tile laid
out as the kernel lays it out and summed with ``numpy.sum`` gives the interpreted kernel's bits;
everything else here is plain float32 arithmetic, one operation at a time. Used by
``test_kernel_layout_exact.py``: the kernel's per-row rstd must equal :func:`row_rrms` bit for
bit, in every launch layout.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

F32 = np.float32


def _squares(lanes: np.ndarray) -> np.ndarray:
    lanes = lanes.astype(F32)
    return lanes * lanes


def _lanes(row: np.ndarray, start: int, count: int, end: int) -> np.ndarray:
    """``count`` float32 lanes holding ``row[start + i]`` where ``start + i < end`` and the
    lane index ``i`` is valid, 0.0 elsewhere (a masked load's ``other``)."""
    lanes = np.zeros(count, dtype=F32)
    take = max(0, min(count, end - start))
    lanes[:take] = row[start : start + take]
    return lanes


def rrms_of_sum(sum_squares: np.float32, width: int, eps: float) -> np.float32:
    """``1 / sqrt(sum / width + eps)`` in float32, one rounding per operation; the mean is a
    division by the true width (never a multiply by its reciprocal)."""
    mean_square = F32(sum_squares) / F32(width)
    return F32(1) / np.sqrt(mean_square + F32(eps))


def _peeled_parts(row: np.ndarray, x_start: int, peel: int) -> tuple[int, int, int]:
    """(head, body, tail start) of a peeled row starting ``x_start`` elements from x's base."""
    width = row.shape[0]
    head = min((peel - x_start % peel) % peel, width)
    body = (width - head) // peel * peel
    return head, body, head + body


def _peeled_edges(row: np.ndarray, head: int, tail: int, peel: int) -> tuple[F32, F32]:
    """The head's and the tail's square sums: PEEL-lane tiles of their elements."""
    width = row.shape[0]
    head_lanes = _lanes(row, 0, peel, head)
    tail_lanes = _lanes(row, tail, peel, width)
    return np.sum(_squares(head_lanes)), np.sum(_squares(tail_lanes))


def _tile_sum(row: np.ndarray, x_start: int, c: Mapping[str, Any]) -> F32:
    width = row.shape[0]
    if not c["PEEL"]:
        total = np.sum(_squares(_lanes(row, 0, c["BLOCK"], width)))
        if c["BLOCK2"]:  # an unpeeled split: the second tile's sum added after the first's
            total = total + np.sum(_squares(_lanes(row, c["BLOCK"], c["BLOCK2"], width)))
        return total
    peel = c["PEEL"]
    head, body, tail = _peeled_parts(row, x_start, peel)
    body_sum = np.sum(_squares(_lanes(row, head, c["BLOCK"], head + body)))
    if c["BLOCK2"]:
        second = _lanes(row, head + c["BLOCK"], c["BLOCK2"], head + body)
        body_sum = body_sum + np.sum(_squares(second))
    head_sum, tail_sum = _peeled_edges(row, head, tail, peel)
    return (body_sum + head_sum) + tail_sum


def _loop_sum(row: np.ndarray, x_start: int, c: Mapping[str, Any]) -> F32:
    width = row.shape[0]
    chunk, chunks, peel = c["CHUNK"], c["NUM_CHUNKS"], c["PEEL"]
    start, end = 0, width
    if c["ORDERED"]:  # an ordered peel sums in the unpeeled lanes' order
        peel = 0
    if peel:
        head, body, tail = _peeled_parts(row, x_start, peel)
        start, end = head, head + body
    acc = np.zeros(chunk, dtype=F32)
    for index in range(chunks):  # lane-wise float32 accumulation, chunk after chunk
        acc = acc + _squares(_lanes(row, start + index * chunk, chunk, end))
    total = np.sum(acc)
    if peel:
        head_sum, tail_sum = _peeled_edges(row, head, tail, peel)
        total = (total + head_sum) + tail_sum
    return total


def _multi_row_sums(x: np.ndarray, c: Mapping[str, Any]) -> np.ndarray:
    """Square sums of a multi-row tile: each program's ``ROWS x BLOCK`` tile (phantom rows
    zero) summed along its lanes; with ``BLOCK2`` a second ``ROWS x BLOCK2`` tile of the
    columns from ``BLOCK`` on, its sums added after the first's."""
    rows, width = x.shape
    per, block, block2 = c["ROWS"], c["BLOCK"], c["BLOCK2"]
    programs = -(-rows // per)
    tile = np.zeros((programs * per, block + block2), dtype=F32)
    tile[:rows, :width] = x
    parts = []
    for p in range(programs):
        rows_of_p = _squares(tile[p * per : (p + 1) * per])
        part = np.sum(rows_of_p[:, :block], axis=1)
        if block2:
            part = part + np.sum(rows_of_p[:, block:], axis=1)
        parts.append(part)
    return np.concatenate(parts)[:rows]


def row_rrms(
    x: np.ndarray, x_stride: int, eps: float, loop: bool, constexprs: Mapping[str, Any]
) -> np.ndarray:
    """Each row's rrms as the kernel of ``constexprs`` (``kernel_constexprs``' names) computes
    it, ``x`` the rows' values (exact in float32), row ``r`` starting ``r * x_stride`` elements
    from x's base."""
    x = np.asarray(x, dtype=F32)
    if not loop and constexprs["ROWS"] > 1:
        sums = _multi_row_sums(x, constexprs)
    else:
        row_sum = _loop_sum if loop else _tile_sum
        sums = np.array(
            [row_sum(x[r], r * x_stride, constexprs) for r in range(x.shape[0])], dtype=F32
        )
    width = x.shape[1]
    return np.array([rrms_of_sum(s, width, eps) for s in sums], dtype=F32)


def output(x: np.ndarray, weight: np.ndarray, rrms: np.ndarray) -> np.ndarray:
    """``(x * rrms) * w`` in float32, before the rounding to the output dtype."""
    x = np.asarray(x, dtype=F32)
    return (x * rrms.astype(F32)[:, None]) * np.asarray(weight, dtype=F32)[None, :]
