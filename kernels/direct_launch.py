"""The direct launch: Triton's compiled kernel called without Triton's dispatch, the one place the
kernels go past Triton's supported API, because a measured gap says so.

Triton's generic dispatch (``JITFunction.run``) binds ~16 arguments and rebuilds its
specialization key on every call, which costs several times the GPU work of a small row; a
plan (:mod:`kernels.plans`) launches the compiled kernel it got back from its first dispatch
instead, through ``CompiledKernel.run`` or, one Python frame sooner, Triton's C launch function
(:func:`c_launch`). On an H200 (commit 0ece359, docs/benchmarks/README.md) that door put a plain
eager call at 12.8-15.7 us per call against ``torch.nn.functional.rms_norm``'s 14.1-17.2 us on
the ten launch-bound cases. What the C door passes is recorded from Triton's own
``CudaLauncher.__call__``, and only for the sources of that method this module knows
(:data:`KNOWN_LAUNCHER_CALLS`: Triton 3.6.0 and 3.7.1); any other Triton keeps
``CompiledKernel.run``, and a launcher that refuses the arguments turns the door off for good
(:data:`DIRECT_REFUSED`, :func:`kernels.plans.refuse_direct`).
"""

from __future__ import annotations

import copy
import hashlib
import inspect
from collections.abc import Callable
from typing import NamedTuple

from triton import knobs

from kernels.launcher import Launched

_RUNTIME_KNOBS = knobs.runtime
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


def direct_launch(launched: Launched, device: int) -> DirectLaunch | None:
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
