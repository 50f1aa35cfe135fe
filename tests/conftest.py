"""Test-wide environment: decided here before anything imports Qt or triton.

* Qt renders offscreen (no display on CI).
* Without a CUDA device the kernel runs under the Triton interpreter; ``kernels.mode`` makes
  the same choice, but it must be made before any ``@triton.jit`` decoration, so it is made here
  once for the whole session.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("PYQTGRAPH_QT_LIB", "PySide6")

if "TRITON_INTERPRET" not in os.environ:
    try:
        import torch

        if not torch.cuda.is_available():
            os.environ["TRITON_INTERPRET"] = "1"
    except ImportError:  # pragma: no cover - torch is a hard dependency
        os.environ["TRITON_INTERPRET"] = "1"


@pytest.fixture(scope="session")
def coverage_map() -> dict:
    """kernels.coverage.reachable() walked once per session (every width: ~20 s here)."""
    from kernels import coverage

    return coverage.reachable()
