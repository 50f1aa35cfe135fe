"""A correct RMSNorm forward whose reciprocal square root is libdevice's ``rsqrt`` (as several
public kernels write it). Compiled on a GPU it is right; Triton's interpreter has no libdevice, so
on a CPU the check reports its fixtures *not judged* (exit 3) and names libdevice as the cause.

    python main.py check --kernel resources/kernels/libdevice_rsqrt.py:rms_norm --out DIR
"""

import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _rms_norm_row(x_ptr, w_ptr, y_ptr, x_stride, y_stride, width, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < width
    x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=0.0).to(tl.float32)
    rrms = libdevice.rsqrt(tl.sum(x * x, axis=0) / width + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * y_stride + cols, (x * rrms * w).to(y_ptr.dtype.element_ty), mask=mask)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float, out: torch.Tensor | None = None):
    """``y = x * rsqrt(mean(x**2) + eps) * weight`` over the last dimension."""
    width = x.shape[-1]
    x2 = x.reshape(-1, width)
    y = torch.empty_like(x2) if out is None else out.reshape(-1, width)
    if x2.shape[0]:
        _rms_norm_row[(x2.shape[0],)](
            x2, weight, y, x2.stride(0), y.stride(0), width, eps,
            BLOCK=triton.next_power_of_2(width),
        )  # fmt: skip
    return y.reshape(x.shape) if out is None else out
