"""A tool run as a child process under a time bound that ends it and everything it started.

``compute-sanitizer`` and ``ncu`` each start a Python process of their own below them;
``subprocess.run``'s timeout kills only the tool, and the Python under it would live on, holding
the GPU. Here the tool runs in a session of its own, so a timeout kills its whole process group.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence


def run_bounded(
    command: Sequence[str],
    *,
    timeout_s: float,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` to its end, its output captured as text (undecodable bytes replaced).

    Raises:
        subprocess.TimeoutExpired: it ran past ``timeout_s``; it and every process it started
            in its session are killed first.
        OSError: it could not start (no such file, not executable).
    """
    with subprocess.Popen(
        list(command),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        cwd=cwd,
        env=None if env is None else dict(env),
        start_new_session=True,
    ) as child:
        try:
            stdout, stderr = child.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            child.communicate()
            raise
    return subprocess.CompletedProcess(list(command), child.returncode, stdout, stderr)
