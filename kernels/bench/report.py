"""The record a run leaves: ``results.json`` (exact), ``results.csv`` (a line per result),
the markdown table and ``bench.png``; and :func:`read_json`, which checks a record before
anyone draws it.

``results.json`` holds the protocol, the bytes formula, versions, device, driver, clocks and
every sample; NaN is written as null. ``results.csv`` has one line per shape x dtype x
implementation with repr-exact floats, so it parses back to the same numbers.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bounded_json import JsonBounds, loads
from kernels.bench.impls import DISPLAY_ORDER
from kernels.bench.parity import TOLERANCES
from kernels.bench.shapes import BYTES_FORMULA, MAX_ELEMENTS, MAX_ROWS
from kernels.bench.timing import (
    GRAPH_REPLAY_TARGET_US,
    L2_FACTOR,
    LOOP_SAMPLE_TARGET_US,
    MAX_GRAPH_LAUNCHES,
    MIN_GRAPH_LAUNCHES,
    SLEEP_US_BEFORE_SAMPLE,
)

if TYPE_CHECKING:
    from kernels.bench.harness import BenchConfig

SCHEMA_VERSION = "rmsnorm-bench/1"

CSV_FIELDS = (
    "set",
    "rows",
    "width",
    "dtype",
    "impl",
    "status",
    "timing_mode",
    "launches_per_sample",
    "buffers",
    "working_set_bytes",
    "bytes",
    "n",
    "median_us",
    "p20_us",
    "p80_us",
    "min_us",
    "max_us",
    "mean_us",
    "std_us",
    "gbps",
    "gbps_p20_time",
    "gbps_p80_time",
    "pct_of_copy",
    "speedup_vs_best_alt",
    "best_alternative",
    "loop_us",
    "loop_p20_us",
    "loop_p80_us",
    "loop_min_us",
    "loop_max_us",
    "loop_n",
    "loop_calls_per_sample",
    "loop_round_spread_pct",
    "loop_speedup_vs_best_alt",
    "best_loop_alternative",
    "compile_s",
    "first_call_s",
    "peak_bytes_per_call",
    "output_bytes",
    "extra_bytes_beyond_output",
    "parity_passed",
    "parity_max_abs",
    "parity_max_rel",
    "parity_rel_l2",
    "wall_s",
    "note",
)
_CSV_INT = {
    "rows",
    "width",
    "launches_per_sample",
    "buffers",
    "working_set_bytes",
    "bytes",
    "n",
    "loop_n",
    "loop_calls_per_sample",
    "peak_bytes_per_call",
    "output_bytes",
    "extra_bytes_beyond_output",
}
_CSV_STR = {
    "set",
    "dtype",
    "impl",
    "status",
    "timing_mode",
    "best_alternative",
    "best_loop_alternative",
    "note",
}


def _csv_row(row: dict[str, Any]) -> dict[str, str]:
    flat = dict(row)
    parity = row.get("parity") or {}
    if parity:
        flat["parity_passed"] = parity.get("passed")
        flat["parity_max_abs"] = parity.get("max_abs")
        flat["parity_max_rel"] = parity.get("max_rel")
        flat["parity_rel_l2"] = parity.get("rel_l2")
    out: dict[str, str] = {}
    for field in CSV_FIELDS:
        value = flat.get(field)
        if value is None:
            out[field] = ""
        elif isinstance(value, bool):
            out[field] = "true" if value else "false"
        elif isinstance(value, float):
            out[field] = repr(value)  # repr parses back to the same float
        else:
            out[field] = str(value)
    return out


def write_csv(results: Iterable[dict[str, Any]], path: str | os.PathLike[str]) -> None:
    """One line per result, fields ``CSV_FIELDS``; floats repr-exact."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_FIELDS, lineterminator="\n")
        writer.writeheader()
        for row in results:
            writer.writerow(_csv_row(row))


