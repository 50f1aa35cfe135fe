"""Decide, once, whether the kernel runs compiled on a GPU or under the Triton interpreter.

Triton reads ``TRITON_INTERPRET`` when ``@triton.jit`` *decorates* a function, not when it is
launched. So this module must run before ``kernels.jit`` is imported; ``kernels/__init__``
imports it first. The rule:

1. an explicit ``TRITON_INTERPRET`` in the environment wins (``1/true/yes/on`` -> interpreter,
   anything else -> compiled);
2. otherwise a visible CUDA device means compiled;
3. otherwise set ``TRITON_INTERPRET=1`` and use the interpreter (CPU tensors, ~1 ms per program).

The decision is exposed as ``MODE`` and never changes for the life of the process.
"""

from __future__ import annotations

import os
import sys

import torch

INTERPRETER = "interpreter"
COMPILED = "compiled"

_ENV_VAR = "TRITON_INTERPRET"
_TRUE_WORDS = frozenset({"1", "true", "yes", "on", "y"})


def _decide_mode() -> tuple[str, str]:
    """Return ``(mode, reason)``, setting ``TRITON_INTERPRET=1`` when the interpreter is chosen."""
    explicit = os.environ.get(_ENV_VAR)
    if explicit is not None and explicit.strip() != "":
        if explicit.strip().lower() in _TRUE_WORDS:
            return INTERPRETER, f"{_ENV_VAR}={explicit!r} set in the environment"
        return COMPILED, f"{_ENV_VAR}={explicit!r} set in the environment"
    if torch.cuda.is_available():
        return COMPILED, "a CUDA device is available"
    os.environ[_ENV_VAR] = "1"
    return INTERPRETER, "no CUDA device: the Triton interpreter runs the kernel on the CPU"


def _refuse_half_interpreted_triton(mode: str) -> None:
    """Fail clearly if triton was imported before the interpreter switch was set.

    ``triton.language``'s own jit helpers (``tl.sum``...) are decorated when triton is imported;
    if that happened without ``TRITON_INTERPRET=1`` they cannot run under the interpreter and
    every launch fails with an obscure "Cannot call @triton.jit'd outside of the scope" error.
    """
    language = sys.modules.get("triton.language")
    if mode != INTERPRETER or language is None:
        return
    from triton.runtime.jit import JITFunction

    if isinstance(getattr(language, "sum", None), JITFunction):
        raise ImportError(
            "triton was imported before kernels on a machine without CUDA, so it is not in "
            "interpreter mode; import kernels before triton, or set TRITON_INTERPRET=1 in the "
            "environment"
        )


MODE, MODE_REASON = _decide_mode()
_refuse_half_interpreted_triton(MODE)

if MODE == INTERPRETER:
    # One patch of triton.language per launch, not per helper call (same results, see there).
    from kernels import interpreter_calls

    interpreter_calls.install()
