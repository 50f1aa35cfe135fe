"""The locks that keep two runs off one ``--out`` folder or one session file: an advisory
``flock`` on a ``.rmsnorm-inspector.lock`` file in the folder (``.NAME.lock`` beside a session),
released by the kernel when the process ends, kill -9 too. ``main.py check`` takes both for a
run (``inspector.cli.guards.run_locks``); the window takes a session's before it saves it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Linux or macOS: no locking
    fcntl = None  # type: ignore[assignment]

#: The lock file a run takes in its ``--out`` folder.
OUT_LOCK_NAME = ".rmsnorm-inspector.lock"


def session_lock_path(session: Path) -> Path:
    """The lock file of a session: ``.NAME.lock`` beside the file its saves replace (the
    command line's and the window's saves of one file take it, so they never write it at the
    same time).

    The lock is keyed by that file, not by its spelling: symbolic links are resolved first,
    and the lock file lives in the real folder, so every spelling of one session - a link to
    it, a linked or bind-mounted folder, a relative path - reaches one lock file, the folder's
    own (its device and inode) entry for the name. A save replaces the resolved name by a
    rename, which is what two runs must not do at once; a hard link is another name whose
    saves replace only it.
    """
    real = Path(os.path.realpath(session))
    return real.parent / f".{real.name}.lock"


@contextlib.contextmanager
def held(lock_path: Path) -> Iterator[bool]:
    """An exclusive advisory lock on ``lock_path`` for the block: True when held, False when
    another process (or another open of it) holds it; True without locking where there is no
    ``flock``."""
    if fcntl is None:
        yield True
        return
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # closing releases the lock
