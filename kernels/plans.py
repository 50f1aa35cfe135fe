"""Launch plans: what a launch of one argument signature needs, worked out once.

A user's model calls ``kernels.rms_norm`` with the same few shapes again and again. Everything
the checks and the layout depend on is a function of the arguments' *signature*: their types,
dtypes, devices, shapes and strides (``eps`` is checked on its own, ``out`` always goes the full
way). :func:`planned_rms_norm` looks the signature up; a plan exists only for a signature that
passed :func:`kernels.launcher.validate` once, so a hit needs no check again and a miss (or any
argument outside the cache's reach) returns None and the caller runs every check, in order,
with its message.

On a CUDA device a plan also holds the compiled kernel that Triton chose for the signature (its
first launch goes through Triton's dispatch and hands it back) and launches it directly:
Triton's generic dispatch binds ~16 arguments and rebuilds its specialization key on every
call, which costs several times the GPU work of a small row. The plan's key is at least as fine
as Triton's specialization (integers: from the shape and strides; pointers: only launches
whose three pointers are 16-byte aligned take the direct door), so the kernel launched is the
one Triton would pick. Launch hooks (profilers), another current device or an unaligned pointer
go through Triton's dispatch instead.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

import torch
from triton import knobs

from kernels import launcher
from kernels.layout import LaunchConfig, choose_config, sm_count_for

# Plans kept at most; past it the cache starts again (a model uses a handful of signatures).
MAX_PLANS = 1024

_PLANS: dict[tuple[Any, ...], LaunchPlan] = {}
_PLANS_LOCK = threading.Lock()
_RUNTIME_KNOBS = knobs.runtime
# The current CUDA device's index; torch's private getter skips current_device()'s lazy-init
# check (a plan with a direct launch exists only after CUDA is initialized).
_current_device = getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device)
_current_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
# Set when a direct launch is refused (a Triton whose launcher takes other arguments): from
# then on every launch goes through Triton's dispatch.
_DIRECT_REFUSED: list[str] = []


def _hooks_active() -> bool:
    """Whether Triton launch hooks are set (a profiler): then Triton's own dispatch launches."""
    enter = _RUNTIME_KNOBS.launch_enter_hook
    leave = _RUNTIME_KNOBS.launch_exit_hook
    # Triton 3.6+ holds a HookChain (inactive while its list is empty); older ones None.
    return (enter is not None and bool(getattr(enter, "calls", True))) or (
        leave is not None and bool(getattr(leave, "calls", True))
    )


class DirectLaunch(NamedTuple):
    """What a direct launch of Triton's compiled kernel passes: ``CompiledKernel.run``'s
    arguments (the ones ``CompiledKernel[grid](...)`` passes) less the pointers, eps and the
    stream."""

    run: Callable[..., object]
    function: object
    packed_metadata: object
    grid: int
    rows: int
    width_v: int
    x_stride_v: int
    y_stride_v: int
    tail: tuple[object, ...]


def _direct_launch(launched: launcher.Launched) -> DirectLaunch | None:
    """The direct launch of ``launched``'s compiled kernel; None where it has no such door."""
    compiled = launched.compiled
    if compiled is None or not all(
        hasattr(compiled, name) for name in ("run", "function", "packed_metadata")
    ):
        return None
    return DirectLaunch(
        compiled.run, compiled.function, compiled.packed_metadata, launched.grid, launched.rows,
        *launched.scalars, launched.tail,
    )  # fmt: skip


