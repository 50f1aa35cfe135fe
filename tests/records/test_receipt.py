"""Receipts: write, reparse, compare; schema; tampering; repr-exact CSV floats."""

from __future__ import annotations

import copy
import csv
import hashlib
import json
import math
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kernels
from inspector.records.receipts import exact, exports, receipt, verify
from oracle.dtypes import bfloat16_bits
from oracle.mutants import MODEL_MUTANTS


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_write_reparse_compare_kernel_run(kernel_result, tmp_path):
    written = receipt.write_receipts(kernel_result, tmp_path)
    json_path, csv_path = tmp_path / "receipt.json", tmp_path / "receipt.csv"
    on_disk = _load(json_path)
    assert on_disk == written
    assert receipt.schema_errors(on_disk) == []
    assert on_disk["schema_version"] == receipt.SCHEMA_VERSION
    assert on_disk["export_check"]["status"] == "passed", on_disk["export_check"]["problems"]
    assert {c["name"] for c in on_disk["export_check"]["checks"]} >= {
        "json schema",
        "row count",
        "csv rows equal json rows",
        "errors.max_abs",
        "errors.max_rel",
        "input.rows",
        "input.width",
    }
    assert on_disk["kernel"]["mode"] == "interpreter"
    assert on_disk["kernel"]["ran"] is True
    assert len(on_disk["kernel"]["source_sha256"]) == 64
    assert on_disk["traffic"]["modeled"] is True
    targets = {(m["target"], m["name"]): m for m in on_disk["mutants"]}
    assert len([t for t in targets if t[0] == "model"]) == len(MODEL_MUTANTS)
    assert len([t for t in targets if t[0] == "kernel"]) == len(kernels.KERNEL_MUTANTS)
    assert all(m["killed"] and m["killed_by"] for m in on_disk["mutants"])
    assert {"tool", "python", "numpy", "torch", "triton"} <= set(on_disk["versions"])

    with csv_path.open(newline="", encoding="utf-8") as stream:
        rows = list(csv.DictReader(stream))
    assert len(rows) == on_disk["input"]["rows"] == 4
    for json_row, csv_row in zip(on_disk["rows"], rows, strict=True):
        assert float(csv_row["rrms"]) == json_row["rrms"]
        assert float(csv_row["mean_square"]) == json_row["mean_square"]
    # The per-row intermediates are the oracle's, bit for bit.
    np.testing.assert_array_equal([r["rrms"] for r in on_disk["rows"]], kernel_result.scalar.rrms)
    np.testing.assert_array_equal(
        [r["tiled_rrms"] for r in on_disk["rows"]], kernel_result.tiled.rrms.astype(np.float64)
    )
    assert on_disk["errors"]["max_abs"] == max(r["max_abs_error"] for r in on_disk["rows"])

    report = verify.verify_receipts(json_path, csv_path)
    assert report.ok, report.problems


def test_model_only_receipt_says_so(model_results, tmp_path):
    written = receipt.write_receipts(model_results["float32"], tmp_path)
    assert written["kernel"]["mode"] == "model only"
    assert written["kernel"]["ran"] is False
    assert written["errors"]["compared"] == "tiled model vs scalar reference"
    assert {m["target"] for m in written["mutants"]} == {"model"}
    assert verify.verify_receipts(tmp_path / "receipt.json").ok


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_hash_is_of_the_dtype_exact_bytes(model_results, tmp_path, dtype):
    result = model_results[dtype]
    written = receipt.write_receipts(result, tmp_path)
    x = np.asarray(written["input"]["x"], dtype=np.float64)
    if dtype == "bfloat16":
        raw = bfloat16_bits(x).astype("<u2").tobytes()
        # bfloat16 bits are the top half of the float32 bits: recompute that way too.
        top_halves = (x.astype("<f4").view("<u4") >> 16).astype("<u2").tobytes()
        assert raw == top_halves
    else:
        raw = x.astype("<f4" if dtype == "float32" else "<f2").tobytes()
    assert written["input"]["x_sha256"] == hashlib.sha256(raw).hexdigest()
    assert written["input"]["dtype"] == dtype
    assert written["input"]["row_stride"] == 40
    assert verify.verify_receipts(tmp_path / "receipt.json").ok


@pytest.mark.parametrize(
    ("damage", "where"),
    [
        (lambda r: r.pop("rows"), "(root)"),
        (lambda r: r.__setitem__("schema_version", "1"), "schema_version"),
        (lambda r: r["input"].__setitem__("x_sha256", "abc"), "input/x_sha256"),
        (lambda r: r["rows"][0].__setitem__("rrms", "NaN!"), "rows/0/rrms"),
        (lambda r: r["traffic"].__setitem__("modeled", False), "traffic/modeled"),
        (lambda r: r["mutants"][0].__setitem__("target", "gpu"), "mutants/0/target"),
        (lambda r: r.__setitem__("surprise", 1), "(root)"),
        (lambda r: r["input"]["x"][1].__setitem__(3, "1.0"), "input/x/1/3"),
        (lambda r: r["input"]["x"][2].__setitem__(0, True), "input/x/2/0"),
        (lambda r: r["input"]["x"].__setitem__(2, []), "input/x/2"),
        (lambda r: r["input"]["x"][0].__setitem__(0, None), "input/x/0/0"),
    ],
)
def test_schema_rejects_a_broken_receipt(model_results, damage, where):
    good = receipt.build_receipt(model_results["float32"])
    receipt.validate_receipt(good)
    broken = copy.deepcopy(good)
    damage(broken)
    with pytest.raises(receipt.ReceiptError, match="does not match its schema") as info:
        receipt.validate_receipt(broken)
    assert where in str(info.value)


