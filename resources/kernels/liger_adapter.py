"""An adapter (a demo): Liger-Kernel's Triton RMSNorm forward behind the inspector's kernel
contract, so ``check``, ``mutate`` and ``bench --kernel`` can take it like any other kernel.

``rms_norm(x, weight, eps, out=None) -> y`` calls ``LigerRMSNormFunction.apply(x, weight, eps)``
with Liger's defaults (offset 0, casting mode "llama": the mean square and rrms in float32,
``x * rrms`` rounded to x's dtype, then multiplied by the weight in that dtype), as the
benchmark's ``liger`` row does. Liger makes ``x`` contiguous (a copy when rows are strided) and
allocates its output; with ``out=`` that output is copied into ``out``, an extra pass.

It runs on CUDA. Under the Triton interpreter (a CPU) Liger-Kernel 0.8.5's kernel fails on every
run: it calls ``eps.to(tl.float32)`` on its scalar arguments, which the interpreter (Triton 3.7)
passes as plain Python floats ("'float' object has no attribute 'to'").

Needs the ``liger-kernel`` package (not a dependency of the inspector)::

    pip install liger-kernel
    python main.py check --kernel resources/kernels/liger_adapter.py:rms_norm --out DIR
"""

import torch

try:
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction
except ImportError as err:
    raise ImportError(
        "liger_adapter.py needs the liger-kernel package (pip install liger-kernel); "
        f"importing liger_kernel failed: {err}"
    ) from None


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float, out: torch.Tensor | None = None):
    """``y = x * rsqrt(mean(x**2) + eps) * weight`` over the last dimension, by Liger."""
    y = LigerRMSNormFunction.apply(x, weight, eps)
    if out is None:
        return y
    out.copy_(y)
    return out
