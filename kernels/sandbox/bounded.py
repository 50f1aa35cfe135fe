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
import threading
import time
from collections.abc import Mapping, Sequence
from typing import IO

from kernels.sandbox import forkserver

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


# Bytes of each output stream kept from its start and from its end: far past what the tools
# print, so a flood (a user's kernel printing in a loop under the tool) costs bounded memory.
KEEP_HEAD_BYTES = 16 * 2**20
KEEP_TAIL_BYTES = 16 * 2**20


class _Kept:
    """One pipe drained on a thread: its first and last bytes, and how many were dropped."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0
        self._stream = stream
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            while chunk := os.read(self._stream.fileno(), 1 << 16):
                room = KEEP_HEAD_BYTES - len(self.head)
                self.head += chunk[:room]
                self.tail += chunk[room:] if room > 0 else chunk
                extra = len(self.tail) - KEEP_TAIL_BYTES
                if extra > 0:
                    del self.tail[:extra]
                    self.dropped += extra

    def text(self) -> str:
        gap = f"\n[... {self.dropped} bytes not kept ...]\n" if self.dropped else ""
        head = bytes(self.head).decode("utf-8", "replace")
        return head + gap + bytes(self.tail).decode("utf-8", "replace")


def _feed(stream: IO[bytes], data: bytes) -> None:
    with contextlib.suppress(OSError, ValueError):
        stream.write(data)
    with contextlib.suppress(OSError, ValueError):
        stream.close()


def run_bounded(
    command: Sequence[str],
    *,
    timeout_s: float,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    die_with_parent: bool = False,
    input: bytes | None = None,
    preloaded: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` to its end, its output captured as text (undecodable bytes replaced).

    ``die_with_parent``: on Linux the tool is killed when the thread that started it ends (see
    the module docstring); its own children are not. A tool that cannot start then exits 127
    with the reason on stderr instead of raising OSError. ``input``: bytes for its stdin (else
    none). Of each output stream the first :data:`KEEP_HEAD_BYTES` and the last
    :data:`KEEP_TAIL_BYTES` are kept, the bytes between counted in a marker line.
    ``preloaded``: a ``python -m MODULE`` command is forked from a server that has torch and
    triton imported (:mod:`kernels.sandbox.forkserver`; it dies with that server, which ends with
    this process) instead of started from nothing.

    Raises:
        subprocess.TimeoutExpired: it ran past ``timeout_s`` (or its output stayed open that
            long); it and every process it started in its session are killed first.
        OSError: it could not start (no such file, not executable).
    """
    argv = list(command)
    if die_with_parent and sys.platform.startswith("linux"):
        argv = [sys.executable, "-c", _DIE_WITH_PARENT, str(os.getpid()), *argv]
    deadline = time.monotonic() + timeout_s
    stdin = subprocess.DEVNULL if input is None else subprocess.PIPE
    if preloaded and not die_with_parent:
        started = forkserver.popen(
            argv, env=os.environ if env is None else env, cwd=os.fspath(cwd or os.getcwd()),
            stdin=stdin,
        )  # fmt: skip
    else:
        started = subprocess.Popen(
            argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
            env=None if env is None else dict(env), start_new_session=True,
        )  # fmt: skip
    with started as child:
        if child.stdout is None or child.stderr is None:  # pragma: no cover - PIPE asked
            raise OSError("no output pipes")
        kept = (_Kept(child.stdout), _Kept(child.stderr))
        if input is not None and child.stdin is not None:
            # On a thread: a tool that never reads its input must not block this one.
            threading.Thread(target=_feed, args=(child.stdin, input), daemon=True).start()
        try:
            child.wait(timeout=max(0.0, deadline - time.monotonic()))
            for stream in kept:
                stream.thread.join(max(0.0, deadline - time.monotonic()))
            if any(stream.thread.is_alive() for stream in kept):
                raise subprocess.TimeoutExpired(argv, timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            for stream in kept:
                stream.thread.join(5)
            raise
    return subprocess.CompletedProcess(
        list(command), child.returncode, kept[0].text(), kept[1].text()
    )