@pytest.mark.parametrize("where", ["rows", "input/x", "input/weight", "fixtures", "mutants"])
def test_a_list_at_its_length_bound_is_read_and_one_item_more_refused_by_length(
    model_results, monkeypatch, where
):
    # A list past what any receipt holds is named by its length; jsonschema sees one item.
    from inspector.records.receipts import format as receipt_format

    good = receipt.build_receipt(model_results["float32"])
    parent_key, _, key = where.rpartition("/")
    parent = good[parent_key] if parent_key else good
    count = len(parent[key])
    monkeypatch.setitem(receipt_format.MAX_ITEMS, where, count)
    assert receipt.schema_errors(good) == []
    monkeypatch.setitem(receipt_format.MAX_ITEMS, where, count - 1)
    assert receipt.schema_errors(good) == [f"{where}: {count} items, more than {count - 1}"]
    parent[key].append("not an item")  # not reached: only the first item is validated
    assert receipt.schema_errors(good) == [f"{where}: {count + 1} items, more than {count - 1}"]


def test_write_validates_before_writing(model_results, tmp_path, monkeypatch):
    real_build = receipt.build_receipt

    def broken_build(result):
        built = real_build(result)
        del built["errors"]
        return built

    monkeypatch.setattr(receipt, "build_receipt", broken_build)
    out = tmp_path / "out"
    with pytest.raises(receipt.ReceiptError, match="errors"):
        receipt.write_receipts(model_results["float32"], out)
    assert not out.exists()


def test_export_check_reports_a_mismatch(model_results, tmp_path):
    written = receipt.write_receipts(model_results["float32"], tmp_path)
    expected = copy.deepcopy(written)
    expected["rows"][1]["rrms"] = expected["rows"][1]["rrms"] * (1 + 2**-50)
    expected["input"]["width"] += 1
    check = exports.check_exports(tmp_path / "receipt.json", tmp_path / "receipt.csv", expected)
    assert check["status"] == "failed"
    text = " ".join(check["problems"])
    assert "input.width" in text
    assert "row 1 rrms" in text


def _tamper_csv(path: Path, row: int, column: str) -> None:
    with path.open(newline="", encoding="utf-8") as stream:
        lines = list(csv.reader(stream))
    index = lines[0].index(column)
    value = float(lines[row + 1][index])
    lines[row + 1][index] = repr(math.nextafter(value, math.inf))
    with path.open("w", newline="", encoding="utf-8") as stream:
        csv.writer(stream, lineterminator="\n").writerows(lines)


def test_tampered_csv_value_fails_verify_naming_it(model_results, tmp_path):
    receipt.write_receipts(model_results["float32"], tmp_path)
    _tamper_csv(tmp_path / "receipt.csv", 2, "mean_square")  # one ulp
    report = verify.verify_receipts(tmp_path / "receipt.json", tmp_path / "receipt.csv")
    assert not report.ok
    assert any("row 2 mean_square" in problem for problem in report.problems), report.problems


def test_tampered_json_value_fails_verify_naming_it(model_results, tmp_path):
    receipt.write_receipts(model_results["float32"], tmp_path)
    path = tmp_path / "receipt.json"
    data = _load(path)
    data["rows"][0]["rrms"] = math.nextafter(data["rows"][0]["rrms"], 0.0)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    report = verify.verify_receipts(path, tmp_path / "receipt.csv")
    assert not report.ok
    text = " ".join(report.problems)
    assert "row 0 rrms" in text  # CSV differs and the oracle recomputation differs


def test_tampered_input_value_breaks_its_hash(model_results, tmp_path):
    receipt.write_receipts(model_results["bfloat16"], tmp_path)
    path = tmp_path / "receipt.json"
    data = _load(path)
    data["input"]["weight"][3] = -data["input"]["weight"][3]
    path.write_text(json.dumps(data), encoding="utf-8")
    report = verify.verify_receipts(path)
    assert not report.ok
    assert any(p.startswith("input.weight_sha256") for p in report.problems)


def test_tampered_headline_and_mutant_fail_verify(model_results, tmp_path):
    receipt.write_receipts(model_results["float32"], tmp_path)
    path = tmp_path / "receipt.json"
    data = _load(path)
    data["errors"]["max_rel"] = data["errors"]["max_rel"] / 2
    data["mutants"][2]["killed"] = False
    path.write_text(json.dumps(data), encoding="utf-8")
    problems = " ".join(verify.verify_receipts(path).problems)
    assert "errors.max_rel" in problems
    assert "mutants all killed" in problems
    assert data["mutants"][2]["name"] in problems


