"""The TTIR of a user's kernel file, compiled for sm_90 in a child process
(:mod:`kernels.instruments.launches` run there): the file is imported there, never here.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from kernels.sandbox.process import STDERR_TAIL, kernel_env


def compile_ttir(
    path: Path,
    launches: list[dict[str, Any]],
    *,
    expect: list[str] | None = None,
    texts: bool = True,
    pythonpath_first: str = "",
    timeout_s: float,
) -> list[dict[str, str]]:
    """TTIR of each recorded launch of the kernel file ``path``, compiled for sm_90 in a child
    process (``TRITON_INTERPRET=0``; the environment and folder of
    :func:`kernels.sandbox.process.kernel_env`). One ``{"digest", "text"}`` or ``{"error": why}``
    per launch; with ``expect`` (a digest per launch) only the digests, up to the first that
    differs or fails; without ``texts``, every digest and no text.

    Raises:
        RuntimeError: the child died, hung past ``timeout_s`` or answered nonsense.
    """
    from kernels.sandbox.bounded import run_bounded

    request = json.dumps(
        {"path": str(path), "launches": launches, "expect": expect, "texts": texts}
    )
    folder = tempfile.mkdtemp(prefix="rmsnorm-kernel-")
    try:
        # Bounded output: the kernel file is imported there, and its prints land on stderr.
        done = run_bounded(
            [sys.executable, "-m", "kernels.instruments.launches"],
            input=request.encode("utf-8"),
            env=kernel_env(pythonpath_first, compiled=True),
            cwd=folder,
            timeout_s=timeout_s,
            preloaded=True,
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"the TTIR compile took over {timeout_s:g} s") from None
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    try:
        results = json.loads(done.stdout)["ttir"]
    except (ValueError, KeyError, TypeError, RecursionError):
        tail = done.stderr[-STDERR_TAIL:].strip()
        raise RuntimeError(f"the TTIR compile ended (status {done.returncode}): {tail}") from None
    if not isinstance(results, list) or not 0 < len(results) <= len(launches):
        raise RuntimeError("the TTIR compile answered a different number of launches")
    return [r if isinstance(r, dict) else {"error": "no result"} for r in results]
