"""Launch plans: what a launch of one argument signature needs, worked out once.

A user's model calls ``kernels.rms_norm`` with the same few shapes again and again. Everything the
checks and the layout depend on is a function of the arguments' *signature*: their types, dtypes,
devices, shapes and strides, ``out``'s too (``eps`` is checked on its own, and so is whether
``out`` shares x's storage: the one check that depends on more than the signature). The key holds
``get_device()``, an int that is cheap to hash; it is -1 for every non-CUDA device, so a plan
checks the device itself before any launch that is not a CUDA direct launch. ``kernels.rms_norm``
looks the signature up in :data:`PLANS` (inline: it is the hot path); a plan exists only for a
signature that passed :func:`kernels.launcher.validate` once, so a hit needs no check again, and a
miss goes to :func:`planned_rms_norm`, which makes the plan or returns None so the caller runs
every check, in order, with its message.

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

import copy
import dataclasses
import hashlib
import inspect
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

import torch
from triton import knobs

from kernels import launcher
from kernels.layout import LaunchConfig, choose_config, sm_count_for

# Plans kept at most; past it the cache starts again (a model uses a handful of signatures).
MAX_PLANS = 1024

PLANS: dict[tuple[Any, ...], LaunchPlan] = {}
_PLANS_LOCK = threading.Lock()
_RUNTIME_KNOBS = knobs.runtime
# The current CUDA device's index; torch's private getter skips current_device()'s lazy-init
# check (a plan with a direct launch exists only after CUDA is initialized).
current_device = getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device)
current_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
# Set when a direct launch is refused (a Triton whose launcher takes other arguments): from
# then on every launch goes through Triton's dispatch.
DIRECT_REFUSED: list[str] = []


def hooks_active() -> bool:
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
    stream; ``door`` (:func:`c_launch`), where there is one, calls Triton's C launch function
    with the same arguments ``run`` would pass it, one Python frame sooner."""

    run: Callable[..., object]
    device: int
    function: object
    packed_metadata: object
    grid: int
    rows: int
    width_v: int
    x_stride_v: int
    y_stride_v: int
    tail: tuple[object, ...]
    door: Callable[[int, int, int, int, float], None] | None = None


# sha256 of the stripped, non-empty lines of ``CudaLauncher.__call__`` in the Tritons whose
# launcher this module may call past that Python frame (3.6.0, 3.7.1). Any other source keeps
# ``CompiledKernel.run``: what that frame does besides passing arguments on is read, not
# guessed, only for these.
KNOWN_LAUNCHER_CALLS = frozenset(
    {
        "fdaa2b81f7f24ae9cc8cb0dd20c6ff9381060d41f2a0bd3f05c0084a96ba9dc9",
        "69884760f761be991a01503bf0f6ace822fdcc8d274301553165924f5883a72b",
    }
)


def launcher_call_digest(run: object) -> str | None:
    """The digest of ``type(run).__call__``'s source as :data:`KNOWN_LAUNCHER_CALLS` holds it."""
    try:
        lines = inspect.getsource(type(run).__call__).splitlines()
    except (OSError, TypeError):
        return None
    text = "\n".join(line.strip() for line in lines if line.strip())
    return hashlib.sha256(text.encode()).hexdigest()


class _Recorder:
    """Stands in for the C launch function: keeps the arguments of the one call it gets."""

    def __init__(self) -> None:
        self.args: tuple[object, ...] | None = None

    def __call__(self, *args: object) -> None:
        self.args = args


