"""A user's kernel file read under a type and size bound: the one door every reader goes through.

A kernel file is named by the user (``--kernel``) or by a receipt someone else wrote, so it may
be anything a path can name: ``/dev/zero`` (endless), a FIFO (an ``open`` that waits for a writer
forever), a sparse file of gigabytes. The file is opened without blocking, its descriptor is
``fstat``-ed before a byte is read (so the checks are of the file that is then read, not of a
name someone may swap), and at most one byte past the bound is read.
"""

from __future__ import annotations

import os
import stat

#: Largest kernel source read: 4 MiB. A hand-written Triton module with its launcher is tens of
#: KiB (Liger's rms_norm.py is ~20 KiB, the bundled examples ~2 KiB); a generated one with
#: hundreds of configurations stays well under a MiB. Past this it is not a kernel source, and
#: hashing or parsing it would cost the reader memory and time the file's author chose.
MAX_KERNEL_SOURCE_BYTES = 4 * 2**20

__all__ = ["MAX_KERNEL_SOURCE_BYTES", "KernelFileError", "read_kernel_source"]


class KernelFileError(ValueError):
    """A kernel file that cannot be read as a kernel source (the message names the field)."""


def _kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def read_kernel_source(
    path: str | os.PathLike[str], field: str, limit: int = MAX_KERNEL_SOURCE_BYTES
) -> bytes:
    """The bytes of a kernel file, refused unless it is a regular file of at most ``limit`` bytes.

    Args:
        path: the file (a symbolic link is followed to what it names).
        field: what named it, for the message (``"--kernel FILE"``, ``"the receipt's
            kernel.source.path"``).
        limit: the bound in bytes.

    Returns:
        The file's bytes (at most ``limit``).

    Raises:
        KernelFileError: the file cannot be opened, is not a regular file (a FIFO, a device, a
            directory), or holds more than ``limit`` bytes (by its size, or by what a read
            finds when the file grew after the ``fstat``); the message names ``field``, the path
            and the bound.
    """
    name = str(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        # O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one.
        fd = os.open(name, flags)
    except OSError as err:
        raise KernelFileError(f"{field} {name!r}: {err.strerror or err}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise KernelFileError(
                f"{field} {name!r} is {_kind(info.st_mode)}, not a regular file: a kernel source "
                "is a .py file"
            )
        if info.st_size > limit:
            raise KernelFileError(_over(field, name, limit, f"{info.st_size} bytes"))
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as err:
        raise KernelFileError(f"{field} {name!r}: {err.strerror or err}") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise KernelFileError(_over(field, name, limit, "more bytes than that when read"))
    return data


def _over(field: str, name: str, limit: int, size: str) -> str:
    return (
        f"{field} {name!r} holds {size}, over the {limit}-byte bound of a kernel source "
        f"({limit / 2**20:g} MiB)"
    )
