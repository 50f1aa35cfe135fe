"""The fused Triton RMSNorm forward: one kernel family, its launch heuristics and the launcher.

``y[r, c] = x[r, c] * rsqrt(mean_c(x[r, :]^2) + eps) * weight[c]`` over the last dimension.

Import this module through ``kernels`` (``kernels/__init__`` runs ``kernels.mode`` first, which
decides between the compiled path and the Triton interpreter before ``@triton.jit`` decorates).

Semantics (the same as ``torch.nn.functional.rms_norm``):

* the output dtype is the input dtype, also when the weight is float32;
* loads are upcast to float32, the square sum, mean, rsqrt and both products are float32, and the
  result is rounded to the output dtype exactly once, at the store.

Two kernels, three launch paths (:class:`LaunchConfig`, chosen per shape by
:func:`choose_config`, forced by :func:`forced_config` for the check and the tests):

* ``one_row``  - :func:`rms_norm_tile_kernel` with ``ROWS = 1``: one program per row, the whole
  row as one power-of-two tile in registers (rows of up to 32768 elements);
* ``multi_row`` - the same kernel with ``ROWS > 1``: a ``ROWS x BLOCK`` tile of consecutive short
  rows per program (a 128-wide row alone gives a program only 256 bytes of work);
* ``column_loop`` - :func:`rms_norm_loop_kernel`: each row in ``NUM_CHUNKS`` chunks of ``CHUNK``
  lanes, two passes (square sum, then normalize and store; pass 2 re-reads the row from L1/L2),
  one row or a block of ``ROWS`` consecutive rows at a time, one program per block (what
  ``choose_config`` picks) or fewer programs that stride over the blocks.

Both kernels carry the seven mutant flags of docs/INTERFACES.md as constexpr switches, so
``run_checked`` and the mutant matrix run exactly the code the launcher runs. The heuristics come
from the H200 sweeps in docs/benchmarks/NOTES.md.
"""

# Inside @triton.jit bodies, `if FLAG:` on a constexpr is a static (compile-time) branch; a
# ternary would be too, but the explicit blocks keep each mutant's change on its own lines.
# ruff: noqa: SIM108

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import numbers
import threading
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np
import torch
import triton
import triton.language as tl

from kernels.mode import INTERPRETER, MODE

# Widest row the launcher accepts. choose_config keeps rows of up to 8192 lanes in one register
# tile and sends wider ones (and some full power-of-two rows) to the column loop, which was
# faster on the H200 from 16384 lanes up (docs/benchmarks/NOTES.md, sweeps 4-7). 65536 covers
# every transformer hidden size in use (<= 16384 today) with 4x margin. The loop would take wider
# rows (NUM_CHUNKS grows by one per chunk), but the product shape sets stop here and nothing
# wider has been measured.
MAX_WIDTH = 65536

# Widest row a tile layout may hold in registers (forced one_row / multi_row and explicit
# configs). The single tile of 65536 fp32 lanes spilled 364 bytes per thread at 16 warps
# (ptxas, sm_90); 32768 lanes at 32 warps does not spill.
SINGLE_TILE_MAX = 32768

EPS_MIN = 1e-12
EPS_MAX = 1e-2

SUPPORTED_DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}

# Names shared by value with oracle.mutants (docs/INTERFACES.md); order is display order.
KERNEL_MUTANTS: tuple[str, ...] = (
    "sum_instead_of_mean",
    "missing_square",
    "missing_epsilon",
    "masked_tail_inclusion",
    "missing_weight",
    "wrong_row_stride",
    "unmasked_store",
)

# The code paths a launch can take (LaunchConfig.path); run_checked(path=...) forces one.
KERNEL_PATHS: tuple[str, ...] = ("one_row", "multi_row", "column_loop")

# CUDA's grid x dimension limit (at most one program per row).
MAX_ROWS = 2**31 - 1

# Most chunks the column loop unrolls (65536 / 1024); forced configs stay far below.
MAX_CHUNKS = 64

# The interpreter is not thread-safe (it patches triton.language while a launch runs), so every
# interpreted launch goes through this lock. Compiled launches are enqueued without it.
_INTERPRETER_LOCK = threading.Lock()


