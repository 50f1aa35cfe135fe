"""A tuned variant of the fused RMSNorm forward, measured as ``ours_tuned`` by ``kernels.bench``.

Same function, same numerics and masking as ``kernels.rmsnorm`` (float32 loads, square sum,
division by the TRUE width, ``rsqrt(mean_square + eps)``, ``(x * rrms) * w`` in float32, one
rounding at the store; masked lanes load 0 and are never stored). What changes is only how the
work is cut into programs, chosen per width by :func:`choose_config`:

* ``rows`` kernel: a ``ROWS x BLOCK_N`` tile per program (several short rows per program, so a
  width of 128 does not leave one program per 256 bytes), with ``num_warps`` sized to the tile.
  ``ROWS = 1`` is the one-row-per-program layout of ``kernels.rmsnorm`` with a better warp count.
* ``cols`` kernel: for rows wider than ``SINGLE_TILE_MAX`` elements, a column loop in two passes
  (square sum over ``CHUNK``-wide slices, then normalize and store), on a persistent grid of
  2 programs per SM so the rows in flight stay inside L2: the second pass re-reads the row from
  L2, not HBM.

The launcher performs the same checks as ``kernels.rmsnorm.rms_norm`` with that module's own
helpers (same messages, same bounds), then launches. This module is a benchmark candidate; the
production launcher stays ``kernels.rms_norm`` until the tuned path is adopted there.
"""

from __future__ import annotations

import dataclasses
import functools

import torch
import triton
import triton.language as tl

from kernels import rmsnorm as _base

# Widest row kept in registers as one tile; wider rows use the column loop.
SINGLE_TILE_MAX = 32768


