"""The fused RMSNorm forward as Triton kernels: ``y = x * rsqrt(mean(x^2) + eps) * weight``.

One program owns whole rows: it reads those rows of ``x`` and the ``weight``, and writes the same
rows of ``y``. No row is split between programs, so a row's reduction is a register (and
shared-memory) tree inside one program, with no atomics and no second launch.

Two kernels (the launch layout that picks one is ``kernels.layout``):

* :func:`rms_norm_tile_kernel`: each row is one power-of-two tile of ``BLOCK`` lanes in
  registers; a program takes ``ROWS`` consecutive rows (a ``ROWS x BLOCK`` tile: ``ROWS > 1``
  packs short rows). A single row of a width no 16-byte vector divides is peeled (head,
  aligned body, tail: :func:`_peeled_row`) so its accesses stay 16 bytes wide.
* :func:`rms_norm_loop_kernel`: each row in ``NUM_CHUNKS`` chunks of ``CHUNK`` lanes and two
  passes (square sums; then normalize, weight and store, re-reading the row from L1/L2), for
  rows too wide to keep in registers.

Numerics (``torch.nn.functional.rms_norm``'s): loads are upcast to float32 and the squares, their
sum, the mean, the rsqrt and both products stay float32, because the squares of a wide row span
many binades and a float16 sum overflows at 65504 (4096 values of magnitude 4 already do). The
result is rounded to the output dtype (the input dtype) once, at the store. The mean divides by
the true width, not by the tile's lanes: masked lanes load 0.0 and add nothing to the sum, but
they are not part of the row (the width is exact in float32, <= 2**24). ``eps`` sits inside the
square root, so an all-zero row gives ``rsqrt(eps)``, finite.

``MUTANT`` selects one named mutant (the module-level codes below, ``kernels.launcher`` maps the
names) or ``FAITHFUL``; every ``if MUTANT == CODE:`` is a compile-time branch, so the faithful
kernel carries none of the mutants' code. Import this module through ``kernels``, which decides
between the compiled path and the Triton interpreter before ``@triton.jit`` decorates.
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
    PEEL: tl.constexpr,
    W_EARLY: tl.constexpr,
    STREAM_STORE: tl.constexpr,
    MUTANT: tl.constexpr,
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
    body_load = _body_mask(cols, body, width - head, BLOCK - head, MUTANT == MASKED_TAIL_INCLUSION)
    if W_EARLY:
        wb = tl.load(w_ptr + head + cols, mask=body_in, other=0.0, eviction_policy=W_EVICTION)
        wh = tl.load(w_ptr + edge, mask=head_in, other=0.0)
        wt = tl.load(w_ptr + tail + edge, mask=tail_in, other=0.0)
    xb = tl.load(x_body + cols, mask=body_load, other=0.0, eviction_policy=X_EVICTION)
    xh = tl.load(x_ptr + x_start + edge, mask=head_in, other=0.0)
    xt = tl.load(x_ptr + x_start + tail + edge, mask=tail_in, other=0.0)
    xb = xb.to(tl.float32)
    xh = xh.to(tl.float32)
    xt = xt.to(tl.float32)
    sum_squares = (
        tl.sum(_square(xb, MUTANT), axis=0)
        + tl.sum(_square(xh, MUTANT), axis=0)
        + tl.sum(_square(xt, MUTANT), axis=0)
    )
    rrms = _rrms_of_sum(sum_squares, width, eps, MUTANT)
    if not W_EARLY:
        wb = tl.load(w_ptr + head + cols, mask=body_in, other=0.0, eviction_policy=W_EVICTION)
        wh = tl.load(w_ptr + edge, mask=head_in, other=0.0)
        wt = tl.load(w_ptr + tail + edge, mask=tail_in, other=0.0)
    if MUTANT == MISSING_WEIGHT:
        yb = xb * rrms
        yh = xh * rrms
        yt = xt * rrms
    else:
        yb = xb * rrms * wb.to(tl.float32)
        yh = xh * rrms * wh.to(tl.float32)
        yt = xt * rrms * wt.to(tl.float32)
    body_store = _body_mask(cols, body, width - head, BLOCK - head, MUTANT == UNMASKED_STORE)
    out_ty = y_ptr.dtype.element_ty
    tl.store(y_body + cols, yb.to(out_ty), mask=body_store, cache_modifier=Y_CACHE)
    tl.store(y_ptr + y_start + edge, yh.to(out_ty), mask=head_in, cache_modifier=Y_CACHE)
    tl.store(y_ptr + y_start + tail + edge, yt.to(out_ty), mask=tail_in, cache_modifier=Y_CACHE)


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
    ROWS: tl.constexpr,
    VEC: tl.constexpr,
    W_EARLY: tl.constexpr,
    STREAM_STORE: tl.constexpr,
    EVEN: tl.constexpr,
    ROW_MASK: tl.constexpr,
    PEEL: tl.constexpr,
    MUTANT: tl.constexpr,
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
      BLOCK: next_power_of_2(width), the lanes of one row's tile.
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
      EVEN: width == BLOCK, so no column mask (the tail mutants have no tail to act on there).
      ROW_MASK: ``ROWS`` does not divide rows, so the last program's rows past the end are
        masked.
      PEEL: 0, or (one row per program) the elements of 16 bytes: each row is loaded and
        stored as a head up to its first 16-byte aligned element, an aligned body of whole
        16-byte vectors and a tail of the rest (:func:`_peeled_row`), so a width no vector
        divides (an odd one) keeps 16-byte accesses. The launcher peels only when the two row
        strides agree modulo PEEL (x and y rows then share their head); the accesses are
        16-byte wide where Triton sees 16-byte aligned base pointers, and correct anywhere.
      MUTANT: ``FAITHFUL`` (0) or one mutant code.
    """
    width, x_row_stride, y_row_stride = _row_geometry(width_v, x_stride_v, y_stride_v, VEC, MUTANT)
    if PEEL:
        _peeled_row(
            x_ptr, w_ptr, y_ptr, tl.program_id(0).to(tl.int64), width, x_row_stride,
            y_row_stride, eps, BLOCK, PEEL, W_EARLY, STREAM_STORE, MUTANT,
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
):
    """Rows ``row .. row + ROWS - 1`` of :func:`rms_norm_loop_kernel` (``row`` is int64)."""
    if PEEL:
        _peeled_loop_row(
            x_ptr, w_ptr, y_ptr, row, rows, width, x_row_stride, y_row_stride, eps, CHUNK,
            NUM_CHUNKS, UNROLL, PEEL, STREAM_STORE, MUTANT,
        )  # fmt: skip
    else:
        _chunked_rows(
            x_ptr, w_ptr, y_ptr, row, rows, width, x_row_stride, y_row_stride, eps, CHUNK,
            NUM_CHUNKS, ROWS, UNROLL, EVEN, ROW_MASK, STREAM_STORE, MUTANT,
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
        )  # fmt: skip
    else:
        block_step = tl.num_programs(0).to(tl.int64)
        blocks = (rows + ROWS - 1) // ROWS
        for block in range(first_block, blocks, block_step):
            _loop_row(
                x_ptr, w_ptr, y_ptr, block * ROWS, rows, width, x_row_stride, y_row_stride,
                eps, CHUNK, NUM_CHUNKS, ROWS, UNROLL, EVEN, ROW_MASK, STREAM_STORE, PEEL, MUTANT,
            )  # fmt: skip


# Every @triton.jit function of the family, in the order their source enters the receipt's
# kernel source hash (kernels.compile_info.kernel_source).
KERNEL_FUNCTIONS = (
    _row_geometry,
    _lane_mask,
    _load,
    _store,
    _square,
    _rrms_of_sum,
    _rrms,
    _tile_mask,
    _body_mask,
    _peeled_row,
    rms_norm_tile_kernel,
    _chunk_mask,
    _loop_square_chunk,
    _loop_store_chunk,
    _peeled_loop_row,
    _peeled_store_chunk,
    _loop_row,
    _chunked_rows,
    rms_norm_loop_kernel,
)
