"""Text input: rows split by ``;`` (or newlines), values by ``,`` or whitespace, ``@file``.

Every failure is a :class:`~oracle.limits.ValidationError` naming the field; nothing else escapes.
"""

from __future__ import annotations

import math
import os
import re
import stat
from pathlib import Path

import numpy as np

from oracle.limits import LIMITS, ValidationError, plain_float, short

_VALUE_SPLIT = re.compile(r"[,\s]+")
# Refuse to read more text than the largest problem could need (~32 chars a value).
MAX_TEXT_CHARS = 32 * LIMITS.max_elements


def read_text(text: str, field: str) -> str:
    """Return ``text``, or the contents of the file when it starts with ``@``."""
    if not isinstance(text, str):
        raise ValidationError(
            field, text, "text", f"{field}: expected text, got {type(text).__name__}"
        )
    stripped = text.strip()
    if not stripped.startswith("@"):
        return text
    path = Path(stripped[1:]).expanduser()
    try:
        return _read_regular_file(path, field)
    except ValidationError:
        raise
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ValidationError(
            field, str(path), "a readable UTF-8 text file", f"{field}: cannot read {path}: {reason}"
        ) from None


def _read_regular_file(path: Path, field: str) -> str:
    """A regular file's text, read through one descriptor: a FIFO, a device or a directory is
    refused by its type before a byte is read (opening is non-blocking, so a FIFO with no
    writer cannot hang it), and at most MAX_TEXT_CHARS + 1 bytes are read, whatever the size
    the file claims (``/proc`` files claim 0)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        _refuse_special(info, path, field)
        if info.st_size > MAX_TEXT_CHARS:
            raise _too_big(field, path, info.st_size)
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_TEXT_CHARS:
            chunk = os.read(fd, min(1 << 20, MAX_TEXT_CHARS + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > MAX_TEXT_CHARS:
            raise _too_big(field, path, size, "more than")
        return b"".join(chunks).decode("utf-8")
    finally:
        os.close(fd)


def _refuse_special(info: os.stat_result, path: Path | str, field: str) -> None:
    if stat.S_ISREG(info.st_mode):
        return
    kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
    kind = "a FIFO" if stat.S_ISFIFO(info.st_mode) else kind
    kind = "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode) else kind
    raise ValidationError(field, str(path), "a regular file", f"{field}: {path} is {kind}")


def check_regular_file(path: Path | str, field: str) -> None:
    """Refuse a path that is not a regular file (a FIFO, a device, a directory) by its type,
    before anything opens it: a FIFO would block the reader, a device never ends.

    Raises:
        ValidationError: naming ``field`` and what the path is; or that it cannot be read.
    """
    try:
        info = os.stat(path)
    except OSError as exc:
        raise ValidationError(
            field, str(path), "a readable file", f"{field}: cannot read {path}: {exc.strerror}"
        ) from None
    _refuse_special(info, path, field)


def _too_big(field: str, path: Path, size: int, how: str = "") -> ValidationError:
    has = f"{how} {size}".strip()
    return ValidationError(
        field,
        str(path),
        f"a file of at most {MAX_TEXT_CHARS} bytes",
        f"{field}: file {path} has {has} bytes, more than {MAX_TEXT_CHARS}",
    )


def _read_body(text: str, field: str) -> str:
    """The text to parse (a file's contents for ``@file``), at most MAX_TEXT_CHARS long."""
    body = read_text(text, field)
    if len(body) > MAX_TEXT_CHARS:
        raise ValidationError(
            field,
            len(body),
            f"at most {MAX_TEXT_CHARS} characters",
            f"{field}: {len(body)} characters, more than {MAX_TEXT_CHARS}",
        )
    return body


def _count_error(field: str, count: int, low: int, high: int, what: str) -> ValidationError:
    """``field``: ``what``, more than ``high`` (the text holds more than the limit allows)."""
    return ValidationError(
        field, count, f"an integer in [{low}, {high}]", f"{field}: {what}, more than {high}"
    )


def _parse_number(token: str, field: str, where: str) -> float:
    try:
        value = plain_float(token)
    except ValueError:
        raise ValidationError(
            field,
            token,
            "finite decimal numbers (ASCII digits, sign, point, exponent)",
            f"{field}: {short(token)} at {where} is not a number",
        ) from None
    if not math.isfinite(value):
        raise ValidationError(
            field,
            token,
            "finite numbers",
            f"{field}: {short(token)} at {where} is not finite (NaN, infinity or overflow)",
        )
    return value


def _split_values(row_text: str) -> list[str]:
    return [token for token in _VALUE_SPLIT.split(row_text.strip()) if token]


def parse_matrix(text: str, field: str = "x") -> np.ndarray:
    """Parse rows of numbers into a (rows, width) float64 array.

    Raises:
        ValidationError: empty text, a non-number, a non-finite value, or ragged rows.
    """
    body = _read_body(text, field)
    row_texts = [part for part in re.split(r"[;\n]", body) if part.strip()]
    if not row_texts:
        raise ValidationError(
            field, text, "at least one value", f"{field}: empty; expected numbers"
        )
    if len(row_texts) > LIMITS.max_rows:
        raise _count_error(
            "rows", len(row_texts), LIMITS.min_rows, LIMITS.max_rows, f"{len(row_texts)} rows given"
        )
    rows: list[list[float]] = []
    for row_index, row_text in enumerate(row_texts):
        tokens = _split_values(row_text)
        if len(tokens) > LIMITS.max_width:
            raise _count_error(
                "width",
                len(tokens),
                LIMITS.min_width,
                LIMITS.max_width,
                f"row {row_index} has {len(tokens)} values",
            )
        rows.append(
            [
                _parse_number(token, field, f"row {row_index}, column {col}")
                for col, token in enumerate(tokens)
            ]
        )
    widths = {len(row) for row in rows}
    if len(widths) != 1:
        first = len(rows[0])
        bad = next(i for i, row in enumerate(rows) if len(row) != first)
        raise ValidationError(
            field,
            len(rows[bad]),
            f"every row with {first} values",
            f"{field}: width mismatch: row {bad} has {len(rows[bad])} values, row 0 has {first}",
        )
    return np.array(rows, dtype=np.float64)


def parse_vector(text: str, field: str = "weight") -> np.ndarray:
    """Parse one row of numbers (``;`` is treated as a separator too)."""
    body = _read_body(text, field)
    tokens = _split_values(body.replace(";", " "))
    if not tokens:
        raise ValidationError(
            field, text, "at least one value", f"{field}: empty; expected numbers"
        )
    return np.array(
        [_parse_number(token, field, f"position {i}") for i, token in enumerate(tokens)],
        dtype=np.float64,
    )
