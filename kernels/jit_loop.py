"""The column-loop RMSNorm kernel, :func:`rms_norm_loop_kernel`: each row in ``NUM_CHUNKS``
chunks of ``CHUNK`` lanes and two passes (square sums; then normalize, weight and store, re-reading
the row from L1/L2), for rows too wide to keep in registers; a one-row block of a width no 16-byte
vector divides is peeled like the tile kernel's rows. Numerics and mutants: :mod:`kernels.jit`.
"""

# Inside @triton.jit bodies an `if` on a constexpr is a compile-time branch; explicit blocks keep
# each mutant's change on its own lines.

from __future__ import annotations

import triton
import triton.language as tl

from kernels.jit_parts import (
    MASKED_TAIL_INCLUSION,
    MISSING_WEIGHT,
    UNMASKED_STORE,
    _body_mask,
    _lane_mask,
    _load,
    _row_geometry,
    _rrms,
    _rrms_of_sum,
    _square,
    _store,
)


@triton.jit
def _chunk_mask(
    offsets,
    width,
    row_ok,
    LANES: tl.constexpr,
    ALL_LANES: tl.constexpr,
    ROW_MASK: tl.constexpr,
):
    """The mask of one chunk of the column loop: its lanes inside the row (``ALL_LANES``: every
    one of the ``LANES`` lanes of the chunks), and the block's rows below ``rows``
    (``ROW_MASK``)."""
    mask = _lane_mask(offsets, width, LANES, ALL_LANES)
    if ROW_MASK:
        mask = mask & row_ok
    return mask


@triton.jit
def _loop_square_chunk(
    acc,
    x_row,
    offsets,
    width,
    row_ok,
    NUM_CHUNKS: tl.constexpr,
    CHUNK: tl.constexpr,
    EVEN: tl.constexpr,
    ROW_MASK: tl.constexpr,
    MUTANT: tl.constexpr,
):
    """Pass 1 of :func:`rms_norm_loop_kernel` on one chunk: ``acc + x^2`` lane-wise (float32).

    ``x_row`` is the row start (a pointer, or a ``[ROWS, 1]`` block of them) and ``offsets``
    the chunk's ``[CHUNK]`` columns; they broadcast to the chunk's tile.
    """
    # No mask at all where the chunks cover the row exactly and every row of the block exists.
    # x is loaded here and in pass 2, not in a shared helper: the helper's inlined-scope
    # boundary changes how ptxas schedules 2-byte two-row blocks (same PTX, other SASS).
    MASKED: tl.constexpr = not EVEN or ROW_MASK
    mask = _chunk_mask(
        offsets, width, row_ok, NUM_CHUNKS * CHUNK, EVEN or MUTANT == MASKED_TAIL_INCLUSION,
        ROW_MASK,
    )  # fmt: skip
    # Evict-last: pass 2 reads this chunk again, from L2 if it is still there.
    if MASKED:
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
    row_ok,
    NUM_CHUNKS: tl.constexpr,
    CHUNK: tl.constexpr,
    EVEN: tl.constexpr,
    ROW_MASK: tl.constexpr,
    STREAM_STORE: tl.constexpr,
    MUTANT: tl.constexpr,
):
    """Pass 2 of :func:`rms_norm_loop_kernel` on one chunk: normalize, weight, round, store."""
    MASKED: tl.constexpr = not EVEN or ROW_MASK
    load_mask = _chunk_mask(
        offsets, width, row_ok, NUM_CHUNKS * CHUNK, EVEN or MUTANT == MASKED_TAIL_INCLUSION,
        ROW_MASK,
    )  # fmt: skip
    if MASKED:
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
    store_mask = _chunk_mask(
        offsets, width, row_ok, NUM_CHUNKS * CHUNK, EVEN or MUTANT == UNMASKED_STORE, ROW_MASK
    )
    # Streaming stores (.cs): y is not read again, so its lines should not push x out of L2.
    _store(y_row + offsets, y, store_mask, MASKED, ".cs" if STREAM_STORE else "")


