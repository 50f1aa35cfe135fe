"""The fused Triton RMSNorm forward kernel and its public launcher.

``y[r, c] = x[r, c] * rsqrt(mean_c(x[r, :]^2) + eps) * weight[c]``, one program per row.

Import this module through ``kernels`` (``kernels/__init__`` runs ``kernels.mode`` first, which
decides between the compiled path and the Triton interpreter before ``@triton.jit`` decorates).

Semantics (the same as ``torch.nn.functional.rms_norm``):

* the output dtype is the input dtype, also when the weight is float32;
* loads are upcast to float32, the square sum, mean, rsqrt and both products are float32, and the
  result is rounded to the output dtype exactly once, at the store.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import threading
from collections.abc import Iterator

import numpy as np
import torch
import triton
import triton.language as tl

from kernels.mode import INTERPRETER, MODE

# Widest row one program handles as a single power-of-two tile. 65536 covers every transformer
# hidden size in use (<= 16384 today) with 4x margin, stays far below Triton's per-tensor limit of
# 2**20 elements, and is about where a single-tile program stops being reasonable: at 16 warps
# each thread already holds 128 float32 x values and 128 weights in registers. Wider rows need a
# column loop, which is a performance feature outside this issue. Measured on the compiled sm_90
# code (compiler_output("float32", 65536, "sm_90"), Triton 3.7.1): 128 registers per thread and
# 364 bytes of spill stores per thread at 16 warps (an H200 with Triton 3.6 loads it with the
# same 128 registers and 360 bytes of local memory):
# correct, but already past the single-tile sweet spot.
MAX_WIDTH = 65536

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

# CUDA's grid x dimension limit; one program per row.
MAX_ROWS = 2**31 - 1

# The interpreter is not thread-safe (it patches triton.language while a launch runs), so every
# interpreted launch goes through this lock. Compiled launches are enqueued without it.
_INTERPRETER_LOCK = threading.Lock()


@triton.jit
def rms_norm_fwd_kernel(
    x_ptr,
    w_ptr,
    y_ptr,
    width,
    x_row_stride,
    y_row_stride,
    eps,
    BLOCK: tl.constexpr,
    SUM_INSTEAD_OF_MEAN: tl.constexpr,
    MISSING_SQUARE: tl.constexpr,
    MISSING_EPSILON: tl.constexpr,
    MASKED_TAIL_INCLUSION: tl.constexpr,
    MISSING_WEIGHT: tl.constexpr,
    WRONG_ROW_STRIDE: tl.constexpr,
    UNMASKED_STORE: tl.constexpr,
):
    """RMSNorm forward of one row.

    Program ``r`` (``tl.program_id(0)``, grid ``(rows,)``) owns logical row ``r``: it reads
    ``x[r, 0:width]`` and all of ``weight``, and writes ``y[r, 0:width]``; nothing else.

    Pointers (element units, columns contiguous):
      x_ptr: input, row ``r`` starts at ``x_ptr + r * x_row_stride``; fp32, fp16 or bf16.
      w_ptr: weight, shape ``(width,)``, contiguous; the input dtype or fp32.
      y_ptr: output, row ``r`` starts at ``y_ptr + r * y_row_stride``; the input dtype.

    Runtime scalars (never constexpr, so a new width or stride does not recompile):
      width: true row length, 1 <= width <= BLOCK.
      x_row_stride, y_row_stride: row strides in elements, independent of each other.
      eps: float32, added to the mean square inside the square root.

    Constexpr: ``BLOCK`` = next_power_of_2(width), the lane count of the tile. The seven
    upper-case flags are the named mutants of docs/INTERFACES.md; all False is the real kernel.
    """
    # int64 row offsets: rows * stride overflows int32 past 2**31 elements (e.g. 32768 rows of
    # 65536 columns), and a wrapped offset reads another row silently.
    row = tl.program_id(0).to(tl.int64)
    if WRONG_ROW_STRIDE:
        # Mutant: addresses rows as if they were packed (stride == width), for input and output.
        x_row = x_ptr + row * width
        y_row = y_ptr + row * width
    else:
        x_row = x_ptr + row * x_row_stride
        y_row = y_ptr + row * y_row_stride

    cols = tl.arange(0, BLOCK)
    in_row = cols < width

    # Masked lanes load 0.0, so they add nothing to the square sum: lanes >= width never exist.
    if MASKED_TAIL_INCLUSION:
        # Mutant: no mask, the tail lanes read whatever follows the row (padding, the next row).
        x = tl.load(x_row + cols).to(tl.float32)
    else:
        x = tl.load(x_row + cols, mask=in_row, other=0.0).to(tl.float32)

    # Accumulate in float32 even for fp16/bf16 input: squares of a wide row span many binades
    # and an fp16 sum overflows at 65504 (a row of 4096 values of magnitude 4 already does).
    # (Mutant MISSING_SQUARE reduces x itself.)
    sum_squares = tl.sum(x, axis=0) if MISSING_SQUARE else tl.sum(x * x, axis=0)

    # Divide by the TRUE width, not BLOCK: the zero lanes of the tile are not part of the row.
    # width is exact in float32 (<= 2**24). (Mutant SUM_INSTEAD_OF_MEAN divides by 1.)
    mean_square = sum_squares if SUM_INSTEAD_OF_MEAN else sum_squares / width

    # eps sits inside the square root: an all-zero row gives rsqrt(eps), finite.
    # (Mutant MISSING_EPSILON drops it: rsqrt(0) = inf, and 0 * inf = NaN on a zero row.)
    rrms = tl.rsqrt(mean_square) if MISSING_EPSILON else tl.rsqrt(mean_square + eps)

    if MISSING_WEIGHT:
        y = x * rrms
    else:
        w = tl.load(w_ptr + cols, mask=in_row, other=0.0).to(tl.float32)
        y = x * rrms * w

    # One rounding to the output dtype (x's dtype, torch.nn.functional.rms_norm's rule), at the
    # very end: normalizing and weighting both happen in float32.
    y = y.to(y_ptr.dtype.element_ty)
    if UNMASKED_STORE:
        # Mutant: writes all BLOCK lanes, past the end of the row (the check-mode guard sees it).
        tl.store(y_row + cols, y)
    else:
        tl.store(y_row + cols, y, mask=in_row)


def block_for(width: int) -> int:
    """Lane count of the tile for a row of ``width`` elements: the next power of two."""
    return triton.next_power_of_2(width)


def num_warps_for(block: int) -> int:
    """Warps per program: enough threads that each holds at most ~128 lanes of the tile."""
    if block >= 8192:
        return 16
    if block >= 2048:
        return 8
    return 4


def mutant_flags(mutant: str | None) -> dict[str, bool]:
    """Constexpr keyword arguments selecting ``mutant`` (``None``: the real kernel)."""
    if mutant is not None and mutant not in KERNEL_MUTANTS:
        raise ValueError(
            f"mutant must be None or one of {', '.join(KERNEL_MUTANTS)}; got {mutant!r}"
        )
    return {name.upper(): name == mutant for name in KERNEL_MUTANTS}


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


def launch(
    x2d: torch.Tensor,
    weight: torch.Tensor,
    y2d: torch.Tensor,
    eps: float,
    *,
    mutant: str | None = None,
) -> tuple[int, int]:
    """Launch the kernel on already validated 2-D views; internal and testing entry point.

    ``x2d`` and ``y2d`` are ``(rows, width)`` views with unit column stride (any row strides),
    ``weight`` is ``(width,)`` contiguous. No checks beyond the mutant name: callers validate.
    Returns ``(block, num_warps)``.
    """
    rows, width = x2d.shape
    block = block_for(width)
    num_warps = num_warps_for(block)
    flags = mutant_flags(mutant)
    with _launch_guard(x2d.device):
        rms_norm_fwd_kernel[(rows,)](
            x2d,
            weight,
            y2d,
            width,
            x2d.stride(0),
            y2d.stride(0),
            float(eps),
            BLOCK=block,
            num_warps=num_warps,
            **flags,
        )
    return block, num_warps


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


def rms_norm(
    x: torch.Tensor,
    weight: torch.Tensor,
    eps: float = 1e-6,
    *,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """RMSNorm forward over the last dimension with the fused Triton kernel.

    ``y = x * rsqrt(mean(x**2, dim=-1, keepdim=True) + eps) * weight``, accumulated in float32
    and rounded once to ``x.dtype`` (``torch.nn.functional.rms_norm`` semantics).

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
        raise ValueError(f"x has {rows} rows; at most {MAX_ROWS} (one program per row)")
    x2d = _rows_view("x", x, width)

    if out is None:
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    else:
        _check_out(out, x, width)
    if rows == 0:
        return out
    y2d = _rows_view("out", out, width)
    launch(x2d, weight, y2d, eps_value)
    return out


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
