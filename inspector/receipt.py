"""Receipts: the exact JSON record of one check and its row-level CSV view, with export proof.

``receipt.json`` is the exact record (validated against ``resources/receipt.schema.json``,
JSON Schema draft 2020-12, on every write and every reparse). ``receipt.csv`` has a header and
one line per row, each float written with ``repr`` so it parses back to the same binary64.
Non-finite floats are written as the strings ``"nan"``, ``"inf"``, ``"-inf"`` in both files
(JSON has no literal for them).

After writing, :func:`write_receipts` reparses *both files on disk* independently (``json`` +
schema, ``csv`` module), compares schema version, dimensions, row count and headline values,
and stores that result in the receipt's ``export_check`` (rewriting the JSON): a download
button is not export proof, the parser's result is. :func:`verify_receipts` does the same for
receipts written earlier and, beyond that, recomputes the input hashes and the oracle's
per-row intermediates from the values recorded in the JSON.

Qt-free; imports numpy, jsonschema and the oracle only (never torch or triton).
"""

from __future__ import annotations

import contextlib
import csv
import datetime as _dt
import hashlib
import importlib.metadata
import io
import json
import math
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from oracle.dtypes import ITEMSIZE, bfloat16_bits
from oracle.mutants import DESCRIPTIONS

if TYPE_CHECKING:  # pragma: no cover - typing only
    from inspector.pipeline import CheckResult

SCHEMA_VERSION = 1
FORMAT = "rmsnorm-inspector receipt"
JSON_NAME = "receipt.json"
CSV_NAME = "receipt.csv"
SCHEMA_PATH = Path(__file__).resolve().parent.parent / "resources" / "receipt.schema.json"

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
)
INT_ROW_FIELDS = frozenset({"index", "width", "block", "valid_lanes", "masked_lanes"})

HASH_METHOD = (
    "sha256 over the logical rows x width values (row-major, no stride padding) cast to the "
    "declared dtype, little-endian: float32 -> 4-byte IEEE binary32, float16 -> 2-byte IEEE "
    "binary16, bfloat16 -> the 2-byte bit pattern (upper half of binary32). The values in "
    "'x'/'weight' are exact in that dtype, so the cast is lossless and anyone can recompute it."
)

TORCH_REFERENCE = (
    "torch.nn.functional.rms_norm(x, (width,), weight, eps) on float64 CPU tensors of the same "
    "values, rounded once to the declared dtype; compared under the errors' tolerance"
)

TRUTH_BOUNDARY = (
    "The oracle (scalar reference, tiled lane model, mutants, fixture matrix) proves bounded "
    "numerical logic. The kernel section records what the real Triton program did in the mode "
    "named there: 'interpreter' runs the kernel's logic on the CPU and validates no generated "
    "GPU code; 'compiled' ran it on the named device. Traffic is modeled, never measured; "
    "nothing here is a timing or a speedup."
)


class ReceiptError(Exception):
    """A receipt could not be built, validated, written or read."""


# ----------------------------------------------------------------------------- numbers


def _num(value: Any) -> float | str:
    """A float for JSON: finite as a number, non-finite as "nan" / "inf" / "-inf"."""
    number = float(value)
    if math.isnan(number):
        return "nan"
    if math.isinf(number):
        return "inf" if number > 0 else "-inf"
    return number


def _from_json_num(value: Any) -> float:
    """Inverse of :func:`_num` (strings "nan", "inf", "-inf" accepted)."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a number")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and value in ("nan", "inf", "-inf"):
        return float(value)
    raise ValueError(f"{value!r} is not a number")


def _csv_cell(value: Any) -> str:
    """repr-exact text for a float, plain text for an int."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return repr(float(value))  # 'nan', 'inf', '-inf' for non-finite


