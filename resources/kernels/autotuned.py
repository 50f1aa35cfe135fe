"""A correct RMSNorm forward that lets ``@triton.autotune`` pick its warps, and a row loop whose
chunk is a config too: each config is a launch layout of its own. The check proves every config
(pinned one at a time: no benchmark, which the interpreter could not run anyway) and lists them in
the receipt; a config that computes wrong fails its fixture by name.

    python main.py check --kernel resources/kernels/sandbox/autotuned.py:rms_norm --out DIR
"""

import torch
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"CHUNK": 64}, num_warps=1),
        triton.Config({"CHUNK": 256}, num_warps=2),
        triton.Config({"CHUNK": 1024}, num_warps=4),
    ],
    key=["width"],
)
@triton.jit
def _rms_norm_row(x_ptr, w_ptr, y_ptr, x_stride, y_stride, width, eps, CHUNK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([CHUNK], dtype=tl.float32)
    for start in range(0, width, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        x = tl.load(x_ptr + row * x_stride + cols, mask=cols < width, other=0.0).to(tl.float32)
        acc += x * x
    rrms = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / width + eps)
    for start in range(0, width, CHUNK):
        cols = start + tl.arange(0, CHUNK)
        mask = cols < width
        x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x * rrms * w).to(y_ptr.dtype.element_ty)
        tl.store(y_ptr + row * y_stride + cols, y, mask=mask)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float, out: torch.Tensor | None = None):
    """``y = x * rsqrt(mean(x**2) + eps) * weight`` over the last dimension."""
    width = x.shape[-1]
    x2 = x.reshape(-1, width)
    y = torch.empty_like(x2) if out is None else out.reshape(-1, width)
    if x2.shape[0]:
        _rms_norm_row[(x2.shape[0],)](x2, weight, y, x2.stride(0), y.stride(0), width, eps)
    return y.reshape(x.shape) if out is None else out