@dataclasses.dataclass
class LaunchPlan:
    """The launch of one argument signature.

    Attributes:
        rows, width: the problem.
        config: the layout (:func:`kernels.layout.choose_config`).
        contiguous: x is contiguous, so ``empty_like(x)`` is the output's layout.
        device_index: CUDA device index (-1 on the CPU).
        direct: the direct launch of Triton's compiled kernel for this signature with aligned
            pointers, once Triton's dispatch has launched it; None until then, and always on
            the interpreter.
    """

    rows: int
    width: int
    config: LaunchConfig
    contiguous: bool
    device_index: int
    direct: DirectLaunch | None = None

    def dispatch(self, x: torch.Tensor, weight: torch.Tensor, y: torch.Tensor, eps: float) -> None:
        """Launch through Triton's dispatch; keep its compiled kernel for the direct door when
        the three pointers are 16-byte aligned (Triton specialized it on that)."""
        x2d, y2d = x.view(self.rows, self.width), y.view(self.rows, self.width)
        launched = launcher.launch_kernel(x2d, weight, y2d, eps, config=self.config)
        aligned = not (x.data_ptr() | weight.data_ptr() | y.data_ptr()) & 15
        if self.direct is None and self.device_index >= 0 and aligned and not _DIRECT_REFUSED:
            self.direct = _direct_launch(launched)


def _new_plan(x: torch.Tensor, weight: torch.Tensor) -> LaunchPlan | None:
    """A plan for arguments that pass every check; None if they do not (the caller reports)."""
    try:
        checked = launcher.validate(x, weight)
    except (TypeError, ValueError):
        return None
    if checked.rows == 0:
        return None
    config = choose_config(checked.rows, checked.width, x.element_size(), sm_count_for(x.device))
    return LaunchPlan(
        rows=checked.rows,
        width=checked.width,
        config=config,
        contiguous=x.is_contiguous(),
        device_index=x.device.index if x.device.type == "cuda" else -1,
    )


def planned_rms_norm(x: object, weight: object, eps: object) -> torch.Tensor | None:
    """``rms_norm(x, weight, eps)`` through a plan, or None where the full checks must run.

    None: ``eps`` not a float in range, ``x`` or ``weight`` not tensors, a signature that fails
    a check, or no rows.
    """
    if not (
        type(eps) is float
        and launcher.EPS_MIN <= eps <= launcher.EPS_MAX
        and isinstance(x, torch.Tensor)
        and isinstance(weight, torch.Tensor)
    ):
        return None
    key = (
        x.shape, x.stride(), x.dtype, x.device, weight.shape, weight.stride(), weight.dtype,
        weight.device,
    )  # fmt: skip
    plan = _PLANS.get(key)
    if plan is None:
        plan = _new_plan(x, weight)
        if plan is None:
            return None
        with _PLANS_LOCK:
            if len(_PLANS) >= MAX_PLANS:
                _PLANS.clear()
            _PLANS[key] = plan
    if plan.contiguous:
        y = torch.empty_like(x)
    else:
        y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    direct = plan.direct
    if direct is not None:
        x_ptr, w_ptr, y_ptr = x.data_ptr(), weight.data_ptr(), y.data_ptr()
        device = plan.device_index
        if not (x_ptr | w_ptr | y_ptr) & 15 and _current_device() == device and not _hooks_active():
            # The pointers go as integers: Triton then skips its per-pointer driver query,
            # which the plan's device check makes redundant.
            try:
                direct.run(
                    direct.grid, 1, 1, _current_stream(device), direct.function,
                    direct.packed_metadata, None, None, None, x_ptr, w_ptr, y_ptr, direct.rows,
                    direct.width_v, direct.x_stride_v, direct.y_stride_v, eps, *direct.tail,
                )  # fmt: skip
                return y
            except TypeError as err:  # refused before any launch: the arguments did not parse
                _DIRECT_REFUSED.append(f"{type(err).__name__}: {err}")
                plan.direct = None
    plan.dispatch(x, weight, y, eps)
    return y


def clear_plans() -> None:
    """Forget every plan (tests; a process that changes Triton's cache)."""
    with _PLANS_LOCK:
        _PLANS.clear()


def plan_count() -> int:
    """Plans held now."""
    return len(_PLANS)


__all__ = [
    "MAX_PLANS",
    "DirectLaunch",
    "LaunchPlan",
    "clear_plans",
    "plan_count",
    "planned_rms_norm",
]
