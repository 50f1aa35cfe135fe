"""The tile RMSNorm kernel, :func:`rms_norm_tile_kernel`: each row one power-of-two tile of
``BLOCK`` lanes in registers, or two (``BLOCK`` then ``BLOCK2``: :func:`_split_rows`), ``ROWS``
rows per program; a single row of a width no 16-byte vector divides is peeled (head, aligned
body, tail: :func:`_peeled_row`). Numerics and mutants: :mod:`kernels.jit`.
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
    _row_geometry,
    _rrms,
    _rrms_of_sum,
    _square,
    _store,
    _tile_mask,
)


@triton.jit
def _peeled_row(
    x_ptr,
    w_ptr,
    y_ptr,
    row,
    width,
    x_row_stride,
    y_row_stride,
    eps,
    BLOCK: tl.constexpr,
    BLOCK2: tl.constexpr,
    PEEL: tl.constexpr,
    W_EARLY: tl.constexpr,
    STREAM_STORE: tl.constexpr,
    MUTANT: tl.constexpr,
    rstd_ptr,
    STORE_RSTD: tl.constexpr,
):
    """One row of :func:`rms_norm_tile_kernel` in three parts: head, aligned body, tail.

    ``head`` (< PEEL elements) runs up to the row's first element a multiple of PEEL elements
    from the base (``-row_start mod PEEL``: a 16-byte boundary when the base is on one); the
    body is the longest run of whole PEEL-element vectors after it, loaded and stored as
    ``BLOCK`` lanes from an offset the compiler is told is a multiple of PEEL, under a mask
    whose bound is one too (so every access is a full 16-byte vector); the tail is the rest
    (< PEEL elements). Head and tail are PEEL-lane tiles of scalar accesses. The weight's body
    starts ``head`` elements into it, which no alignment hint covers: its loads stay scalar, but
    every row reads the same weight, from L1/L2. The sum of squares adds the three parts' sums.
    With ``BLOCK2`` the body is two tiles, ``BLOCK`` lanes then ``BLOCK2`` (the second one's
    sum added after the first's); the tail mutants act on the lanes of both past the row.
    """
    X_EVICTION: tl.constexpr = "evict_first" if STREAM_STORE else ""
    W_EVICTION: tl.constexpr = "evict_last" if STREAM_STORE else ""
    Y_CACHE: tl.constexpr = ".cs" if STREAM_STORE else ""
    x_start = row * x_row_stride
    y_start = row * y_row_stride
    head = tl.minimum(((PEEL - x_start % PEEL) % PEEL).to(tl.int32), width)
    body = tl.multiple_of((width - head) // PEEL * PEEL, PEEL)
    tail = head + body  # the tail's first column
    cols = tl.arange(0, BLOCK)
    edge = tl.arange(0, PEEL)
    x_body = x_ptr + tl.multiple_of(x_start + head, PEEL)
    y_body = y_ptr + tl.multiple_of(y_start + head, PEEL)
    body_in = cols < body
    head_in = edge < head
    tail_in = edge < width - tail
    TILE: tl.constexpr = BLOCK + BLOCK2
    body_load = _body_mask(cols, body, width - head, TILE - head, MUTANT == MASKED_TAIL_INCLUSION)
    if BLOCK2 > 0:
        cols2 = BLOCK + tl.arange(0, BLOCK2)
        body_in2 = cols2 < body
        body_load2 = _body_mask(
            cols2, body, width - head, TILE - head, MUTANT == MASKED_TAIL_INCLUSION
        )
    if W_EARLY:
        wb = tl.load(w_ptr + head + cols, mask=body_in, other=0.0, eviction_policy=W_EVICTION)
        wh = tl.load(w_ptr + edge, mask=head_in, other=0.0)
        wt = tl.load(w_ptr + tail + edge, mask=tail_in, other=0.0)
        if BLOCK2 > 0:
            wb2 = tl.load(
                w_ptr + head + cols2, mask=body_in2, other=0.0, eviction_policy=W_EVICTION
            )
    xb = tl.load(x_body + cols, mask=body_load, other=0.0, eviction_policy=X_EVICTION)
    if BLOCK2 > 0:
        xb2 = tl.load(x_body + cols2, mask=body_load2, other=0.0, eviction_policy=X_EVICTION)
    xh = tl.load(x_ptr + x_start + edge, mask=head_in, other=0.0)
    xt = tl.load(x_ptr + x_start + tail + edge, mask=tail_in, other=0.0)
    xb = xb.to(tl.float32)
    xh = xh.to(tl.float32)
    xt = xt.to(tl.float32)
    body_sum = tl.sum(_square(xb, MUTANT), axis=0)
    if BLOCK2 > 0:
        xb2 = xb2.to(tl.float32)
        body_sum += tl.sum(_square(xb2, MUTANT), axis=0)
    sum_squares = (
        body_sum + tl.sum(_square(xh, MUTANT), axis=0) + tl.sum(_square(xt, MUTANT), axis=0)
    )
    rrms = _rrms_of_sum(sum_squares, width, eps, MUTANT)
    if STORE_RSTD:
        tl.store(rstd_ptr + row, rrms)
    if not W_EARLY:
        wb = tl.load(w_ptr + head + cols, mask=body_in, other=0.0, eviction_policy=W_EVICTION)
        wh = tl.load(w_ptr + edge, mask=head_in, other=0.0)
        wt = tl.load(w_ptr + tail + edge, mask=tail_in, other=0.0)
        if BLOCK2 > 0:
            wb2 = tl.load(
                w_ptr + head + cols2, mask=body_in2, other=0.0, eviction_policy=W_EVICTION
            )
    if MUTANT == MISSING_WEIGHT:
        yb = xb * rrms
        yh = xh * rrms
        yt = xt * rrms
        if BLOCK2 > 0:
            yb2 = xb2 * rrms
    else:
        yb = xb * rrms * wb.to(tl.float32)
        yh = xh * rrms * wh.to(tl.float32)
        yt = xt * rrms * wt.to(tl.float32)
        if BLOCK2 > 0:
            yb2 = xb2 * rrms * wb2.to(tl.float32)
    body_store = _body_mask(cols, body, width - head, TILE - head, MUTANT == UNMASKED_STORE)
    out_ty = y_ptr.dtype.element_ty
    tl.store(y_body + cols, yb.to(out_ty), mask=body_store, cache_modifier=Y_CACHE)
    if BLOCK2 > 0:
        body_store2 = _body_mask(cols2, body, width - head, TILE - head, MUTANT == UNMASKED_STORE)
        tl.store(y_body + cols2, yb2.to(out_ty), mask=body_store2, cache_modifier=Y_CACHE)
    tl.store(y_ptr + y_start + edge, yh.to(out_ty), mask=head_in, cache_modifier=Y_CACHE)
    tl.store(y_ptr + y_start + tail + edge, yt.to(out_ty), mask=tail_in, cache_modifier=Y_CACHE)


@triton.jit
def _split_rows(
    x_ptr,
    w_ptr,
    y_ptr,
    rows,
    width,
    x_row_stride,
    y_row_stride,
    eps,
    BLOCK: tl.constexpr,
    BLOCK2: tl.constexpr,
    ROWS: tl.constexpr,
    W_EARLY: tl.constexpr,
    STREAM_STORE: tl.constexpr,
    EVEN: tl.constexpr,
    ROW_MASK: tl.constexpr,
    MUTANT: tl.constexpr,
    rstd_ptr,
    STORE_RSTD: tl.constexpr,
):
    """``ROWS`` unpeeled rows of :func:`rms_norm_tile_kernel`, each in two tiles: its first
    ``BLOCK`` columns (``BLOCK`` < width: no column mask) then ``BLOCK2`` lanes from column
    ``BLOCK``, masked past the row unless ``EVEN`` (``BLOCK + BLOCK2 == width``). A 576-wide
    row holds 512 + 64 lanes, not 1024. The row's sum of squares adds the second tile's sum
    after the first's; the tail mutants act on the second tile's lanes past the row.
    """
    X_EVICTION: tl.constexpr = "evict_first" if STREAM_STORE else ""
    W_EVICTION: tl.constexpr = "evict_last" if STREAM_STORE else ""
    Y_CACHE: tl.constexpr = ".cs" if STREAM_STORE else ""
    MASKED2: tl.constexpr = not EVEN or ROW_MASK
    cols = tl.arange(0, BLOCK)
    cols2 = BLOCK + tl.arange(0, BLOCK2)
    in_row2 = cols2 < width
    load2 = _lane_mask(cols2, width, BLOCK + BLOCK2, MUTANT == MASKED_TAIL_INCLUSION)
    store2 = _lane_mask(cols2, width, BLOCK + BLOCK2, MUTANT == UNMASKED_STORE)
    row_ids = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    row_ok = (row_ids < rows)[:, None]
    x_rows = x_ptr + row_ids[:, None] * x_row_stride
    y_rows = y_ptr + row_ids[:, None] * y_row_stride
    if W_EARLY:
        w = tl.load(w_ptr + cols, eviction_policy=W_EVICTION)
        w2 = _load(w_ptr + cols2, in_row2, not EVEN, W_EVICTION)
    x = _load(x_rows + cols[None, :], row_ok, ROW_MASK, X_EVICTION)
    x2 = _load(x_rows + cols2[None, :], _tile_mask(row_ok, load2, EVEN, ROW_MASK), MASKED2,
               X_EVICTION)  # fmt: skip
    x = x.to(tl.float32)
    x2 = x2.to(tl.float32)
    sum_squares = tl.sum(_square(x, MUTANT), axis=1) + tl.sum(_square(x2, MUTANT), axis=1)
    rrms = _rrms_of_sum(sum_squares, width, eps, MUTANT)[:, None]
    if STORE_RSTD:
        tl.store(rstd_ptr + row_ids[:, None], rrms, mask=row_ok)
    if not W_EARLY:
        w = tl.load(w_ptr + cols, eviction_policy=W_EVICTION)
        w2 = _load(w_ptr + cols2, in_row2, not EVEN, W_EVICTION)
    if MUTANT == MISSING_WEIGHT:
        y = x * rrms
        y2 = x2 * rrms
    else:
        y = x * rrms * w.to(tl.float32)[None, :]
        y2 = x2 * rrms * w2.to(tl.float32)[None, :]
    out_ty = y_ptr.dtype.element_ty
    _store(y_rows + cols[None, :], y.to(out_ty), row_ok, ROW_MASK, Y_CACHE)
    _store(y_rows + cols2[None, :], y2.to(out_ty), _tile_mask(row_ok, store2, EVEN, ROW_MASK),
           MASKED2, Y_CACHE)  # fmt: skip


@triton.jit
def rms_norm_tile_kernel(
    x_ptr,
    w_ptr,
    y_ptr,
    rows,
    width_v,
    x_stride_v,
    y_stride_v,
    eps,
    BLOCK: tl.constexpr,
    BLOCK2: tl.constexpr,
    ROWS: tl.constexpr,
    VEC: tl.constexpr,
    W_EARLY: tl.constexpr,
    STREAM_STORE: tl.constexpr,
    EVEN: tl.constexpr,
    ROW_MASK: tl.constexpr,
    PEEL: tl.constexpr,
    MUTANT: tl.constexpr,
    rstd_ptr,
    STORE_RSTD: tl.constexpr,
):
    """RMSNorm forward of ``ROWS`` consecutive rows, each held as one ``BLOCK``-lane tile.

    Program ``p`` (grid ``(cdiv(rows, ROWS),)``) owns rows ``p*ROWS .. p*ROWS + ROWS - 1`` that
    are ``< rows``: it reads ``x[r, 0:width]`` of each and ``weight[0:width]`` and writes
    ``y[r, 0:width]``; nothing else (rows past ``rows`` in the last program are masked out).

    Pointers (element units, columns contiguous):
      x_ptr: input, row ``r`` starts at ``x_ptr + r * x_row_stride``; fp32, fp16 or bf16.
      w_ptr: weight, shape ``(width,)``, contiguous; the input dtype or fp32.
      y_ptr: output, row ``r`` starts at ``y_ptr + r * y_row_stride``; the input dtype.

    Runtime scalars (never constexpr, so a new width or stride does not recompile):
      rows: number of rows.
      width_v, x_stride_v, y_stride_v: the row width and the row strides DIVIDED BY ``VEC``.
      eps: float32, added to the mean square inside the square root.

    Constexpr:
      BLOCK: next_power_of_2(width), the lanes of one row's tile; with BLOCK2 the first of
        two tiles: of a peeled row's body, or (unpeeled) of the row, then narrower than it.
      BLOCK2: 0, or the second tile (a power of two; BLOCK + BLOCK2 >= width): of a peeled
        row's body, or of the row's columns from BLOCK on (:func:`_split_rows`).
      ROWS: rows per program (1: the ``one_row`` path, a 1-D tile).
      VEC: a power of two (<= 16 bytes of elements) dividing width and both strides. The
        launcher passes them divided by VEC and the kernel multiplies back: the values are
        unchanged, but the compiler now knows every row starts a multiple of VEC elements after
        a 16-byte aligned base, so loads and stores are vectorized for widths such as 1000 that
        Triton's own divisible-by-16 specialization of integer arguments misses.
      W_EARLY: load the weight together with x, before the reduction, so a latency-bound launch
        waits for one memory round trip instead of two (costs registers during the reduction).
      STREAM_STORE: x loaded evict-first (it is read once) and y stored streaming (``.cs``),
        so neither lingers in L2; the weight is then loaded evict-last (every row reads it).
      EVEN: width == BLOCK + BLOCK2, so no column mask (the tail mutants have no tail to act
        on there); set for multi-row tiles and unpeeled splits only.
      ROW_MASK: ``ROWS`` does not divide rows, so the last program's rows past the end are
        masked.
      PEEL: 0, or (one row per program) the elements of 16 bytes: each row is loaded and
        stored as a head up to its first 16-byte aligned element, an aligned body of whole
        16-byte vectors and a tail of the rest (:func:`_peeled_row`), so a width no vector
        divides (an odd one) keeps 16-byte accesses. The launcher peels only when the two row
        strides agree modulo PEEL (x and y rows then share their head); the accesses are
        16-byte wide where Triton sees 16-byte aligned base pointers, and correct anywhere.
      MUTANT: ``FAITHFUL`` (0) or one mutant code.

    Optional output (the inspector's exact view of the kernel's reduction):
      rstd_ptr: float32 ``(rows,)``: each row's rrms as the kernel computed it, stored when
        STORE_RSTD (None otherwise: a constexpr, so a launch without it compiles none of it).
      STORE_RSTD: store it.
    """
    width, x_row_stride, y_row_stride = _row_geometry(width_v, x_stride_v, y_stride_v, VEC, MUTANT)
    if PEEL:
        _peeled_row(
            x_ptr, w_ptr, y_ptr, tl.program_id(0).to(tl.int64), width, x_row_stride,
            y_row_stride, eps, BLOCK, BLOCK2, PEEL, W_EARLY, STREAM_STORE, MUTANT, rstd_ptr,
            STORE_RSTD,
        )  # fmt: skip
    elif BLOCK2 > 0:
        _split_rows(
            x_ptr, w_ptr, y_ptr, rows, width, x_row_stride, y_row_stride, eps, BLOCK, BLOCK2,
            ROWS, W_EARLY, STREAM_STORE, EVEN, ROW_MASK, MUTANT, rstd_ptr, STORE_RSTD,
        )  # fmt: skip
    else:
        X_EVICTION: tl.constexpr = "evict_first" if STREAM_STORE else ""
        W_EVICTION: tl.constexpr = "evict_last" if STREAM_STORE else ""
        Y_CACHE: tl.constexpr = ".cs" if STREAM_STORE else ""
        # No mask at all where the rows fill the tile and ROWS divides the rows.
        MASKED: tl.constexpr = not EVEN or ROW_MASK

        cols = tl.arange(0, BLOCK)
        in_row = cols < width
        load_cols = _lane_mask(cols, width, BLOCK, MUTANT == MASKED_TAIL_INCLUSION)
        store_cols = _lane_mask(cols, width, BLOCK, MUTANT == UNMASKED_STORE)

        if W_EARLY:
            w = _load(w_ptr + cols, in_row, not EVEN, W_EVICTION)

        # int64 row offsets: rows * stride overflows int32 past 2**31 elements (e.g. 32768 rows of
        # 65536 columns), and a wrapped offset reads another row silently.
        if ROWS == 1:
            row = tl.program_id(0).to(tl.int64)
            x_offsets = row * x_row_stride + cols
            y_offsets = row * y_row_stride + cols
            load_mask = load_cols
            store_mask = store_cols
        else:
            row_ids = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
            x_offsets = row_ids[:, None] * x_row_stride + cols[None, :]
            y_offsets = row_ids[:, None] * y_row_stride + cols[None, :]
            row_ok = (row_ids < rows)[:, None]
            load_mask = _tile_mask(row_ok, load_cols, EVEN, ROW_MASK)
            store_mask = _tile_mask(row_ok, store_cols, EVEN, ROW_MASK)

        # Masked lanes load 0.0, so they add nothing to the square sum.
        if MASKED:
            x = tl.load(x_ptr + x_offsets, mask=load_mask, other=0.0, eviction_policy=X_EVICTION)
        else:
            x = tl.load(x_ptr + x_offsets, eviction_policy=X_EVICTION)
        x = x.to(tl.float32)
        rrms = _rrms(_square(x, MUTANT), width, eps, ROWS, MUTANT)
        if STORE_RSTD:
            if ROWS == 1:
                tl.store(rstd_ptr + row, rrms)
            else:
                tl.store(rstd_ptr + row_ids[:, None], rrms, mask=row_ok)

        if not W_EARLY:
            w = _load(w_ptr + cols, in_row, not EVEN, W_EVICTION)
        if MUTANT == MISSING_WEIGHT:
            y = x * rrms
        elif ROWS == 1:
            y = x * rrms * w.to(tl.float32)
        else:
            y = x * rrms * w.to(tl.float32)[None, :]
        # One rounding to the output dtype, at the very end.
        y = y.to(y_ptr.dtype.element_ty)
        _store(y_ptr + y_offsets, y, store_mask, MASKED, Y_CACHE)