def read_csv(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Parse a ``results.csv`` back (empty cells -> None, numbers -> int/float, bools)."""
    rows = []
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        if tuple(reader.fieldnames or ()) != CSV_FIELDS:
            raise ValueError(f"{path}: header does not match CSV_FIELDS")
        for raw in reader:
            row: dict[str, Any] = {}
            for field, text in raw.items():
                if text == "":
                    row[field] = None
                elif field in _CSV_STR:
                    row[field] = text
                elif field == "parity_passed":
                    row[field] = text == "true"
                elif field in _CSV_INT:
                    row[field] = int(text)
                else:
                    row[field] = float(text)
            rows.append(row)
    return rows


def build_report(
    config: BenchConfig,
    results: list[dict[str, Any]],
    *,
    command: str,
    env: dict[str, Any],
    smi_before: dict[str, Any],
    smi_after: dict[str, Any],
    started: str,
    wall_s: float,
    implementations: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    """The exact record written to ``results.json``."""
    return {
        "schema_version": SCHEMA_VERSION,
        "command": command,
        "started_utc": started,
        "wall_s": wall_s,
        "environment": env,
        "nvidia_smi_before": smi_before,
        "nvidia_smi_after": smi_after,
        "implementations": implementations,
        # The user's kernel timed as "candidate" (--kernel), named by its file's bytes.
        "candidate": None
        if config.kernel is None
        else {
            "path": str(config.kernel.path),
            "function": config.kernel.function,
            "sha256": config.kernel.sha256,
        },
        "protocol": {
            "bytes_formula": BYTES_FORMULA,
            "eps": config.eps,
            "seed": config.seed,
            "rep_ms": config.rep_ms,
            "warmup_ms": config.warmup_ms,
            "min_samples": config.min_samples,
            "max_samples": config.max_samples,
            "graph_bytes_threshold": config.graph_bytes_threshold,
            "l2_factor": L2_FACTOR,
            "graph_launches": [MIN_GRAPH_LAUNCHES, MAX_GRAPH_LAUNCHES],
            "graph_replay_target_us": GRAPH_REPLAY_TARGET_US,
            "rounds": config.rounds,
            "sleep_us_before_sample": SLEEP_US_BEFORE_SAMPLE,
            "timing": (
                "CUDA events. cuda_graph (calls under graph_bytes_threshold): one replay of "
                "launches_per_sample back-to-back calls per sample (inputs rotated over "
                "`buffers`, every launch writing its own output), time per launch = replay / "
                "launches; launches >= buffers and >= 2 ms of work for the fastest "
                "implementation of the shape, the same count for all its implementations (so "
                "the replay's fixed cost weighs the same on each). events_per_call (larger "
                "calls): one call per sample, inputs rotated, a GPU sleep queued before each "
                "start event. Every implementation is prepared, parity-checked and warmed up "
                "first; then `rounds` rounds time all implementations, in the order of `impls` in "
                "even rounds and reversed in odd ones (round_order), and the statistics pool "
                "the rounds (round_medians_us, round_spread_pct keep them apart)."
            ),
            "loop": (
                "eager loop, host included: after the device rounds of a shape, rounds x "
                "loop_samples samples per implementation, interleaved (one sample of each "
                "implementation in turn, the order alternating per sample, so a change of the "
                "host's state lands on all alike); a sample is loop_calls_per_sample "
                "back-to-back calls in a Python loop (inputs rotated as above, outputs dropped) "
                "from a synchronized start to a synchronized end, per call = wall time / calls; "
                "the same call count for every implementation of a shape (about "
                f"{LOOP_SAMPLE_TARGET_US:.0f} us per sample for the fastest). loop_us is the "
                "median of all samples (loop_samples_us); each consecutive loop_samples make a "
                "round (loop_round_medians_us)."
            ),
            "loop_samples": config.loop_samples,
            "parity": (
                "fresh random input (row scales 0.1..10), output compared elementwise with a "
                "float64 reference: |y-ref| <= atol + rtol*|ref| and relative L2 <= rel_l2; "
                "copy must be bit-exact"
            ),
            "tolerances": {k: dataclasses.asdict(v) for k, v in TOLERANCES.items()},
            "memory": "peak_bytes_per_call = max_memory_allocated during one call - "
            "memory_allocated before it; extra_bytes_beyond_output subtracts the output",
        },
        "shapes": [
            {"set": name, "rows": shape.rows, "width": shape.width} for name, shape in config.shapes
        ],
        "dtypes": list(config.dtypes),
        "impls": list(config.impls),
        "results": results,
    }


def write_json(report: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Write ``report`` as JSON (NaN written as null) atomically."""
    path = Path(path)
    text = json.dumps(json_safe(report), indent=1, allow_nan=False)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    os.replace(tmp, path)


def json_safe(value: Any) -> Any:
    """``value`` with every non-finite float as None (JSON has no NaN), keys as strings."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


# Largest results.json read_json opens (the full H200 record is under 1 MiB).
MAX_REPORT_BYTES = 64 * 2**20
# Result rows a report may hold (a record of every shape set, three dtypes and six
# implementations is under 1000): a session keeps one dataset per row's samples.
MAX_RESULTS = 8192
# What a record's JSON holds at most: per row ~60 fields and keys, a parity object and four
# sample lists, and the environment besides (the full H200 record: 882 rows, 123,000 values);
# write_json puts each value on a line of its own, 8 bytes or more, so MAX_REPORT_BYTES / 8.
RECORD_BOUNDS = JsonBounds(
    size=MAX_REPORT_BYTES,
    containers=16 * MAX_RESULTS + 4096,
    values=MAX_REPORT_BYTES // 8,
    strings=128 * MAX_RESULTS + 65_536,
)

# Fields every result row carries, and their types.
_ROW_FIELDS: dict[str, type] = {
    "set": str,
    "rows": int,
    "width": int,
    "dtype": str,
    "impl": str,
    "status": str,
}
# Numbers an "ok" row must carry (finite, > 0) and ones it may carry (finite, >= 0).
_OK_ROW_NUMBERS = ("median_us", "gbps")
_OPTIONAL_ROW_NUMBERS = (
    "gbps_p20_time",
    "gbps_p80_time",
    "pct_of_copy",
    "loop_us",
    "loop_p20_us",
    "loop_p80_us",
    "loop_speedup_vs_best_alt",
)


# Sample lists a row may carry: each a list of at most MAX_ROW_SAMPLES finite numbers >= 0 (a
# session keeps them as float arrays, so anything else would make every later save fail).
_ROW_SAMPLES = ("samples_us", "loop_samples_us", "round_medians_us", "loop_round_medians_us")
MAX_ROW_SAMPLES = 100_000


def read_json(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a ``results.json`` back: schema version, and every result row's fields and numbers.

    Raises:
        ValueError: not a benchmark report of this schema, larger than ``MAX_REPORT_BYTES`` or
            :data:`RECORD_BOUNDS` (counted before it is parsed), or a row with a missing or
            wrong field (the message names ``results[i].field``).
        OSError: the file cannot be read.
    """
    size = Path(path).stat().st_size
    if size > MAX_REPORT_BYTES:
        raise ValueError(
            f"{path}: {size} bytes; a benchmark report is at most {MAX_REPORT_BYTES} bytes"
        )
    with Path(path).open("rb") as stream:
        data = loads(stream.read(MAX_REPORT_BYTES + 1), str(path), RECORD_BOUNDS)
    if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"{path}: not a {SCHEMA_VERSION} report")
    if not isinstance(data.get("results"), list):
        raise ValueError(f"{path}: results must be a list")
    if len(data["results"]) > MAX_RESULTS:
        raise ValueError(
            f"{path}: results must hold at most {MAX_RESULTS} rows; got {len(data['results'])}"
        )
    for index, row in enumerate(data["results"]):
        check_row(row, f"{path}: results[{index}]")
    return data


