"""The paths a command is given, checked before anything is written or any long work starts,
and the one way a name read from the outside is printed.

:func:`checked_path` answers for every path on the command line (``--out``, ``--session``,
``--screenshot``, the files ``verify`` and ``diff`` read): a refusal is a :class:`PathRefused`
whose message is one line, ``FLAG: WHY``, which the command line prints as ``error: ...`` with
exit status 2. What it refuses, each by name: an empty path; a NUL character; a name longer than
the file system allows or a path longer than the system's ``PATH_MAX`` (less the room the files
written there need: an atomic write's temp file name is :data:`TEMP_NAME_EXTRA` bytes longer
than its target's); a loop of symbolic links or a path through a file; a place under ``/proc``
or ``/sys`` (the kernel's view of the system, not files); a folder where a file is wanted and a
file where a folder is; a FIFO, a device or a socket (opening one blocks or writes nowhere);
and a folder that cannot be written (by its permissions, ``os.access``, and by its file system's
read-only flag, ``os.statvfs``, which binds even for root).

A file that does not exist is not refused here when it is to be read: each reader names it.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Literal, NoReturn

from inspector.records.atomic import TEMP_NAME_EXTRA

#: Longest error line printed: a 10 MB token in an argument is cut, with its length said.
MAX_LINE_CHARS = 300

#: Room a folder given as ``--out`` leaves in ``PATH_MAX`` for the names a run writes inside
#: it (receipts, results, their temp files, the lock and the journal are all shorter).
INNER_NAME_RESERVE = 64

# The kernel's virtual file systems: their entries are views of the system, not files.
_KERNEL_TREES = ("proc", "sys")

# What a path names: a file to read, a file to create or replace, a folder to write into.
Role = Literal["read", "file", "folder"]

_EMPTY = {
    "read": "empty; expected a file",
    "file": "empty; expected a file name",
    "folder": "empty; expected a folder (use . for the current one)",
}

_STAT_ERRORS = {
    errno.ELOOP: "a loop of symbolic links",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.EACCES: "permission denied (a folder on the way cannot be searched)",
    errno.ENAMETOOLONG: "the name is too long for the system",
}


class PathRefused(ValueError):
    """A path that cannot be what its option needs; the message is ``FLAG: WHY``, one line."""


def printable(text: object) -> str:
    """``text`` with every character that is not printable (a newline, a control character,
    a lone surrogate) written as its escape: a name read from a file can neither forge a line
    of output nor fail the print."""
    return "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(text)
    )


def one_line(text: object) -> str:
    """``text`` on one line, printable, at most MAX_LINE_CHARS long (the rest counted, not
    shown)."""
    line = printable(" ".join(str(text).split()))
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[: MAX_LINE_CHARS - 40]}... ({len(line)} characters in all)"


def shown(path: object) -> str:
    """``path`` printable, its middle cut when long, so that a reason after it stays on the
    line."""
    text = printable(os.fspath(path) if isinstance(path, os.PathLike) else path)
    if len(text) <= 120:
        return text
    return f"{text[:60]}...{text[-40:]} ({len(text)} characters)"


def checked_path(
    flag: str, text: str | os.PathLike[str], role: Role, *, parents: bool = False
) -> Path:
    """``text`` as a path fit for ``role``, checked before anything is written.

    Args:
        flag: the option or argument it came from, as the user wrote it (``--out``, ``A``).
        text: the path as given.
        role: ``"read"`` a file to read (when it exists, a readable regular file);
            ``"file"`` a file to create or replace atomically; ``"folder"`` a folder to write
            into, created with its parents when missing.
        parents: for ``"file"``: its missing folders are created (else its folder must exist).

    Returns:
        ``Path(text)``.

    Raises:
        PathRefused: the first reason it cannot be used, named (see the module docstring).
    """
    text = os.fspath(text)
    if not text.strip():
        _refuse(flag, _EMPTY[role])
    if "\0" in text:
        _refuse(flag, f"{shown(text)} contains a NUL character")
    path = Path(text)
    _check_lengths(flag, path, role)
    try:
        info: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        _refuse(flag, f"{shown(path)}: {_STAT_ERRORS.get(exc.errno, exc.strerror)}")
    real = Path(os.path.realpath(path))
    if real != Path(os.path.abspath(path)):  # a link: what is written is where it leads
        _check_lengths(flag, real, role)
    if len(real.parts) > 1 and real.parts[0] == "/" and real.parts[1] in _KERNEL_TREES:
        _refuse(
            flag,
            f"{shown(path)} is under /{real.parts[1]}, the kernel's view of the system, "
            "not a place for files",
        )
    if info is not None:
        _check_kind(flag, path, info, role)
    if role == "read":
        if info is not None and not os.access(path, os.R_OK):
            _refuse(flag, f"{shown(path)} is not readable")
        return path
    if role == "folder" and info is not None:
        _check_writable(flag, real, f"folder {shown(path)}")
    elif role == "folder" or parents:
        _check_creatable(flag, path, path if role == "folder" else real.parent)
    elif not real.parent.is_dir():
        _refuse(flag, f"folder {shown(path.parent)} does not exist")
    else:
        _check_writable(flag, real.parent, f"folder {shown(path.parent)}")
    return path


def _refuse(flag: str, why: str) -> NoReturn:
    raise PathRefused(f"{flag}: {why}")


def _nearest_existing(path: Path) -> Path:
    folder = path
    while not os.path.lexists(folder) and folder != folder.parent:
        folder = folder.parent
    return folder


def _check_lengths(flag: str, path: Path, role: Role) -> None:
    """Every name within the file system's ``NAME_MAX``, the whole path within ``PATH_MAX``,
    each less the room the writes there need."""
    anchor = _nearest_existing(Path(os.path.abspath(path)))
    name_max = _pathconf(anchor, "PC_NAME_MAX", 255)
    path_max = _pathconf(anchor, "PC_PATH_MAX", 4096) - 1  # the limit counts the closing NUL
    extra = {"read": 0, "file": TEMP_NAME_EXTRA, "folder": 1 + INNER_NAME_RESERVE}[role]
    parts = path.parts
    for index, part in enumerate(parts):
        size = len(os.fsencode(part))
        own = TEMP_NAME_EXTRA if role == "file" and index == len(parts) - 1 else 0
        if size > name_max - own:
            bound = (
                f"a file written here may have {name_max - own} (the file system's {name_max} "
                f"less {own} for its temp file)"
                if own
                else f"the file system allows {name_max}"
            )
            _refuse(flag, f"the name {shown(part)} is {size} bytes; {bound}")
    size = len(os.fsencode(os.path.abspath(path)))
    if size > path_max - extra:
        room = f" less {extra} for the names written there" if extra else ""
        _refuse(
            flag,
            f"the path {shown(path)} is {size} bytes as an absolute path; at most "
            f"{path_max - extra} (the system's {path_max}{room})",
        )


def _pathconf(folder: Path, name: str, default: int) -> int:
    try:
        value = os.pathconf(folder if folder.is_dir() else folder.parent, name)
    except (OSError, ValueError):
        return default
    return value if value > 0 else default


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO (a named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _check_kind(flag: str, path: Path, info: os.stat_result, role: Role) -> None:
    if role == "folder":
        if not stat.S_ISDIR(info.st_mode):
            _refuse(flag, f"{shown(path)} exists and is not a folder")
    elif not stat.S_ISREG(info.st_mode):
        _refuse(flag, f"{shown(path)} is {_kind(info.st_mode)}; expected a regular file")


def _check_writable(flag: str, folder: Path, named: str) -> None:
    """``folder`` (an existing folder) takes new files: its file system is not mounted
    read-only and this process may write into it."""
    try:
        read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    if read_only:
        _refuse(flag, f"{named} is on a read-only file system")
    if not os.access(folder, os.W_OK | os.X_OK):
        _refuse(flag, f"{named} is not writable")


def _check_creatable(flag: str, path: Path, folder: Path) -> None:
    """``folder`` (``path``'s, resolved) exists as a writable folder or can be created under
    its nearest existing ancestor."""
    if folder.is_dir():
        _check_writable(flag, folder, f"folder {shown(folder)}")
        return
    ancestor = _nearest_existing(folder)
    if not ancestor.is_dir():
        _refuse(flag, f"cannot create {shown(path)}: {shown(ancestor)} is not a folder")
    _check_writable(flag, ancestor, f"cannot create {shown(path)}: {shown(ancestor)}")
