"""Run a script that compiles the bundled kernel for a GPU target in a child process: Triton's
mode is fixed once per process and the test session's is the interpreter, so code that calls
``triton.compile`` (TTGIR for sm_90, no GPU needed) runs in a child with TRITON_INTERPRET=0 and
the repository on its path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])


def last_line_of(code: str, timeout: float) -> str:
    """The last line ``code`` printed (its result, as JSON by convention); fails the test with
    the child's stderr when it exits with an error."""
    env = dict(os.environ, TRITON_INTERPRET="0")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, timeout=timeout, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.strip().splitlines()[-1]
