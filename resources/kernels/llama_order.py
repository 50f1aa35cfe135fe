"""A correct RMSNorm forward in Hugging Face's Llama order: the normalized row is rounded to the
input's dtype *before* the weight multiplies it, so in bfloat16 the last product is bf16 x bf16.

Compiled on a GPU this is right (and the check passes it). Triton's interpreter stores bfloat16 as
raw bits and, in some versions, multiplies those bits as integers: under ``TRITON_INTERPRET=1`` the
bfloat16 fixtures would fail for a reason that is the machine's, not the kernel's. The check
probes the interpreter first and reports those fixtures as *not judged* (exit 3), by cause.

    python main.py check --kernel resources/kernels/llama_order.py:rms_norm --out DIR
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _rms_norm_row(x_ptr, w_ptr, y_ptr, x_stride, y_stride, width, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < width
    x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=0.0).to(tl.float32)
    rrms = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / width + eps)
    normed = (x * rrms).to(y_ptr.dtype.element_ty)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * y_stride + cols, w * normed, mask=mask)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float, out: torch.Tensor | None = None):
    """``y = weight * (x * rsqrt(mean(x**2) + eps)).to(x.dtype)`` over the last dimension."""
    width = x.shape[-1]
    x2 = x.reshape(-1, width)
    y = torch.empty_like(x2) if out is None else out.reshape(-1, width)
    if x2.shape[0]:
        _rms_norm_row[(x2.shape[0],)](
            x2, weight, y, x2.stride(0), y.stride(0), width, eps,
            BLOCK=triton.next_power_of_2(width),
        )  # fmt: skip
    return y.reshape(x.shape) if out is None else out
