"""Device identity and tool versions, for receipts and the window's status line; where the
``kernels`` package lives, for the child processes that import it."""

from __future__ import annotations

import platform
from pathlib import Path

import numpy as np
import torch
import triton

from kernels.mode import INTERPRETER, MODE

#: The folder that holds the ``kernels`` package: a child process puts it on its path, so it
#: imports this package whether or not it is installed.
SOURCE_ROOT = Path(__file__).resolve().parents[1]


def device_description(device: torch.device | str | None = None) -> str:
    """Human-readable identity of the device the kernel runs on.

    Args:
        device: a torch device (or its name); None means where ``kernels.rms_norm`` runs by
            default: the current CUDA device when compiled, the CPU under the interpreter.

    Returns:
        e.g. ``"NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB, CUDA 12.8)"`` or
        ``"cpu (Triton interpreter)"``.
    """
    if device is None:
        device = "cuda" if MODE != INTERPRETER and torch.cuda.is_available() else "cpu"
    device = torch.device(device)
    if device.type != "cuda":
        processor = platform.processor() or platform.machine()
        return f"cpu (Triton interpreter; {processor})" if processor else "cpu (Triton interpreter)"
    props = torch.cuda.get_device_properties(device)
    memory_gib = props.total_memory / 2**30
    suffix = " under the Triton interpreter" if MODE == INTERPRETER else ""
    return (
        f"{props.name} (sm_{props.major}{props.minor}, {props.multi_processor_count} SMs, "
        f"{memory_gib:.1f} GiB, CUDA {torch.version.cuda}){suffix}"
    )


def versions() -> dict[str, str]:
    """Versions of the software stack that produced a result."""
    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cuda": str(torch.version.cuda),
        "mode": MODE,
    }