def test_verify_rejects_invalid_json_and_missing_files(model_results, tmp_path):
    receipt.write_receipts(model_results["float32"], tmp_path)
    path = tmp_path / "receipt.json"
    path.write_text(path.read_text()[:-40], encoding="utf-8")
    report = verify.verify_receipts(path)
    assert not report.ok
    assert "not valid JSON" in report.problems[0]
    with pytest.raises(receipt.ReceiptError, match="no such file"):
        verify.verify_receipts(tmp_path / "missing.json")


def test_nonfinite_values_are_strings_in_json_and_words_in_csv():
    assert exact.json_number(float("inf")) == "inf"
    assert exact.json_number(float("-inf")) == "-inf"
    assert exact.json_number(float("nan")) == "nan"
    assert exact.csv_cell(float("nan")) == "nan"
    assert exact.csv_cell(float("-inf")) == "-inf"
    assert math.isinf(exact.from_json_number("inf"))


@pytest.mark.parametrize(
    "value",
    [
        0.1,
        1 / 3,
        -0.0,
        5e-324,
        2.2250738585072014e-308,
        1.7976931348623157e308,
        1e-12,
        123456789.125,
    ],
)
def test_csv_floats_round_trip_exactly(value):
    assert struct.pack("<d", float(exact.csv_cell(value))) == struct.pack("<d", value)


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True))
def test_csv_float_cells_parse_back_to_the_same_bits(value):
    parsed = float(exact.csv_cell(value))
    if math.isnan(value):
        assert math.isnan(parsed)
    else:
        assert struct.pack("<d", parsed) == struct.pack("<d", value)


def _leaf_paths(node, path=()):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaf_paths(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _leaf_paths(value, (*path, index))
    if path:
        yield path


def test_random_tampering_is_reported_never_raised(model_results, tmp_path):
    """Any one edit of the JSON (value swapped, deleted, duplicated): a report, not a crash."""
    import random

    receipt.write_receipts(model_results["float32"], tmp_path)
    json_path = tmp_path / "receipt.json"
    original = _load(json_path)
    paths = list(_leaf_paths(original))
    rng = random.Random(7)
    replacements = [0.5, -1, "x", None, [], True, 10**30, float("nan")]
    for _ in range(150):
        data = copy.deepcopy(original)
        path = rng.choice(paths)
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        action = rng.choice(["replace", "delete", "duplicate"])
        if action == "delete":
            parent.pop(path[-1])
        elif action == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[path[-1]]))
        else:
            parent[path[-1]] = rng.choice(replacements)
        json_path.write_text(json.dumps(data), encoding="utf-8")
        report = verify.verify_receipts(json_path)
        assert report.checks


def test_extra_json_row_is_named(model_results, tmp_path):
    receipt.write_receipts(model_results["float32"], tmp_path)
    path = tmp_path / "receipt.json"
    data = _load(path)
    data["rows"].append(copy.deepcopy(data["rows"][0]))
    path.write_text(json.dumps(data), encoding="utf-8")
    report = verify.verify_receipts(path)
    assert not report.ok
    assert any("4 rows recorded for 3 input rows" in p for p in report.problems)


def test_csv_bytes_changed_since_export_are_named(model_results, tmp_path):
    receipt.write_receipts(model_results["float32"], tmp_path)
    csv_path = tmp_path / "receipt.csv"
    csv_path.write_bytes(csv_path.read_bytes().replace(b"\n", b"\r\n"))  # same values
    report = verify.verify_receipts(tmp_path / "receipt.json", csv_path)
    assert [p.split(":")[0] for p in report.problems] == ["csv unchanged since export"]


def test_every_kernel_launch_layout_is_in_the_receipt_and_verified(kernel_result, tmp_path):
    receipt.write_receipts(kernel_result, tmp_path)
    path = tmp_path / "receipt.json"
    data = _load(path)
    layouts = {entry["path"]: entry for entry in data["kernel"]["paths"]}
    assert set(layouts) == {"one_row", "multi_row", "column_loop"}
    for entry in layouts.values():
        assert entry["survivors"] == []
        assert entry["fixtures_as_expected"] == entry["fixtures"] > 0
        assert len(entry["killed_by"]) == len(kernels.KERNEL_MUTANTS)
        assert all(entry["killed_by"].values())
    assert "padded_row_stride" in layouts["multi_row"]["killed_by"]["wrong_row_stride"]
    assert verify.verify_receipts(path, tmp_path / "receipt.csv").ok
    # A layout on which a mutant survived must fail verify, naming layout and mutant.
    data["kernel"]["paths"][1]["survivors"] = ["missing_weight"]
    data["kernel"]["paths"][1]["killed_by"]["missing_weight"] = []
    path.write_text(json.dumps(data), encoding="utf-8")
    problems = " ".join(verify.verify_receipts(path).problems)
    assert "multi_row: missing_weight survived" in problems
