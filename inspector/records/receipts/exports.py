"""The export proof: both written receipt files reparsed independently and compared.

A download button is not export proof, the parser's result is: :func:`check_exports` reads
``receipt.json`` (``json`` + schema) and ``receipt.csv`` (``csv`` module) back from disk and
compares schema version, dimensions, row count, every per-row value and the headline maxima
with what was meant to be written. ``verify`` runs the same comparisons on receipts written
earlier (:func:`compare_exports` without an expected receipt).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inspector.records.receipts.exact import from_json_number, nan_max, same_float
from inspector.records.receipts.format import (
    read_csv_rows,
    read_json,
    row_fields_for,
    schema_errors,
)


@dataclass(frozen=True)
class Check:
    """One comparison of a reparse: what, and whether it held."""

    name: str
    ok: bool
    detail: str = ""


def joined(problems: Sequence[str], limit: int) -> str:
    """The first ``limit`` problems joined by "; ", with " ..." when there are more."""
    return "; ".join(problems[:limit]) + (" ..." if len(problems) > limit else "")


def compare_exports(
    data: dict[str, Any],
    header: list[str],
    csv_rows: list[dict[str, float]],
    expected: dict[str, Any] | None,
) -> list[Check]:
    """The comparisons shared by the export check and ``verify``.

    Args:
        data: the reparsed, schema-valid JSON receipt.
        header: the reparsed CSV header.
        csv_rows: the reparsed CSV rows as numbers.
        expected: the receipt that was meant to be written, or None (``verify``): then only
            the files' agreement with each other is checked.

    Returns:
        Every check in order.
    """
    checks: list[Check] = []
    declared = data["input"]["rows"]
    fields = row_fields_for(data["schema_version"])
    checks.append(
        Check(
            "csv header",
            header == list(fields),
            f"{header}" if header != list(fields) else "matches ROW_FIELDS",
        )
    )
    checks.append(
        Check(
            "row count",
            len(data["rows"]) == declared == len(csv_rows),
            f"input.rows={declared}, json rows={len(data['rows'])}, csv rows={len(csv_rows)}",
        )
    )
    if expected is not None:
        for section, key in (
            ("", "schema_version"),
            ("input", "rows"),
            ("input", "width"),
            ("input", "row_stride"),
            ("input", "dtype"),
            ("input", "x_sha256"),
            ("input", "weight_sha256"),
        ):
            have = data[section][key] if section else data[key]
            want = expected[section][key] if section else expected[key]
            checks.append(
                Check(f"{section + '.' if section else ''}{key}", have == want, f"{have!r}")
            )
    # Per-row values: the CSV must equal the JSON exactly, field by field.
    differences = []
    for index, (json_row, csv_row) in enumerate(zip(data["rows"], csv_rows, strict=False)):
        for name in fields:
            if name not in csv_row:
                continue
            if not same_float(from_json_number(json_row[name]), csv_row[name]):
                differences.append(
                    f"row {index} {name}: json {from_json_number(json_row[name])!r} "
                    f"!= csv {csv_row[name]!r}"
                )
    checks.append(
        Check(
            "csv rows equal json rows",
            not differences,
            joined(differences, 5)
            if differences
            else f"{len(csv_rows)} rows x {len(fields)} fields exact",
        )
    )
    if expected is not None:
        drift = []
        for index, (json_row, want_row) in enumerate(
            zip(data["rows"], expected["rows"], strict=False)
        ):
            for name in ("mean_square", "rrms", "max_abs_error", "max_rel_error"):
                if not same_float(
                    from_json_number(json_row[name]), from_json_number(want_row[name])
                ):
                    drift.append(f"row {index} {name}")
        checks.append(
            Check(
                "json rows equal the run",
                not drift,
                ", ".join(drift[:5]) if drift else "mean_square, rrms and errors exact",
            )
        )
    # Headline values: the declared maxima equal the maxima of the per-row values (both files).
    for key, column in (("max_abs", "max_abs_error"), ("max_rel", "max_rel_error")):
        headline = from_json_number(data["errors"][key])
        json_max = nan_max(from_json_number(r[column]) for r in data["rows"])
        csv_max = nan_max(r[column] for r in csv_rows if column in r)
        ok = same_float(headline, json_max) and same_float(headline, csv_max)
        if expected is not None:
            ok = ok and same_float(headline, from_json_number(expected["errors"][key]))
        checks.append(
            Check(
                f"errors.{key}",
                ok,
                f"headline {headline!r}, max of json rows {json_max!r}, max of csv rows "
                f"{csv_max!r}",
            )
        )
    return checks


def check_exports(json_path: Path, csv_path: Path, expected: dict[str, Any]) -> dict[str, Any]:
    """Reparse both written files independently and compare them with what was meant.

    Args:
        json_path: the written JSON.
        csv_path: the written CSV.
        expected: the receipt dict that was written.

    Returns:
        The ``export_check`` section: status "passed" or "failed", every check, problems.
    """
    checks: list[Check] = []
    data, problems = read_json(json_path)
    if data is not None:
        errors = schema_errors(data)
        checks.append(Check("json schema", not errors, errors[0] if errors else "valid"))
        if errors:
            data = None
    header, csv_rows, csv_problems = read_csv_rows(csv_path)
    problems += csv_problems
    if data is not None and not csv_problems:
        checks += compare_exports(data, header, csv_rows, expected)
    problems += [f"{c.name}: {c.detail}" for c in checks if not c.ok]
    if data is None and not problems:
        problems.append("json could not be reparsed")
    csv_bytes = csv_path.read_bytes() if csv_path.exists() else b""
    return {
        "status": "failed" if problems else "passed",
        "parsers": "python json + jsonschema (draft 2020-12); python csv",
        "checked_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "files": {
            "json": json_path.name,
            "csv": csv_path.name,
            "csv_sha256": hashlib.sha256(csv_bytes).hexdigest(),
            "csv_rows": len(csv_rows),
        },
        "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in checks],
        "problems": problems,
    }
