"""What is benchmarked: shapes, the product shape sets, dtypes, and the bytes one call moves.

Shape sets are ``resources/shapes/NAME.json`` files (schema ``rmsnorm-shapes/1``); ``--shapes``
text mixes their names with ``ROWSxWIDTH`` shapes. Every parse error is a
:class:`BenchUsageError` whose message names the option or the file and field.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path

import torch

from bounded_json import JsonBounds, JsonRefused, check

SHAPES_SCHEMA = "rmsnorm-shapes/1"

SHAPES_DIR = Path(__file__).resolve().parents[2] / "resources" / "shapes"
DEFAULT_SETS = ("launch_bound", "tails", "llm", "narrow", "wide")

DTYPES: dict[str, torch.dtype] = {
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "float32": torch.float32,
}

BYTES_FORMULA = (
    "rmsnorm: bytes = rows*width*itemsize(x) [x read] + width*itemsize(weight) [weight read] "
    "+ rows*width*itemsize(y) [y written]; weight and y have x's dtype. "
    "copy: bytes = rows*width*itemsize(x) [x read] + rows*width*itemsize(x) [y written]. "
    "GB/s = bytes / time / 1e9; pct_of_copy = GB/s(impl) / GB/s(copy) * 100 for the same shape, "
    "dtype and run."
)

MAX_ROWS = 2**31 - 1
MAX_ELEMENTS = 2**33  # 8 Gi elements (32 GiB of fp32 per tensor): far past any product shape
# What a shape-set file holds at most: its shapes become benchmark rows, of which a record
# holds 8192 (``report.MAX_RESULTS``), each ``[rows, width]``; the product's sets are ~1 KB.
SHAPE_SET_BOUNDS = JsonBounds(size=1 << 20, containers=8194, values=3 * 8192 + 16, strings=64)

_SHAPE_RE = re.compile(r"^\s*(\d+)\s*[xX]\s*(\d+)\s*$")
_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")


class BenchUsageError(ValueError):
    """A bad option value: shape text, dtype, implementation name, shape-set file."""


@dataclasses.dataclass(frozen=True)
class Shape:
    """One benchmarked problem: ``rows`` x ``width`` elements, reduced over ``width``."""

    rows: int
    width: int

    def __str__(self) -> str:
        return f"{self.rows}x{self.width}"


@dataclasses.dataclass(frozen=True)
class ShapeSet:
    """A named list of product shapes (one ``resources/shapes/NAME.json`` file)."""

    name: str
    description: str
    shapes: tuple[Shape, ...]


def _positive_int(value: object, field: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BenchUsageError(f"{where}: {field} must be an integer; got {value!r}")
    if value < 1:
        raise BenchUsageError(f"{where}: {field} must be >= 1; got {value}")
    return value


def _check_shape_numbers(raw_rows: object, raw_width: object, where: str) -> Shape:
    rows = _positive_int(raw_rows, "rows", where)
    width = _positive_int(raw_width, "width", where)
    if rows > MAX_ROWS:
        raise BenchUsageError(f"{where}: rows must be <= {MAX_ROWS}; got {rows}")
    if rows * width > MAX_ELEMENTS:
        raise BenchUsageError(
            f"{where}: rows*width must be <= {MAX_ELEMENTS}; got {rows}*{width}={rows * width}"
        )
    return Shape(rows, width)


def parse_shape(text: str) -> Shape:
    """Parse ``"MxN"`` (rows x width), e.g. ``"4096x70"``.

    Args:
        text: the shape text.

    Returns:
        The :class:`Shape`.

    Raises:
        BenchUsageError: the text is not two positive integers joined by ``x``.
    """
    match = _SHAPE_RE.match(text)
    if not match:
        raise BenchUsageError(
            f"--shapes: {text!r} is neither a shape ROWSxWIDTH (e.g. 4096x70) nor a known set"
        )
    return _check_shape_numbers(int(match.group(1)), int(match.group(2)), f"--shapes {text!r}")


def validate_shape_set(data: object, *, source: str = "<shape set>") -> ShapeSet:
    """Validate one decoded shape-set JSON object and return it as a :class:`ShapeSet`.

    Expected: ``{"schema": "rmsnorm-shapes/1", "name": str, "description": str,
    "shapes": [[rows, width], ...]}`` with positive integers and no duplicate shape.

    Args:
        data: the decoded JSON value.
        source: where it came from, for the messages.

    Returns:
        The validated set.

    Raises:
        BenchUsageError: naming the file and the field that is wrong.
    """
    if not isinstance(data, dict):
        raise BenchUsageError(f"{source}: a shape set must be a JSON object")
    if data.get("schema") != SHAPES_SCHEMA:
        raise BenchUsageError(
            f"{source}: schema must be {SHAPES_SCHEMA!r}; got {data.get('schema')!r}"
        )
    unknown = set(data) - {"schema", "name", "description", "shapes"}
    if unknown:
        raise BenchUsageError(f"{source}: unknown field(s) {sorted(unknown)}")
    name = data.get("name")
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise BenchUsageError(f"{source}: name must match [a-z][a-z0-9_]*; got {name!r}")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise BenchUsageError(f"{source}: description must be a string")
    raw = data.get("shapes")
    if not isinstance(raw, list) or not raw:
        raise BenchUsageError(f"{source}: shapes must be a non-empty list of [rows, width]")
    shapes: list[Shape] = []
    for index, item in enumerate(raw):
        where = f"{source}: shapes[{index}]"
        if not isinstance(item, list) or len(item) != 2:
            raise BenchUsageError(f"{where} must be [rows, width]; got {item!r}")
        shape = _check_shape_numbers(item[0], item[1], where)
        if shape in shapes:
            raise BenchUsageError(f"{where} duplicates {shape}")
        shapes.append(shape)
    return ShapeSet(name=name, description=description, shapes=tuple(shapes))


def load_shape_set(path: str | os.PathLike[str]) -> ShapeSet:
    """Read and validate one shape-set file.

    Args:
        path: a ``NAME.json`` file; its set must be called ``NAME``.

    Returns:
        The validated set.

    Raises:
        BenchUsageError: unreadable file, past :data:`SHAPE_SET_BOUNDS` (counted before it
            is parsed), invalid JSON, or an invalid set.
    """
    path = Path(path)
    try:
        with path.open("rb") as stream:
            raw = stream.read(SHAPE_SET_BOUNDS.size + 1)
        check(raw, str(path), SHAPE_SET_BOUNDS)
        data = json.loads(raw.decode("utf-8"))
    except OSError as err:
        raise BenchUsageError(f"{path}: cannot read shape set ({err.strerror})") from err
    except JsonRefused as err:
        raise BenchUsageError(str(err)) from None
    except UnicodeDecodeError as err:
        raise BenchUsageError(f"{path}: not UTF-8 text ({err.reason})") from None
    except json.JSONDecodeError as err:
        raise BenchUsageError(f"{path}: invalid JSON at line {err.lineno}: {err.msg}") from err
    shape_set = validate_shape_set(data, source=str(path))
    if shape_set.name != path.stem:
        raise BenchUsageError(f"{path}: name {shape_set.name!r} must equal the file stem")
    return shape_set


def load_shape_sets(directory: str | os.PathLike[str] = SHAPES_DIR) -> dict[str, ShapeSet]:
    """All ``*.json`` shape sets of ``directory`` by name.

    Raises:
        BenchUsageError: no set in ``directory``, or an invalid one.
    """
    directory = Path(directory)
    files = sorted(directory.glob("*.json"))
    if not files:
        raise BenchUsageError(f"no shape sets (*.json) in {directory}")
    return {path.stem: load_shape_set(path) for path in files}


def resolve_shapes(text: str | None, sets: dict[str, ShapeSet]) -> list[tuple[str, Shape]]:
    """Turn ``--shapes`` text into ``(set name, shape)`` pairs, in order, without duplicates.

    Args:
        text: comma-separated set names (``all`` = every default set, then the others) and
            ``ROWSxWIDTH`` shapes (these get the set name ``custom``); ``None`` means ``all``.
        sets: the known shape sets by name.

    Returns:
        The chosen ``(set name, shape)`` pairs.

    Raises:
        BenchUsageError: an empty list, an unknown set name or malformed shape text.
    """
    tokens = ["all"] if text is None else [t.strip() for t in text.split(",")]
    if not tokens or any(not t for t in tokens):
        raise BenchUsageError(
            f"--shapes: empty item in {text!r}; give set names or ROWSxWIDTH, comma-separated"
        )
    chosen: list[tuple[str, Shape]] = []
    seen: set[tuple[str, Shape]] = set()

    def add(set_name: str, shape: Shape) -> None:
        if (set_name, shape) not in seen:
            seen.add((set_name, shape))
            chosen.append((set_name, shape))

    for token in tokens:
        if token == "all":
            for name in [n for n in DEFAULT_SETS if n in sets] + sorted(
                n for n in sets if n not in DEFAULT_SETS
            ):
                for shape in sets[name].shapes:
                    add(name, shape)
        elif token in sets:
            for shape in sets[token].shapes:
                add(token, shape)
        elif _SHAPE_RE.match(token):
            add("custom", parse_shape(token))
        else:
            known = ", ".join(["all", *sorted(sets)])
            raise BenchUsageError(
                f"--shapes: {token!r} is neither a shape ROWSxWIDTH (e.g. 4096x70) nor a known "
                f"set ({known})"
            )
    return chosen


def resolve_names(text: str | None, allowed: Sequence[str], option: str) -> list[str]:
    """Comma-separated names, each from ``allowed`` (``None``: all of them, in order).

    Raises:
        BenchUsageError: a name not in ``allowed``, named with ``option``.
    """
    if text is None:
        return list(allowed)
    names = [t.strip() for t in text.split(",")]
    for name in names:
        if name not in allowed:
            raise BenchUsageError(f"{option}: {name!r} is not one of {', '.join(allowed)}")
    if not names:
        raise BenchUsageError(f"{option}: give at least one of {', '.join(allowed)}")
    return list(dict.fromkeys(names))


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.bfloat16`` -> ``"bfloat16"`` (the keys of :data:`DTYPES`)."""
    return str(dtype).removeprefix("torch.")


def traffic_bytes(shape: Shape, dtype: torch.dtype, *, impl: str = "ours") -> int:
    """Bytes one call must move at least (see ``BYTES_FORMULA``)."""
    itemsize = torch.empty((), dtype=dtype).element_size()
    elements = shape.rows * shape.width
    if impl == "copy":
        return 2 * elements * itemsize
    return 2 * elements * itemsize + shape.width * itemsize
