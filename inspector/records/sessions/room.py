"""Room for a session before it is written: the free disk space and the file-size limit.

HDF5 does not fail cleanly when a write runs out of room: on a full disk it can crash the
process, and past ``ulimit -f`` the kernel's SIGXFSZ ends it. So a save first estimates the
file's size from what it holds and refuses, in plain words, when the folder's file system or
the process's file-size limit has less room than that; and while it writes (on the main thread,
where signal handlers can be set) SIGXFSZ is ignored, so a write past the limit fails with
EFBIG instead of killing the program.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

# HDF5's own metadata (headers, B-trees, the 512-byte user block) on top of the data.
OVERHEAD_BYTES = 1 << 18
OVERHEAD_FACTOR = 1.25


def estimated_bytes(value: Any) -> int:
    """An upper estimate of the bytes ``value`` (a Session, or anything inside one) takes."""
    seen: set[int] = set()

    def size(item: Any) -> int:
        if id(item) in seen:
            return 0
        seen.add(id(item))
        if isinstance(item, np.ndarray):
            return int(item.nbytes) if item.dtype != object else sum(size(v) for v in item.flat)
        if isinstance(item, (str, bytes)):
            return len(item) * (4 if isinstance(item, str) and not item.isascii() else 1)
        if isinstance(item, dict):
            return sum(size(k) + size(v) for k, v in item.items())
        if isinstance(item, (list, tuple, set, frozenset)):
            return sum(size(v) for v in item)
        if dataclasses.is_dataclass(item) and not isinstance(item, type):
            return sum(size(getattr(item, f.name)) for f in dataclasses.fields(item))
        return 8

    return int(size(value) * OVERHEAD_FACTOR) + OVERHEAD_BYTES


def room_problem(folder: Path, needed: int) -> str:
    """Why ``needed`` bytes do not fit in ``folder`` ("" when they do)."""
    mib = 1 << 20
    with contextlib.suppress(OSError):
        free = shutil.disk_usage(folder).free
        if free < needed:
            return (
                f"No space left on device (about {needed / mib:.1f} MiB needed, "
                f"{free / mib:.1f} MiB free)"
            )
    with contextlib.suppress(ImportError, ValueError, OSError):
        import resource

        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        if limit != resource.RLIM_INFINITY and limit < needed:
            return (
                f"File too large for the file-size limit (ulimit -f: {limit} bytes; about "
                f"{needed} needed)"
            )
    return ""


@contextlib.contextmanager
def file_size_errors() -> Iterator[None]:
    """SIGXFSZ ignored while the block runs (main thread only): writes past the limit fail."""
    xfsz = getattr(signal, "SIGXFSZ", None)
    if xfsz is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(xfsz, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(xfsz, previous)
