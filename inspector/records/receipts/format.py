"""What a receipt is on disk: its names, its schema, its input hashes and the two parsers.

``receipt.json`` is the exact record, validated against ``resources/receipt.schema.json``
(JSON Schema draft 2020-12) on every write and every reparse; ``receipt.csv`` has a header and
one line per row (:data:`ROW_FIELDS`). The public names are re-exported by
:mod:`inspector.records.receipts.receipt`; the builders, the export proof and ``verify`` read
them here.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from bounded_json import JsonBounds, JsonRefused, loads
from oracle.dtypes import bfloat16_bits
from oracle.limits import LIMITS

SCHEMA_VERSION = 2
#: Versions this tool reads (1 lacks each row's exact_error / error_bound).
READABLE_VERSIONS = (1, 2)
FORMAT = "rmsnorm-inspector receipt"
JSON_NAME = "receipt.json"
CSV_NAME = "receipt.csv"
SCHEMA_PATH = Path(__file__).resolve().parents[3] / "resources" / "receipt.schema.json"

#: CSV columns, in order; the same keys as each entry of the JSON ``rows`` list.
ROW_FIELDS: tuple[str, ...] = (
    "index",
    "width",
    "block",
    "valid_lanes",
    "masked_lanes",
    "sum_squares",
    "mean_square",
    "rrms",
    "tiled_sum_squares",
    "tiled_mean_square",
    "tiled_rrms",
    "max_abs_error",
    "max_rel_error",
    "exact_error",
    "error_bound",
)
INT_ROW_FIELDS = frozenset({"index", "width", "block", "valid_lanes", "masked_lanes"})


def row_fields_for(version: object) -> tuple[str, ...]:
    """The CSV columns of a receipt of schema ``version`` (1: without the bound's two)."""
    return ROW_FIELDS[:-2] if version == 1 else ROW_FIELDS


HASH_METHOD = (
    "sha256 over the logical rows x width values (row-major, no stride padding) cast to the "
    "declared dtype, little-endian: float32 -> 4-byte IEEE binary32, float16 -> 2-byte IEEE "
    "binary16, bfloat16 -> the 2-byte bit pattern (upper half of binary32). The values in "
    "'x'/'weight' are exact in that dtype, so the cast is lossless and anyone can recompute it."
)


class ReceiptError(Exception):
    """A receipt could not be built, validated, written or read."""


def values_sha256(values: Any, dtype: str) -> str:
    """sha256 of ``values`` as the declared dtype's little-endian bytes (see :data:`HASH_METHOD`).

    Args:
        values: numbers exactly representable in ``dtype`` (any shape; row-major order).
        dtype: "float32" | "float16" | "bfloat16".

    Returns:
        Hex digest.

    Raises:
        ValueError: for an unknown dtype.
    """
    array = np.ascontiguousarray(np.asarray(values, dtype=np.float64))
    if dtype == "float32":
        raw = array.astype("<f4").tobytes()
    elif dtype == "float16":
        raw = array.astype("<f2").tobytes()
    elif dtype == "bfloat16":
        raw = bfloat16_bits(array).astype("<u2").tobytes()
    else:
        raise ValueError(f"dtype: {dtype!r} is not one of float32, float16, bfloat16")
    return hashlib.sha256(raw).hexdigest()


# ----------------------------------------------------------------------------- schema


# Longest list of each kind a receipt of the input bounds holds (``input/x`` is measured before
# the fast loop; the fixture and mutant lists are the code's, a few dozen).
MAX_ITEMS = {
    "input/x": LIMITS.max_rows,
    "input/weight": LIMITS.max_width,
    "rows": LIMITS.max_rows,
    "fixtures": 10_000,
    "mutants": 10_000,
}


@lru_cache(maxsize=1)
def load_schema() -> dict[str, Any]:
    """The receipt JSON Schema (draft 2020-12) from ``resources/``.

    Raises:
        ReceiptError: the schema file cannot be read or is not JSON.
    """
    try:
        return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReceiptError(f"cannot read the receipt schema {SCHEMA_PATH}: {exc}") from None


def schema_errors(receipt: Any) -> list[str]:
    """Every schema violation as "path: message" (empty when valid).

    ``input.x`` is checked by a plain loop against exactly what the schema says of it (an array
    of non-empty arrays of numbers): the same verdict as jsonschema, which needs ~20 s for the
    largest problem's 4M values, in a fraction of a second. A list longer than any receipt of
    the input bounds holds (:data:`MAX_ITEMS`: ``rows`` and ``input.x`` a row each,
    ``input.weight`` a value per column) is a problem by its length alone, and jsonschema sees
    its first item only: a crafted file of 10**5 rows would hold it for minutes. The rest goes
    through jsonschema.
    """
    import jsonschema

    document = receipt
    matrix_problems: list[str] = []
    section = receipt.get("input") if isinstance(receipt, dict) else None
    x_values = section.get("x") if isinstance(section, dict) else None
    if isinstance(x_values, list) and len(x_values) > 1:
        matrix_problems = _matrix_errors(x_values[: MAX_ITEMS["input/x"] + 1])
        document = {**receipt, "input": {**section, "x": x_values[:1]}}
    for where, most in MAX_ITEMS.items():
        parent_key, _, key = where.rpartition("/")
        parent = document.get(parent_key) if parent_key else document
        values = (
            (x_values if where == "input/x" else parent.get(key))
            if isinstance(parent, dict)
            else None
        )
        if isinstance(values, list) and len(values) > most:
            matrix_problems.append(f"{where}: {len(values)} items, more than {most}")
            if parent_key:
                document = {**document, parent_key: {**parent, key: values[:1]}}
            else:
                document = {**document, key: values[:1]}
    validator = jsonschema.Draft202012Validator(load_schema())
    problems = []
    for error in sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path)):
        where = "/".join(str(part) for part in error.absolute_path) or "(root)"
        problems.append(f"{where}: {error.message}")
    return problems + matrix_problems


