"""``torch.ops.rmsnorm_inspector.rms_norm``: the launcher as a ``torch.library`` Triton op.

``torch.compile`` cannot trace into a raw Triton launch, so a model that calls
``kernels.rms_norm`` under ``torch.compile`` reaches this op instead (:func:`traced_rms_norm`):
Dynamo records one op call, no graph break, and Inductor sees the Triton kernel inside it
(``wrap_triton``) and launches it from its own generated code, CUDA graphs included. The op
runs every check of :func:`kernels.launcher.validate` (on fake tensors while tracing, so a bad
argument fails at compile time with the same message) and the layout of
:func:`kernels.layout.choose_config` (:func:`kernels.plans.invariant_config` with
``batch_invariant=True``); shapes are specialized (each shape its own graph).
Under the Triton interpreter (no compiled Triton to hand Inductor) it is an opaque
``custom_op`` with a fake implementation instead: traced the same way, launched from Python.
"""

from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import is_fake
from torch.library import custom_op, triton_op, wrap_triton

from kernels import launcher
from kernels.layout import choose_config, sm_count_for
from kernels.mode import INTERPRETER, MODE
from kernels.plans import check_batch_invariant, invariant_config

OP_NAME = "rmsnorm_inspector::rms_norm"


def _wrap(kernel: object) -> object:
    return kernel if MODE == INTERPRETER else wrap_triton(kernel)


def _aligned(tensor: torch.Tensor) -> bool:
    """``tensor`` starts on a 16-byte boundary. A traced tensor has no address: its storage
    offset stands for it, since Inductor aligns every buffer it allocates and compiles a graph
    input off a boundary as unaligned (``V.graph.unaligned_buffers``), which that input's storage
    offset shows here."""
    if is_fake(tensor):
        return tensor.storage_offset() * tensor.element_size() % 16 == 0
    return tensor.data_ptr() % 16 == 0


def _canonical(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` packed and 16-byte aligned: itself if it is, else a packed copy."""
    if tensor.is_contiguous() and _aligned(tensor):
        return tensor
    return tensor.clone(memory_format=torch.contiguous_format)


def rms_norm_op(
    x: torch.Tensor, weight: torch.Tensor, eps: float, batch_invariant: bool = False
) -> torch.Tensor:
    """``kernels.rms_norm(x, weight, eps, batch_invariant=...)`` as an op: a new contiguous
    output of x's shape."""
    checked = launcher.validate(x, weight, eps)
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    rows, width = int(checked.rows), int(checked.width)
    if rows == 0:
        return out
    x2d = checked.x2d
    if batch_invariant:
        config = invariant_config(width, x.element_size())
        # Packed rows from aligned bases, as kernels.plans.launch_canonical launches the mode
        # (``out`` is new: aligned).
        x2d, weight = _canonical(x2d), _canonical(weight)
    else:
        config = choose_config(rows, width, x.element_size(), sm_count_for(x.device))
    # ``out`` is new, never x: said, not read from data pointers, which fake tensors lack.
    launcher.launch_kernel(
        x2d,
        weight,
        out.view(rows, width),
        checked.eps,
        config=config,
        wrap=_wrap,
        in_place=False,
    )
    return out


if MODE == INTERPRETER:
    _OP = custom_op(OP_NAME, rms_norm_op, mutates_args=())

    @_OP.register_fake
    def _fake(
        x: torch.Tensor, weight: torch.Tensor, eps: float, batch_invariant: bool = False
    ) -> torch.Tensor:
        launcher.validate(x, weight, eps)
        return torch.empty(x.shape, dtype=x.dtype, device=x.device)

else:
    _OP = triton_op(OP_NAME, rms_norm_op, mutates_args=())


def traced_rms_norm(
    x: torch.Tensor,
    weight: torch.Tensor,
    eps: object,
    out: torch.Tensor | None,
    batch_invariant: bool = False,
) -> torch.Tensor:
    """``kernels.rms_norm`` while torch.compile traces: the op, then a copy into ``out``."""
    mode = check_batch_invariant(batch_invariant)
    y = torch.ops.rmsnorm_inspector.rms_norm(x, weight, launcher.check_eps(eps), mode)
    if out is None:
        return y
    launcher.check_out_shape(out, x)
    return out.copy_(y)