@triton.jit
def _peeled_loop_row(
    x_ptr,
    w_ptr,
    y_ptr,
    row,
    rows,
    width,
    x_row_stride,
    y_row_stride,
    eps,
    CHUNK: tl.constexpr,
    NUM_CHUNKS: tl.constexpr,
    UNROLL: tl.constexpr,
    PEEL: tl.constexpr,
    STREAM_STORE: tl.constexpr,
    MUTANT: tl.constexpr,
    rstd_ptr,
    STORE_RSTD: tl.constexpr,
):
    """One row of :func:`rms_norm_loop_kernel` peeled as in :func:`_peeled_row`: the chunks
    run over the aligned body (``NUM_CHUNKS`` chunks cover it: it is no longer than the row),
    the head and the tail are PEEL-lane tiles added to the sum and stored apart."""
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
    acc = tl.zeros([CHUNK], dtype=tl.float32)
    if UNROLL:
        for chunk in tl.static_range(NUM_CHUNKS):
            offsets = chunk * CHUNK + cols
            mask = _body_mask(offsets, body, row_end, tile_end, MUTANT == MASKED_TAIL_INCLUSION)
            x = tl.load(x_body + offsets, mask=mask, other=0.0, eviction_policy="evict_last")
            acc += _square(x.to(tl.float32), MUTANT)
    else:
        for chunk in range(NUM_CHUNKS):
            offsets = chunk * CHUNK + cols
            mask = _body_mask(offsets, body, row_end, tile_end, MUTANT == MASKED_TAIL_INCLUSION)
            x = tl.load(x_body + offsets, mask=mask, other=0.0, eviction_policy="evict_last")
            acc += _square(x.to(tl.float32), MUTANT)
    xh = tl.load(x_ptr + x_start + edge, mask=head_in, other=0.0).to(tl.float32)
    xt = tl.load(x_ptr + x_start + tail + edge, mask=tail_in, other=0.0).to(tl.float32)
    sum_squares = (
        tl.sum(acc, axis=0)
        + tl.sum(_square(xh, MUTANT), axis=0)
        + tl.sum(_square(xt, MUTANT), axis=0)
    )
    rrms = _rrms_of_sum(sum_squares, width, eps, MUTANT)
    if STORE_RSTD:
        tl.store(rstd_ptr + row, rrms)
    Y_CACHE: tl.constexpr = ".cs" if STREAM_STORE else ""
    out_ty = y_ptr.dtype.element_ty
    if UNROLL:
        for chunk in tl.static_range(NUM_CHUNKS):
            _peeled_store_chunk(
                x_body, w_ptr, y_body, chunk * CHUNK + cols, head, body, row_end, tile_end,
                rrms, Y_CACHE, MUTANT,
            )  # fmt: skip
    else:
        for chunk in range(NUM_CHUNKS):
            _peeled_store_chunk(
                x_body, w_ptr, y_body, chunk * CHUNK + cols, head, body, row_end, tile_end,
                rrms, Y_CACHE, MUTANT,
            )  # fmt: skip
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
def _loop_row(
    x_ptr,
    w_ptr,
    y_ptr,
    row,
    rows,
    width,
    x_row_stride,
    y_row_stride,
    eps,
    CHUNK: tl.constexpr,
    NUM_CHUNKS: tl.constexpr,
    ROWS: tl.constexpr,
    UNROLL: tl.constexpr,
    EVEN: tl.constexpr,
    ROW_MASK: tl.constexpr,
    STREAM_STORE: tl.constexpr,
    PEEL: tl.constexpr,
    MUTANT: tl.constexpr,
    rstd_ptr,
    STORE_RSTD: tl.constexpr,
):
    """Rows ``row .. row + ROWS - 1`` of :func:`rms_norm_loop_kernel` (``row`` is int64)."""
    if PEEL:
        _peeled_loop_row(
            x_ptr, w_ptr, y_ptr, row, rows, width, x_row_stride, y_row_stride, eps, CHUNK,
            NUM_CHUNKS, UNROLL, PEEL, STREAM_STORE, MUTANT, rstd_ptr, STORE_RSTD,
        )  # fmt: skip
    else:
        _chunked_rows(
            x_ptr, w_ptr, y_ptr, row, rows, width, x_row_stride, y_row_stride, eps, CHUNK,
            NUM_CHUNKS, ROWS, UNROLL, EVEN, ROW_MASK, STREAM_STORE, MUTANT, rstd_ptr, STORE_RSTD,
        )  # fmt: skip