def c_launch(
    run: object, grid: int, function: object, packed: object, kernel_args: tuple[object, ...]
) -> Callable[[int, int, int, int, float], None] | None:
    """``door(stream, x_ptr, w_ptr, y_ptr, eps)``: Triton's C launch function called with what
    ``run`` (a ``CudaLauncher``) passes it for these arguments, without the Python frame.

    The arguments are recorded, not transcribed: ``type(run).__call__`` runs once on a copy of
    ``run`` whose C function is a recorder, with placeholders for the per-call values, and the
    door is generated from the recorded layout. Only for a ``__call__`` of
    :data:`KNOWN_LAUNCHER_CALLS` and kernels without scratch memory (what it would allocate is
    the only other thing it does there); None otherwise (the caller keeps ``run``).

    Args:
        run: ``CompiledKernel.run``.
        grid: programs of the launch.
        function, packed: ``CompiledKernel.function`` and ``.packed_metadata``.
        kernel_args: the kernel's arguments in order, with ``POINTERS`` and ``EPS`` standing
            for x, w, y and eps.
    """
    if launcher_call_digest(run) not in KNOWN_LAUNCHER_CALLS:
        return None
    if getattr(run, "global_scratch_size", 1) or getattr(run, "profile_scratch_size", 1):
        return None
    stream = object()
    proxy = copy.copy(run)
    recorder = _Recorder()
    proxy.launch = recorder
    type(run).__call__(proxy, grid, 1, 1, stream, function, packed, None, None, None, *kernel_args)
    if recorder.args is None:
        return None
    names = {id(stream): "stream", id(EPS): "eps"}
    names.update({id(p): n for p, n in zip(POINTERS, ("x_ptr", "w_ptr", "y_ptr"), strict=True)})
    constants: dict[str, object] = {"launch": run.launch}

    def expression(value: object) -> str:
        if id(value) in names:
            return names[id(value)]
        if type(value) is tuple and any(id(v) in names for v in value):
            return "(" + "".join(expression(v) + ", " for v in value) + ")"
        name = f"c{len(constants)}"
        constants[name] = value
        return name

    body = ", ".join(expression(value) for value in recorder.args)
    source = f"def door(stream, x_ptr, w_ptr, y_ptr, eps):\n    launch({body})\n"
    namespace: dict[str, object] = dict(constants)
    # The source holds only names made here; the values are bound in the namespace.
    exec(compile(source, "<kernels.plans c_launch>", "exec"), namespace)
    return namespace["door"]  # type: ignore[return-value]


# Placeholders for c_launch's per-call values.
POINTERS = (object(), object(), object())
EPS = object()


def _direct_launch(launched: launcher.Launched, device: int) -> DirectLaunch | None:
    """The direct launch of ``launched``'s compiled kernel; None where it has no such door."""
    compiled = launched.compiled
    if compiled is None or not all(
        hasattr(compiled, name) for name in ("run", "function", "packed_metadata")
    ):
        return None
    door = None
    if not DIRECT_REFUSED:
        kernel_args = (*POINTERS, launched.rows, *launched.scalars, EPS, *launched.tail)
        try:
            door = c_launch(
                compiled.run, launched.grid, compiled.function, compiled.packed_metadata,
                kernel_args,
            )  # fmt: skip
        except Exception:  # any surprise in the recording: keep CompiledKernel.run
            door = None
    return DirectLaunch(
        compiled.run, device, compiled.function, compiled.packed_metadata, launched.grid,
        launched.rows, *launched.scalars, launched.tail, door,
    )  # fmt: skip


@dataclasses.dataclass
class LaunchPlan:
    """The launch of one argument signature.

    Attributes:
        rows, width: the problem.
        config: the layout (:func:`kernels.layout.choose_config`).
        contiguous: x is contiguous, so ``empty_like(x)`` is the output's layout.
        device: the device of x and weight.
        in_place: a plan of ``out=`` whose out has x's strides: out may be x itself.
        direct: the direct launch of Triton's compiled kernel for this signature with aligned
            pointers, once Triton's dispatch has launched it; None until then, and always on
            the interpreter.
    """

    rows: int
    width: int
    config: LaunchConfig
    contiguous: bool
    device: torch.device
    in_place: bool = False
    direct: DirectLaunch | None = None

    @property
    def device_index(self) -> int:
        """The CUDA device index (-1 on the CPU)."""
        return self.device.index if self.device.type == "cuda" else -1

    def dispatch(self, x: torch.Tensor, weight: torch.Tensor, y: torch.Tensor, eps: float) -> bool:
        """Launch through Triton's dispatch; keep its compiled kernel for the direct door when
        the three pointers are 16-byte aligned (Triton specialized it on that).

        Returns False, launching nothing, when ``x`` or ``weight`` is not on the plan's device:
        the key holds ``get_device()``, which is -1 for every non-CUDA device.
        """
        if x.device != self.device or weight.device != self.device:
            return False
        x2d = x.view(self.rows, self.width)
        y2d = launcher.rows_view("out", y, self.width)
        launched = launcher.launch_kernel(x2d, weight, y2d, eps, config=self.config)
        aligned = not (x.data_ptr() | weight.data_ptr() | y.data_ptr()) & 15
        if self.direct is None and self.device_index >= 0 and aligned and not DIRECT_REFUSED:
            self.direct = _direct_launch(launched, self.device_index)
        return True


