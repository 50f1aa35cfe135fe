"""The one atomic write behind every record file (receipts, sessions, autosaves).

A reader of the target sees the previous file or the new one, never a half-written one: the new
content goes into a temp file in the target's own folder (same file system, so the rename is
atomic), is fsynced, gets the target's mode (or, for a new file, the mode a plain
``open(path, "w")`` would have created), and is renamed over the target; the folder is then
fsynced so that the rename survives a crash. A target that is a symlink is written through: the
file it points to is replaced and the link stays. Temp files carry the writer's pid, and those
of writers no longer running (a kill -9 mid-save) are removed by the next write beside them.
"""

from __future__ import annotations

import contextlib
import os
import stat
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
    target = _real_target(path)
    temp_name = _filled_temp(target, write)
    try:
        os.replace(temp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise
    fsync_dir(target.parent)


_TEMP_SUFFIX = ".tmp"

#: How much longer a temp file's name is than its target's (``.NAME.PID.XXXXXXXX.tmp``: three
#: dots, a pid of up to 7 digits - Linux's largest pid_max is 4194304 - mkstemp's 8 random
#: characters and the suffix): a target's name must leave this room within the file system's
#: NAME_MAX, or its write fails only at the end.
TEMP_NAME_EXTRA = 3 + 7 + 8 + len(_TEMP_SUFFIX)


def _real_target(path: str | os.PathLike[str]) -> Path:
    """``path``, or the file it links to (a symlink is written through, never replaced)."""
    target = Path(path)
    return Path(os.path.realpath(target)) if target.is_symlink() else target


def _filled_temp(target: Path, write: Callable[[Path], None]) -> str:
    """A temp file beside ``target`` filled by ``write``, fsynced, with the target's mode (or a
    plain open's for a new file); removed again if anything fails."""
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = default_file_mode()
    _remove_stale_temps(target)
    handle, temp_name = tempfile.mkstemp(
        prefix=f".{target.name}.{os.getpid()}.", suffix=_TEMP_SUFFIX, dir=target.parent
    )
    os.close(handle)
    try:
        write(Path(temp_name))
        _fsync_file(temp_name)
        os.chmod(temp_name, mode)  # mkstemp creates 0o600
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise
    return temp_name


def _remove_stale_temps(target: Path) -> None:
    """Remove ``.NAME.PID.*.tmp`` temp files beside ``target`` whose writer is gone."""
    prefix = f".{target.name}."
    with contextlib.suppress(OSError):
        for entry in os.scandir(target.parent):
            name = entry.name
            if not (name.startswith(prefix) and name.endswith(_TEMP_SUFFIX)):
                continue
            pid_text = name[len(prefix) :].split(".", 1)[0]
            if not pid_text.isascii() or not pid_text.isdigit() or _alive(int(pid_text)):
                continue
            with contextlib.suppress(OSError):
                if entry.is_file(follow_symlinks=False):
                    os.unlink(entry.path)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process, or an invalid pid: leave its file alone
        return True
    return True


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


def move_aside(path: Path, name: str) -> Path:
    """Rename ``path`` to ``name`` in its folder (durably); returns the new path.

    Raises:
        OSError: the rename failed.
    """
    target = path.with_name(name)
    os.replace(path, target)
    fsync_dir(path.parent)
    return target


# ----------------------------------------------------------------------------- file pairs

# Present in a folder while a pair is being published: it names the pair's files, so that an
# interrupted publish is rolled back to the previous pair by the next writer.
JOURNAL_NAME = ".rmsnorm-publishing"


def _prev(target: Path) -> Path:
    return target.with_name(f".{target.name}.prev")


def stage_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to a complete, fsynced temp file beside ``path`` (with its future mode),
    not yet published; :func:`publish_pair` puts it in place. The caller removes it on error.
    """

    def write(temp: Path) -> None:
        with temp.open("w", encoding="utf-8", newline="") as stream:
            stream.write(text)

    return Path(_filled_temp(_real_target(path), write))


def publish_pair(staged: dict[Path, Path]) -> None:
    """Put each staged file (:func:`stage_text`) in place of its target, as one change.

    The current files are first kept as hard links (``.NAME.prev``), then a journal naming the
    targets is written; then the staged files are renamed in, and the journal and links removed.
    A crash anywhere leaves either the new pair, or a journal from which
    :func:`recover_pair` restores the previous pair: a reader never keeps a mix. The links come
    before the journal because recovery reads a journal's target without a link as one that did
    not exist before, and removes it.

    Raises:
        OSError: a step failed; the previous pair is restored before it propagates.
    """
    targets = [_real_target(t) for t in staged]
    folder = targets[0].parent
    for target in targets:  # a crash here leaves no journal: the pair is untouched
        with contextlib.suppress(FileNotFoundError):
            os.unlink(_prev(target))
        with contextlib.suppress(FileNotFoundError):
            os.link(target, _prev(target))
    fsync_dir(folder)
    atomic_write_text(folder / JOURNAL_NAME, "\n".join(t.name for t in targets) + "\n")
    try:
        for target, temp in zip(targets, staged.values(), strict=True):
            os.replace(temp, target)
        fsync_dir(folder)
    except BaseException:
        recover_pair(folder)
        raise
    os.unlink(folder / JOURNAL_NAME)
    fsync_dir(folder)
    for target in targets:
        with contextlib.suppress(OSError):
            os.unlink(_prev(target))


def recover_pair(folder: str | os.PathLike[str]) -> bool:
    """Roll back a publish that did not finish (its journal is still there): each target gets
    its ``.NAME.prev`` back, or is removed where there was none. True if it rolled back.
    """
    folder = Path(folder)
    journal = folder / JOURNAL_NAME
    try:
        names = [n for n in journal.read_text(encoding="utf-8").splitlines() if n]
    except FileNotFoundError:
        return False
    except (OSError, UnicodeDecodeError):
        names = []
    for name in names:
        if "/" in name or name in ("", ".", ".."):
            continue
        target = folder / name
        if _prev(target).exists():
            os.replace(_prev(target), target)
            # rename() does nothing when both names are links to one file (the target was
            # never replaced): the link is then still there.
            with contextlib.suppress(FileNotFoundError):
                os.unlink(_prev(target))
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(target)
    fsync_dir(folder)
    os.unlink(journal)
    fsync_dir(folder)
    return True
