"""The seal in a session file's HDF5 user block: schema version, payload size and sha256.

HDF5 ignores the first :data:`USERBLOCK_SIZE` bytes of a file written with that user block; the
seal there is a magic line and ``key=value`` lines for ``schema_version``, ``payload_bytes`` and
``payload_sha256`` of everything after the block. A reader checks it before HDF5 parses a byte,
so a truncated or corrupted file is refused cleanly; HDF5 itself can hang on some corrupted
metadata.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

USERBLOCK_SIZE = 512
SEAL_MAGIC = b"RMSNORM-INSPECTOR-SESSION\n"


def write_seal(path: Path, schema_version: int) -> None:
    """Write the seal of the HDF5 file at ``path`` into its (reserved) user block."""
    with path.open("r+b") as stream:
        size, digest = _payload_sha256(stream)
        stream.seek(0)
        stream.write(_header(schema_version, size, digest))


def sealed(image: bytes, schema_version: int) -> bytes:
    """``image`` (an HDF5 file written with the user block) with its seal in that block."""
    payload = memoryview(image)[USERBLOCK_SIZE:]
    digest = hashlib.sha256(payload).hexdigest()
    return _header(schema_version, len(payload), digest) + bytes(payload)


def _header(schema_version: int, size: int, digest: str) -> bytes:
    header = SEAL_MAGIC + (
        f"schema_version={schema_version}\npayload_bytes={size}\npayload_sha256={digest}\n"
    ).encode("ascii")
    return header.ljust(USERBLOCK_SIZE, b"\0")


def read_seal(path: Path) -> dict[str, str] | None:
    """The seal's fields, or None when the file does not start with one.

    Raises:
        OSError: the file cannot be read.
    """
    with path.open("rb") as stream:
        block = stream.read(USERBLOCK_SIZE)
    if not block.startswith(SEAL_MAGIC):
        return None
    text = block[len(SEAL_MAGIC) :].split(b"\0", 1)[0].decode("ascii", "replace")
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


@dataclass(frozen=True)
class Seal:
    """What a seal declares."""

    schema_version: int
    payload_bytes: int
    payload_sha256: str

    @classmethod
    def from_fields(cls, fields: dict[str, str]) -> Seal:
        """The seal from :func:`read_seal`'s fields.

        Raises:
            KeyError: a field is missing.
            ValueError: a number is not one.
        """
        return cls(
            int(fields["schema_version"]), int(fields["payload_bytes"]), fields["payload_sha256"]
        )


def payload_problem(path: Path, seal: Seal) -> str | None:
    """Why the payload after the user block does not match ``seal``, or None when it does.

    Raises:
        OSError: the file cannot be read.
    """
    with path.open("rb") as stream:
        size, digest = _payload_sha256(stream)
    if size != seal.payload_bytes:
        state = "truncated" if size < seal.payload_bytes else "extended"
        return f"{state}: {size} bytes of data, the header says {seal.payload_bytes}"
    if digest != seal.payload_sha256:
        return "corrupted: its checksum does not match the header"
    return None


def _payload_sha256(stream: BinaryIO) -> tuple[int, str]:
    stream.seek(USERBLOCK_SIZE)
    digest = hashlib.sha256()
    size = 0
    for chunk in iter(lambda: stream.read(1 << 20), b""):
        digest.update(chunk)
        size += len(chunk)
    return size, digest.hexdigest()