@triton.jit
def _tile_weight(w_ptr, cols, in_row, EVEN: tl.constexpr, STREAM_STORE: tl.constexpr):
    """The weight's tile lanes (0.0 past the row; ``EVEN``: no lane is past it), evict-last
    when x and y stream past L2."""
    if EVEN:
        if STREAM_STORE:
            return tl.load(w_ptr + cols, eviction_policy="evict_last")
        return tl.load(w_ptr + cols)
    if STREAM_STORE:
        return tl.load(w_ptr + cols, mask=in_row, other=0.0, eviction_policy="evict_last")
    return tl.load(w_ptr + cols, mask=in_row, other=0.0)


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
    SUM_INSTEAD_OF_MEAN: tl.constexpr,
    MISSING_SQUARE: tl.constexpr,
    MISSING_EPSILON: tl.constexpr,
    MASKED_TAIL_INCLUSION: tl.constexpr,
    MISSING_WEIGHT: tl.constexpr,
    WRONG_ROW_STRIDE: tl.constexpr,
    UNMASKED_STORE: tl.constexpr,
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
      EVEN: width == BLOCK (the launcher checks), so no column mask (the tail mutants have no
        tail to act on there). ROW_MASK: ``ROWS > 1`` does not divide rows, so the last
        program's rows past the end are masked. The launcher sets EVEN only for ``ROWS > 1``:
        unmasked one-row tiles measured 3-8% slower on the H200 (sweeps 12-13,
        docs/benchmarks/NOTES.md).
      The seven upper-case mutant flags of docs/INTERFACES.md; all False is the real kernel.
    """
    width = width_v * VEC
    x_row_stride = x_stride_v * VEC
    y_row_stride = y_stride_v * VEC
    if WRONG_ROW_STRIDE:
        # Mutant: addresses rows as if they were packed (stride == width), input and output.
        x_row_stride = width
        y_row_stride = width

    cols = tl.arange(0, BLOCK)
    in_row = cols < width
    # Column masks of loads and stores; the mutants drop them (all BLOCK lanes, past the row).
    if MASKED_TAIL_INCLUSION:
        load_cols = cols < BLOCK
    else:
        load_cols = in_row
    if UNMASKED_STORE:
        store_cols = cols < BLOCK
    else:
        store_cols = in_row

    if W_EARLY:
        w = _tile_weight(w_ptr, cols, in_row, EVEN, STREAM_STORE)

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
        # Rows past the end (last program) are masked out of every load and store.
        if ROW_MASK:
            row_ok = (row_ids < rows)[:, None]
            if EVEN:
                load_mask = row_ok
                store_mask = row_ok
            else:
                load_mask = row_ok & load_cols[None, :]
                store_mask = row_ok & store_cols[None, :]
        else:
            load_mask = load_cols[None, :]
            store_mask = store_cols[None, :]

    # Masked lanes load 0.0, so they add nothing to the square sum: lanes >= width never exist.
    if EVEN and not ROW_MASK:
        # Every lane of the ROWS x BLOCK tile is in the problem: nothing to mask.
        if STREAM_STORE:
            x = tl.load(x_ptr + x_offsets, eviction_policy="evict_first")
        else:
            x = tl.load(x_ptr + x_offsets)
    elif STREAM_STORE:
        x = tl.load(x_ptr + x_offsets, mask=load_mask, other=0.0, eviction_policy="evict_first")
    else:
        x = tl.load(x_ptr + x_offsets, mask=load_mask, other=0.0)
    x = x.to(tl.float32)

    # Accumulate in float32 even for fp16/bf16 input: squares of a wide row span many binades
    # and an fp16 sum overflows at 65504 (a row of 4096 values of magnitude 4 already does).
    # (Mutant MISSING_SQUARE reduces x itself.) Static ifs, not ternaries: only the branch of
    # this ROWS is compiled.
    if MISSING_SQUARE:
        squares = x
    else:
        squares = x * x
    if ROWS == 1:
        sum_squares = tl.sum(squares, axis=0)
    else:
        sum_squares = tl.sum(squares, axis=1)

    # Divide by the TRUE width, not BLOCK: the zero lanes of the tile are not part of the row.
    # width is exact in float32 (<= 2**24). (Mutant SUM_INSTEAD_OF_MEAN divides by 1.)
    if SUM_INSTEAD_OF_MEAN:
        mean_square = sum_squares
    else:
        mean_square = sum_squares / width

    # eps sits inside the square root: an all-zero row gives rsqrt(eps), finite.
    # (Mutant MISSING_EPSILON drops it: rsqrt(0) = inf, and 0 * inf = NaN on a zero row.)
    if MISSING_EPSILON:
        rrms = tl.rsqrt(mean_square)
    else:
        rrms = tl.rsqrt(mean_square + eps)
    if ROWS > 1:
        rrms = rrms[:, None]

    if not W_EARLY:
        w = _tile_weight(w_ptr, cols, in_row, EVEN, STREAM_STORE)
    if MISSING_WEIGHT:
        y = x * rrms
    elif ROWS == 1:
        y = x * rrms * w.to(tl.float32)
    else:
        y = x * rrms * w.to(tl.float32)[None, :]

    # One rounding to the output dtype (x's dtype, torch.nn.functional.rms_norm's rule), at the
    # very end: normalizing and weighting both happen in float32.
    y = y.to(y_ptr.dtype.element_ty)
    if EVEN and not ROW_MASK:
        if STREAM_STORE:
            tl.store(y_ptr + y_offsets, y, cache_modifier=".cs")
        else:
            tl.store(y_ptr + y_offsets, y)
    elif STREAM_STORE:
        tl.store(y_ptr + y_offsets, y, mask=store_mask, cache_modifier=".cs")
    else:
        tl.store(y_ptr + y_offsets, y, mask=store_mask)


@triton.jit
def _loop_chunk_mask(
    offsets,
    width,
    row_ok,
    NUM_CHUNKS: tl.constexpr,
    CHUNK: tl.constexpr,
    ALL_LANES: tl.constexpr,
    ROW_MASK: tl.constexpr,
):
    """The load/store mask of one chunk: lanes < width (``ALL_LANES``: every lane of the
    chunks, a tail mutant), and the block's rows < rows when ``ROW_MASK``."""
    if ALL_LANES:
        mask = offsets < NUM_CHUNKS * CHUNK
    else:
        mask = offsets < width
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
    MISSING_SQUARE: tl.constexpr,
    MASKED_TAIL_INCLUSION: tl.constexpr,
):
    """Pass 1 of :func:`rms_norm_loop_kernel` on one chunk: ``acc + x^2`` lane-wise (float32).

    ``x_row`` is the row start (a pointer, or a ``[ROWS, 1]`` block of them) and ``offsets``
    the chunk's ``[CHUNK]`` columns; they broadcast to the chunk's tile.
    """
    # Evict-last: pass 2 reads this chunk again, from L2 if it is still there.
    if EVEN and not ROW_MASK:
        # width == NUM_CHUNKS * CHUNK and every row of the block exists: no mask to compute.
        x = tl.load(x_row + offsets, eviction_policy="evict_last")
    else:
        if EVEN:
            mask = _loop_chunk_mask(offsets, width, row_ok, NUM_CHUNKS, CHUNK, True, ROW_MASK)
        else:
            mask = _loop_chunk_mask(
                offsets, width, row_ok, NUM_CHUNKS, CHUNK, MASKED_TAIL_INCLUSION, ROW_MASK
            )
        x = tl.load(x_row + offsets, mask=mask, other=0.0, eviction_policy="evict_last")
    x = x.to(tl.float32)
    if MISSING_SQUARE:
        return acc + x
    return acc + x * x


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
    MASKED_TAIL_INCLUSION: tl.constexpr,
    MISSING_WEIGHT: tl.constexpr,
    UNMASKED_STORE: tl.constexpr,
):
    """Pass 2 of :func:`rms_norm_loop_kernel` on one chunk: normalize, weight, round, store."""
    if EVEN and not ROW_MASK:
        x = tl.load(x_row + offsets, eviction_policy="evict_first")
    else:
        if EVEN:
            load_mask = _loop_chunk_mask(offsets, width, row_ok, NUM_CHUNKS, CHUNK, True, ROW_MASK)
        else:
            load_mask = _loop_chunk_mask(
                offsets, width, row_ok, NUM_CHUNKS, CHUNK, MASKED_TAIL_INCLUSION, ROW_MASK
            )
        x = tl.load(x_row + offsets, mask=load_mask, other=0.0, eviction_policy="evict_first")
    x = x.to(tl.float32)
    if MISSING_WEIGHT:
        y = x * rrms
    else:
        if EVEN:
            w = tl.load(w_ptr + offsets, eviction_policy="evict_last")
        else:
            w = tl.load(
                w_ptr + offsets, mask=offsets < width, other=0.0, eviction_policy="evict_last"
            )
        y = x * rrms * w.to(tl.float32)
    y = y.to(y_row.dtype.element_ty)
    # Streaming stores (.cs): y is not read again, so its lines should not push x out of L2.
    if EVEN and not ROW_MASK:
        if STREAM_STORE:
            tl.store(y_row + offsets, y, cache_modifier=".cs")
        else:
            tl.store(y_row + offsets, y)
    else:
        if EVEN:
            store_mask = _loop_chunk_mask(offsets, width, row_ok, NUM_CHUNKS, CHUNK, True, ROW_MASK)
        else:
            store_mask = _loop_chunk_mask(
                offsets, width, row_ok, NUM_CHUNKS, CHUNK, UNMASKED_STORE, ROW_MASK
            )
        if STREAM_STORE:
            tl.store(y_row + offsets, y, mask=store_mask, cache_modifier=".cs")
        else:
            tl.store(y_row + offsets, y, mask=store_mask)


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
    SUM_INSTEAD_OF_MEAN: tl.constexpr,
    MISSING_SQUARE: tl.constexpr,
    MISSING_EPSILON: tl.constexpr,
    MASKED_TAIL_INCLUSION: tl.constexpr,
    MISSING_WEIGHT: tl.constexpr,
    UNMASKED_STORE: tl.constexpr,
):
    """Rows ``row .. row + ROWS - 1`` of :func:`rms_norm_loop_kernel` (``row`` is int64)."""
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
                ROW_MASK, MISSING_SQUARE, MASKED_TAIL_INCLUSION,
            )  # fmt: skip
    else:
        for chunk in range(NUM_CHUNKS):
            acc = _loop_square_chunk(
                acc, x_row, chunk * CHUNK + cols, width, row_ok, NUM_CHUNKS, CHUNK, EVEN,
                ROW_MASK, MISSING_SQUARE, MASKED_TAIL_INCLUSION,
            )  # fmt: skip
    if ROWS == 1:
        sum_squares = tl.sum(acc, axis=0)
    else:
        sum_squares = tl.sum(acc, axis=1)
    # The TRUE width, eps inside the square root (see the tile kernel).
    if SUM_INSTEAD_OF_MEAN:
        mean_square = sum_squares
    else:
        mean_square = sum_squares / width
    if MISSING_EPSILON:
        rrms = tl.rsqrt(mean_square)
    else:
        rrms = tl.rsqrt(mean_square + eps)
    if ROWS > 1:
        rrms = rrms[:, None]
    # Pass 2: normalize, weight, one rounding at the store.
    if UNROLL:
        for chunk in tl.static_range(NUM_CHUNKS):
            _loop_store_chunk(
                x_row, w_ptr, y_row, chunk * CHUNK + cols, width, rrms, row_ok, NUM_CHUNKS,
                CHUNK, EVEN, ROW_MASK, STREAM_STORE, MASKED_TAIL_INCLUSION, MISSING_WEIGHT,
                UNMASKED_STORE,
            )  # fmt: skip
    else:
        for chunk in range(NUM_CHUNKS):
            _loop_store_chunk(
                x_row, w_ptr, y_row, chunk * CHUNK + cols, width, rrms, row_ok, NUM_CHUNKS,
                CHUNK, EVEN, ROW_MASK, STREAM_STORE, MASKED_TAIL_INCLUSION, MISSING_WEIGHT,
                UNMASKED_STORE,
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
    SUM_INSTEAD_OF_MEAN: tl.constexpr,
    MISSING_SQUARE: tl.constexpr,
    MISSING_EPSILON: tl.constexpr,
    MASKED_TAIL_INCLUSION: tl.constexpr,
    MISSING_WEIGHT: tl.constexpr,
    WRONG_ROW_STRIDE: tl.constexpr,
    UNMASKED_STORE: tl.constexpr,
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
      EVEN: width == NUM_CHUNKS * CHUNK (the launcher checks): no lane is outside the row, so
        loads and stores carry no column mask.
      ROW_MASK: ROWS does not divide rows: the last block's rows past the end are masked.
      PER_ROW: the grid has one program per block: no loop over blocks.
      STREAM_STORE: stores marked streaming (``.cs``).
      The seven mutant flags (MASKED_TAIL_INCLUSION and UNMASKED_STORE change nothing when
      EVEN: there is no tail to include).

    Pass 1 loads are marked evict-last (the row is read again in pass 2), pass 2 loads
    evict-first (the row is done), the weight evict-last (every row reads it).
    """
    width = width_v * VEC
    x_row_stride = x_stride_v * VEC
    y_row_stride = y_stride_v * VEC
    if WRONG_ROW_STRIDE:
        x_row_stride = width
        y_row_stride = width
    # int64 row index: rows * stride can pass 2**31 elements.
    first_block = tl.program_id(0).to(tl.int64)
    if PER_ROW:
        _loop_row(
            x_ptr, w_ptr, y_ptr, first_block * ROWS, rows, width, x_row_stride, y_row_stride,
            eps, CHUNK, NUM_CHUNKS, ROWS, UNROLL, EVEN, ROW_MASK, STREAM_STORE,
            SUM_INSTEAD_OF_MEAN, MISSING_SQUARE, MISSING_EPSILON, MASKED_TAIL_INCLUSION,
            MISSING_WEIGHT, UNMASKED_STORE,
        )  # fmt: skip
    else:
        block_step = tl.num_programs(0).to(tl.int64)
        blocks = (rows + ROWS - 1) // ROWS
        for block in range(first_block, blocks, block_step):
            _loop_row(
                x_ptr, w_ptr, y_ptr, block * ROWS, rows, width, x_row_stride, y_row_stride,
                eps, CHUNK, NUM_CHUNKS, ROWS, UNROLL, EVEN, ROW_MASK, STREAM_STORE,
                SUM_INSTEAD_OF_MEAN, MISSING_SQUARE, MISSING_EPSILON, MASKED_TAIL_INCLUSION,
                MISSING_WEIGHT, UNMASKED_STORE,
            )  # fmt: skip


# The kernel family, in the order their source enters the receipt's source hash.
KERNEL_FUNCTIONS = (
    _tile_weight,
    rms_norm_tile_kernel,
    _loop_chunk_mask,
    _loop_square_chunk,
    _loop_store_chunk,
    _loop_row,
    rms_norm_loop_kernel,
)


@dataclasses.dataclass(frozen=True)
class LaunchConfig:
    """How one launch is cut into programs.

    Attributes:
        loop: False: :func:`rms_norm_tile_kernel`; True: :func:`rms_norm_loop_kernel`.
        block: tile kernel: lanes per row (next_power_of_2(width)); loop kernel: CHUNK.
        num_warps: warps per program.
        rows_per_program: ROWS, rows per program (tile kernel: 1 is ``one_row``, > 1
            ``multi_row``) or per block of the column loop.
        programs: loop kernel's grid size (0: one program per block of rows).
        w_early: tile kernel: weight loaded together with x, before the reduction.
        unroll: loop kernel: chunk loops unrolled at compile time (False: a runtime loop).
        stream_store: stores marked streaming (``.cs``); the tile kernel also loads x
            evict-first and the weight evict-last.
        max_registers: registers per thread the compiler may use (ptxas ``.maxnreg``); 0 leaves
            it to the compiler. A cap can fit one more program per SM at the price of spills.
        even: drop the column masks where no lane is past the row (the kernels' EVEN): the
            column loop when the width is a multiple of the chunk, the multi-row tile when
            it is the tile's width. False keeps the masks (to measure what EVEN buys).
            One-row tiles always mask (unmasked ones measured 3-8% slower, sweeps 12-13).
    """

    loop: bool
    block: int
    num_warps: int
    rows_per_program: int = 1
    programs: int = 0
    w_early: bool = False
    unroll: bool = True
    stream_store: bool = False
    max_registers: int = 0
    even: bool = True

    @property
    def path(self) -> str:
        """One of KERNEL_PATHS."""
        if self.loop:
            return "column_loop"
        return "multi_row" if self.rows_per_program > 1 else "one_row"

    def lanes(self, width: int) -> int:
        """Lanes read past each row start when nothing is masked (the guard a check needs)."""
        if self.loop:
            return triton.cdiv(width, self.block) * self.block
        return self.block

    def grid(self, rows: int) -> int:
        """Number of programs for ``rows`` rows."""
        blocks = triton.cdiv(rows, self.rows_per_program)
        if self.loop and self.programs > 0:
            return min(blocks, self.programs)
        return blocks


def block_for(width: int) -> int:
    """Lane count of a row's tile for a row of ``width`` elements: the next power of two."""
    return triton.next_power_of_2(width)


def _warps_for_bytes(tile_bytes: int, most: int = 16) -> int:
    """One warp per KiB of tile (two 16-byte vectors per thread), 1..``most``."""
    return min(most, max(1, tile_bytes // 1024))


# Largest x (bytes) whose tile launches stream: see choose_config.
STREAM_TILE_BYTES = 8 * 2**20


def _stream_loop(chunk: int, num_warps: int, *, unroll: bool = True) -> LaunchConfig:
    """The column loop, one program per row, streaming stores."""
    return LaunchConfig(True, chunk, num_warps, unroll=unroll, stream_store=True)


def choose_config(rows: int, width: int, itemsize: int, sm_count: int = 132) -> LaunchConfig:
    """The launch layout for a ``rows x width`` problem of ``itemsize``-byte elements.

    From the H200 sweeps recorded in docs/benchmarks/NOTES.md (sweeps 4-7 for the column loop,
    9-13 and the 16:37 record for the tile kernel's streaming hints; times are bf16 unless noted):

    * Rows of more than 8192 lanes: the column loop, one program per row, streaming stores,
      16-32 warps so the row's chunks are in flight while only 2-4 rows per SM sit in L2 for
      pass 2 (2048x65536 bf16 160.5 -> 134.7 us, fp32 324 -> 293 us; 2048x32768 bf16 72.4 ->
      66.4 us, torch.compile 66.9). 2-byte types: two unrolled chunks of half the tile;
      fp32: a runtime loop over chunks of up to 32768 lanes (16384 lanes: 8192; full rows of
      16384: one chunk of 16384, sweep 23, 32768x16384 998.0 -> 997.1 us).
    * Full rows of 8192 lanes (2-byte: one 8192 chunk, 16 warps; fp32: two 4096 chunks on 32
      warps, 32768x8192 fp32 500.5 -> 498.2 us in sweep 16, torch.compile 499.0), full fp32
      rows of 2048 (one chunk, 8 warps) with >= 4096 rows, full 2-byte rows of 4096 with
      >= 16384 rows (two 2048 chunks, 8 warps): the same loop (32768x8192 bf16 253.3 -> 251.6
      us). Full fp32 rows of 2048 in an even number >= 4096 instead go in blocks of 2 rows on
      16 warps with plain stores, Inductor's layout (sweeps 17-18: 32768x2048 127.20 -> 127.02
      us, torch.compile 126.98). Full fp32 rows of 4096 (>= 4096 rows): plain stores, 16
      warps, a runtime loop of 2048 chunks below 16384 rows and one 4096 chunk from there
      (sweep 19: 4096x4096 33.75 -> 33.53 us, 16384x4096 126.84 -> 126.73, 32768x4096 251.68
      -> 251.52; torch.compile 33.68, 126.65, 251.45).
    * fp32 rows of 4097-8191 lanes with >= 16384 rows: a runtime loop of 2048-lane chunks,
      16 warps (32768x5120 fp32 324 -> 315 us).
    * Other rows of 8192 lanes: one tile, 4 warps, early weight for 2-byte types (4096x5125
      40.9 us vs 42.0 at 8 warps in sweep 2); fp32 16 warps, late weight.
    * Rows of 1024-4096 lanes otherwise: one row per program, one warp per KiB, 4..8 warps;
      2-byte rows of 1024 lanes 2 warps, late weight (4096x1000 bf16 6.07 -> 6.01 us).
    * Tiles stream (x evict-first, weight evict-last, y ``.cs``) when x is at most
      STREAM_TILE_BYTES (8 MiB): in the 16:37 record 3-8% faster on the launch-bound
      1-512x4096 (1x4096 bf16 1.89 -> 1.76 us) and 5-9% on the tails 4096x70/127 (bf16 2.30 ->
      2.09 us); on larger x it measured no gain or a loss (4096x1000 fp32 +1.5%, 32768x2048
      bf16 +1.5%, 4096x4096 fp32 +2.6%, with round-to-round swings of up to 7%).
    * Rows of under 1024 lanes: several rows per program. Up to 16384 rows (latency-bound): a
      512-lane tile (4096x255 bf16 R4 3.55 -> R2 3.13 us, 4096x70 R4 2.30 us); more rows: a
      ~4 KiB tile (65536x128 41 -> 9.8 us); halved until there are >= 4 programs per SM; one
      warp per KiB of tile; the weight loaded with x (launch-bound 1x4096 1.94 -> 1.89 us).
      Rows of 1-2 KiB with more than 16384 rows (fp32 256/512, 2-byte 512) instead get a 2 KiB
      tile on one warp, each row whole in that warp (sweeps 14-15). Multi-row tiles of full
      rows drop their column masks, and their row mask when ROWS divides the rows (the
      kernel's EVEN / ROW_MASK, set by :func:`kernel_constexprs`; sweep 22: level with the
      masked tile within 0.3%, Inductor's unmasked form).
    """
    block = block_for(width)
    full_row = width == block
    if block > 8192:
        if itemsize <= 2:
            return _stream_loop(block // 2, min(32, block // 1024))
        if width == 16384:
            # Full fp32 rows of 16384: one chunk of the whole row on 32 warps, Inductor's pick
            # (sweep 23: 32768x16384 997.12 us against 998.02 for two 8192 chunks in a runtime
            # loop, torch.compile 997.38).
            return _stream_loop(16384, 32)
        return _stream_loop(8192 if block == 16384 else 32768, 32, unroll=False)
    if full_row and block == 8192:
        return _stream_loop(8192, 16) if itemsize <= 2 else _stream_loop(4096, 32)
    if full_row and itemsize >= 4 and rows >= 4096 and block in (2048, 4096):
        if block == 4096:
            # Plain stores (sweep 19): below 16384 rows a runtime loop of 2048 chunks
            # (4096x4096 33.53 us, torch.compile 33.68, the streaming form 33.75), from 16384
            # rows one unrolled 4096 chunk, Inductor's layout (16384x4096 126.73 against
            # 126.84 streaming; torch.compile 126.65).
            if rows < 16384:
                return LaunchConfig(True, 2048, 16, unroll=False)
            return LaunchConfig(True, 4096, 16)
        if rows % 2 == 0:
            # Blocks of 2 rows on 16 warps, plain stores (Inductor's layout; sweep 18:
            # 32768x2048 127.02 us against 127.20 for one row on 8 warps, torch.compile 126.98).
            return LaunchConfig(True, 2048, 16, rows_per_program=2)
        return _stream_loop(2048, 8)
    if full_row and itemsize <= 2 and rows >= 16384 and block == 4096:
        return _stream_loop(2048, 8)
    # Tiles stream (x evict-first, y .cs) when x is small, i.e. when the launch is latency-bound.
    stream = rows * width * itemsize <= STREAM_TILE_BYTES
    if block == 8192:
        if itemsize <= 2:
            return LaunchConfig(False, block, 4, w_early=True, stream_store=stream)
        if rows >= 16384:
            return _stream_loop(2048, 16, unroll=False)
        return LaunchConfig(False, block, 16, stream_store=stream)
    if block >= 1024:
        if block == 1024 and itemsize <= 2:
            return LaunchConfig(False, block, 2, stream_store=stream)
        # A row of >= 1024 lanes is 2-16 KiB already: one row per program, 4..8 warps.
        warps = max(4, _warps_for_bytes(block * itemsize, 8))
        return LaunchConfig(False, block, warps, w_early=True, stream_store=stream)
    if rows <= 16384:
        rows_per_program = max(1, 512 // block)
    elif block * itemsize >= 1024:
        # Rows of 1-2 KiB (fp32 256/512, 2-byte 512 lanes): a 2 KiB tile on ONE warp, so the
        # square sums need no shared memory or barrier (sweeps 14-15: fp32 65536x512 64.8 us
        # against 65.1 for the 2-row 4-warp tile and torch.compile; Inductor's own pick at
        # 65536x512 is 2 rows on 1 warp).
        rows_per_program = 2048 // (block * itemsize)
        return LaunchConfig(False, block, 1, rows_per_program, w_early=True, stream_store=stream)
    else:
        rows_per_program = max(1, 4096 // (block * itemsize))
    while rows_per_program > 1 and triton.cdiv(rows, rows_per_program) < 4 * sm_count:
        rows_per_program //= 2
    tile_bytes = rows_per_program * block * itemsize
    return LaunchConfig(
        False,
        block,
        _warps_for_bytes(tile_bytes),
        rows_per_program,
        w_early=True,
        stream_store=stream,
    )


def forced_config(path: str, rows: int, width: int, itemsize: int) -> LaunchConfig:
    """A config that takes ``path`` on a small problem, for the check and the tests.

    ``one_row``: one row per program, late weight (the wide-row layout). ``multi_row``: 2 rows
    per program, early weight, so an odd row count leaves a masked phantom row in the last
    program. ``column_loop``: CHUNK = a quarter of the tile (width 70 -> 3 chunks of 32, the
    last one 6 lanes into the row), 2 rows per program on the strided grid.
    """
    block = block_for(width)
    if path == "one_row":
        return LaunchConfig(False, block, _warps_for_bytes(block * itemsize, 8))
    if path == "multi_row":
        return LaunchConfig(False, block, _warps_for_bytes(2 * block * itemsize, 8), 2, 0, True)
    if path == "column_loop":
        chunk = max(1, block // 4)
        return LaunchConfig(
            True,
            chunk,
            _warps_for_bytes(chunk * itemsize, 8),
            programs=triton.cdiv(rows, 2),
            unroll=False,
            stream_store=True,
        )
    raise ValueError(f"path must be 'auto' or one of {', '.join(KERNEL_PATHS)}; got {path!r}")


def vector_width(width: int, x_row_stride: int, y_row_stride: int, itemsize: int) -> int:
    """Largest power of two <= 16 bytes / itemsize dividing the width and both row strides."""
    vec = max(1, 16 // itemsize)
    while vec > 1 and (width % vec or x_row_stride % vec or y_row_stride % vec):
        vec //= 2
    return vec


def mutant_flags(mutant: str | None) -> dict[str, bool]:
    """Constexpr keyword arguments selecting ``mutant`` (``None``: the real kernel)."""
    if mutant is not None and mutant not in KERNEL_MUTANTS:
        raise ValueError(
            f"mutant must be None or one of {', '.join(KERNEL_MUTANTS)}; got {mutant!r}"
        )
    return {name.upper(): name == mutant for name in KERNEL_MUTANTS}


def kernel_constexprs(
    config: LaunchConfig, width: int, vec: int, rows: int = 1
) -> dict[str, object]:
    """The layout constexprs (mutant flags excluded) of ``config`` for ``rows`` rows of
    ``width``."""
    if config.loop:
        chunks = triton.cdiv(width, config.block)
        if chunks > MAX_CHUNKS:
            raise ValueError(
                f"config.block (CHUNK) {config.block} gives {chunks} chunks for width {width}; "
                f"at most {MAX_CHUNKS}"
            )
        return {
            "CHUNK": config.block,
            "NUM_CHUNKS": chunks,
            "ROWS": config.rows_per_program,
            "VEC": vec,
            "UNROLL": config.unroll,
            "EVEN": config.even and width == chunks * config.block,
            "ROW_MASK": rows % config.rows_per_program != 0,
            "PER_ROW": config.programs == 0,
            "STREAM_STORE": config.stream_store,
        }
    if config.block < width:
        raise ValueError(f"config.block must be >= width ({width}); got {config.block}")
    multi_row = config.rows_per_program > 1
    return {
        "BLOCK": config.block,
        "ROWS": config.rows_per_program,
        "VEC": vec,
        "W_EARLY": config.w_early,
        "STREAM_STORE": config.stream_store,
        "EVEN": config.even and multi_row and width == config.block,
        "ROW_MASK": multi_row and rows % config.rows_per_program != 0,
    }


@functools.lru_cache(maxsize=8)
def _sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def sm_count_for(device: torch.device) -> int:
    """SMs of ``device`` (CUDA), or an H200's 132 for the interpreter and compile targets."""
    if device.type == "cuda":
        return _sm_count(device.index if device.index is not None else torch.cuda.current_device())
    return 132


@contextlib.contextmanager
def _launch_guard(device: torch.device) -> Iterator[None]:
    """Serialize interpreter launches; select ``device`` for compiled ones."""
    if MODE == INTERPRETER:
        # The interpreter evaluates with numpy: keep its float errors (rsqrt of a negative
        # mean in a mutant, 0 * inf) silent, as they are in compiled code, where they just
        # produce NaN/inf in the output.
        with _INTERPRETER_LOCK, np.errstate(all="ignore"):
            yield
    elif device.type == "cuda":
        with torch.cuda.device(device):
            yield
    else:
        yield


def _check_config(config: object) -> LaunchConfig:
    if not isinstance(config, LaunchConfig):
        raise TypeError(f"config must be a LaunchConfig or None; got {type(config).__name__}")
    for name in ("block", "num_warps", "rows_per_program"):
        value = getattr(config, name)
        if value < 1 or value & (value - 1):
            raise ValueError(f"config.{name} must be a power of two >= 1; got {value}")
    if config.programs < 0:
        raise ValueError(f"config.programs must be >= 0; got {config.programs}")
    if config.max_registers and not 24 <= config.max_registers <= 255:
        raise ValueError(
            f"config.max_registers must be 0 or in [24, 255]; got {config.max_registers}"
        )
    return config


def launch(
    x2d: torch.Tensor,
    weight: torch.Tensor,
    y2d: torch.Tensor,
    eps: float,
    *,
    mutant: str | None = None,
    config: LaunchConfig | None = None,
) -> LaunchConfig:
    """Launch on already validated 2-D views; the internal, testing and benchmarking door.

    ``x2d`` and ``y2d`` are ``(rows, width)`` views with unit column stride (any row strides,
    ``rows >= 1``), ``weight`` is ``(width,)`` contiguous: callers validate (:func:`validate`).
    ``config`` None uses :func:`choose_config`. Returns the config launched.

    Raises:
        ValueError / TypeError: an unknown mutant or an unusable ``config``.
    """
    rows, width = x2d.shape
    itemsize = x2d.element_size()
    if config is None:
        config = choose_config(rows, width, itemsize, sm_count_for(x2d.device))
    config = _check_config(config)
    x_stride, y_stride = x2d.stride(0), y2d.stride(0)
    vec = vector_width(width, x_stride, y_stride, itemsize)
    constexprs = kernel_constexprs(config, width, vec, rows)
    flags = mutant_flags(mutant)
    kernel = rms_norm_loop_kernel if config.loop else rms_norm_tile_kernel
    with _launch_guard(x2d.device):
        kernel[(config.grid(rows),)](
            x2d,
            weight,
            y2d,
            rows,
            width // vec,
            x_stride // vec,
            y_stride // vec,
            float(eps),
            num_warps=config.num_warps,
            **({"maxnreg": config.max_registers} if config.max_registers else {}),
            **constexprs,
            **flags,
        )
    return config


# ------------------------------------------------------------------------------------------
# Validation: the one place that checks the public launcher's arguments.


class Validated(NamedTuple):
    """Arguments of :func:`rms_norm` after :func:`validate`."""

    x2d: torch.Tensor  # (rows, width) view of x, no copy
    eps: float
    rows: int
    width: int


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _check_device(name: str, tensor: torch.Tensor) -> None:
    if tensor.device.type == "cuda":
        return
    if MODE == INTERPRETER and tensor.device.type == "cpu":
        return
    allowed = "cuda or cpu (Triton interpreter mode)" if MODE == INTERPRETER else "cuda"
    raise ValueError(f"{name} must be on a {allowed} device in {MODE} mode; got {tensor.device}")


def _rows_view(name: str, tensor: torch.Tensor, width: int) -> torch.Tensor:
    """``tensor`` as a (rows, width) view with one row stride, or a ValueError (never a copy)."""
    try:
        return tensor.view(-1, width)
    except RuntimeError as err:
        raise ValueError(
            f"{name}'s leading dimensions must flatten to one row stride without a copy; "
            f"got shape {tuple(tensor.shape)} with strides {tensor.stride()} "
            f"(call .contiguous() first)"
        ) from err


def _check_eps(eps: object) -> float:
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real):
        raise TypeError(f"eps must be a real number in [{EPS_MIN:g}, {EPS_MAX:g}]; got {eps!r}")
    value = float(eps)
    if not math.isfinite(value):
        raise ValueError(f"eps must be finite, in [{EPS_MIN:g}, {EPS_MAX:g}]; got {value!r}")
    if not EPS_MIN <= value <= EPS_MAX:
        raise ValueError(f"eps must be in [{EPS_MIN:g}, {EPS_MAX:g}]; got {value!r}")
    return value


def _check_out(out: object, x: torch.Tensor, width: int) -> None:
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"out must be a torch.Tensor or None; got {type(out).__name__}")
    if out.shape != x.shape:
        raise ValueError(f"out.shape must equal x.shape {tuple(x.shape)}; got {tuple(out.shape)}")
    if out.dtype != x.dtype:
        raise TypeError(
            f"out.dtype must equal x.dtype ({_dtype_name(x.dtype)}); got {_dtype_name(out.dtype)}"
        )
    if out.device != x.device:
        raise ValueError(f"out must be on x's device {x.device}; got {out.device}")
    if width > 1 and out.stride(-1) != 1:
        raise ValueError(f"out.stride(-1) must be 1 (contiguous columns); got {out.stride(-1)}")
    out2d = _rows_view("out", out, width)
    if out2d.shape[0] > 1 and out2d.stride(0) < width:
        raise ValueError(
            f"out's row stride must be >= width ({width}) so rows do not overlap; "
            f"got {out2d.stride(0)}"
        )
    same_storage = (
        out.numel() > 0
        and x.numel() > 0
        and out.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    )
    if same_storage and (out.data_ptr() != x.data_ptr() or out.stride() != x.stride()):
        raise ValueError(
            "out shares memory with x but is not x itself; in-place needs the same "
            "offset and strides, any other overlap would let one row overwrite another's input"
        )


def validate(x: object, weight: object, eps: object = 1e-6, out: object | None = None) -> Validated:
    """Check the arguments of :func:`rms_norm` (every check, in its order); allocate nothing.

    Args and Raises: as :func:`rms_norm`.

    Returns:
        Validated: ``x`` as a ``(rows, width)`` view, eps as a float, rows and width.
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor; got {type(x).__name__}")
    if not isinstance(weight, torch.Tensor):
        raise TypeError(f"weight must be a torch.Tensor; got {type(weight).__name__}")
    allowed = ", ".join(SUPPORTED_DTYPES)
    if x.dtype not in SUPPORTED_DTYPES.values():
        raise TypeError(f"x.dtype must be one of {allowed}; got {_dtype_name(x.dtype)}")
    if weight.dtype not in (x.dtype, torch.float32):
        raise TypeError(
            f"weight.dtype must be x.dtype ({_dtype_name(x.dtype)}) or float32; "
            f"got {_dtype_name(weight.dtype)}"
        )
    eps_value = _check_eps(eps)
    _check_device("x", x)
    if weight.device != x.device:
        raise ValueError(f"weight must be on x's device {x.device}; got {weight.device}")
    if x.dim() < 1:
        raise ValueError("x must have at least 1 dimension (..., width); got a 0-d tensor")
    width = x.shape[-1]
    if not 1 <= width <= MAX_WIDTH:
        raise ValueError(f"x.shape[-1] (width) must be in [1, {MAX_WIDTH}]; got {width}")
    if tuple(weight.shape) != (width,):
        raise ValueError(f"weight.shape must be (width,) = ({width},); got {tuple(weight.shape)}")
    if width > 1 and weight.stride(0) != 1:
        raise ValueError(f"weight must be contiguous (stride 1); got stride {weight.stride(0)}")
    if width > 1 and x.stride(-1) != 1:
        raise ValueError(
            f"x.stride(-1) must be 1 (contiguous columns); got {x.stride(-1)} "
            f"(call x.contiguous() first)"
        )
    rows = x.numel() // width
    if rows > MAX_ROWS:
        raise ValueError(f"x has {rows} rows; at most {MAX_ROWS} (grid limit)")
    x2d = _rows_view("x", x, width)
    if out is not None:
        _check_out(out, x, width)
    return Validated(x2d=x2d, eps=eps_value, rows=rows, width=width)


def rms_norm(
    x: torch.Tensor,
    weight: torch.Tensor,
    eps: float = 1e-6,
    *,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """RMSNorm forward over the last dimension with the fused Triton kernel.

    ``y = x * rsqrt(mean(x**2, dim=-1, keepdim=True) + eps) * weight``, accumulated in float32
    and rounded once to ``x.dtype`` (``torch.nn.functional.rms_norm`` semantics). The launch
    layout (rows per program, warps, column loop) is :func:`choose_config`'s for the shape.

    Args:
        x: ``(..., width)`` float32/float16/bfloat16 tensor with contiguous columns
            (``x.stride(-1) == 1``); the leading dimensions are flattened into rows and must
            share one row stride (padded rows are fine). CUDA, or CPU in interpreter mode.
        weight: ``(width,)`` tensor of ``x.dtype`` or float32, contiguous, on ``x``'s device.
        eps: finite real in ``[1e-12, 1e-2]``, passed to the kernel as float32.
        out: optional result tensor, shape and dtype of ``x``, on ``x``'s device, unit column
            stride and one row stride. May be ``x`` itself (in place); no other overlap.

    Returns:
        The normalized tensor shaped like ``x`` (``out`` when given). Only the output is
        allocated; zero rows return an empty result without a launch.

    Raises:
        TypeError: ``x``/``weight``/``out`` not tensors, unsupported dtypes, ``eps`` not a real.
        ValueError: wrong device, shape, stride, width outside ``[1, MAX_WIDTH]``, too many
            rows, ``eps`` out of range, or an unusable ``out``.
    """
    checked = validate(x, weight, eps, out)
    if out is None:
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if checked.rows == 0:
        return out
    launch(checked.x2d, weight, _rows_view("out", out, checked.width), checked.eps)
    return out
