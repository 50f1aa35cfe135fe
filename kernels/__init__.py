"""The real Triton RMSNorm kernel, its checked launcher and compile info (torch + triton, no Qt).

Importing this package decides interpreter vs compiled mode once (``kernels.mode``), before the
kernels of ``kernels.jit`` are decorated. It imports nothing from ``oracle`` or ``inspector``.
Modules: ``jit`` (the ``@triton.jit`` kernels), ``layout`` (launch layouts and their rule),
``launcher`` (argument checks and the launch), ``api`` (``rms_norm``, the public door),
``plans`` (per-signature launch plans), ``op`` (the torch.library op for torch.compile),
``checked`` (guarded runs for the check), ``compile_info`` (the compiler's output), ``env``
(device and versions).
"""

from __future__ import annotations

# kernels.mode first: it sets TRITON_INTERPRET before anything imports triton.
from kernels.mode import MODE, MODE_REASON

# isort: split
from kernels.checked import POISON, CheckedRun, OobWrite, run_checked
from kernels.env import device_description, versions
from kernels.launcher import (
    EPS_MAX,
    EPS_MIN,
    KERNEL_MUTANTS,
    MAX_WIDTH,
    SUPPORTED_DTYPES,
    validate,
)
from kernels.layout import KERNEL_PATHS, LaunchConfig, choose_config

# isort: split
from kernels.api import rms_norm


def __getattr__(name: str) -> object:
    # compile_info is loaded on first use: it is also run as ``python -m kernels.compile_info``
    # (the interpreter-mode compile child), which must not find it already imported.
    if name in ("CompileInfo", "compiler_output"):
        from kernels import compile_info

        return getattr(compile_info, name)
    raise AttributeError(f"module 'kernels' has no attribute {name!r}")


__all__ = [
    "EPS_MAX",
    "EPS_MIN",
    "KERNEL_MUTANTS",
    "KERNEL_PATHS",
    "MAX_WIDTH",
    "MODE",
    "MODE_REASON",
    "POISON",
    "SUPPORTED_DTYPES",
    "CheckedRun",
    "CompileInfo",
    "LaunchConfig",
    "OobWrite",
    "choose_config",
    "compiler_output",
    "device_description",
    "rms_norm",
    "run_checked",
    "validate",
    "versions",
]
