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
from typing import Any

import torch

from kernels import launcher
from kernels.layout import LaunchConfig, choose_config, sm_count_for

# Plans kept at most; past it the cache starts again (a model uses a handful of signatures).
MAX_PLANS = 1024

_PLANS: dict[tuple[Any, ...], LaunchPlan] = {}
_PLANS_LOCK = threading.Lock()


def _hooks_active() -> bool:
    """Whether Triton launch hooks are set (a profiler): then Triton's own dispatch launches."""
    from triton import knobs

    for hook in (knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook):
        # Triton 3.6+ holds a HookChain (inactive while its list is empty); older ones None.
        if hook is not None and getattr(hook, "calls", True):
            return True
    return False


@dataclasses.dataclass
class LaunchPlan:
    """The launch of one argument signature.

    Attributes:
        rows, width: the problem.
        config: the layout (:func:`kernels.layout.choose_config`).
        contiguous: x is contiguous, so ``empty_like(x)`` is the output's layout.
        device_index: CUDA device index (-1 on the CPU).
        scalars: ``(width_v, x_stride_v, y_stride_v)`` of the contiguous output.
        compiled: Triton's compiled kernel for the signature with aligned pointers, once
            launched; None until then, and always on the interpreter.
        tail: the constexpr values in the kernel's parameter order (what Triton passes).
        grid: programs of the launch.
    """

    rows: int
    width: int
    config: LaunchConfig
    contiguous: bool
    device_index: int
    scalars: tuple[int, int, int] = (0, 0, 0)
    compiled: Any = None
    tail: tuple[Any, ...] = ()
    grid: int = 0

    def launch(self, x: torch.Tensor, weight: torch.Tensor, y: torch.Tensor, eps: float) -> None:
        """Launch on ``x`` and ``weight`` of this plan's signature into the contiguous ``y``."""
        compiled = self.compiled
        if (
            compiled is not None
            and not (x.data_ptr() | weight.data_ptr() | y.data_ptr()) & 15
            and torch.cuda.current_device() == self.device_index
            and not _hooks_active()
        ):
            stream = torch._C._cuda_getCurrentRawStream(self.device_index)
            compiled.run(
                self.grid, 1, 1, stream, compiled.function, compiled.packed_metadata,
                None, None, None, x, weight, y, self.rows, *self.scalars, eps, *self.tail,
            )  # fmt: skip
            return
        self._dispatch(x, weight, y, eps)

    def _dispatch(self, x: torch.Tensor, weight: torch.Tensor, y: torch.Tensor, eps: float) -> None:
        """Launch through Triton's dispatch; keep its compiled kernel if the direct door can use
        it."""
        x2d, y2d = x.view(self.rows, self.width), y.view(self.rows, self.width)
        launched = launcher.launch_kernel(x2d, weight, y2d, eps, config=self.config)
        if (
            launched.compiled is not None
            and self.device_index >= 0
            and not (x.data_ptr() | weight.data_ptr() | y.data_ptr()) & 15
            and all(hasattr(launched.compiled, name) for name in ("run", "function"))
        ):
            self.scalars = launched.scalars
            self.tail = launched.tail
            self.grid = launched.grid
            self.compiled = launched.compiled


def _signature(x: torch.Tensor, weight: torch.Tensor) -> tuple[Any, ...]:
    return (
        x.shape, x.stride(), x.dtype, x.device, weight.shape, weight.stride(), weight.dtype,
        weight.device,
    )  # fmt: skip


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

    None: ``x`` or ``weight`` not tensors, ``eps`` not a float in range, a signature that fails
    a check, no rows, or torch.compile tracing (it goes through the custom op).
    """
    if not (
        isinstance(x, torch.Tensor)
        and isinstance(weight, torch.Tensor)
        and type(eps) is float
        and launcher.EPS_MIN <= eps <= launcher.EPS_MAX
    ):
        return None
    key = _signature(x, weight)
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
    plan.launch(x, weight, y, eps)
    return y


def clear_plans() -> None:
    """Forget every plan (tests; a process that changes Triton's cache)."""
    with _PLANS_LOCK:
        _PLANS.clear()


def plan_count() -> int:
    """Plans held now."""
    return len(_PLANS)


__all__ = ["MAX_PLANS", "LaunchPlan", "clear_plans", "plan_count", "planned_rms_norm"]
