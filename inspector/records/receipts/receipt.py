"""Receipts: the exact JSON record of one check and its row-level CSV view, with export proof.

``receipt.json`` is the exact record (validated against ``resources/receipt.schema.json``,
JSON Schema draft 2020-12, on every write and every reparse). ``receipt.csv`` has a header and
one line per row, each float written with ``repr`` so it parses back to the same binary64.
Non-finite floats are written as the strings ``"nan"``, ``"inf"``, ``"-inf"`` in both files
(JSON has no literal for them).

After writing, :func:`write_receipts` reparses *both files on disk* independently
(:func:`inspector.records.receipts.exports.check_exports`) and stores that result in the
receipt's ``export_check`` (rewriting the JSON).
:func:`inspector.records.receipts.verify.verify_receipts` does the same for receipts written
earlier and recomputes what the oracle can recompute.

This module is the door to receipts: the names, schema and parsers live in
:mod:`~inspector.records.receipts.format`, the building in :mod:`~inspector.records.receipts.build`,
and are re-exported here. Qt-free; imports numpy, jsonschema and the oracle only.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from inspector.records.atomic import publish_pair, recover_pair, stage_text
from inspector.records.receipts.build import build_receipt
from inspector.records.receipts.exact import csv_cell, from_json_number
from inspector.records.receipts.exports import check_exports
from inspector.records.receipts.format import (
    CSV_NAME,
    FORMAT,
    INT_ROW_FIELDS,
    JSON_NAME,
    ROW_FIELDS,
    SCHEMA_PATH,
    SCHEMA_VERSION,
    ReceiptError,
    load_schema,
    read_csv_rows,
    read_json,
    schema_errors,
    validate_receipt,
    values_sha256,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    from inspector.check.pipeline import CheckResult

__all__ = [
    "CSV_NAME",
    "FORMAT",
    "JSON_NAME",
    "ROW_FIELDS",
    "SCHEMA_PATH",
    "SCHEMA_VERSION",
    "ReceiptError",
    "build_receipt",
    "load_schema",
    "read_csv_rows",
    "read_receipt",
    "receipt_csv_text",
    "receipt_json_text",
    "schema_errors",
    "validate_receipt",
    "values_sha256",
    "write_receipts",
]

_X_PLACEHOLDER = "@@input.x@@"


def receipt_json_text(receipt: dict[str, Any]) -> str:
    """The JSON text written to disk (strict JSON: NaN/Infinity are never emitted).

    Indented for review, except that each row of ``input.x`` stays on one line (the largest
    problem has 4M values; one per line would triple the file).
    """
    section = receipt.get("input")
    if not (isinstance(section, dict) and isinstance(section.get("x"), list)):
        return json.dumps(receipt, indent=2, allow_nan=False) + "\n"
    shell = {**receipt, "input": {**section, "x": _X_PLACEHOLDER}}
    text = json.dumps(shell, indent=2, allow_nan=False)
    marker = f'"x": "{_X_PLACEHOLDER}"'
    if text.count(marker) != 1:  # pragma: no cover - the placeholder never occurs in data
        return json.dumps(receipt, indent=2, allow_nan=False) + "\n"
    rows = ",\n".join(
        "      " + json.dumps(row, allow_nan=False, separators=(", ", ": ")) for row in section["x"]
    )
    return text.replace(marker, '"x": [\n' + rows + "\n    ]") + "\n"


def receipt_csv_text(receipt: dict[str, Any]) -> str:
    """Header plus one line per row of ``receipt["rows"]``, floats repr-exact."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(ROW_FIELDS)
    for row in receipt["rows"]:
        cells = []
        for name in ROW_FIELDS:
            value = row[name]
            if name in INT_ROW_FIELDS:
                cells.append(str(int(value)))
            else:
                cells.append(csv_cell(from_json_number(value)))
        writer.writerow(cells)
    return buffer.getvalue()


def write_receipts(result: CheckResult, out_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """Write ``receipt.json`` and ``receipt.csv`` into ``out_dir``, reparse both, record that.

    Both files are staged (complete, fsynced temp files), read back from disk independently and
    compared (:func:`check_exports`), the result stored in ``export_check``, and then published
    as a pair (:func:`inspector.records.atomic.publish_pair`): a reader finds the previous pair
    or the new one, never one of each, also after a kill or a failed write in between.

    Args:
        result: the check to record.
        out_dir: folder (created if missing).

    Returns:
        The final receipt dict (with ``export_check``).

    Raises:
        ReceiptError: the folder cannot be created/written, or the receipt violates its schema.
    """
    folder = Path(out_dir)
    receipt = build_receipt(result)
    validate_receipt(receipt)
    json_path, csv_path = folder / JSON_NAME, folder / CSV_NAME
    staged: list[Path] = []
    try:
        folder.mkdir(parents=True, exist_ok=True)
        recover_pair(folder)  # a pair an earlier run left half-published: the old pair back
        staged.append(stage_text(csv_path, receipt_csv_text(receipt)))
        staged.append(stage_text(json_path, receipt_json_text(receipt)))
        export = check_exports(staged[1], staged[0], receipt)
        export["files"].update(json=JSON_NAME, csv=CSV_NAME)
        receipt["export_check"] = export
        validate_receipt(receipt)
        staged.append(stage_text(json_path, receipt_json_text(receipt)))
        publish_pair({csv_path: staged[0], json_path: staged[2]})
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ReceiptError(f"cannot write receipts to {folder}: {reason}") from None
    finally:
        for temp in staged:
            with contextlib.suppress(OSError):
                temp.unlink()
    return receipt


def read_receipt(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and schema-validate one receipt JSON.

    Args:
        path: the receipt JSON.

    Returns:
        The receipt dict.

    Raises:
        ReceiptError: unreadable, not JSON, or not a valid receipt.
    """
    source = Path(path)
    if not source.is_file():
        raise ReceiptError(f"cannot read {source}: no such file")
    try:
        data, problems = read_json(source)
    except OSError as exc:
        raise ReceiptError(f"cannot read {source}: {exc.strerror or exc}") from None
    if data is None:
        raise ReceiptError(problems[0])
    errors = schema_errors(data)
    if errors:
        raise ReceiptError(f"{source.name} is not a valid receipt: {errors[0]}")
    return data
