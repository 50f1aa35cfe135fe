"""The column-loop RMSNorm kernel, :func:`rms_norm_loop_kernel`: one program per row, the row in
``NUM_CHUNKS`` chunks of ``CHUNK`` lanes and two passes (square sums; then normalize, weight and
store, re-reading the row from L1/L2), for rows too wide to keep in registers; a row of a width
no 16-byte vector divides is peeled like the tile kernel's rows. Numerics and mutants:
:mod:`kernels.jit`.
"""

# Inside @triton.jit bodies an `if` on a constexpr is a compile-time branch; explicit blocks keep
# each mutant's change on its own lines.

from __future__ import annotations

import triton
import triton.language as tl

from kernels.jit.parts import (
    MASKED_TAIL_INCLUSION,
    MISSING_WEIGHT,
    UNMASKED_STORE,
    _body_mask,
    _lane_mask,
    _load,
    _placed,
    _row_geometry,
    _rrms,
    _rrms_of_sum,
    _square,
    _store,
)


@triton.jit
def _loop_square_chunk(
    acc,
    x_row,
    offsets,
    width,
    NUM_CHUNKS: tl.constexpr,
    CHUNK: tl.constexpr,
    EVEN: tl.constexpr,
    MUTANT: tl.constexpr,
):
    """Pass 1 of :func:`rms_norm_loop_kernel` on one chunk: ``acc + x^2`` lane-wise (float32),
    ``x_row`` the row's start and ``offsets`` the chunk's ``[CHUNK]`` columns."""
    # No mask at all where the chunks cover the row exactly. x is loaded here and in pass 2, not
    # in a shared helper: the helper's inlined-scope boundary can change how ptxas schedules it.
    mask = _lane_mask(offsets, width, NUM_CHUNKS * CHUNK, EVEN or MUTANT == MASKED_TAIL_INCLUSION)
    # Evict-last: pass 2 reads this chunk again, from L2 if it is still there.
    if not EVEN:
        x = tl.load(x_row + offsets, mask=mask, other=0.0, eviction_policy="evict_last")
    else:
        x = tl.load(x_row + offsets, eviction_policy="evict_last")
    x = x.to(tl.float32)
    return acc + _square(x, MUTANT)


@triton.jit
def _loop_store_chunk(
    x_row,
    w_ptr,
    y_row,
    offsets,
    width,
    rrms,
    NUM_CHUNKS: tl.constexpr,
    CHUNK: tl.constexpr,
    EVEN: tl.constexpr,
    STREAM_STORE: tl.constexpr,
    MUTANT: tl.constexpr,
):
    """Pass 2 of :func:`rms_norm_loop_kernel` on one chunk: normalize, weight, round, store."""
    load_mask = _lane_mask(
        offsets, width, NUM_CHUNKS * CHUNK, EVEN or MUTANT == MASKED_TAIL_INCLUSION
    )
    if not EVEN:
        x = tl.load(x_row + offsets, mask=load_mask, other=0.0, eviction_policy="evict_first")
    else:
        x = tl.load(x_row + offsets, eviction_policy="evict_first")
    x = x.to(tl.float32)
    if MUTANT == MISSING_WEIGHT:
        y = x * rrms
    else:
        w = _load(w_ptr + offsets, mask=offsets < width, MASKED=not EVEN, EVICTION="evict_last")
        y = x * rrms * w.to(tl.float32)
    y = y.to(y_row.dtype.element_ty)
    store_mask = _lane_mask(offsets, width, NUM_CHUNKS * CHUNK, EVEN or MUTANT == UNMASKED_STORE)
    # Streaming stores (.cs): y is not read again, so its lines should not push x out of L2.
    _store(y_row + offsets, y, store_mask, not EVEN, ".cs" if STREAM_STORE else "")