def _same_float(a: float, b: float) -> bool:
    """Exact equality, NaN equal to NaN, -0.0 distinct from 0.0 (repr-exactness)."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


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


# ----------------------------------------------------------------------------- building


def _comparison(comparison: Any) -> dict[str, Any]:
    tolerance = comparison.tolerance
    return {
        "max_abs": _num(comparison.max_abs),
        "max_rel": _num(comparison.max_rel),
        "atol": float(tolerance.atol),
        "rtol": float(tolerance.rtol),
        "compare_dtype": tolerance.dtype,
        "mismatches": int(comparison.mismatches),
        "passed": bool(comparison.passed),
    }


def _versions(result: CheckResult) -> dict[str, str]:
    versions = {str(k): str(v) for k, v in dict(result.versions).items()}
    for package in ("numpy", "torch", "triton"):
        if package not in versions:
            try:
                versions[package] = importlib.metadata.version(package) + " (installed, not used)"
            except importlib.metadata.PackageNotFoundError:
                versions[package] = "not installed"
    versions.setdefault("tool", "rmsnorm-inspector")
    versions.setdefault("python", "unknown")
    return versions


def _kernel_source_sha256(result: CheckResult) -> str | None:
    compile_info = result.compile or {}
    digest = compile_info.get("source_sha256")
    if digest:
        return str(digest)
    if result.kernel is None:
        return None
    try:
        from kernels.compile_info import kernel_source_sha256

        return kernel_source_sha256()
    except Exception:  # the hash is informative; its absence is recorded as null
        return None


def _compile_section(compile_info: dict[str, Any] | None) -> dict[str, Any] | None:
    """Compiler facts without the (large) IR texts; those live in the session."""
    if compile_info is None:
        return None
    keep = (
        "target",
        "num_warps",
        "num_stages",
        "shared_bytes",
        "registers",
        "spills",
        "triton_version",
        "ptx_lines",
        "stages_sha256",
        "error",
    )
    section = {key: compile_info[key] for key in keep if key in compile_info}
    return json.loads(json.dumps(section, default=str))


def _fixture_entries(kill_matrix: Any) -> list[dict[str, Any]]:
    return [
        {
            "name": outcome.fixture,
            "category": outcome.category,
            "target": kill_matrix.target,
            "expected": outcome.expected,
            "actual": outcome.actual,
            "passed": bool(outcome.passed),
            "max_abs_error": _num(outcome.max_abs),
            "max_rel_error": _num(outcome.max_rel),
            "detail": outcome.detail,
        }
        for outcome in kill_matrix.baseline
    ]


def _mutant_entries(kill_matrix: Any) -> list[dict[str, Any]]:
    entries = []
    for name in kill_matrix.mutants:
        killers = list(kill_matrix.killed_by(name))
        entries.append(
            {
                "name": name,
                "target": kill_matrix.target,
                "description": DESCRIPTIONS.get(name, ""),
                "killed": bool(killers),
                "killed_by": killers,
            }
        )
    return entries


def _row_entries(result: CheckResult) -> list[dict[str, Any]]:
    problem = result.problem
    reference = result.scalar
    model = result.tiled
    row_abs = np.asarray(result.row_max_abs, dtype=np.float64)
    row_rel = np.asarray(result.row_max_rel, dtype=np.float64)
    rows = []
    for index in range(problem.rows):
        rows.append(
            {
                "index": index,
                "width": problem.width,
                "block": int(model.block),
                "valid_lanes": int(model.valid_lanes),
                "masked_lanes": int(model.masked_lanes),
                "sum_squares": _num(reference.sum_squares[index]),
                "mean_square": _num(reference.mean_square[index]),
                "rrms": _num(reference.rrms[index]),
                "tiled_sum_squares": _num(model.sum_squares[index]),
                "tiled_mean_square": _num(model.mean_square[index]),
                "tiled_rrms": _num(model.rrms[index]),
                "max_abs_error": _num(row_abs[index]),
                "max_rel_error": _num(row_rel[index]),
            }
        )
    return rows


def _nan_max(values: Iterable[float]) -> float:
    """Largest value, NaN counted as the largest (it is the least flattering)."""
    numbers = [float(v) for v in values]
    if any(math.isnan(v) for v in numbers):
        return float("nan")
    return max(numbers) if numbers else 0.0


def build_receipt(result: CheckResult) -> dict[str, Any]:
    """Turn one check into the receipt dict (``export_check`` still "pending").

    Args:
        result: what :func:`inspector.pipeline.run_check` returned.

    Returns:
        A JSON-ready dict matching ``resources/receipt.schema.json``.
    """
    problem = result.problem
    headline = result.headline
    rows = _row_entries(result)
    fixtures = _fixture_entries(result.model_matrix)
    mutants = _mutant_entries(result.model_matrix)
    if result.kernel_matrix is not None:
        fixtures += _fixture_entries(result.kernel_matrix)
        mutants += _mutant_entries(result.kernel_matrix)
    errors = _comparison(headline)
    # Headline maxima are the maxima of the per-row figures (the less flattering measure:
    # a non-zero output where the reference is 0 counts as an infinite relative error).
    errors["max_abs"] = _num(_nan_max(_from_json_num(r["max_abs_error"]) for r in rows))
    errors["max_rel"] = _num(_nan_max(_from_json_num(r["max_rel_error"]) for r in rows))
    errors["compared"] = result.errors_source
    errors["tolerance_why"] = headline.tolerance.why
    errors["first_mismatch"] = (
        list(headline.first_mismatch) if headline.first_mismatch is not None else None
    )
    kernel = result.kernel
    traffic = result.traffic
    return {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "truth_boundary": TRUTH_BOUNDARY,
        "input": {
            "name": problem.name,
            "rows": problem.rows,
            "width": problem.width,
            "row_stride": problem.row_stride,
            "dtype": problem.dtype,
            "eps": float(problem.eps),
            "synthetic": True,
            "x": [[float(v) for v in row] for row in np.asarray(problem.x)],
            "weight": [float(v) for v in np.asarray(problem.weight)],
            "x_sha256": values_sha256(problem.x, problem.dtype),
            "weight_sha256": values_sha256(problem.weight, problem.dtype),
            "hash_method": HASH_METHOD,
        },
        "tile": {
            "block": int(result.tiled.block),
            "valid_lanes": int(result.tiled.valid_lanes),
            "masked_lanes": int(result.tiled.masked_lanes),
            "poison": _num(result.tiled.poison),
        },
        "rows_source": {
            "intermediates": (
                "sum_squares, mean_square, rrms: scalar reference (binary64 loops); "
                "tiled_*: tiled lane model (float32 pairwise tree)"
            ),
            "errors": result.errors_source,
        },
        "rows": rows,
        "errors": errors,
        "model_checks": {
            "output": _comparison(result.output),
            "intermediates": _comparison(result.intermediates),
        },
        "traffic": {
            "modeled": True,
            "note": traffic.note,
            "bytes_read_x": int(traffic.bytes_read_x),
            "bytes_read_weight": int(traffic.bytes_read_weight),
            "bytes_read_weight_unique": int(traffic.bytes_read_weight_unique),
            "bytes_read": int(traffic.bytes_read),
            "bytes_written": int(traffic.bytes_written),
            "bytes_total": int(traffic.bytes_total),
            "reductions": int(traffic.reductions),
            "itemsize": ITEMSIZE[problem.dtype],
        },
        "fixtures": fixtures,
        "mutants": mutants,
        "kernel": {
            "mode": result.mode if kernel is not None else "model only",
            "ran": kernel is not None,
            "note": result.kernel_note,
            "source_sha256": _kernel_source_sha256(result),
            "block": int(kernel.block) if kernel is not None else None,
            "num_warps": int(kernel.num_warps) if kernel is not None else None,
            "oob_writes": len(kernel.oob_writes) if kernel is not None else None,
            "vs_scalar": _comparison(kernel.comparison) if kernel is not None else None,
            "vs_torch_float64": (
                _comparison(kernel.torch_comparison) if kernel is not None else None
            ),
            "torch_reference": TORCH_REFERENCE if kernel is not None else None,
            "compile": _compile_section(result.compile),
            "path": kernel.path if kernel is not None else None,
            "paths": _path_entries(result),
        },
        "device": result.device,
        "versions": _versions(result),
        "verdict": {"passed": bool(result.passed), "failures": list(result.failures)},
        "export_check": {"status": "pending", "checks": [], "problems": []},
    }


def _path_entries(result: CheckResult) -> list[dict[str, Any]]:
    """Each forced launch layout of the kernel: its fixtures and which fixtures killed what."""
    entries = []
    for path, path_matrix in result.kernel_path_matrices.items():
        entries.append(
            {
                "path": path,
                "fixtures": len(path_matrix.baseline),
                "fixtures_as_expected": sum(o.passed for o in path_matrix.baseline),
                "survivors": list(path_matrix.survivors),
                "killed_by": {m: list(path_matrix.killed_by(m)) for m in path_matrix.mutants},
            }
        )
    return entries


# ----------------------------------------------------------------------------- schema


@lru_cache(maxsize=1)
def load_schema() -> dict[str, Any]:
    """The receipt JSON Schema (draft 2020-12) from ``resources/``."""
    try:
        return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReceiptError(f"cannot read the receipt schema {SCHEMA_PATH}: {exc}") from None


def schema_errors(receipt: Any) -> list[str]:
    """Every schema violation as "path: message" (empty when valid).

    ``input.x`` is checked by a plain loop against exactly what the schema says of it (an array
    of non-empty arrays of numbers): the same verdict as jsonschema, which needs ~20 s for the
    largest problem's 4M values, in a fraction of a second. The rest goes through jsonschema.
    """
    import jsonschema

    document = receipt
    matrix_problems: list[str] = []
    section = receipt.get("input") if isinstance(receipt, dict) else None
    x_values = section.get("x") if isinstance(section, dict) else None
    if isinstance(x_values, list) and len(x_values) > 1:
        matrix_problems = _matrix_errors(x_values)
        document = {**receipt, "input": {**section, "x": x_values[:1]}}
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
    """Raise :class:`ReceiptError` naming the first schema violation(s)."""
    problems = schema_errors(receipt)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ReceiptError(f"receipt does not match its schema: {problems[0]}{more}")


# ----------------------------------------------------------------------------- writing


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
                cells.append(_csv_cell(_from_json_num(value)))
        writer.writerow(cells)
    return buffer.getvalue()


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temp file in the same folder, fsync and rename."""
    path = Path(path)
    handle, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temp_name, default_file_mode())
        os.replace(temp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise
    fsync_dir(path.parent)


def default_file_mode() -> int:
    """0o666 less the process umask: what a plain ``open(path, "w")`` would have created."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (best effort: some file systems refuse)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems refuse a directory fsync; the rename already happened
    finally:
        os.close(fd)


def write_receipts(result: CheckResult, out_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """Write ``receipt.json`` and ``receipt.csv`` into ``out_dir``, reparse both, record that.

    Both files are written atomically (temp + rename). The JSON is validated against the schema
    before it is written. Then both files are read back from disk independently and compared
    (:func:`check_exports`); the result is stored in ``export_check`` and the JSON rewritten.

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
    try:
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_text(csv_path, receipt_csv_text(receipt))
        atomic_write_text(json_path, receipt_json_text(receipt))
        receipt["export_check"] = check_exports(json_path, csv_path, receipt)
        validate_receipt(receipt)
        atomic_write_text(json_path, receipt_json_text(receipt))
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ReceiptError(f"cannot write receipts to {folder}: {reason}") from None
    return receipt


# ----------------------------------------------------------------------------- reparsing


@dataclass(frozen=True)
class Check:
    """One comparison of a reparse: what, and whether it held."""

    name: str
    ok: bool
    detail: str = ""


def _read_json(path: Path) -> tuple[Any, list[str]]:
    """Parse a receipt JSON file; returns (data or None, problems)."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        return None, [f"{path.name}: not UTF-8 text ({exc.reason})"]
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:
        return None, [f"{path.name}: not valid JSON: {exc}"]
    return data, []


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def read_csv_rows(path: Path) -> tuple[list[str], list[dict[str, float]], list[str]]:
    """Parse a receipt CSV with the csv module: (header, rows as numbers, problems)."""
    problems: list[str] = []
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        return [], [], [f"{path.name}: not UTF-8 text ({exc.reason})"]
    reader = csv.reader(io.StringIO(text, newline=""))
    lines = [line for line in reader if line]
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
                problems.append(
                    f"{path.name} line {number}, column {name}: {cell!r} is not a number"
                )
        rows.append(row)
    return header, rows, problems


def _row_value(row: dict[str, Any], name: str) -> float:
    return _from_json_num(row[name])


def _compare_exports(
    data: dict[str, Any],
    header: list[str],
    csv_rows: list[dict[str, float]],
    expected: dict[str, Any] | None,
) -> list[Check]:
    """The comparisons shared by the export check and ``verify``."""
    checks: list[Check] = []
    declared = data["input"]["rows"]
    checks.append(
        Check(
            "csv header",
            header == list(ROW_FIELDS),
            f"{header}" if header != list(ROW_FIELDS) else "matches ROW_FIELDS",
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
        for name in ROW_FIELDS:
            if name not in csv_row:
                continue
            if not _same_float(_row_value(json_row, name), csv_row[name]):
                differences.append(
                    f"row {index} {name}: json {_row_value(json_row, name)!r} "
                    f"!= csv {csv_row[name]!r}"
                )
    checks.append(
        Check(
            "csv rows equal json rows",
            not differences,
            "; ".join(differences[:5]) + (" ..." if len(differences) > 5 else "")
            if differences
            else f"{len(csv_rows)} rows x {len(ROW_FIELDS)} fields exact",
        )
    )
    if expected is not None:
        drift = []
        for index, (json_row, want_row) in enumerate(
            zip(data["rows"], expected["rows"], strict=False)
        ):
            for name in ("mean_square", "rrms", "max_abs_error", "max_rel_error"):
                if not _same_float(_row_value(json_row, name), _row_value(want_row, name)):
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
        headline = _from_json_num(data["errors"][key])
        json_max = _nan_max(_row_value(r, column) for r in data["rows"])
        csv_max = _nan_max(r[column] for r in csv_rows if column in r)
        ok = _same_float(headline, json_max) and _same_float(headline, csv_max)
        if expected is not None:
            ok = ok and _same_float(headline, _from_json_num(expected["errors"][key]))
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
    data, problems = _read_json(json_path)
    if data is not None:
        errors = schema_errors(data)
        checks.append(Check("json schema", not errors, errors[0] if errors else "valid"))
        if errors:
            data = None
    header, csv_rows, csv_problems = read_csv_rows(csv_path)
    problems += csv_problems
    if data is not None and not csv_problems:
        checks += _compare_exports(data, header, csv_rows, expected)
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


# ----------------------------------------------------------------------------- verify


@dataclass(frozen=True)
class VerifyReport:
    """What :func:`verify_receipts` found.

    Attributes:
        json_path: the receipt checked.
        csv_path: the CSV checked, or None when there was none.
        checks: every check in order.
    """

    json_path: Path
    csv_path: Path | None
    checks: tuple[Check, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(check.ok for check in self.checks)

    @property
    def problems(self) -> list[str]:
        return [f"{c.name}: {c.detail}" for c in self.checks if not c.ok]

    def lines(self) -> list[str]:
        """One line per check, "ok" or "FAIL", for a terminal."""
        return [f"{'ok  ' if c.ok else 'FAIL'} {c.name}: {c.detail}" for c in self.checks]


def _recompute_checks(data: dict[str, Any]) -> list[Check]:
    """Hashes, tile, traffic and the oracle's per-row intermediates, from the recorded input."""
    from oracle import scalar, tiled
    from oracle.spec import ValidationError, make_problem

    checks: list[Check] = []
    section = data["input"]
    dtype = section["dtype"]
    x_values, weights = section["x"], section["weight"]
    shape_ok = (
        len(x_values) == section["rows"]
        and all(len(row) == section["width"] for row in x_values)
        and len(weights) == section["width"]
    )
    checks.append(
        Check(
            "input dimensions",
            shape_ok,
            f"x {len(x_values)} rows, weight {len(weights)} values for rows={section['rows']} "
            f"width={section['width']}",
        )
    )
    if not shape_ok:
        return checks
    for name, values in (("x", x_values), ("weight", weights)):
        digest = values_sha256(values, dtype)
        checks.append(
            Check(
                f"input.{name}_sha256",
                digest == section[f"{name}_sha256"],
                f"recomputed {digest[:16]}..., recorded {section[f'{name}_sha256'][:16]}...",
            )
        )
    try:
        problem = make_problem(
            x_values, weights, eps=section["eps"], dtype=dtype, row_stride=section["row_stride"]
        )
    except ValidationError as exc:
        checks.append(Check("input valid", False, str(exc)))
        return checks
    exact = np.array_equal(problem.x, np.asarray(x_values, dtype=np.float64)) and np.array_equal(
        problem.weight, np.asarray(weights, dtype=np.float64)
    )
    checks.append(Check("input exact in dtype", exact, f"x and weight are {dtype} values"))
    tile = data["tile"]
    tile_ok = (
        tile["block"] == problem.block
        and tile["valid_lanes"] == problem.width
        and tile["masked_lanes"] == problem.block - problem.width
    )
    checks.append(
        Check(
            "tile",
            tile_ok,
            f"block {tile['block']}, valid {tile['valid_lanes']}, "
            f"masked {tile['masked_lanes']} for width {problem.width}",
        )
    )
    item = ITEMSIZE[dtype]
    elements = problem.rows * problem.width
    traffic = data["traffic"]
    traffic_ok = (
        traffic["bytes_read_x"] == elements * item
        and traffic["bytes_written"] == elements * item
        and traffic["reductions"] == problem.rows
    )
    checks.append(Check("traffic ledger", traffic_ok, f"{elements} elements x {item} bytes"))
    reference = scalar.reference(problem)
    model = tiled.model(problem, poison=_from_json_num(tile["poison"]))
    drift = []
    if len(data["rows"]) != problem.rows:
        drift.append(f"{len(data['rows'])} rows recorded for {problem.rows} input rows")
    for index, row in zip(range(problem.rows), data["rows"], strict=False):
        recomputed = {
            "sum_squares": reference.sum_squares[index],
            "mean_square": reference.mean_square[index],
            "rrms": reference.rrms[index],
            "tiled_sum_squares": model.sum_squares[index],
            "tiled_mean_square": model.mean_square[index],
            "tiled_rrms": model.rrms[index],
        }
        for name, value in recomputed.items():
            if not _same_float(_row_value(row, name), float(value)):
                drift.append(
                    f"row {index} {name}: recorded {_row_value(row, name)!r}, "
                    f"oracle {float(value)!r}"
                )
        for name, value in (
            ("index", index),
            ("width", problem.width),
            ("block", problem.block),
            ("valid_lanes", problem.width),
            ("masked_lanes", problem.block - problem.width),
        ):
            if row[name] != value:
                drift.append(f"row {index} {name}: recorded {row[name]!r}, expected {value}")
    checks.append(
        Check(
            "rows recomputed by the oracle",
            not drift,
            "; ".join(drift[:3]) + (" ..." if len(drift) > 3 else "")
            if drift
            else f"{problem.rows} rows: sum_squares, mean_square, rrms (scalar and tiled) exact",
        )
    )
    return checks


def _outcome_checks(data: dict[str, Any]) -> list[Check]:
    checks = []
    survivors = [
        f"{m['target']} {m['name']}"
        for m in data["mutants"]
        if not (m["killed"] and m["killed_by"])
    ]
    targets = sorted({m["target"] for m in data["mutants"]})
    checks.append(
        Check(
            "mutants all killed",
            bool(data["mutants"]) and not survivors,
            f"survived: {', '.join(survivors)}"
            if survivors
            else f"{len(data['mutants'])} mutants ({', '.join(targets)}) killed",
        )
    )
    misbehaved = [
        f"{f['target']} {f['name']}"
        for f in data["fixtures"]
        if not f["passed"] or f["expected"] != f["actual"]
    ]
    checks.append(
        Check(
            "fixtures behave",
            not misbehaved,
            f"unexpected outcome: {', '.join(misbehaved)}"
            if misbehaved
            else f"{len(data['fixtures'])} fixture outcomes as expected",
        )
    )
    paths = data["kernel"].get("paths") or []
    path_problems = [
        f"{entry['path']}: "
        + ", ".join(
            [f"{m} survived" for m in entry["survivors"]]
            + [m + " has no killer" for m, killers in entry["killed_by"].items() if not killers]
            + (
                [f"{entry['fixtures_as_expected']}/{entry['fixtures']} fixtures as expected"]
                if entry["fixtures_as_expected"] != entry["fixtures"]
                else []
            )
        )
        for entry in paths
        if entry["survivors"]
        or entry["fixtures_as_expected"] != entry["fixtures"]
        or not all(entry["killed_by"].values())
    ]
    if paths or data["kernel"]["ran"]:
        checks.append(
            Check(
                "kernel launch layouts",
                bool(paths) and not path_problems,
                "; ".join(path_problems)
                if path_problems
                else (
                    f"{', '.join(e['path'] for e in paths)}: every mutant killed, every fixture"
                    " as expected"
                    if paths
                    else "the kernel ran but no launch layout was checked"
                ),
            )
        )
    export = data["export_check"]
    checks.append(
        Check(
            "export_check",
            export.get("status") == "passed",
            f"status {export.get('status')!r}"
            + (f": {export['problems'][0]}" if export.get("problems") else ""),
        )
    )
    return checks


def _consistency_checks(data: dict[str, Any], csv_file: Path | None) -> list[Check]:
    """Everything ``verify`` checks once the JSON is schema-valid."""
    checks: list[Check] = []
    checks += _recompute_checks(data)
    checks.append(
        Check(
            "json row count",
            len(data["rows"]) == data["input"]["rows"],
            f"{len(data['rows'])} rows for input.rows={data['input']['rows']}",
        )
    )
    if csv_file is None:
        checks.append(Check("csv", True, "no CSV given or found beside the JSON; not checked"))
        for key, column in (("max_abs", "max_abs_error"), ("max_rel", "max_rel_error")):
            headline = _from_json_num(data["errors"][key])
            json_max = _nan_max(_row_value(r, column) for r in data["rows"])
            checks.append(
                Check(
                    f"errors.{key}",
                    _same_float(headline, json_max),
                    f"headline {headline!r}, max of rows {json_max!r}",
                )
            )
    else:
        header, csv_rows, csv_problems = read_csv_rows(csv_file)
        checks += [Check("csv parse", False, p) for p in csv_problems]
        if not csv_problems:
            checks += _compare_exports(data, header, csv_rows, None)
        recorded = data["export_check"].get("files", {}).get("csv_sha256")
        if recorded:
            digest = hashlib.sha256(csv_file.read_bytes()).hexdigest()
            checks.append(
                Check(
                    "csv unchanged since export",
                    digest == recorded,
                    "same bytes as when exported"
                    if digest == recorded
                    else f"sha256 {digest[:16]}..., export recorded {recorded[:16]}...",
                )
            )
    checks += _outcome_checks(data)
    return checks


def verify_receipts(
    json_path: str | os.PathLike[str], csv_path: str | os.PathLike[str] | None = None
) -> VerifyReport:
    """Independently reparse receipts written earlier and check them for consistency.

    Checks: JSON syntax and schema; schema version; x/weight sha256 recomputed from the
    recorded values; dimensions; tile and traffic ledger; per-row intermediates recomputed by
    the oracle from the recorded input; CSV header, row count and every CSV value equal to the
    JSON's exactly; headline max errors equal the maxima of the per-row values; every mutant
    killed; every fixture as expected; ``export_check`` present and passed.

    Args:
        json_path: the receipt JSON.
        csv_path: its CSV; default: the JSON's sibling with suffix ``.csv`` if it exists.

    Returns:
        A :class:`VerifyReport` (``ok`` False names every failed check).

    Raises:
        ReceiptError: a path cannot be read (missing, a folder, no permission).
    """
    json_file = Path(json_path)
    csv_file = Path(csv_path) if csv_path is not None else json_file.with_suffix(".csv")
    if csv_path is None and not csv_file.exists():
        csv_file = None
    for path in (json_file, csv_file):
        if path is None:
            continue
        if not path.is_file():
            raise ReceiptError(f"cannot read {path}: no such file")
        if not os.access(path, os.R_OK):
            raise ReceiptError(f"cannot read {path}: permission denied")
    checks: list[Check] = []
    data, problems = _read_json(json_file)
    checks += [Check("json parse", False, p) for p in problems]
    if data is not None:
        errors = schema_errors(data)
        checks.append(
            Check("json schema", not errors, "; ".join(errors[:3]) if errors else "valid")
        )
        if errors:
            data = None
    if data is not None:
        checks.append(
            Check(
                "schema_version",
                data["schema_version"] == SCHEMA_VERSION,
                f"{data['schema_version']} (this tool reads {SCHEMA_VERSION})",
            )
        )
        try:
            checks += _consistency_checks(data, csv_file)
        except (KeyError, IndexError, TypeError, ValueError, ArithmeticError) as exc:
            # Schema-valid but self-contradictory in a way no check above anticipated.
            checks.append(Check("consistency", False, f"{type(exc).__name__}: {exc}"))
    return VerifyReport(json_file, csv_file, tuple(checks))


def summarize(receipt: dict[str, Any]) -> Sequence[str]:
    """A few human lines about a receipt (for the CLI and the window)."""
    errors = receipt["errors"]
    export = receipt["export_check"]
    return (
        f"errors ({errors['compared']}): max_abs={errors['max_abs']!r} "
        f"max_rel={errors['max_rel']!r} ({errors['compare_dtype']}: atol={errors['atol']:g}, "
        f"rtol={errors['rtol']:g}) {'pass' if errors['passed'] else 'FAIL'}",
        f"export check: {export['status']}"
        + (f" ({'; '.join(export['problems'][:2])})" if export["problems"] else ""),
    )


# ----------------------------------------------------------------------------- diff


@dataclass(frozen=True)
class Difference:
    """One way two receipts differ."""

    section: str
    detail: str

    def __str__(self) -> str:
        return f"{self.section}: {self.detail}"


_DIFF_INPUT_KEYS = ("rows", "width", "row_stride", "dtype", "eps", "x_sha256", "weight_sha256")
_DIFF_ROW_KEYS = ("sum_squares", "mean_square", "rrms", "tiled_sum_squares", "tiled_mean_square",
                  "tiled_rrms", "max_abs_error", "max_rel_error")  # fmt: skip
_DIFF_ERROR_KEYS = ("max_abs", "max_rel", "atol", "rtol", "compare_dtype", "passed", "compared")
_DIFF_KERNEL_KEYS = ("mode", "source_sha256", "block", "num_warps", "oob_writes")


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float, str)) and isinstance(b, (int, float, str)):
        try:
            return _same_float(_from_json_num(a), _from_json_num(b))
        except ValueError:
            return a == b
    return a == b


