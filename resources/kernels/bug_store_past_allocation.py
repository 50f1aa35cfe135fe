"""A planted bug (a demo for the device sanitizer): the tutorial kernel, writing into an output
it allocates itself (``out=`` is ignored), whose last row stores every lane of its power-of-two
tile: past the end of that allocation wherever the width is not a power of two. Every value it
returns is right, and the guard regions around ``out=`` never see the stray stores (they land
past a buffer the inspector did not make). ``compute-sanitizer --tool memcheck`` does: the check
on a GPU fails with its error count.

    python main.py check --kernel resources/kernels/bug_store_past_allocation.py:rms_norm \\
        --device cuda --out DIR

It refuses to run on a CPU: under the Triton interpreter the stray stores would land in the
process's own heap.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _rms_norm_row(x_ptr, w_ptr, y_ptr, x_stride, width, rows, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < width
    x = tl.load(x_ptr + row * x_stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean_square = tl.sum(x * x, axis=0) / width
    rrms = 1.0 / tl.sqrt(mean_square + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = x * rrms * w
    # The bug: the last row keeps every lane of the tile (the output is rows x width, packed).
    keep = mask | (row == rows - 1)
    tl.store(y_ptr + row * width + cols, y.to(y_ptr.dtype.element_ty), mask=keep)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float, out: torch.Tensor | None = None):
    if not x.is_cuda:
        raise RuntimeError("this planted bug stores past its own allocation: GPU only")
    width = x.shape[-1]
    x2 = x.reshape(-1, width)
    y = torch.empty((x2.shape[0], width), dtype=x.dtype, device=x.device)  # exactly rows x width
    if x2.shape[0]:
        _rms_norm_row[(x2.shape[0],)](
            x2, weight, y, x2.stride(0), width, x2.shape[0], eps,
            BLOCK=triton.next_power_of_2(width),
        )  # fmt: skip
    return y.reshape(x.shape)