@triton.jit
def _peeled_loop_row(
    x_ptr,
    w_ptr,
    y_ptr,
    row,
    width,
    x_row_stride,
    y_row_stride,
    eps,
    part,
    CHUNK: tl.constexpr,
    NUM_CHUNKS: tl.constexpr,
    PARTS: tl.constexpr,
    PEEL: tl.constexpr,
    ORDERED: tl.constexpr,
    STREAM_STORE: tl.constexpr,
    MUTANT: tl.constexpr,
    rstd_ptr,
    STORE_RSTD: tl.constexpr,
):
    """One row of :func:`rms_norm_loop_kernel` peeled as in :func:`_peeled_row`: the chunks
    run over the aligned body (``NUM_CHUNKS`` chunks cover it: it is no longer than the row),
    the head and the tail are PEEL-lane tiles added to the sum and stored apart. Of a row in
    ``PARTS`` parts, part ``part`` stores its share of the body's chunks (:func:`_chunked_row`)
    and part 0 the head and the tail.

    ``ORDERED``: every lane adds the elements an unpeeled row's lane adds, in the same order.
    Body lane ``j`` holds elements ``head + j + k * CHUNK``, which are those of unpeeled lane
    ``(j + head) mod CHUNK``; the head's elements belong before them in the last ``head``
    lanes and the tail's after them, so the accumulator starts from the head placed there and
    ends with the tail placed at its lanes, squared and added like a chunk. Rotated back by
    ``head`` lanes, it is the unpeeled accumulator, reduced by the same tree: the sum, and
    every bit of the row, is the same wherever the row starts."""
    x_start = row * x_row_stride
    y_start = row * y_row_stride
    head = tl.minimum(((PEEL - x_start % PEEL) % PEEL).to(tl.int32), width)
    body = tl.multiple_of((width - head) // PEEL * PEEL, PEEL)
    tail = head + body
    x_body = x_ptr + tl.multiple_of(x_start + head, PEEL)
    y_body = y_ptr + tl.multiple_of(y_start + head, PEEL)
    cols = tl.arange(0, CHUNK)
    edge = tl.arange(0, PEEL)
    head_in = edge < head
    tail_in = edge < width - tail
    row_end = width - head
    tile_end = NUM_CHUNKS * CHUNK - head
    if ORDERED:
        xh = tl.load(x_ptr + x_start + edge, mask=head_in, other=0.0).to(tl.float32)
        acc = tl.zeros([CHUNK], dtype=tl.float32)
        acc += _square(_placed(xh, CHUNK - head, head, CHUNK, PEEL), MUTANT)
    else:
        acc = tl.zeros([CHUNK], dtype=tl.float32)
    for chunk in tl.static_range(NUM_CHUNKS):
        offsets = chunk * CHUNK + cols
        mask = _body_mask(offsets, body, row_end, tile_end, MUTANT == MASKED_TAIL_INCLUSION)
        x = tl.load(x_body + offsets, mask=mask, other=0.0, eviction_policy="evict_last")
        acc += _square(x.to(tl.float32), MUTANT)
    if not ORDERED:
        xh = tl.load(x_ptr + x_start + edge, mask=head_in, other=0.0).to(tl.float32)
    xt = tl.load(x_ptr + x_start + tail + edge, mask=tail_in, other=0.0).to(tl.float32)
    if ORDERED:
        acc += _square(_placed(xt, body % CHUNK, width - tail, CHUNK, PEEL), MUTANT)
        rrms = _rrms(tl.gather(acc, (cols + (CHUNK - head)) % CHUNK, 0), width, eps, 1, MUTANT)
    else:
        sum_squares = (
            tl.sum(acc, axis=0)
            + tl.sum(_square(xh, MUTANT), axis=0)
            + tl.sum(_square(xt, MUTANT), axis=0)
        )
        rrms = _rrms_of_sum(sum_squares, width, eps, MUTANT)
    if STORE_RSTD:
        _store_rrms(rstd_ptr, row, rrms, part, PARTS)
    Y_CACHE: tl.constexpr = ".cs" if STREAM_STORE else ""
    out_ty = y_ptr.dtype.element_ty
    PER: tl.constexpr = (NUM_CHUNKS + PARTS - 1) // PARTS
    first = part * (PER * CHUNK)
    for step in tl.static_range(PER):
        _peeled_store_chunk(
            x_body, w_ptr, y_body, first + step * CHUNK + cols, head, body, row_end, tile_end,
            rrms, Y_CACHE, MUTANT,
        )  # fmt: skip
    if PARTS > 1:
        head_in = head_in & (part == 0)
        tail_in = tail_in & (part == 0)
    wh = tl.load(w_ptr + edge, mask=head_in, other=0.0).to(tl.float32)
    wt = tl.load(w_ptr + tail + edge, mask=tail_in, other=0.0).to(tl.float32)
    if MUTANT == MISSING_WEIGHT:
        yh = xh * rrms
        yt = xt * rrms
    else:
        yh = xh * rrms * wh
        yt = xt * rrms * wt
    tl.store(y_ptr + y_start + edge, yh.to(out_ty), mask=head_in, cache_modifier=Y_CACHE)
    tl.store(y_ptr + y_start + tail + edge, yt.to(out_ty), mask=tail_in, cache_modifier=Y_CACHE)


@triton.jit
def _peeled_store_chunk(
    x_body,
    w_ptr,
    y_body,
    offsets,
    head,
    body,
    row_end,
    tile_end,
    rrms,
    Y_CACHE: tl.constexpr,
    MUTANT: tl.constexpr,
):
    """Pass 2 of :func:`_peeled_loop_row` on one chunk of the body."""
    load_mask = _body_mask(offsets, body, row_end, tile_end, MUTANT == MASKED_TAIL_INCLUSION)
    x = tl.load(x_body + offsets, mask=load_mask, other=0.0, eviction_policy="evict_first")
    x = x.to(tl.float32)
    if MUTANT == MISSING_WEIGHT:
        y = x * rrms
    else:
        w = tl.load(
            w_ptr + head + offsets, mask=offsets < body, other=0.0, eviction_policy="evict_last"
        )
        y = x * rrms * w.to(tl.float32)
    store_mask = _body_mask(offsets, body, row_end, tile_end, MUTANT == UNMASKED_STORE)
    tl.store(
        y_body + offsets, y.to(y_body.dtype.element_ty), mask=store_mask, cache_modifier=Y_CACHE
    )


@triton.jit
def _chunked_row(
    x_ptr,
    w_ptr,
    y_ptr,
    row,
    width,
    x_row_stride,
    y_row_stride,
    eps,
    part,
    CHUNK: tl.constexpr,
    NUM_CHUNKS: tl.constexpr,
    PARTS: tl.constexpr,
    EVEN: tl.constexpr,
    STREAM_STORE: tl.constexpr,
    MUTANT: tl.constexpr,
    rstd_ptr,
    STORE_RSTD: tl.constexpr,
):
    """One row of :func:`rms_norm_loop_kernel` unpeeled: the chunks from the row's start. Of a
    row in ``PARTS`` parts, every part sums the whole row and part ``part`` stores chunks
    ``part * PER`` to ``part * PER + PER - 1`` (``PER = cdiv(NUM_CHUNKS, PARTS)``; a chunk
    past the row is masked off)."""
    cols = tl.arange(0, CHUNK)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    acc = tl.zeros([CHUNK], dtype=tl.float32)
    # Pass 1: float32 square sums, lane-wise over the chunks, then one tree reduction.
    for chunk in tl.static_range(NUM_CHUNKS):
        acc = _loop_square_chunk(
            acc, x_row, chunk * CHUNK + cols, width, NUM_CHUNKS, CHUNK, EVEN, MUTANT
        )
    rrms = _rrms(acc, width, eps, 1, MUTANT)
    if STORE_RSTD:
        _store_rrms(rstd_ptr, row, rrms, part, PARTS)
    # Pass 2: normalize, weight, one rounding at the store; this part's chunks only.
    PER: tl.constexpr = (NUM_CHUNKS + PARTS - 1) // PARTS
    first = part * (PER * CHUNK)
    for step in tl.static_range(PER):
        _loop_store_chunk(
            x_row, w_ptr, y_row, first + step * CHUNK + cols, width, rrms, NUM_CHUNKS, CHUNK,
            EVEN, STREAM_STORE, MUTANT,
        )  # fmt: skip


@triton.jit
def _store_rrms(rstd_ptr, row, rrms, part, PARTS: tl.constexpr):
    """The row's rrms into ``rstd_ptr[row]``, by its part 0 only."""
    if PARTS == 1:
        tl.store(rstd_ptr + row, rrms)
    else:
        tl.store(rstd_ptr + row, rrms, mask=part == 0)


@triton.jit
def rms_norm_loop_kernel(
    x_ptr,
    w_ptr,
    y_ptr,
    rows,
    width_v,
    x_stride_v,
    y_stride_v,
    eps,
    CHUNK: tl.constexpr,
    NUM_CHUNKS: tl.constexpr,
    VEC: tl.constexpr,
    EVEN: tl.constexpr,
    STREAM_STORE: tl.constexpr,
    PEEL: tl.constexpr,
    ORDERED: tl.constexpr,
    PARTS: tl.constexpr,
    MUTANT: tl.constexpr,
    rstd_ptr,
    STORE_RSTD: tl.constexpr,
):
    """RMSNorm forward of one row per program (grid ``(rows,)``), in column chunks, or of one
    row in ``PARTS`` programs (grid ``(rows * PARTS,)``).

    Program ``r`` reads ``x[r, 0:width]`` (twice) and ``weight[0:width]`` and writes
    ``y[r, 0:width]``; nothing else. The hardware starts the next row the moment a program ends,
    and only the rows in flight (2-8 per SM) sit in L2 for pass 2, which re-reads them from
    there, not HBM. Pointers and runtime scalars as in :func:`rms_norm_tile_kernel` (``width_v``
    and the strides divided by ``VEC``; ``rows`` is the grid's size).

    Constexpr:
      CHUNK: lanes per chunk (a power of two).
      NUM_CHUNKS: cdiv(width, CHUNK), the launcher's value (a new width recompiles only when
        its chunk count, or EVEN, changes). Both column loops are unrolled at compile time, so
        every chunk load of a pass is independent and in flight together.
      VEC: as in the tile kernel.
      EVEN: width == NUM_CHUNKS * CHUNK and PARTS divides NUM_CHUNKS: no lane is outside the
        row, so loads and stores carry no column mask (the tail mutants change nothing there).
      STREAM_STORE: stores marked streaming (``.cs``).
      PEEL: 0, or the elements of 16 bytes: the row's chunks run over its aligned body, with its
        head and tail apart (:func:`_peeled_loop_row`), as in the tile kernel.
      ORDERED: a peeled row summed in its unpeeled lanes' order (:func:`_peeled_loop_row`):
        its bits do not depend on where it starts (the batch-invariant mode's peel).
      PARTS: programs per row (1 unless rows are too few to fill the SMs). Program ``p`` is
        part ``p % PARTS`` of row ``p // PARTS``: each part sums the whole row in the same
        order as one program would (so its rrms, and every output bit, is the same whatever
        PARTS is) and stores its own share of the chunks; the sum's second and later reads
        come from L2. No part waits for another, and nothing is exchanged between them.
      MUTANT: ``FAITHFUL`` (0) or one mutant code.
      rstd_ptr, STORE_RSTD: as in the tile kernel (each row's rrms, float32, when STORE_RSTD).

    Pass 1 loads are marked evict-last (the row is read again in pass 2), pass 2 loads
    evict-first (the row is done), the weight evict-last (every row reads it).
    """
    width, x_row_stride, y_row_stride = _row_geometry(width_v, x_stride_v, y_stride_v, VEC, MUTANT)
    # int64 row index: rows * stride can pass 2**31 elements.
    if PARTS == 1:
        row = tl.program_id(0).to(tl.int64)
        part = 0
    else:
        program = tl.program_id(0)
        row = (program // PARTS).to(tl.int64)
        part = program % PARTS
    if PEEL:
        _peeled_loop_row(
            x_ptr, w_ptr, y_ptr, row, width, x_row_stride, y_row_stride, eps, part, CHUNK,
            NUM_CHUNKS, PARTS, PEEL, ORDERED, STREAM_STORE, MUTANT, rstd_ptr, STORE_RSTD,
        )  # fmt: skip
    else:
        _chunked_row(
            x_ptr, w_ptr, y_ptr, row, width, x_row_stride, y_row_stride, eps, part, CHUNK,
            NUM_CHUNKS, PARTS, EVEN, STREAM_STORE, MUTANT, rstd_ptr, STORE_RSTD,
        )  # fmt: skip