@triton.jit
def rms_norm_rows_kernel(
    x_ptr,
    w_ptr,
    y_ptr,
    rows,
    width_v,
    x_stride_v,
    y_stride_v,
    eps,
    BLOCK_N: tl.constexpr,
    ROWS: tl.constexpr,
    EVICT: tl.constexpr,
    W_EARLY: tl.constexpr,
    VEC: tl.constexpr,
):
    """RMSNorm forward of ``ROWS`` consecutive rows.

    Program ``p`` owns rows ``p*ROWS .. p*ROWS+ROWS-1`` (those < ``rows``): it reads
    ``x[r, 0:width]`` of each and all of ``weight`` and writes ``y[r, 0:width]``; nothing else.
    Pointers as in ``kernels.rmsnorm.rms_norm_fwd_kernel``; ``BLOCK_N`` = next_power_of_2(width).
    ``EVICT``: mark x evict-first (read once) and the weight evict-last (read by every program).
    ``W_EARLY``: load the weight together with x, before the reduction, so a latency-bound
    launch pays one memory round trip instead of two (costs registers while reducing).
    ``VEC``: the width and both row strides arrive divided by VEC (a power of two the launcher
    found dividing all three); multiplying back by the constexpr tells the compiler every row
    starts 16-byte aligned, so loads and stores are vectorized for widths like 1000 that
    Triton's divisible-by-16 specialization misses. The values are unchanged.
    """
    width = width_v * VEC
    x_row_stride = x_stride_v * VEC
    y_row_stride = y_stride_v * VEC
    cols = tl.arange(0, BLOCK_N)
    col_ok = cols < width
    if W_EARLY:
        if EVICT:
            w_raw = tl.load(w_ptr + cols, mask=col_ok, other=0.0, eviction_policy="evict_last")
        else:
            w_raw = tl.load(w_ptr + cols, mask=col_ok, other=0.0)
    if ROWS == 1:
        # int64 row offsets: rows * stride can pass 2**31 elements.
        row = tl.program_id(0).to(tl.int64)
        x_ptrs = x_ptr + row * x_row_stride + cols
        y_ptrs = y_ptr + row * y_row_stride + cols
        mask = col_ok
    else:
        row_ids = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
        x_ptrs = x_ptr + row_ids[:, None] * x_row_stride + cols[None, :]
        y_ptrs = y_ptr + row_ids[:, None] * y_row_stride + cols[None, :]
        mask = (row_ids < rows)[:, None] & col_ok[None, :]
    # Masked lanes load 0.0: they add nothing to the square sum and are never stored.
    if EVICT:
        x = tl.load(x_ptrs, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
    else:
        x = tl.load(x_ptrs, mask=mask, other=0.0).to(tl.float32)
    # float32 accumulation; the divisor is the true width, not BLOCK_N. (Static ifs, not
    # ternaries: only the branch for this ROWS may be compiled.)
    if ROWS == 1:  # noqa: SIM108
        mean_square = tl.sum(x * x, axis=0) / width
    else:
        mean_square = tl.sum(x * x, axis=1) / width
    rrms = tl.rsqrt(mean_square + eps)
    if not W_EARLY:
        if EVICT:
            w_raw = tl.load(w_ptr + cols, mask=col_ok, other=0.0, eviction_policy="evict_last")
        else:
            w_raw = tl.load(w_ptr + cols, mask=col_ok, other=0.0)
    w = w_raw.to(tl.float32)
    # (x * rrms) * w in float32, rounded once at the store (kernels.rmsnorm's order).
    if ROWS == 1:  # noqa: SIM108
        y = x * rrms * w
    else:
        y = x * rrms[:, None] * w[None, :]
    tl.store(y_ptrs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rms_norm_cols_kernel(
    x_ptr,
    w_ptr,
    y_ptr,
    rows,
    width_v,
    x_stride_v,
    y_stride_v,
    eps,
    CHUNK: tl.constexpr,
    EVICT: tl.constexpr,
    VEC: tl.constexpr,
    NUM_CHUNKS: tl.constexpr,
):
    """RMSNorm forward of rows ``p, p + P, p + 2P, ...`` (``P`` = number of programs).

    Each row is processed in ``CHUNK``-wide slices: pass 1 sums the squares (float32), pass 2
    re-reads the row (from L2: the persistent grid bounds the rows in flight), normalizes,
    applies the weight and stores. Columns ``>= width`` are masked in both passes.
    ``EVICT``: pass-1 loads are marked evict-last (keep the row for pass 2), pass-2 loads
    evict-first (the row is done). ``VEC`` as in the rows kernel. ``NUM_CHUNKS`` > 0: the
    launcher's cdiv(width, CHUNK), and both column loops are unrolled at compile time (all
    chunk loads independent and in flight together); 0: runtime loops.
    """
    width = width_v * VEC
    x_row_stride = x_stride_v * VEC
    y_row_stride = y_stride_v * VEC
    cols = tl.arange(0, CHUNK)
    # int64 loop bounds make the row index int64: rows * stride can pass 2**31 elements.
    first_row = tl.program_id(0).to(tl.int64)
    row_step = tl.num_programs(0).to(tl.int64)
    for row in range(first_row, rows, row_step):
        x_row = x_ptr + row * x_row_stride
        y_row = y_ptr + row * y_row_stride
        acc = tl.zeros([CHUNK], dtype=tl.float32)
        if NUM_CHUNKS > 0:
            for chunk in tl.static_range(NUM_CHUNKS):
                offs = chunk * CHUNK + cols
                acc += _square(x_row, offs, width, EVICT)
        else:
            for start in range(0, width, CHUNK):
                acc += _square(x_row, start + cols, width, EVICT)
        rrms = tl.rsqrt(tl.sum(acc, axis=0) / width + eps)
        if NUM_CHUNKS > 0:
            for chunk in tl.static_range(NUM_CHUNKS):
                _normalize(x_row, y_row, w_ptr, chunk * CHUNK + cols, width, rrms, EVICT)
        else:
            for start in range(0, width, CHUNK):
                _normalize(x_row, y_row, w_ptr, start + cols, width, rrms, EVICT)


@triton.jit
def _square(x_row, offs, width, EVICT: tl.constexpr):
    """Squares of one chunk of a row, float32; lanes past the row are 0."""
    if EVICT:
        x = tl.load(x_row + offs, mask=offs < width, other=0.0, eviction_policy="evict_last")
    else:
        x = tl.load(x_row + offs, mask=offs < width, other=0.0)
    x = x.to(tl.float32)
    return x * x


@triton.jit
def _normalize(x_row, y_row, w_ptr, offs, width, rrms, EVICT: tl.constexpr):
    """Store ``(x * rrms) * w`` for one chunk of a row (float32, one rounding); masked tail."""
    in_row = offs < width
    if EVICT:
        x = tl.load(x_row + offs, mask=in_row, other=0.0, eviction_policy="evict_first")
    else:
        x = tl.load(x_row + offs, mask=in_row, other=0.0)
    w = tl.load(w_ptr + offs, mask=in_row, other=0.0).to(tl.float32)
    y = x.to(tl.float32) * rrms * w
    tl.store(y_row + offs, y.to(y_row.dtype.element_ty), mask=in_row)


@dataclasses.dataclass(frozen=True)
class FastConfig:
    """How one launch is cut.

    ``kind`` "rows": a ``rows_per_program x block`` tile per program; "cols": a column loop
    over ``block``-wide chunks on ``programs`` persistent programs. ``evict``: eviction hints;
    ``w_early``: weight loaded with x (rows kind only).
    """

    kind: str
    block: int
    rows_per_program: int
    num_warps: int
    programs: int = 0
    evict: bool = False
    w_early: bool = True
    unroll: bool = False  # cols kind: compile-time chunk count, loops unrolled


@functools.lru_cache(maxsize=8)
def _sm_count(device_index: int) -> int:
    if not torch.cuda.is_available():
        return 132
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def choose_config(rows: int, width: int, itemsize: int, sm_count: int = 132) -> FastConfig:
    """The launch layout for a ``rows x width`` problem of ``itemsize``-byte elements.

    Chosen from the H200 sweeps recorded in docs/benchmarks/NOTES.md:

    * width <= SINGLE_TILE_MAX: ``rows`` kernel, one tile in registers.

      - Short rows are packed ``ROWS`` per program so a tile holds ~4 KiB (fewer rows when that
        would leave under 4 programs per SM): 65536x128 bf16 went 41 us -> 9.8 us.
      - Up to 4096 lanes: ``num_warps`` = tile bytes / 1 KiB (two 16-byte vectors per thread,
        1..16 warps), weight loaded with x (launch-bound 1x4096: 1.95 -> 1.86 us).
      - 8192 lanes: 8 warps with the early weight for 2-byte types (4096x5125 46 -> 42 us);
        fp32 keeps kernels.rmsnorm's 16 warps and late weight.
      - 16384 / 32768 lanes: 16 / 32 warps, late weight (as kernels.rmsnorm; measured best).
    * wider (65536): the column loop, CHUNK 16384, 32 warps, 2 persistent programs per SM,
      eviction hints (pass 1 keeps the row in L2 for pass 2): 2048x65536 bf16 177 -> 161 us.
    """
    block_n = triton.next_power_of_2(width)
    if block_n > SINGLE_TILE_MAX:
        programs = max(1, min(rows, 2 * sm_count))
        return FastConfig("cols", 16384, 1, 32, programs, evict=True)
    rows_per_program = max(1, 4096 // (block_n * itemsize))
    while rows_per_program > 1 and triton.cdiv(rows, rows_per_program) < 4 * sm_count:
        rows_per_program //= 2
    programs = triton.cdiv(rows, rows_per_program)
    if block_n >= 16384:
        return FastConfig("rows", block_n, 1, block_n // 1024, programs, w_early=False)
    if block_n == 8192:
        if itemsize <= 2:
            return FastConfig("rows", block_n, 1, 8, programs)
        return FastConfig("rows", block_n, 1, 16, programs, w_early=False)
    tile_bytes = rows_per_program * block_n * itemsize
    num_warps = min(16, max(1, tile_bytes // 1024))
    return FastConfig("rows", block_n, rows_per_program, num_warps, programs)


def vector_width(width: int, x_row_stride: int, y_row_stride: int, itemsize: int) -> int:
    """Largest power of two <= 16 bytes / itemsize dividing the width and both row strides."""
    vec = max(1, 16 // itemsize)
    while vec > 1 and (width % vec or x_row_stride % vec or y_row_stride % vec):
        vec //= 2
    return vec


def launch_fast(
    x2d: torch.Tensor,
    weight: torch.Tensor,
    y2d: torch.Tensor,
    eps: float,
    *,
    config: FastConfig | None = None,
) -> FastConfig:
    """Launch on validated ``(rows, width)`` views; ``config`` overrides :func:`choose_config`."""
    rows, width = x2d.shape
    if config is None:
        sm_count = _sm_count(x2d.device.index or 0) if x2d.device.type == "cuda" else 132
        config = choose_config(rows, width, x2d.element_size(), sm_count)
    x_stride, y_stride = x2d.stride(0), y2d.stride(0)
    vec = vector_width(width, x_stride, y_stride, x2d.element_size())
    if config.kind == "rows":
        grid = (triton.cdiv(rows, config.rows_per_program),)
        rms_norm_rows_kernel[grid](
            x2d,
            weight,
            y2d,
            rows,
            width // vec,
            x_stride // vec,
            y_stride // vec,
            float(eps),
            BLOCK_N=config.block,
            ROWS=config.rows_per_program,
            EVICT=config.evict,
            W_EARLY=config.w_early,
            VEC=vec,
            num_warps=config.num_warps,
        )
    elif config.kind == "cols":
        rms_norm_cols_kernel[(config.programs,)](
            x2d,
            weight,
            y2d,
            rows,
            width // vec,
            x_stride // vec,
            y_stride // vec,
            float(eps),
            CHUNK=config.block,
            EVICT=config.evict,
            VEC=vec,
            NUM_CHUNKS=triton.cdiv(width, config.block) if config.unroll else 0,
            num_warps=config.num_warps,
        )
    else:
        raise ValueError(f"config.kind must be 'rows' or 'cols'; got {config.kind!r}")
    return config


def _validate(
    x: torch.Tensor, weight: torch.Tensor, eps: object, out: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, float, int]:
    """The checks of ``kernels.rmsnorm.rms_norm``, in its order, with its helpers and bounds."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"x must be a torch.Tensor; got {type(x).__name__}")
    if not isinstance(weight, torch.Tensor):
        raise TypeError(f"weight must be a torch.Tensor; got {type(weight).__name__}")
    allowed = ", ".join(_base.SUPPORTED_DTYPES)
    if x.dtype not in _base.SUPPORTED_DTYPES.values():
        raise TypeError(f"x.dtype must be one of {allowed}; got {_base._dtype_name(x.dtype)}")
    if weight.dtype not in (x.dtype, torch.float32):
        raise TypeError(
            f"weight.dtype must be x.dtype ({_base._dtype_name(x.dtype)}) or float32; "
            f"got {_base._dtype_name(weight.dtype)}"
        )
    eps_value = _base._check_eps(eps)
    _base._check_device("x", x)
    if weight.device != x.device:
        raise ValueError(f"weight must be on x's device {x.device}; got {weight.device}")
    if x.dim() < 1:
        raise ValueError("x must have at least 1 dimension (..., width); got a 0-d tensor")
    width = x.shape[-1]
    if not 1 <= width <= _base.MAX_WIDTH:
        raise ValueError(f"x.shape[-1] (width) must be in [1, {_base.MAX_WIDTH}]; got {width}")
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
    if rows > _base.MAX_ROWS:
        raise ValueError(f"x has {rows} rows; at most {_base.MAX_ROWS} (one program per row)")
    x2d = _base._rows_view("x", x, width)
    if out is None:
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    else:
        _base._check_out(out, x, width)
    return x2d, out, weight, eps_value, rows


def rms_norm_fast(
    x: torch.Tensor,
    weight: torch.Tensor,
    eps: float = 1e-6,
    *,
    out: torch.Tensor | None = None,
    config: FastConfig | None = None,
) -> torch.Tensor:
    """``kernels.rms_norm`` with the tuned launch layout (same arguments, checks and result).

    Args:
        x, weight, eps, out: as ``kernels.rms_norm``.
        config: a fixed :class:`FastConfig` instead of :func:`choose_config` (for sweeps).

    Returns:
        The normalized tensor shaped like ``x`` (``out`` when given).

    Raises:
        TypeError, ValueError: exactly as ``kernels.rms_norm``.
    """
    x2d, out, weight, eps_value, rows = _validate(x, weight, eps, out)
    if rows == 0:
        return out
    y2d = _base._rows_view("out", out, x.shape[-1])
    with _base._launch_guard(x2d.device):
        launch_fast(x2d, weight, y2d, eps_value, config=config)
    return out
