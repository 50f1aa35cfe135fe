"""The public door: ``kernels.rms_norm``, checked, planned, and traceable by torch.compile.

An eager call launches from its signature's plan (:mod:`kernels.plans`: the checks and the
layout once per signature, ``out=``'s included, then the compiled kernel directly); the first
call of a signature and every failing call run :func:`kernels.launcher.validate` (its messages,
its order).
Under ``torch.compile`` it is the ``torch.library`` op of :mod:`kernels.op`.
"""

from __future__ import annotations

import torch

from kernels.direct_launch import hooks_active
from kernels.launcher import EPS_MAX, EPS_MIN, launch, rows_view, validate
from kernels.op import traced_rms_norm
from kernels.plans import (
    INVARIANT_PLANS,
    PLANS,
    LaunchPlan,
    check_batch_invariant,
    current_device,
    current_stream,
    invariant_config,
    launch_canonical,
    out_allowed,
    planned_rms_norm,
    refuse_direct,
)

# Module-level names: the hot path reads each once, with no attribute lookup.
_is_compiling = torch.compiler.is_compiling
_empty_like = torch.empty_like
_Tensor = torch.Tensor
_PLANS = PLANS
_INVARIANT_PLANS = INVARIANT_PLANS
_current_device = current_device
_current_stream = current_stream
_hooks_active = hooks_active


def rms_norm(
    x: torch.Tensor,
    weight: torch.Tensor,
    eps: float = 1e-6,
    *,
    out: torch.Tensor | None = None,
    batch_invariant: bool = False,
) -> torch.Tensor:
    """RMSNorm forward over the last dimension with the fused Triton kernel.

    ``y = x * rsqrt(mean(x**2, dim=-1, keepdim=True) + eps) * weight``, accumulated in float32
    and rounded once to ``x.dtype`` (``torch.nn.functional.rms_norm`` semantics). The launch
    layout (rows per program, warps, column loop) is :func:`kernels.layout.choose_config`'s for
    the shape; with ``batch_invariant=True`` it is :func:`kernels.plans.invariant_config`'s for
    the width and dtype alone, so a row gets the same bits in every batch and at every place
    in it (the default's layout where x is 64 MiB or more, its peel ordered: such batches pay
    nothing for it where a 16-byte vector divides the width).

    Args:
        x: ``(..., width)`` float32/float16/bfloat16 tensor with contiguous columns
            (``x.stride(-1) == 1``); the leading dimensions are flattened into rows and must
            share one row stride (padded rows are fine) of at most ``2**31 - 1`` elements. CUDA,
            or CPU in interpreter mode.
        weight: ``(width,)`` tensor of ``x.dtype`` or float32, contiguous, on ``x``'s device.
        eps: finite real in ``[1e-12, 1e-2]``, passed to the kernel as float32.
        out: optional result tensor, shape and dtype of ``x``, on ``x``'s device, unit column
            stride and one row stride (at most ``2**31 - 1``). May be ``x`` itself (in place);
            no other overlap.
        batch_invariant: True or False; True launches the batch-invariant layout, on packed
            rows from 16-byte-aligned bases (a padded or offset ``x``, ``out`` or ``weight``
            is copied, and the result copied back: :func:`kernels.plans.launch_canonical`).

    Returns:
        The normalized tensor shaped like ``x`` (``out`` when given). Only the output is
        allocated; zero rows return an empty result without a launch. A signature (types,
        dtypes, devices, shapes, strides) that passed once launches from its plan
        (:mod:`kernels.plans`); under ``torch.compile`` the call is the custom op
        ``torch.ops.rmsnorm_inspector.rms_norm`` (:mod:`kernels.op`).

    Raises:
        TypeError: ``x``/``weight``/``out`` not tensors, unsupported dtypes, ``eps`` not a
            real, ``batch_invariant`` not a bool.
        ValueError: wrong device, shape, stride, width outside ``[1, MAX_WIDTH]``, too many
            rows, ``eps`` out of range, or an unusable ``out``.
    """
    # The planned door, inline: every call of a signature that passed once comes here.
    plans = _PLANS if batch_invariant is False else _INVARIANT_PLANS
    if (
        (batch_invariant is False or batch_invariant is True)
        and type(eps) is float
        and EPS_MIN <= eps <= EPS_MAX
        and isinstance(x, _Tensor)
        and isinstance(weight, _Tensor)
        and not _is_compiling()
    ):
        if out is None:
            plan = plans.get(
                (
                    x.shape, x.stride(), x.dtype, x.get_device(), weight.shape,
                    weight.stride(), weight.dtype, weight.get_device(),
                )
            )  # fmt: skip
            if plan is not None:
                y = (
                    _empty_like(x)
                    if plan.contiguous
                    else torch.empty(x.shape, dtype=x.dtype, device=x.device)
                )
                if _launch_planned(plan, x, weight, y, eps):
                    return y
        elif isinstance(out, _Tensor):
            plan = plans.get(
                (
                    x.shape, x.stride(), x.dtype, x.get_device(), weight.shape,
                    weight.stride(), weight.dtype, weight.get_device(), out.shape,
                    out.stride(), out.dtype, out.get_device(),
                )
            )  # fmt: skip
            # The one check that depends on more than the signature (x's storage).
            if (
                plan is not None
                and out_allowed(plan, x, out)
                and _launch_planned(plan, x, weight, out, eps)
            ):
                return out
    return _checked_rms_norm(x, weight, eps, out, batch_invariant)


def _launch_planned(
    plan: LaunchPlan, x: torch.Tensor, weight: torch.Tensor, y: torch.Tensor, eps: float
) -> bool:
    """Launch ``plan`` into ``y``: the compiled kernel directly where the plan has it and the
    pointers are 16-byte aligned on the current device with no launch hooks, else Triton's
    dispatch. False (nothing launched) where x or weight is not on the plan's device."""
    direct = plan.direct
    if direct is not None and x.is_cuda and weight.is_cuda:
        x_ptr, w_ptr, y_ptr = x.data_ptr(), weight.data_ptr(), y.data_ptr()
        if (
            not (x_ptr | w_ptr | y_ptr) & 15
            and _current_device() == direct.device
            and not _hooks_active()
        ):
            stream = _current_stream(direct.device)
            try:
                if direct.door is not None:
                    direct.door(stream, x_ptr, w_ptr, y_ptr, eps)
                else:
                    direct.run(
                        direct.grid, 1, 1, stream, direct.function, direct.packed_metadata,
                        None, None, None, x_ptr, w_ptr, y_ptr, direct.rows, direct.width_v,
                        direct.x_stride_v, direct.y_stride_v, eps, *direct.tail,
                    )  # fmt: skip
                return True
            except TypeError as err:  # refused before any launch: no such arguments
                refuse_direct(plan, err)
    return plan.dispatch(x, weight, y, eps)


def _checked_rms_norm(
    x: object, weight: object, eps: object, out: object, batch_invariant: object
) -> torch.Tensor:
    """Every call without a plan: torch.compile tracing, a new signature, an error."""
    mode = check_batch_invariant(batch_invariant)
    if _is_compiling():
        return traced_rms_norm(x, weight, eps, out, mode)
    planned = planned_rms_norm(x, weight, eps, out, mode)
    if planned is not None:
        return planned
    checked = validate(x, weight, eps, out)
    if out is None:
        out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if checked.rows == 0:
        return out
    y2d = rows_view("out", out, checked.width)
    if mode:
        config = invariant_config(checked.width, x.element_size())
        launch_canonical(checked.x2d, weight, y2d, checked.eps, config=config)
    else:
        launch(checked.x2d, weight, y2d, checked.eps)
    return out
