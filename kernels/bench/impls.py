"""The implementations the benchmark measures, each prepared for one shape and dtype.

``copy`` (a device-to-device copy of the same bytes: the bandwidth ceiling), ``ours``
(``kernels.rms_norm``, the product launcher, its per-shape layout in the row's note),
``ours_invariant`` (``kernels.rms_norm(..., batch_invariant=True)``: what the mode costs),
``torch_eager`` (``F.rms_norm``), ``torch_compile`` (the same under
``torch.compile(dynamic=False)``, compiled once per shape, its compile time recorded apart),
``liger`` (Liger-Kernel, when it imports) and ``quack`` (QuACK's CuTe DSL RMSNorm, when it
imports). ``candidate``, a user's ``--kernel FILE.py:FUNCTION``, is prepared by
:mod:`kernels.bench.candidate` (it needs the file) and is in :data:`DISPLAY_ORDER` only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib
import importlib.metadata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from kernels.bench.parity import make_parity_input, make_weight
from kernels.bench.shapes import Shape
from kernels.bench.timing import first_call_seconds

# The built-in implementations, in display order; "copy" is the ceiling, measured first.
IMPLEMENTATIONS = (
    "copy", "ours", "ours_invariant", "torch_eager", "torch_compile", "liger", "quack",
)  # fmt: skip
#: Every implementation a record can hold, in the order runs, tables and plots use: the
#: built-in ones and, after ``ours``, the ``candidate`` of ``--kernel``.
DISPLAY_ORDER = (
    "copy", "ours", "ours_invariant", "candidate", "torch_eager", "torch_compile", "liger",
    "quack",
)  # fmt: skip
#: The modules whose source a timing of ``ours`` measures (their sha256 goes into the record).
OURS_MODULES = (
    "kernels.jit.parts",
    "kernels.jit",
    "kernels.jit.loop",
    "kernels.layout",
    "kernels.launcher",
    "kernels.plans",
    "kernels.api",
)

CallFn = Callable[[torch.Tensor, torch.Tensor, "torch.Tensor | None"], torch.Tensor]


@dataclasses.dataclass
class Prepared:
    """An implementation ready for one shape and dtype.

    ``call(x, weight, dst)`` returns the output; ``dst`` is a preallocated destination used by
    the copy ceiling only. ``steady()`` is entered around every timed region (torch.compile
    uses it to turn a recompilation into an error instead of a silent eager fallback).
    ``time_if_wrong`` False: an output that fails parity is recorded and never timed (the
    user's kernel: a wrong kernel may also store where it must not).
    """

    call: CallFn
    compile_s: float | None = None
    needs_dst: bool = False
    steady: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext
    note: str = ""
    time_if_wrong: bool = True


Preparer = Callable[[Shape, torch.dtype, float, torch.device], Prepared]


class ImplementationUnavailable(RuntimeError):
    """The implementation cannot run here at all (module missing); recorded once, not per row."""


def _prepare_copy(shape: Shape, dtype: torch.dtype, eps: float, device: torch.device) -> Prepared:
    def call(x: torch.Tensor, weight: torch.Tensor, dst: torch.Tensor | None) -> torch.Tensor:
        if dst is None:  # the harness always passes one to needs_dst implementations
            raise ValueError("copy needs a destination buffer")
        return dst.copy_(x)

    return Prepared(call=call, needs_dst=True, note="device-to-device copy x -> y (ceiling)")


def _prepare_ours(
    shape: Shape, dtype: torch.dtype, eps: float, device: torch.device, invariant: bool = False
) -> Prepared:
    try:
        from kernels import rms_norm
        from kernels.layout import choose_config, sm_count_for
        from kernels.plans import invariant_config
    except ImportError as err:  # pragma: no cover - the package is ours
        raise ImplementationUnavailable(f"kernels.rms_norm does not import: {err}") from err

    def call(x: torch.Tensor, weight: torch.Tensor, dst: torch.Tensor | None) -> torch.Tensor:
        return rms_norm(x, weight, eps, batch_invariant=invariant)

    itemsize = torch.empty((), dtype=dtype).element_size()
    if invariant:
        config = invariant_config(shape.width, itemsize)
    else:
        config = choose_config(shape.rows, shape.width, itemsize, sm_count_for(device))
    layout = (
        f"{config.path}: block {config.block}, rows/program {config.rows_per_program}, "
        f"{config.num_warps} warps, {config.grid(shape.rows)} programs"
        + (", early weight" if config.w_early and not config.loop else "")
        + (", streaming stores" if config.loop and config.stream_store else "")
        + (", streaming x and y" if not config.loop and config.stream_store else "")
    )
    mode = ", batch_invariant=True" if invariant else ""
    return Prepared(call=call, note=f"kernels.rms_norm{mode} ({layout})")


def _prepare_ours_invariant(
    shape: Shape, dtype: torch.dtype, eps: float, device: torch.device
) -> Prepared:
    return _prepare_ours(shape, dtype, eps, device, invariant=True)


def _prepare_torch_eager(
    shape: Shape, dtype: torch.dtype, eps: float, device: torch.device
) -> Prepared:
    from torch.nn import functional

    normalized_shape = (shape.width,)

    def call(x: torch.Tensor, weight: torch.Tensor, dst: torch.Tensor | None) -> torch.Tensor:
        return functional.rms_norm(x, normalized_shape, weight, eps)

    return Prepared(call=call, note="torch.nn.functional.rms_norm")


def _raise_dynamo_limits() -> dict[str, int]:
    """Lift dynamo's recompile limits so no shape ever falls back to eager silently."""
    import torch._dynamo

    config = torch._dynamo.config
    raised = {}
    for name in (
        "cache_size_limit",
        "recompile_limit",
        "accumulated_cache_size_limit",
        "accumulated_recompile_limit",
    ):
        if hasattr(config, name):
            setattr(config, name, max(int(getattr(config, name)), 4096))
            raised[name] = int(getattr(config, name))
    return raised


def _prepare_torch_compile(
    shape: Shape, dtype: torch.dtype, eps: float, device: torch.device
) -> Prepared:
    import torch._dynamo
    from torch.nn import functional

    # A fresh dynamo state per shape: compiled exactly once for this static shape, and the
    # limits lifted as well, so a recompile can never hit a limit and fall back to eager.
    torch._dynamo.reset()
    _raise_dynamo_limits()
    normalized_shape = (shape.width,)

    def rms_norm_eager(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return functional.rms_norm(x, normalized_shape, weight, eps)

    compiled = torch.compile(rms_norm_eager, dynamic=False, fullgraph=True)

    def call(x: torch.Tensor, weight: torch.Tensor, dst: torch.Tensor | None) -> torch.Tensor:
        return compiled(x, weight)

    generator = torch.Generator(device=device).manual_seed(1234)
    example = make_parity_input(shape, dtype, device, generator=generator)
    weight = make_weight(shape.width, dtype, device, generator=generator)
    compile_s = first_call_seconds(lambda: compiled(example, weight), device)

    def steady() -> contextlib.AbstractContextManager[Any]:
        set_stance = getattr(torch.compiler, "set_stance", None)
        if set_stance is None:  # pragma: no cover - torch < 2.6
            return contextlib.nullcontext()
        return set_stance("fail_on_recompile")

    return Prepared(
        call=call,
        compile_s=compile_s,
        steady=steady,
        note="torch.compile(F.rms_norm, dynamic=False, fullgraph=True), fresh per shape; "
        "timed under set_stance('fail_on_recompile')",
    )


def _prepare_liger(shape: Shape, dtype: torch.dtype, eps: float, device: torch.device) -> Prepared:
    try:
        from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    except Exception as err:  # ImportError, or a Liger that fails on this torch/triton
        raise ImplementationUnavailable(f"liger_kernel does not import: {err}") from err

    def call(x: torch.Tensor, weight: torch.Tensor, dst: torch.Tensor | None) -> torch.Tensor:
        # Liger's defaults (offset 0, casting_mode "llama"), the way LigerRMSNorm calls it.
        return LigerRMSNormFunction.apply(x, weight, eps)

    return Prepared(call=call, note="liger_kernel LigerRMSNormFunction (llama casting)")


def _prepare_quack(shape: Shape, dtype: torch.dtype, eps: float, device: torch.device) -> Prepared:
    try:
        from quack.rmsnorm import rmsnorm_fwd
    except Exception as err:  # ImportError, or CUTLASS DSL failing to load (no driver, no GPU)
        raise ImplementationUnavailable(f"quack does not import: {err}") from err

    def call(x: torch.Tensor, weight: torch.Tensor, dst: torch.Tensor | None) -> torch.Tensor:
        # rmsnorm_fwd returns (out, residual_out, rstd); without a residual or store_rstd only
        # `out` is written. fp32 math, one rounding to x's dtype; compiled once per width/dtype.
        return rmsnorm_fwd(x, weight, eps=eps)[0]

    return Prepared(call=call, note="quack.rmsnorm.rmsnorm_fwd(x, weight, eps=eps)[0]")


PREPARERS: dict[str, Preparer] = {
    "copy": _prepare_copy,
    "ours": _prepare_ours,
    "ours_invariant": _prepare_ours_invariant,
    "torch_eager": _prepare_torch_eager,
    "torch_compile": _prepare_torch_compile,
    "liger": _prepare_liger,
    "quack": _prepare_quack,
}


def implementation_info(name: str) -> dict[str, Any]:
    """Version and availability of one implementation (without running it).

    Args:
        name: one of :data:`IMPLEMENTATIONS`.

    Returns:
        ``{"name", "available"}`` plus a version (for ``quack`` also the CUTLASS DSL's), the
        source hash of ``ours``, or the reason it is unavailable.
    """
    info: dict[str, Any] = {"name": name}
    try:
        if name in ("ours", "ours_invariant"):
            # The kernels, the layout rule that picks their launch, and the launcher: what a
            # timing of ``ours`` depends on, hashed in this order.
            digest = hashlib.sha256()
            for module_name in OURS_MODULES:
                module = importlib.import_module(module_name)
                digest.update(Path(module.__file__ or "").read_bytes())
            info["source_sha256"] = digest.hexdigest()
            info["module"] = ", ".join(OURS_MODULES)
        elif name == "liger":
            import liger_kernel  # noqa: F401

            info["version"] = importlib.metadata.version("liger-kernel")
        elif name == "quack":
            import quack.rmsnorm  # noqa: F401

            info["version"] = importlib.metadata.version("quack-kernels")
            info["cutlass_dsl_version"] = importlib.metadata.version("nvidia-cutlass-dsl")
        elif name in ("torch_eager", "torch_compile"):
            info["version"] = torch.__version__
        info["available"] = True
    except Exception as err:
        info["available"] = False
        info["reason"] = f"{type(err).__name__}: {err}"
    return info
