"""A private copy of a session file, so that the child process that probes it and this process
that then reads it read the same bytes.

An untrusted file is read twice: once in a child (a crash inside HDF5 ends the child, not the
inspector) and once here. Between the two, whoever controls the folder could put another file
at the path, one the child never saw. So the file is opened once, checked to be a regular file
of at most :data:`MAX_SESSION_BYTES`, and copied through that one descriptor into a fresh folder
only this user can open (``tempfile.mkdtemp``: mode 0700); both reads go to the copy, which is
removed afterwards. Where the copy cannot be made (no room in the temp folder), the reads fall
back to the path itself, as before.

Qt-free: the standard library only.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

# Largest session file opened: a session holds at most oracle.limits' 4 Mi elements per array
# (32 MiB in float64) in a handful of arrays, receipts and IR texts; a file past this is not one.
MAX_SESSION_BYTES = 1 << 30

_CHUNK = 1 << 20


class SnapshotRefused(Exception):
    """The path is not a file a session can be (its message says why)."""


def _copy(fd: int, target: Path, limit: int) -> None:
    with open(target, "wb") as out:
        copied = 0
        while chunk := os.read(fd, _CHUNK):
            copied += len(chunk)
            if copied > limit:
                raise SnapshotRefused(f"it grew past {limit} bytes while it was read")
            out.write(chunk)


@contextlib.contextmanager
def snapshot(source: Path, limit: int | None = None) -> Iterator[Path]:
    """A private copy of ``source`` for the block (``source`` itself where none can be made).

    Raises:
        SnapshotRefused: not a regular file, or larger than ``limit`` bytes
            (:data:`MAX_SESSION_BYTES` by default).
        OSError: ``source`` cannot be opened.
    """
    limit = MAX_SESSION_BYTES if limit is None else limit
    # O_NONBLOCK: opening a FIFO for reading never waits for a writer.
    fd = os.open(source, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    folder: str | None = None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SnapshotRefused("not a regular file (a FIFO, a device or a folder)")
        if info.st_size > limit:
            raise SnapshotRefused(f"{info.st_size} bytes, more than the {limit} a session holds")
        copy: Path | None = None
        try:
            folder = tempfile.mkdtemp(prefix="rmsnorm-session-")
            copy = Path(folder) / "session.h5"
            _copy(fd, copy, limit)
        except OSError:  # no room (or no temp folder): read the path itself, as before
            copy = None
        yield source if copy is None else copy
    finally:
        os.close(fd)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