def check_row(row: object, where: str) -> None:
    """One result row's fields, types and numbers (``where`` starts each message).

    Raises:
        ValueError: the first field that is missing or wrong, named ``where.field``.
    """
    if not isinstance(row, dict):
        raise ValueError(f"{where} must be an object; got {type(row).__name__}")
    for field, kind in _ROW_FIELDS.items():
        value = row.get(field)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ValueError(f"{where}.{field} must be a {kind.__name__}; got {value!r}")
        if kind is str and not value.isprintable():
            # A lone surrogate could never be written to a session; a newline would forge a
            # line of any text that shows the name.
            raise ValueError(f"{where}.{field} must be printable text; got {value!r}")
    for field in ("rows", "width"):
        if row[field] < 1:
            raise ValueError(f"{where}.{field} must be >= 1; got {row[field]}")
    if row["rows"] > MAX_ROWS:
        raise ValueError(f"{where}.rows must be <= {MAX_ROWS}; got {row['rows']}")
    if row["rows"] * row["width"] > MAX_ELEMENTS:
        raise ValueError(
            f"{where}.rows*width must be <= {MAX_ELEMENTS}; got {row['rows']}*{row['width']}"
        )
    for field in (*_OK_ROW_NUMBERS, *_OPTIONAL_ROW_NUMBERS):
        value = row.get(field)
        if value is None and (row["status"] != "ok" or field in _OPTIONAL_ROW_NUMBERS):
            continue
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not number or not math.isfinite(value) or value < 0:
            raise ValueError(f"{where}.{field} must be a finite number >= 0; got {value!r}")
        if field in _OK_ROW_NUMBERS and row["status"] == "ok" and value <= 0:
            raise ValueError(f"{where}.{field} must be > 0 in an ok row; got {value!r}")
    for field in _ROW_SAMPLES:
        _check_samples(row.get(field), f"{where}.{field}")
    _check_dram(row.get("dram"), f"{where}.dram")


