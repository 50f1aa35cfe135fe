"""The places a run writes to, as they stood before a kernel ran, and whether they still do.

A user's kernel is arbitrary code running as the same user: nothing stops it from writing into
``--out`` or at the session's path while it runs (a ``receipt.csv`` linked to another file would
have the receipt written through the link, outside ``--out``). So the run takes a
:func:`snapshot` of each folder and file it will write once its locks are held and before any
kernel starts, and refuses to write (:func:`changes`) when any of them was added, removed,
replaced, relinked or modified meanwhile: the receipts and the session are written only into
what the run found there. In a folder, the entries compared are the names the run writes, the
files the atomic write and its journal make beside them (``.NAME...``) and the tool's own
(``.rmsnorm...``): other files come and go in a shared folder (``--out /tmp``) and are none of
the run's business.
"""

from __future__ import annotations

import os
from pathlib import Path

#: One entry as it stood: (device, inode, mode, size, modification time in ns, link target).
Entry = tuple[int, int, int, int, int, str]
#: Entries of a folder looked at, at most (a folder of receipts holds a handful).
MAX_ENTRIES = 10_000


def _entry(path: Path) -> Entry | None:
    try:
        stat = os.lstat(path)
    except OSError:
        return None
    target = ""
    if os.path.islink(path):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
    return (stat.st_dev, stat.st_ino, stat.st_mode, stat.st_size, stat.st_mtime_ns, target)


def _written(name: str, names: tuple[str, ...]) -> bool:
    """Whether a folder's entry ``name`` is one the run writes, or writes beside one."""
    return name.startswith(".rmsnorm") or any(
        name == written or name.startswith(f".{written}") for written in names
    )


def snapshot(*places: Path | None, names: tuple[str, ...] = ()) -> dict[str, Entry | None]:
    """Every given file and folder (None: not there) and, in each folder, its entries that
    :func:`_written` says the run writes ``names`` through."""
    found: dict[str, Entry | None] = {}
    for place in places:
        if place is None:
            continue
        entry = _entry(place)
        if entry is not None and place.is_dir() and not place.is_symlink():
            # A folder's own size and time change with its entries, which are compared below.
            entry = (*entry[:3], 0, 0, entry[5])
        found[str(place)] = entry
        if place.is_dir() and not place.is_symlink():
            try:
                with os.scandir(place) as entries:
                    for count, item in enumerate(entries):
                        if count >= MAX_ENTRIES:
                            break
                        if _written(item.name, names):
                            found[item.path] = _entry(Path(item.path))
            except OSError:
                continue
    return found


def changes(
    before: dict[str, Entry | None], *places: Path | None, names: tuple[str, ...] = ()
) -> list[str]:
    """What differs now from ``before`` (taken of the same ``places`` and ``names``), in words:
    empty when nothing was added, removed or changed."""
    after = snapshot(*places, names=names)
    said = []
    for path in sorted(set(before) | set(after)):
        was, now = before.get(path), after.get(path)
        if was == now:
            continue
        name = ascii(os.path.basename(path) or path)[1:-1]  # a name can hold a newline
        if was is None:
            what = "a new symbolic link" if now is not None and now[5] else "new"
        elif now is None:
            what = "removed"
        elif now[5] and was[5]:
            what = "relinked" if now[5] != was[5] else "replaced or modified"
        elif now[5] != was[5]:
            what = "now a symbolic link" if now[5] else "no longer a symbolic link"
        else:
            what = "replaced or modified"
        said.append(f"{name}: {what}")
    return said