def _new_plan(x: torch.Tensor, weight: torch.Tensor, out: torch.Tensor | None) -> LaunchPlan | None:
    """A plan for arguments that pass every check; None if they do not (the caller reports)."""
    try:
        checked = launcher.validate(x, weight, 1e-6, out)
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
        device=x.device,
        in_place=out is not None and out.stride() == x.stride(),
    )


def out_allowed(plan: LaunchPlan, x: torch.Tensor, out: torch.Tensor) -> bool:
    """What :func:`kernels.launcher.validate` checks of ``out`` beyond its signature: it is x
    itself (same offset; the plan says whether the strides agree) or shares no storage."""
    if out.data_ptr() == x.data_ptr():
        return plan.in_place
    return out.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()


def planned_rms_norm(
    x: object, weight: object, eps: object, out: object = None
) -> torch.Tensor | None:
    """``rms_norm(x, weight, eps, out=out)`` through a plan, made now if the signature has none;
    None where the full checks must run (``eps`` not a float in range, ``x``, ``weight`` or a
    given ``out`` not tensors, a signature that fails a check, an ``out`` sharing x's storage
    but not x itself, or no rows).

    ``kernels.rms_norm`` runs the hit path of this inline; this is its miss path (and the
    door of callers that want a plan without the public function's other doors).
    """
    if not (
        type(eps) is float
        and launcher.EPS_MIN <= eps <= launcher.EPS_MAX
        and isinstance(x, torch.Tensor)
        and isinstance(weight, torch.Tensor)
        and (out is None or isinstance(out, torch.Tensor))
    ):
        return None
    key: tuple[Any, ...] = (
        x.shape, x.stride(), x.dtype, x.get_device(), weight.shape, weight.stride(),
        weight.dtype, weight.get_device(),
    )  # fmt: skip
    if out is not None:
        key += (out.shape, out.stride(), out.dtype, out.get_device())
    plan = PLANS.get(key)
    if plan is None:
        plan = _new_plan(x, weight, out)
        if plan is None:
            return None
        with _PLANS_LOCK:
            if len(PLANS) >= MAX_PLANS:
                PLANS.clear()
            PLANS[key] = plan
    if out is not None:
        if not out_allowed(plan, x, out):
            return None
        y = out
    elif plan.contiguous:
        y = torch.empty_like(x)
    else:
        y = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    return y if plan.dispatch(x, weight, y, eps) else None


def refuse_direct(plan: LaunchPlan, err: Exception) -> None:
    """Turn the direct door off for good: Triton's compiled kernel refused its arguments
    (another Triton's launcher); ``plan`` and every later one use Triton's dispatch."""
    DIRECT_REFUSED.append(f"{type(err).__name__}: {err}")
    plan.direct = None


def clear_plans() -> None:
    """Forget every plan (tests; a process that changes Triton's cache)."""
    with _PLANS_LOCK:
        PLANS.clear()


def plan_count() -> int:
    """Plans held now."""
    return len(PLANS)


__all__ = [
    "DIRECT_REFUSED",
    "MAX_PLANS",
    "PLANS",
    "DirectLaunch",
    "LaunchPlan",
    "clear_plans",
    "current_device",
    "current_stream",
    "hooks_active",
    "out_allowed",
    "plan_count",
    "planned_rms_norm",
    "refuse_direct",
]
