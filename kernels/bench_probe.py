"""Probe kernels for the tuning sweep: Inductor's RMSNorm layouts, written as a diagnostic.

Not a product path. ``kernels.rms_norm`` never launches these; the sweep
(``kernels.bench_sweep``) measures them next to the product kernel to split a gap to
torch.compile into "what the kernel does" and "how it is launched and timed".

At 32768x2048 fp32 torch.compile's kernel (``alternatives_32768x2048_h200.json``) is a two-pass
program over blocks of 2 rows on 16 warps, with every size a compile-time constant, int32
offsets and plain stores, and it has been 0.14-0.25% faster than the product's one-row loop in
every record since 16:44. :func:`rms_norm_probe_kernel` has that structure, and switches for each
way the product kernel differs from it (int64 offsets, streaming stores, a runtime divisor), so
one sweep can tell which difference, if any, is worth the 0.2%.

Semantics are the product's (float32 square sum of the true width, eps inside the square root,
one rounding at the store); the sweep checks every probe's parity against the float64 reference
before timing it. Restrictions (checked by :func:`probe_launch`): contiguous rows, the width a
power of two (no masks at all), the row count a multiple of ``ROWS``.
"""

# Static constexpr branches in the kernel, as in kernels/rmsnorm.py.
# ruff: noqa: SIM108

from __future__ import annotations

import dataclasses

import torch
import triton
import triton.language as tl

import kernels  # noqa: F401  (decides interpreter or compiled before @triton.jit runs)


@triton.jit
def _probe_weight(w_ptr, cols, PLAIN: tl.constexpr):
    if PLAIN:
        return tl.load(w_ptr + cols).to(tl.float32)
    return tl.load(w_ptr + cols, eviction_policy="evict_last").to(tl.float32)


@triton.jit
def rms_norm_probe_kernel(
    x_ptr,
    w_ptr,
    y_ptr,
    eps,
    width_runtime,
    WIDTH: tl.constexpr,
    ROWS: tl.constexpr,
    INT64: tl.constexpr,
    STREAM_STORE: tl.constexpr,
    RUNTIME_WIDTH: tl.constexpr,
    ONE_PASS: tl.constexpr,
    X_PLAIN: tl.constexpr,
    W_PLAIN: tl.constexpr,
    W_EARLY: tl.constexpr,
):
    """RMSNorm of rows ``p*ROWS .. p*ROWS + ROWS - 1`` of a contiguous ``(rows, WIDTH)`` x.

    Pass 1 loads the ``ROWS x WIDTH`` block evict-last and sums squares in float32; pass 2
    loads it again evict-first with the weight (evict-last) and stores ``x * rrms * w``.
    INT64: row offsets in int64 (the product kernel's) instead of int32. STREAM_STORE: ``.cs``
    stores (the product loop's). RUNTIME_WIDTH: divide by the runtime ``width_runtime`` (the
    product's) instead of the constant WIDTH. ONE_PASS: keep pass 1's x in registers instead of
    loading it again (Inductor's ``triton_per_`` kernels for short rows, e.g. 65536x512).
    X_PLAIN: pass 1's x load without an eviction hint (Inductor's one-pass kernels). W_PLAIN: the
    weight without one (the product tile kernel's unless it streams). W_EARLY: the weight loaded
    before the reduction, right after x (Inductor's one-pass order, the tile kernel's W_EARLY).
    """
    first = tl.program_id(0) * ROWS
    if INT64:
        first = first.to(tl.int64)
    rows = first + tl.arange(0, ROWS)[:, None]
    cols = tl.arange(0, WIDTH)[None, :]
    offsets = rows * WIDTH + cols
    if X_PLAIN:
        x = tl.load(x_ptr + offsets).to(tl.float32)
    else:
        x = tl.load(x_ptr + offsets, eviction_policy="evict_last").to(tl.float32)
    if W_EARLY:
        w = _probe_weight(w_ptr, cols, W_PLAIN)
    sum_squares = tl.sum(x * x, axis=1)[:, None]
    if not ONE_PASS:
        x = tl.load(x_ptr + offsets, eviction_policy="evict_first").to(tl.float32)
    if not W_EARLY:
        w = _probe_weight(w_ptr, cols, W_PLAIN)
    if RUNTIME_WIDTH:
        mean_square = sum_squares / width_runtime
    else:
        mean_square = sum_squares / WIDTH
    rrms = tl.rsqrt(mean_square + eps)
    y = (x * rrms * w).to(y_ptr.dtype.element_ty)
    if STREAM_STORE:
        tl.store(y_ptr + offsets, y, cache_modifier=".cs")
    else:
        tl.store(y_ptr + offsets, y)


@dataclasses.dataclass(frozen=True)
class Probe:
    """One probe layout: rows per program, warps, and the kernel's seven switches (off: Inductor's
    two-pass form with its hints)."""

    rows_per_program: int
    num_warps: int
    int64: bool = False
    stream_store: bool = False
    runtime_width: bool = False
    one_pass: bool = False
    x_plain: bool = False
    w_plain: bool = False
    w_early: bool = False

    @property
    def label(self) -> str:
        flags = "".join(
            suffix
            for on, suffix in (
                (self.int64, "_i64"),
                (self.stream_store, "_cs"),
                (self.runtime_width, "_rtw"),
                (self.one_pass, "_1p"),
                (self.x_plain, "_xplain"),
                (self.w_plain, "_wplain"),
                (self.w_early, "_wearly"),
            )
            if on
        )
        return f"probe_R{self.rows_per_program}_w{self.num_warps}{flags}"


def probe_launch(
    x: torch.Tensor, weight: torch.Tensor, y: torch.Tensor, eps: float, probe: Probe
) -> torch.Tensor:
    """Run ``probe`` on a contiguous 2-D ``x`` into ``y``; ValueError when it cannot."""
    if x.dim() != 2 or not x.is_contiguous() or not y.is_contiguous() or y.shape != x.shape:
        raise ValueError(f"probe: x and y must be contiguous 2-D of one shape; got {x.shape}")
    rows, width = x.shape
    if width != triton.next_power_of_2(width):
        raise ValueError(f"probe: width must be a power of two; got {width}")
    if weight.shape != (width,) or not weight.is_contiguous():
        raise ValueError(f"probe: weight must be contiguous ({width},); got {tuple(weight.shape)}")
    if probe.rows_per_program < 1 or rows % probe.rows_per_program:
        raise ValueError(
            f"probe: rows ({rows}) must be a multiple of rows_per_program "
            f"({probe.rows_per_program})"
        )
    if rows * width >= 2**31 and not probe.int64:
        raise ValueError(f"probe: rows*width = {rows * width} needs int64 offsets")
    grid = (rows // probe.rows_per_program,)
    rms_norm_probe_kernel[grid](
        x,
        weight,
        y,
        float(eps),
        width,
        WIDTH=width,
        ROWS=probe.rows_per_program,
        INT64=probe.int64,
        STREAM_STORE=probe.stream_store,
        RUNTIME_WIDTH=probe.runtime_width,
        ONE_PASS=probe.one_pass,
        X_PLAIN=probe.x_plain,
        W_PLAIN=probe.w_plain,
        W_EARLY=probe.w_early,
        num_warps=probe.num_warps,
    )
    return y