@triton.jit
def _chunked_rows(
    x_ptr,
    w_ptr,
    y_ptr,
    row,
    rows,
    width,
    x_row_stride,
    y_row_stride,
    eps,
    CHUNK: tl.constexpr,
    NUM_CHUNKS: tl.constexpr,
    ROWS: tl.constexpr,
    UNROLL: tl.constexpr,
    EVEN: tl.constexpr,
    ROW_MASK: tl.constexpr,
    STREAM_STORE: tl.constexpr,
    MUTANT: tl.constexpr,
    rstd_ptr,
    STORE_RSTD: tl.constexpr,
):
    """:func:`_loop_row` unpeeled: the chunks from each row's start."""
    cols = tl.arange(0, CHUNK)
    if ROWS == 1:
        x_row = x_ptr + row * x_row_stride
        y_row = y_ptr + row * y_row_stride
        row_ok = row < rows
        acc = tl.zeros([CHUNK], dtype=tl.float32)
    else:
        # A [ROWS, 1] block of row starts; with the [CHUNK] columns it makes a [ROWS, CHUNK] tile.
        row_ids = row + tl.arange(0, ROWS).to(tl.int64)
        x_row = (x_ptr + row_ids * x_row_stride)[:, None]
        y_row = (y_ptr + row_ids * y_row_stride)[:, None]
        row_ok = (row_ids < rows)[:, None]
        acc = tl.zeros([ROWS, CHUNK], dtype=tl.float32)
    # Pass 1: float32 square sums, lane-wise over the chunks, then one tree reduction per row.
    if UNROLL:
        for chunk in tl.static_range(NUM_CHUNKS):
            acc = _loop_square_chunk(
                acc, x_row, chunk * CHUNK + cols, width, row_ok, NUM_CHUNKS, CHUNK, EVEN,
                ROW_MASK, MUTANT,
            )  # fmt: skip
    else:
        for chunk in range(NUM_CHUNKS):
            acc = _loop_square_chunk(
                acc, x_row, chunk * CHUNK + cols, width, row_ok, NUM_CHUNKS, CHUNK, EVEN,
                ROW_MASK, MUTANT,
            )  # fmt: skip
    rrms = _rrms(acc, width, eps, ROWS, MUTANT)
    if STORE_RSTD:
        if ROWS == 1:
            tl.store(rstd_ptr + row, rrms)
        else:
            tl.store(rstd_ptr + row_ids[:, None], rrms, mask=row_ok)
    # Pass 2: normalize, weight, one rounding at the store.
    if UNROLL:
        for chunk in tl.static_range(NUM_CHUNKS):
            _loop_store_chunk(
                x_row, w_ptr, y_row, chunk * CHUNK + cols, width, rrms, row_ok,
                NUM_CHUNKS, CHUNK, EVEN, ROW_MASK, STREAM_STORE, MUTANT,
            )  # fmt: skip
    else:
        for chunk in range(NUM_CHUNKS):
            _loop_store_chunk(
                x_row, w_ptr, y_row, chunk * CHUNK + cols, width, rrms, row_ok, NUM_CHUNKS,
                CHUNK, EVEN, ROW_MASK, STREAM_STORE, MUTANT,
            )  # fmt: skip


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
    ROWS: tl.constexpr,
    VEC: tl.constexpr,
    UNROLL: tl.constexpr,
    EVEN: tl.constexpr,
    ROW_MASK: tl.constexpr,
    PER_ROW: tl.constexpr,
    STREAM_STORE: tl.constexpr,
    PEEL: tl.constexpr,
    MUTANT: tl.constexpr,
    rstd_ptr,
    STORE_RSTD: tl.constexpr,
):
    """RMSNorm forward in column chunks, ``ROWS`` rows at a time, on ``P`` programs.

    Rows are taken in blocks of ``ROWS`` consecutive rows; program ``p`` of a grid of ``P``
    programs owns blocks ``p, p + P, p + 2P, ...`` (``P`` = the number of blocks: one block per
    program). It reads ``x[r, 0:width]`` (twice) and ``weight[0:width]`` and writes
    ``y[r, 0:width]`` for the rows ``r < rows`` of its blocks; nothing else. With one block per
    program the hardware starts the next block the moment a program ends, and only the blocks
    in flight (2-8 per SM) sit in L2 for pass 2, which re-reads them from there, not HBM.
    Pointers and runtime scalars as in :func:`rms_norm_tile_kernel` (``width_v`` and the strides
    divided by ``VEC``).

    Constexpr:
      CHUNK: lanes per chunk (a power of two).
      NUM_CHUNKS: cdiv(width, CHUNK), the launcher's value (a new width recompiles only when
        its chunk count, or EVEN, changes).
      ROWS: rows per block (a power of two; 1: one row, a 1-D tile).
      VEC: as in the tile kernel.
      UNROLL: True: both column loops unrolled at compile time, so every chunk load of a pass
        is independent and in flight together; False: a runtime loop, one chunk in flight per
        iteration, fewer registers (so more programs fit an SM).
      EVEN: width == NUM_CHUNKS * CHUNK: no lane is outside the row, so loads and stores carry
        no column mask (the tail mutants change nothing there).
      ROW_MASK: ROWS does not divide rows: the last block's rows past the end are masked.
      PER_ROW: the grid has one program per block: no loop over blocks.
      STREAM_STORE: stores marked streaming (``.cs``).
      PEEL: 0, or (``ROWS == 1``) the elements of 16 bytes: each row's chunks run over its
        aligned body, with its head and tail apart (:func:`_peeled_loop_row`), as in the tile
        kernel.
      MUTANT: ``FAITHFUL`` (0) or one mutant code.
      rstd_ptr, STORE_RSTD: as in the tile kernel (each row's rrms, float32, when STORE_RSTD).

    Pass 1 loads are marked evict-last (the row is read again in pass 2), pass 2 loads
    evict-first (the row is done), the weight evict-last (every row reads it).
    """
    width, x_row_stride, y_row_stride = _row_geometry(width_v, x_stride_v, y_stride_v, VEC, MUTANT)
    # int64 row index: rows * stride can pass 2**31 elements.
    first_block = tl.program_id(0).to(tl.int64)
    if PER_ROW:
        _loop_row(
            x_ptr, w_ptr, y_ptr, first_block * ROWS, rows, width, x_row_stride, y_row_stride,
            eps, CHUNK, NUM_CHUNKS, ROWS, UNROLL, EVEN, ROW_MASK, STREAM_STORE, PEEL, MUTANT,
            rstd_ptr, STORE_RSTD,
        )  # fmt: skip
    else:
        block_step = tl.num_programs(0).to(tl.int64)
        blocks = (rows + ROWS - 1) // ROWS
        for block in range(first_block, blocks, block_step):
            # The cast keeps the row index int64 where the loop's counter is not (the Triton
            # interpreter hands a Python int): rows * stride can pass 2**31 elements.
            _loop_row(
                x_ptr, w_ptr, y_ptr, tl.cast(block, tl.int64) * ROWS, rows, width,
                x_row_stride, y_row_stride,
                eps, CHUNK, NUM_CHUNKS, ROWS, UNROLL, EVEN, ROW_MASK, STREAM_STORE, PEEL, MUTANT,
                rstd_ptr, STORE_RSTD,
            )  # fmt: skip
