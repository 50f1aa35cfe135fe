"""JSON from an untrusted file, parsed only when what it would build is within bounds.

A byte bound alone does not bound what ``json.loads`` builds: 241 MB of ``{},`` is 80 million
dicts, about 6 GB. :func:`loads` first counts, in one pass of C-speed regex and ``count`` calls
over the text, the containers (objects and arrays), the values (array elements and object
members), the string literals and the nesting depth, and refuses a text past any of its
:class:`JsonBounds` by name before a single object is built. Each reader passes bounds derived
from the largest file the tool writes of its kind.

The counts agree with the JSON grammar up to the first place the text is not JSON, and
``json.loads`` stops building there; past it they can only count more. This module is the
standard library only: both ``kernels`` (benchmark records, shape sets) and ``inspector``
(receipts, sessions, mutation reports) read it, and neither floor imports the other.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

#: Nesting the tool's files reach (a receipt 6, a benchmark record 4), with room to spare.
DEPTH = 16

# A JSON string literal (escapes included). An unterminated one runs to the end of the text
# (where json.loads stops), so every match that starts succeeds and the scan stays linear.
_STRING = {
    str: re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL),
    bytes: re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL),
}
_NOT_BRACKET = {str: re.compile(r"[^\[\]{}]+"), bytes: re.compile(rb"[^\[\]{}]+")}
_EMPTY_PAIR = {str: re.compile(r"\[\]|\{\}"), bytes: re.compile(rb"\[\]|\{\}")}


class JsonRefused(ValueError):
    """A text that is not JSON, or past its bounds; the message names the text and the bound."""


@dataclass(frozen=True)
class JsonBounds:
    """The most a JSON text may hold (all inclusive).

    Attributes:
        size: its length (bytes, or characters for ``str``).
        containers: objects and arrays.
        values: array elements and object members (each costs a pointer and its object).
        strings: string literals, keys included (each a Python object of ~50 bytes or more).
        depth: nesting of objects and arrays.
    """

    size: int
    containers: int
    values: int
    strings: int
    depth: int = DEPTH


@dataclass(frozen=True)
class JsonCounts:
    """What a text holds, counted outside its string literals."""

    size: int
    containers: int
    values: int
    strings: int
    depth: int


def count(text: str | bytes, bounds: JsonBounds | None = None) -> JsonCounts:
    """The containers, values, strings and depth of ``text``, without parsing it.

    Values are the commas plus one per container (a non-empty container holds one more value
    than it has commas) plus one for a bare top-level value. With ``bounds``, nothing is
    copied until the counts are within them: past the strings bound only that count is made
    (from the quotes, at least it; the others read 0), and the depth is followed to one past
    ``bounds.depth`` only when the containers are within theirs.
    """
    kind = bytes if isinstance(text, bytes) else str
    empty, marks, quote, escaped = (
        (b"", (b"{", b"[", b","), b'"', b'\\"')
        if kind is bytes
        else ("", ("{", "[", ","), '"', '\\"')
    )
    if bounds is not None:
        # Each string opens with a quote no backslash precedes, and closes with a quote.
        unescaped = text.count(quote) - text.count(escaped)
        if unescaped > 2 * bounds.strings:
            return JsonCounts(len(text), 0, 0, (unescaped + 1) // 2, 0)
    found = [text.count(mark) for mark in marks]
    strings = 0
    for match in _STRING[kind].finditer(text):  # what the strings hold is not structure
        strings += 1
        for index, mark in enumerate(marks):
            found[index] -= text.count(mark, match.start(), match.end())
    opens = found[0] + found[1]
    depth = 0
    if bounds is None or opens <= bounds.containers:
        limit = bounds.depth + 1 if bounds is not None else opens
        outside = _STRING[kind].sub(empty, text) if strings else text
        brackets = _NOT_BRACKET[kind].sub(empty, outside)
        del outside
        while brackets and depth < limit:
            brackets, removed = _EMPTY_PAIR[kind].subn(empty, brackets)
            if not removed:
                break  # unbalanced: not JSON, which json.loads names
            depth += 1
    return JsonCounts(len(text), opens, found[2] + opens + 1, strings, depth)


def check(text: str | bytes, name: str, bounds: JsonBounds) -> JsonCounts:
    """:func:`count`, refusing a text past ``bounds``.

    Raises:
        JsonRefused: ``"NAME: N WHAT, more than BOUND"`` for the first count past its bound
            (``"NAME: not valid JSON: nested too deeply (more than BOUND levels)"``).
    """
    if len(text) > bounds.size:
        unit = "bytes" if isinstance(text, bytes) else "characters"
        raise JsonRefused(f"{name}: {len(text)} {unit}, more than {bounds.size}")
    counts = count(text, bounds)
    for field, what in (
        ("containers", "objects and arrays"),
        ("values", "values (array elements and object members)"),
        ("strings", "strings"),
    ):
        found, most = getattr(counts, field), getattr(bounds, field)
        if found > most:
            raise JsonRefused(f"{name}: {found} {what}, more than {most}")
    if counts.depth > bounds.depth:
        raise JsonRefused(
            f"{name}: not valid JSON: nested too deeply (more than {bounds.depth} levels)"
        )
    return counts


def loads(text: str | bytes, name: str, bounds: JsonBounds, *, strict: bool = False) -> Any:
    """Parse ``text`` once :func:`check` finds it within ``bounds``.

    Bytes must be UTF-8 (checked after the counts, which need no decoding).

    Args:
        text: the JSON text.
        name: what messages call it (a file name, a dataset path).
        bounds: the most it may hold.
        strict: also refuse NaN/Infinity literals and duplicate keys (with a duplicate, which
            value a reader takes is up to the reader, so a forged first value could pass one
            tool and fool another).

    Raises:
        JsonRefused: past a bound, not UTF-8, or not (strict) JSON; the message names ``name``.
    """
    check(text, name, bounds)
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonRefused(f"{name}: not UTF-8 text ({exc.reason})") from None
    hooks: dict[str, Any] = (
        {"parse_constant": _reject_constant, "object_pairs_hook": _unique_keys} if strict else {}
    )
    try:
        return json.loads(text, **hooks)
    except RecursionError:
        raise JsonRefused(f"{name}: not valid JSON: nested too deeply") from None
    except ValueError as exc:
        raise JsonRefused(f"{name}: not valid JSON: {exc}") from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f"duplicate key {key[:40]!r}")
        found[key] = value
    return found
