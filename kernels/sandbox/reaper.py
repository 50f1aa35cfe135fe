"""A user's kernel runs under a reaper: a process between it and the inspector that outlives it
by moments, kills everything it started, and holds it to a memory limit.

A kernel is arbitrary code: it may start processes, put them in sessions of their own (``setsid``,
a double fork) so that no process-group kill reaches them, and allocate without bound.
:func:`supervise`, called first thing in a kernel's child process, forks: the forked process goes
on to run the kernel; this one becomes its reaper. The reaper is a *child subreaper*
(``PR_SET_CHILD_SUBREAPER``), so every process the kernel starts, however it detaches, stays
below it; it runs none of the kernel's code. It ends the whole tree when

- the kernel's process ends (what it left running is killed, then the reaper exits as it did),
- it is asked to (``SIGTERM``, ``SIGHUP``, ``SIGINT``: :func:`end_tree` sends ``SIGTERM``),
- its own parent is gone (the inspector killed: the reaper is re-parented, which it sees within
  :data:`POLL_S`, and ``PR_SET_PDEATHSIG`` sends it ``SIGTERM`` at once),
- the tree's memory passes the limit: the proportional set size (``Pss`` of
  ``/proc/PID/smaps_rollup``, so pages shared with the fork server count once) of every process
  below it, summed; it then exits with :data:`MEMORY_EXIT` after saying so on stderr.

Linux only (``/proc``, ``prctl``); elsewhere :func:`supervise` returns without forking.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time

#: How often the reaper looks at its parent and the tree's memory (a child's end wakes it at once).
POLL_S = 0.25
MEMORY_POLL_S = 0.25
#: The reaper's exit status when it ended the tree for its memory.
MEMORY_EXIT = 86
#: How long :func:`end_tree` waits for a reaper to end its tree before killing its group.
END_WAIT_S = 5.0

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


class _Stop(Exception):
    """A signal asked the reaper to end the tree."""


def _prctl(option: int, value: int) -> bool:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def available() -> bool:
    """Whether a reaper can run here (Linux with ``/proc``)."""
    return sys.platform.startswith("linux") and os.path.isdir("/proc/self")


def supervise(memory_limit_bytes: int) -> None:
    """Fork; return in the forked process (it runs the kernel) and never return in this one, which
    reaps as the module docstring says and exits as the kernel's process did. ``0``: no memory
    limit. Returns at once where :func:`available` is False."""
    if not available() or not _prctl(_PR_SET_CHILD_SUBREAPER, 1):
        return
    import resource  # Unix only, and only here

    # No core files: a kernel that aborts ends at once (a dump of a process with CUDA and torch
    # loaded takes seconds, and its end would be read as the reaper's kill), and leaves nothing.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    reaper, parent = os.getpid(), os.getppid()
    pid = os.fork()
    if pid == 0:
        _prctl(_PR_SET_CHILD_SUBREAPER, 0)
        _prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
        if os.getppid() != reaper:  # the reaper died before the line above
            os._exit(137)
        return
    os._exit(_reap(pid, parent, memory_limit_bytes))


def _reap(child: int, parent: int, limit: int) -> int:
    """The reaper's life: wait, watch, end the tree; returns the exit status to leave with."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):  # the protocol's ends are the kernel's: EOF must follow its death
        os.dup2(null, fd)

    def stop(*_: object) -> None:
        raise _Stop

    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, stop)
    _prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))
    # SIGCHLD held back and waited for: a child's end wakes the loop at once, and between ends
    # it sleeps POLL_S at a time instead of spinning.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    status: int | None = None
    over = 0
    next_memory = 0.0
    try:
        if os.getppid() != parent:
            raise _Stop
        while status is None:
            status = _reap_exited(child)
            if status is not None or os.getppid() != parent:
                break
            if limit and time.monotonic() >= next_memory:
                next_memory = time.monotonic() + MEMORY_POLL_S
                used = tree_memory(os.getpid())
                if used > limit:
                    over = used
                    break
            signal.sigtimedwait({signal.SIGCHLD}, POLL_S)
    except _Stop:
        pass
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, signal.SIG_IGN)
    ended = kill_below(os.getpid(), child)
    status = ended if status is None else status
    if over:
        with contextlib.suppress(OSError):
            os.write(
                2,
                (
                    f"\nthe kernel's processes used {over / 2**20:.0f} MiB, over the memory "
                    f"limit of {limit / 2**20:.0f} MiB: ended\n"
                ).encode(),
            )
        return MEMORY_EXIT
    if status is None:
        return 137
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.waitstatus_to_exitcode(status)


def _reap_exited(child: int) -> int | None:
    """Reap every ended process below (orphans come here); ``child``'s wait status if it ended."""
    found = None
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return found
        if pid == 0:
            return found
        if pid == child:
            found = status


def _parents() -> dict[int, int]:
    """Every process's parent, from ``/proc``."""
    parents = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rpartition(b")")[2].split()
            parents[int(name)] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
    return parents


def descendants(root: int) -> list[int]:
    """Every process below ``root``, parents before children."""
    children: dict[int, list[int]] = {}
    for pid, ppid in _parents().items():
        children.setdefault(ppid, []).append(pid)
    found, pending = [], list(children.get(root, []))
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending.extend(children.get(pid, []))
    return found


def process_memory(pid: int) -> int:
    """Bytes of ``pid``'s proportional set size (its resident size where ``Pss`` is unknown)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as handle:
            for line in handle:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open(f"/proc/{pid}/statm", "rb") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def tree_memory(root: int) -> int:
    """Bytes of every process below ``root``, summed (:func:`process_memory`)."""
    return sum(process_memory(pid) for pid in descendants(root))


def kill_below(root: int, child: int = -1, rounds: int = 200) -> int | None:
    """SIGKILL every process below ``root`` (this process) until none is left (a process forked
    meanwhile is found in the next round: below a subreaper it cannot leave the tree), reaping
    what ends; returns ``child``'s wait status when it was reaped here."""
    status = None
    for _ in range(rounds):
        living = [pid for pid in descendants(root) if not _zombie(pid)]
        if not living:
            break
        for pid in living:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        status = _first(status, _reap_exited(child))
        time.sleep(0.005)
    return _first(status, _reap_exited(child))


def _first(status: int | None, later: int | None) -> int | None:
    return later if status is None else status


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rpartition(b")")[2].split()[0] in (b"Z", b"X")
    except (OSError, IndexError):
        return True


def end_tree(child: object, wait_s: float = END_WAIT_S, grace_s: float = 0.0) -> None:
    """End a kernel's process (``subprocess.Popen`` or a fork server's child) and all it started:
    after ``grace_s`` for it to end by itself (one that closed its output is ending: its own end,
    a signal, is then what its reaper reports), ``SIGTERM`` to its reaper, which kills the tree
    and exits; a process that is still there after ``wait_s`` (no reaper, or a stuck one) has its
    process group killed."""
    pid = int(child.pid)  # type: ignore[attr-defined]
    if grace_s > 0:
        with contextlib.suppress(Exception):
            child.wait(grace_s)  # type: ignore[attr-defined]
    if child.poll() is None:  # type: ignore[attr-defined]
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        with contextlib.suppress(Exception):
            child.wait(wait_s)  # type: ignore[attr-defined]
    if child.poll() is None:  # type: ignore[attr-defined]
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    child.wait()  # type: ignore[attr-defined]
