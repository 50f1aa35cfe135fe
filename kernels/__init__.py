"""The real Triton RMSNorm kernel, its checked launcher and compile info (torch + triton, no Qt).

Importing this package decides interpreter vs compiled mode once (``kernels.mode``), before the
kernels of ``kernels.jit`` are decorated. It imports nothing from ``oracle`` or ``inspector``.
Rooms, each importing only those after it (``pyproject.toml`` holds the contract): ``bench``
(the benchmark), ``sandbox`` (a user's kernel in a child process), ``instruments`` (checked runs,
coverage, invariance, compile info), the door (``api``: ``rms_norm``; ``op``: the torch.library
op for torch.compile; ``plans``: per-signature launch plans; ``direct_launch``: the compiled
kernel without Triton's dispatch; ``launcher``: argument checks and the launch; ``layout``: the
layout rule; ``env``, ``mode``) and ``jit`` (the ``@triton.jit`` family). This package's names
are its public face: the door's, and ``run_checked`` of the instruments.
"""

from __future__ import annotations

# kernels.mode first: it sets TRITON_INTERPRET before anything imports triton.
from kernels.mode import MODE, MODE_REASON

# isort: split
from kernels.env import device_description, versions
from kernels.instruments.checked import POISON, CheckedRun, OobWrite, run_checked
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
    # compile_info is loaded on first use: it is also run as ``python -m
    # kernels.instruments.compile_info`` (the interpreter-mode compile child), which must not find
    # it already imported.
    if name in ("CompileInfo", "compiler_output"):
        from kernels.instruments import compile_info

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
