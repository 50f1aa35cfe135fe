"""Every reader of an untrusted JSON text counts it against its own bounds before parsing: a
text one container past the reader's real figure is refused by name, and the largest file
each writer makes is within them."""

from __future__ import annotations

import json

import pytest

from bounded_json import JsonBounds, count
from inspector.records.receipts import format as receipt_format
from inspector.records.receipts.format import RECEIPT_BOUNDS, parse_receipt_json, read_json


def _containers(bounds: JsonBounds, extra: int = 1) -> str:
    """A flat JSON object holding one more container than ``bounds`` allows."""
    return '{"k": [' + ",".join(["[]"] * (bounds.containers - 2 + extra)) + "]}"


def test_a_receipt_file_one_container_past_the_bound_is_refused(tmp_path) -> None:
    path = tmp_path / "receipt.json"
    path.write_text(_containers(RECEIPT_BOUNDS, 0), encoding="utf-8")
    assert read_json(path)[1] == []
    path.write_text(_containers(RECEIPT_BOUNDS), encoding="utf-8")
    data, problems = read_json(path)
    assert data is None
    assert problems == [
        f"receipt.json: {RECEIPT_BOUNDS.containers + 1} objects and arrays, more than "
        f"{RECEIPT_BOUNDS.containers}"
    ]


def test_the_receipt_bounds_hold_the_largest_problems_receipt() -> None:
    # The largest problem's receipt (4096 x 1024): 8,296 containers, 4,257,588 commas, 125,308
    # quotes; its per-row and per-value parts scale with LIMITS, which the bounds are made of.
    assert RECEIPT_BOUNDS.size == receipt_format.MAX_JSON_BYTES
    assert RECEIPT_BOUNDS.containers >= 2 * 8_296
    assert RECEIPT_BOUNDS.values >= 4_257_588 + 8_296 + 1
    assert RECEIPT_BOUNDS.strings >= 125_308 // 2


def test_receipts_kept_in_a_session_go_through_the_same_parser() -> None:
    from inspector.model.kernel_choice import receipt_kernel
    from inspector.records.provenance import kernel_provenance

    text = _containers(RECEIPT_BOUNDS)
    with pytest.raises(ValueError, match="objects and arrays, more than"):
        parse_receipt_json(text, "receipts/json")
    assert receipt_kernel(text, None) == ("", "")
    assert kernel_provenance(text).status == "unknown"
    duplicate = '{"kernel": {"ran": false}, "kernel": {"ran": false}}'
    assert kernel_provenance(duplicate).status == "unknown"  # strict, as a file is


def test_a_mutation_report_one_container_past_its_bound_is_refused(tmp_path) -> None:
    from inspector.mutate.saved_report import REPORT_BOUNDS, ReportError, read_report

    path = tmp_path / "mutation.json"
    path.write_text(_containers(REPORT_BOUNDS), encoding="utf-8")
    with pytest.raises(ReportError, match=f"more than {REPORT_BOUNDS.containers}"):
        read_report(path)
    path.write_text(_containers(REPORT_BOUNDS, 0), encoding="utf-8")
    with pytest.raises(ReportError, match="kernel must be an object"):  # parsed, then judged
        read_report(path)


def test_a_coverage_record_one_container_past_its_bound_is_refused(tmp_path) -> None:
    from inspector.coverage.proof import RECORD_BOUNDS, read_record

    path = tmp_path / "cpu.json"
    path.write_text(_containers(RECORD_BOUNDS), encoding="utf-8")
    with pytest.raises(ValueError, match=f"more than {RECORD_BOUNDS.containers}"):
        read_record(path)
    path.write_text(_containers(RECORD_BOUNDS, 0), encoding="utf-8")
    with pytest.raises(ValueError, match="kind must be"):
        read_record(path)


def test_a_benchmark_record_one_container_past_its_bound_is_refused(tmp_path) -> None:
    from kernels.bench import report

    path = tmp_path / "results.json"
    path.write_text(_containers(report.RECORD_BOUNDS), encoding="utf-8")
    with pytest.raises(ValueError, match=f"more than {report.RECORD_BOUNDS.containers}"):
        report.read_json(path)
    path.write_text(_containers(report.RECORD_BOUNDS, 0), encoding="utf-8")
    with pytest.raises(ValueError, match=r"not a \S+ report"):
        report.read_json(path)


def test_the_benchmark_bounds_hold_the_writers_largest_record(tmp_path) -> None:
    from kernels.bench import report, timing

    row = {f"field_{i}": 1.5 for i in range(60)}
    row["parity"] = {f"p{i}": 0.0 for i in range(8)}
    for name in ("samples_us", "round_medians_us", "loop_samples_us", "loop_round_medians_us"):
        row[name] = [1.0] * timing.MAX_SAMPLES  # the shortest number write_json writes
    path = tmp_path / "results.json"
    report.write_json({"schema_version": 1, "results": [row]}, path)
    text = path.read_text(encoding="utf-8")
    one = count(text)
    bounds = report.RECORD_BOUNDS
    # MAX_RESULTS such rows in containers and strings, and as many values as fit the bytes.
    assert one.containers * report.MAX_RESULTS <= bounds.containers
    assert one.strings * report.MAX_RESULTS <= bounds.strings
    assert one.values * 8 <= len(text)
    assert bounds.values * 8 == bounds.size


def test_a_shape_set_one_container_past_its_bound_is_refused(tmp_path) -> None:
    from kernels.bench import shapes

    path = tmp_path / "many.json"
    path.write_text(_containers(shapes.SHAPE_SET_BOUNDS), encoding="utf-8")
    with pytest.raises(shapes.BenchUsageError, match="objects and arrays, more than 8194"):
        shapes.load_shape_set(path)
    set_of_8192 = {
        "schema": shapes.SHAPES_SCHEMA,
        "name": "many",
        "shapes": [[1 + i // 512, 1 + i % 512] for i in range(8192)],
    }
    path.write_text(json.dumps(set_of_8192), encoding="utf-8")
    assert len(shapes.load_shape_set(path).shapes) == 8192


def test_the_session_bench_meta_bounds_are_the_records() -> None:
    from inspector.records.sessions.layout import BENCH_META_JSON
    from kernels.bench import report

    assert BENCH_META_JSON == report.RECORD_BOUNDS