def _matrix_errors(x_values: list[Any]) -> list[str]:
    """The schema's rule for input.x (non-empty arrays of JSON numbers), as a fast loop."""
    problems = []
    for index, row in enumerate(x_values):
        if not isinstance(row, list):
            problems.append(f"input/x/{index}: {row!r} is not of type 'array'")
        elif not row:
            problems.append(f"input/x/{index}: [] should be non-empty")
        elif not all(type(value) is float or type(value) is int for value in row):
            column = next(c for c, v in enumerate(row) if not (type(v) is float or type(v) is int))
            problems.append(f"input/x/{index}/{column}: {row[column]!r} is not of type 'number'")
    return problems


def validate_receipt(receipt: Any) -> None:
    """Raise :class:`ReceiptError` naming the first schema violation(s).

    Raises:
        ReceiptError: ``receipt`` does not match the schema.
    """
    problems = schema_errors(receipt)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ReceiptError(f"receipt does not match its schema: {problems[0]}{more}")


# ----------------------------------------------------------------------------- parsing


# Largest receipt files read: the JSON lists every input value (~25 bytes each, at most
# LIMITS.max_elements of x) plus per-row fields; the CSV holds per-row fields only.
MAX_JSON_BYTES = 64 * LIMITS.max_elements
MAX_CSV_BYTES = 512 * LIMITS.max_rows
# What a receipt's JSON holds at most (the largest problem's holds 8,300 containers, 4.27M
# values and 125,000 strings): per row its x list, rows entry and invariance entry, 17 fields
# and their keys; x and weight's values; MAX_ITEMS fixtures and mutants of a few dozen each.
_LISTED = MAX_ITEMS["fixtures"] + MAX_ITEMS["mutants"]
RECEIPT_BOUNDS = JsonBounds(
    size=MAX_JSON_BYTES,
    containers=4 * LIMITS.max_rows + 4 * _LISTED + 10_000,
    values=LIMITS.max_elements + LIMITS.max_width + 32 * LIMITS.max_rows + 16 * _LISTED + 100_000,
    strings=32 * LIMITS.max_rows + 16 * _LISTED + 100_000,
)


def parse_receipt_json(text: str | bytes, name: str) -> Any:
    """A receipt's JSON text parsed strictly (no NaN/Infinity literals, no duplicate keys) and
    within :data:`RECEIPT_BOUNDS`, counted before anything is built: the one parser of every
    receipt, read from a file or from a session.

    Raises:
        JsonRefused: past a bound, not UTF-8 or not JSON (a ValueError naming ``name``).
    """
    return loads(text, name, RECEIPT_BOUNDS, strict=True)


def read_json(path: Path) -> tuple[Any, list[str]]:
    """Parse a receipt JSON file strictly (:func:`parse_receipt_json`).

    Returns:
        (data or None, problems).

    Raises:
        OSError: the file cannot be read.
    """
    if path.stat().st_size > MAX_JSON_BYTES:
        return None, [f"{path.name}: {path.stat().st_size} bytes, more than {MAX_JSON_BYTES}"]
    with path.open("rb") as stream:
        raw = stream.read(MAX_JSON_BYTES + 1)
    try:
        data = parse_receipt_json(raw, path.name)
    except JsonRefused as exc:
        return None, [str(exc)]
    if not isinstance(data, dict):
        return None, [f"{path.name}: not a receipt: the top level is {type(data).__name__}"]
    return data, []


def read_csv_rows(path: Path) -> tuple[list[str], list[dict[str, float]], list[str]]:
    """Parse a receipt CSV with the csv module.

    Returns:
        (header, rows as numbers, problems).
    """
    problems: list[str] = []
    if path.stat().st_size > MAX_CSV_BYTES:
        return [], [], [f"{path.name}: {path.stat().st_size} bytes, more than {MAX_CSV_BYTES}"]
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        return [], [], [f"{path.name}: not UTF-8 text ({exc.reason})"]
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        lines = [line for line in reader if line]
    except csv.Error as exc:
        return [], [], [f"{path.name}: not a receipt CSV ({exc})"]
    if not lines:
        return [], [], [f"{path.name}: empty, expected a header line"]
    header, body = lines[0], lines[1:]
    rows: list[dict[str, float]] = []
    for number, line in enumerate(body, start=2):
        if len(line) != len(header):
            problems.append(
                f"{path.name} line {number}: {len(line)} cells, header has {len(header)}"
            )
            continue
        row: dict[str, float] = {}
        for name, cell in zip(header, line, strict=False):
            try:
                row[name] = float(cell)
            except ValueError:
                shown = repr(cell) if len(cell) <= 40 else repr(cell[:37]) + "..."
                problems.append(
                    f"{path.name} line {number}, column {name}: {shown} is not a number"
                )
        rows.append(row)
    return header, rows, problems