def diff_receipts(a: dict[str, Any], b: dict[str, Any]) -> list[Difference]:
    """What differs between two receipts (ignoring timestamps and free-text details).

    Compared: input dimensions, dtype, eps and hashes; per-row intermediates and errors
    (exactly); headline errors and tolerance; fixture and mutant outcomes per target; kernel
    mode, source hash, block, num_warps; device; versions; the verdict.

    Returns:
        The differences, empty when the receipts are equivalent.
    """
    found: list[Difference] = []

    def compare(section: str, left: dict[str, Any], right: dict[str, Any], keys: Iterable[str]):
        for key in keys:
            if not _same_value(left.get(key), right.get(key)):
                found.append(Difference(section, f"{key} {left.get(key)!r} -> {right.get(key)!r}"))

    compare("input", a["input"], b["input"], _DIFF_INPUT_KEYS)
    if len(a["rows"]) != len(b["rows"]):
        found.append(Difference("rows", f"{len(a['rows'])} rows -> {len(b['rows'])} rows"))
    else:
        changed = [
            f"row {index} {key}"
            for index, (left, right) in enumerate(zip(a["rows"], b["rows"], strict=True))
            for key in _DIFF_ROW_KEYS
            if not _same_value(left.get(key), right.get(key))
        ]
        if changed:
            more = f" (+{len(changed) - 6} more)" if len(changed) > 6 else ""
            found.append(Difference("rows", ", ".join(changed[:6]) + more))
    compare("errors", a["errors"], b["errors"], _DIFF_ERROR_KEYS)
    for section, key_of, value_of in (
        ("fixtures", lambda f: (f["target"], f["name"]), lambda f: (f["actual"], f["passed"])),
        ("mutants", lambda m: (m["target"], m["name"]),
         lambda m: (m["killed"], tuple(m["killed_by"]))),
    ):  # fmt: skip
        left = {key_of(item): value_of(item) for item in a[section]}
        right = {key_of(item): value_of(item) for item in b[section]}
        for key in sorted(set(left) | set(right)):
            label = f"{key[0]} {key[1]}"
            if key not in right:
                found.append(Difference(section, f"{label} only in the first"))
            elif key not in left:
                found.append(Difference(section, f"{label} only in the second"))
            elif left[key] != right[key]:
                found.append(Difference(section, f"{label} {left[key]!r} -> {right[key]!r}"))
    compare("kernel", a["kernel"], b["kernel"], _DIFF_KERNEL_KEYS)
    if a["device"] != b["device"]:
        found.append(Difference("device", f"{a['device']!r} -> {b['device']!r}"))
    compare(
        "versions", a["versions"], b["versions"], sorted(set(a["versions"]) | set(b["versions"]))
    )
    compare("verdict", a["verdict"], b["verdict"], ("passed",))
    return found


def read_receipt(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and schema-validate one receipt JSON.

    Raises:
        ReceiptError: unreadable, not JSON, or not a valid receipt.
    """
    source = Path(path)
    if not source.is_file():
        raise ReceiptError(f"cannot read {source}: no such file")
    try:
        data, problems = _read_json(source)
    except OSError as exc:
        raise ReceiptError(f"cannot read {source}: {exc.strerror or exc}") from None
    if data is None:
        raise ReceiptError(problems[0])
    errors = schema_errors(data)
    if errors:
        raise ReceiptError(f"{source.name} is not a valid receipt: {errors[0]}")
    return data
