"""Text input: rows split by ``;`` (or newlines), values by ``,`` or whitespace, ``@file``.

Every failure is a :class:`~oracle.limits.ValidationError` naming the field; nothing else escapes.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from oracle.limits import LIMITS, ValidationError

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
        size = path.stat().st_size
        if size > MAX_TEXT_CHARS:
            raise ValidationError(
                field,
                str(path),
                f"a file of at most {MAX_TEXT_CHARS} bytes",
                f"{field}: file {path} has {size} bytes, more than {MAX_TEXT_CHARS}",
            )
        return path.read_text(encoding="utf-8")
    except ValidationError:
        raise
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ValidationError(
            field, str(path), "a readable UTF-8 text file", f"{field}: cannot read {path}: {reason}"
        ) from None


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
        value = float(token)
    except ValueError:
        raise ValidationError(
            field, token, "finite decimal numbers", f"{field}: {token!r} at {where} is not a number"
        ) from None
    if not math.isfinite(value):
        raise ValidationError(
            field,
            token,
            "finite numbers",
            f"{field}: {token!r} at {where} is not finite (NaN, infinity or overflow)",
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
