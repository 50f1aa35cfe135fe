"""The one atomic write behind every record file (receipts, sessions, autosaves).

A reader of the target sees the previous file or the new one, never a half-written one: the new
content goes into a temp file in the target's own folder (same file system, so the rename is
atomic), is fsynced, gets the mode a plain ``open(path, "w")`` would have created, and is
renamed over the target; the folder is then fsynced so that the rename survives a crash.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def atomic_write(path: str | os.PathLike[str], write: Callable[[Path], None]) -> None:
    """Create or replace ``path`` with what ``write`` puts into a temp file beside it.

    Args:
        path: the file to create or replace; its folder must exist.
        write: fills the temp file at the path it is given (the file exists, empty and closed).

    Raises:
        OSError: the temp file cannot be created, synced or renamed.
        Exception: whatever ``write`` raises. In every failure the temp file is removed first
            and an existing ``path`` is left exactly as it was.
    """
    target = Path(path)
    handle, temp_name = tempfile.mkstemp(
        prefix=f".{target.name}.", suffix=".tmp", dir=target.parent
    )
    os.close(handle)
    try:
        write(Path(temp_name))
        _fsync_file(temp_name)
        os.chmod(temp_name, default_file_mode())  # mkstemp creates 0o600
        os.replace(temp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise
    fsync_dir(target.parent)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` as UTF-8, newlines untranslated, through :func:`atomic_write`.

    Raises:
        OSError: as :func:`atomic_write`.
    """

    def write(temp: Path) -> None:
        with temp.open("w", encoding="utf-8", newline="") as stream:
            stream.write(text)

    atomic_write(path, write)


def default_file_mode() -> int:
    """0o666 less the process umask: what a plain ``open(path, "w")`` would have created."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def fsync_dir(folder: str | os.PathLike[str]) -> None:
    """Make a rename in ``folder`` durable (best effort: some file systems refuse it)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _fsync_file(path: str) -> None:
    fd = os.open(path, os.O_RDWR)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