# A dram record's figures (kernels.bench.ncu): counts, numbers and names, each with its type.
_DRAM_COUNTS = ("bytes_read", "bytes_written", "launches")
_DRAM_NUMBERS = ("pct_of_peak", "duration_ns")
_DRAM_TEXTS = ("ncu_version", "clock_control")


def _check_dram(dram: object, where: str) -> None:
    """A row's optional ``dram``: ``{"absent": why}`` or Nsight Compute's figures."""
    if dram is None:
        return
    if not isinstance(dram, dict):
        raise ValueError(f"{where} must be an object; got {type(dram).__name__}")
    if "absent" in dram:
        if set(dram) != {"absent"} or not isinstance(dram["absent"], str):
            shown = repr(dram)[:80]
            raise ValueError(f"{where} with 'absent' holds only the reason, a string; got {shown}")
        return
    for field in _DRAM_COUNTS:
        value = dram.get(field)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{where}.{field} must be an integer >= 0; got {value!r}")
    for field in _DRAM_NUMBERS:
        value = dram.get(field)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not number or not math.isfinite(value) or value < 0:
            raise ValueError(f"{where}.{field} must be a finite number >= 0; got {value!r}")
    for field in _DRAM_TEXTS:
        if not isinstance(dram.get(field), str):
            raise ValueError(f"{where}.{field} must be a string; got {dram.get(field)!r}")
    names = dram.get("kernels")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        shown = repr(names)[:80]
        raise ValueError(f"{where}.kernels must be a non-empty list of kernel names; got {shown}")


def _check_samples(values: object, where: str) -> None:
    if values is None:
        return
    if not isinstance(values, list) or len(values) > MAX_ROW_SAMPLES:
        shown = f"{len(values)} items" if isinstance(values, list) else repr(values)[:40]
        raise ValueError(
            f"{where} must be a list of at most {MAX_ROW_SAMPLES} finite numbers >= 0; got {shown}"
        )
    for index, value in enumerate(values):
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not number or not math.isfinite(value) or value < 0:
            raise ValueError(f"{where}[{index}] must be a finite number >= 0; got {value!r}")


def markdown_table(results: list[dict[str, Any]], *, dtypes: Sequence[str] | None = None) -> str:
    """GB/s, % of copy, device time and eager-loop time per shape (rows) and implementation
    (columns), for the README."""
    impls = [i for i in DISPLAY_ORDER if any(r["impl"] == i for r in results)]
    keys: list[tuple[str, int, int, str]] = []
    for row in results:
        key = (row["set"], row["rows"], row["width"], row["dtype"])
        if key not in keys and (dtypes is None or row["dtype"] in dtypes):
            keys.append(key)
    header = ["set", "shape", "dtype", *impls]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lookup = {(r["set"], r["rows"], r["width"], r["dtype"], r["impl"]): r for r in results}
    for key in keys:
        cells = [key[0], f"{key[1]}x{key[2]}", key[3]]
        for impl in impls:
            row = lookup.get((*key, impl))
            cells.append(_cell(row, impl))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _cell(row: dict[str, Any] | None, impl: str) -> str:
    if row is None:
        return "-"
    status = row.get("status")
    if status != "ok":
        return f"{status}" + (f" ({row['median_us']:.1f} us)" if "median_us" in row else "")
    time_text = (
        f"{row['median_us']:.2f} us" if row["median_us"] < 100 else f"{row['median_us']:.0f} us"
    )
    loop = row.get("loop_us")
    loop_text = f"; loop {loop:.1f} us" if loop is not None else ""
    if impl == "copy":
        return f"{row['gbps']:.0f} GB/s, {time_text}{loop_text}"
    pct = row.get("pct_of_copy")
    pct_text = f" ({pct:.0f}%)" if pct is not None else ""
    return f"{row['gbps']:.0f}{pct_text}, {time_text}{loop_text}"
