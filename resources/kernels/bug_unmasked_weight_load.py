"""A planted bug: the tutorial kernel with its weight load unmasked. Lanes past the width read
past the end of the weight; they are never stored, so the output is right and only the reads
are wrong (on a GPU they may touch another allocation or fault). Under the interpreter the check
watches every load (kernels.instruments.guarded_reads) and fails it: "out-of-bounds read(s): 58 of
weight (lane 70 (past the width), ...)"; on a GPU, compute-sanitizer's memcheck sees reads past the
allocation.

    python main.py check --kernel resources/kernels/bug_unmasked_weight_load.py:rms_norm --out DIR
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
    mean_square = tl.sum(x * x, axis=0) / width
    rrms = 1.0 / tl.sqrt(mean_square + eps)
    w = tl.load(w_ptr + cols).to(tl.float32)  # the bug: no mask
    y = x * rrms * w
    tl.store(y_ptr + row * y_stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float, out: torch.Tensor | None = None):
    """``y = x * rsqrt(mean(x**2) + eps) * weight`` over the last dimension."""
    width = x.shape[-1]
    x2 = x.reshape(-1, width)
    y = torch.empty_like(x2) if out is None else out.reshape(-1, width)
    if x2.shape[0]:
        _rms_norm_row[(x2.shape[0],)](
            x2,
            weight,
            y,
            x2.stride(0),
            y.stride(0),
            width,
            eps,
            BLOCK=triton.next_power_of_2(width),
        )
    return y.reshape(x.shape) if out is None else out
