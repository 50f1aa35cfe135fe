"""A tool run as a child process under a time bound that ends it and everything it started.

``compute-sanitizer`` and ``ncu`` each start a Python process of their own below them;
``subprocess.run``'s timeout kills only the tool, and the Python under it would live on, holding
the GPU. Here the tool runs in a session of its own, so a timeout kills its whole process group.

That session also takes the tool out of its caller's process group: a caller killed from
outside (the window's job host ends a cancelled job's group) would leave it running.
``die_with_parent`` asks Linux to kill the tool when the thread that started it ends
(``prctl(PR_SET_PDEATHSIG, SIGKILL)``, set by a small exec wrapper, which keeps it across the
``exec``); elsewhere the request is a no-op.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence

#: ``python -c WRAPPER COMMAND...``: ask for SIGKILL when the parent ends, then exec COMMAND.
#: The parent may already be gone by then (its pid is no longer ours): exit at once.
_DIE_WITH_PARENT = (
    "import ctypes, os, signal, sys\n"
    "parent = int(sys.argv[1])\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)\n"
    "if os.getppid() != parent:\n"
    "    sys.exit(137)\n"
    "try:\n"
    "    os.execvp(sys.argv[2], sys.argv[2:])\n"
    "except OSError as err:\n"
    "    print(f'cannot start {sys.argv[2]}: {err}', file=sys.stderr)\n"
    "    sys.exit(127)\n"
)


def run_bounded(
    command: Sequence[str],
    *,
    timeout_s: float,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    die_with_parent: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` to its end, its output captured as text (undecodable bytes replaced).

    ``die_with_parent``: on Linux the tool is killed when the thread that started it ends (see
    the module docstring); its own children are not. A tool that cannot start then exits 127
    with the reason on stderr instead of raising OSError.

    Raises:
        subprocess.TimeoutExpired: it ran past ``timeout_s``; it and every process it started
            in its session are killed first.
        OSError: it could not start (no such file, not executable).
    """
    argv = list(command)
    if die_with_parent and sys.platform.startswith("linux"):
        argv = [sys.executable, "-c", _DIE_WITH_PARENT, str(os.getpid()), *argv]
    with subprocess.Popen(
        argv,
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
