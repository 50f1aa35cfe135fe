"""The process a user's code runs in: its environment and folder, its stderr drained, and how it
ended, in words. Everything that imports a user's kernel file (the kernel's child
:mod:`kernels.sandbox.usercode`, the TTIR compile :mod:`kernels.sandbox.user_ttir`) starts it
this way: the file sees none of this process's environment but what Triton, CUDA and torch read,
and writes its temporary files into a folder of its own that is removed after it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from typing import Any

from kernels.env import SOURCE_ROOT
from kernels.sandbox import reaper

# The variables a kernel's process gets from this one's environment (none else): Triton's,
# CUDA's and torch's settings, the loader's library path, the thread pools', and where programs
# and caches are found. Its working folder (and the kernel child's TMPDIR) is its own, and its
# PYTHONPATH starts with this project.
KERNEL_ENV_PREFIXES = ("TRITON_", "CUDA_", "NVIDIA_", "TORCH_", "PYTORCH_")
KERNEL_ENV_NAMES = ("PATH", "HOME", "LD_LIBRARY_PATH", "OMP_NUM_THREADS")
# Bytes of the user's stderr kept for a finding's detail.
STDERR_TAIL = 4000


class StderrTail:
    """Drains a child's stderr on a thread of its own and keeps its last ``keep`` bytes.

    A child whose stderr nobody reads blocks once the pipe's buffer (64 KiB on Linux) is full:
    a kernel that prints would look like a hang. Memory stays bounded however much it prints.
    """

    def __init__(self, stream: Any, keep: int = STDERR_TAIL) -> None:
        self._stream = stream
        self._keep = keep
        self._tail = bytearray()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._drain, name="kernel-stderr", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            while chunk := os.read(self._stream.fileno(), 1 << 16):
                with self._lock:
                    self._tail += chunk
                    del self._tail[: max(0, len(self._tail) - self._keep)]

    def text(self, wait_s: float = 2.0) -> str:
        """The kept tail, decoded, once the stream ended (or after ``wait_s``: a grandchild
        may still hold the pipe open)."""
        self._thread.join(wait_s)
        with self._lock:
            return bytes(self._tail).decode("utf-8", "replace")

    def close(self, wait_s: float = 2.0) -> None:
        """Close the stream once the drain has ended; a drain still blocked (a grandchild
        holding the pipe) keeps it, and its daemon thread ends with the process."""
        self._thread.join(wait_s)
        if not self._thread.is_alive():
            self._stream.close()


def kernel_env(pythonpath_first: str = "", *, compiled: bool | None) -> dict[str, str]:
    """The whole environment of a process that imports a user's kernel file: the variables
    :data:`KERNEL_ENV_PREFIXES` and :data:`KERNEL_ENV_NAMES` name and the interpreter's mode
    (nothing that differs per process, such as its folder: the fork server keeps one server per
    environment, :mod:`kernels.sandbox.forkserver`); ``PYTHONPATH`` is
    ``pythonpath_first`` (a mutated package copy, when given), this project's root, then this
    process's own ``PYTHONPATH`` (where the kernel's own packages may be)."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key in KERNEL_ENV_NAMES or key.startswith(KERNEL_ENV_PREFIXES)
    }
    if compiled is not None:  # None: this process's own TRITON_INTERPRET (kept above), if any
        env["TRITON_INTERPRET"] = "0" if compiled else "1"
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONUTF8"] = "1"
    first = [pythonpath_first] if pythonpath_first else []
    inherited = [os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []
    env["PYTHONPATH"] = os.pathsep.join([*first, str(SOURCE_ROOT), *inherited])
    return env


def how_ended(code: int, memory_limit_bytes: int) -> str:
    """A kernel process's end in words, from its reaper's exit status (``128 + N`` for signal N,
    ``reaper.MEMORY_EXIT`` past the memory limit)."""
    if code == reaper.MEMORY_EXIT and memory_limit_bytes:
        return f"over the memory limit of {memory_limit_bytes / 2**20:.0f} MiB (--kernel-memory)"
    if code < 0:
        return f"signal {signal.Signals(-code).name}"
    if code > 128 and (code - 128) in signal.valid_signals():
        return f"signal {signal.Signals(code - 128).name}"
    return f"exit status {code}"
