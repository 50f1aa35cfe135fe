"""Every field ``verify`` recomputes from the recorded input, altered alone, is refused by the
check that recomputes it, and by no other.

A real receipt of a small model-only check is written in ``tmp_path``; its CSV is removed and its
hash forgotten (the CSV repeats the rows, so an edit there would trip the export comparison
instead); then one field is changed by the smallest step its type has: one integer, one
binary64 ulp, one hex digit. Were a field dropped from its recomputation, compared loosely
(``isclose``, through float32) or compared with another recorded field instead of with the
oracle, the receipt would verify and the test would fail.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from inspector.records.receipts import receipt, verify
from records.receipt_files import forge as _forge


def _written(result, folder: Path) -> Path:
    receipt.write_receipts(result, folder)
    path = folder / "receipt.json"
    (folder / "receipt.csv").unlink()
    data = json.loads(path.read_text(encoding="utf-8"))
    data["export_check"]["files"] = {}
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _failed(path: Path) -> dict[str, str]:
    report = verify.verify_receipts(path)
    return {check.name: check.detail for check in report.checks if not check.ok}


def _ulp_up(value: float) -> float:
    return math.nextafter(value, math.inf)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_the_untouched_receipt_without_its_csv_verifies(model_results, tmp_path, dtype) -> None:
    path = _written(model_results[dtype], tmp_path)
    assert _failed(path) == {}


def _set(section: str, field: str, change):
    def edit(data):
        data[section][field] = change(data[section][field], data)

    return edit


def _swap_itemsize(value, data):
    return 2 if value == 4 else 4


TILE_AND_TRAFFIC = [
    # (edit, the check that must refuse it, the field its detail names)
    (_set("tile", "block", lambda v, d: v * 2), "tile", "block"),
    (_set("tile", "valid_lanes", lambda v, d: v + 1), "tile", "valid_lanes"),
    (_set("tile", "masked_lanes", lambda v, d: v + 1), "tile", "masked_lanes"),
    (_set("tile", "masked_lanes", lambda v, d: v - 1), "tile", "masked_lanes"),
    (_set("traffic", "itemsize", _swap_itemsize), "traffic ledger", "itemsize"),
] + [
    (_set("traffic", name, lambda v, d: v + 1), "traffic ledger", name)
    for name in (
        "bytes_read_x",
        "bytes_read_weight",
        "bytes_read_weight_unique",
        "bytes_read",
        "bytes_written",
        "bytes_total",
        "reductions",
    )
]


@pytest.mark.parametrize(
    ("edit", "check", "field"),
    TILE_AND_TRAFFIC,
    ids=[f"{check}.{field}" for _, check, field in TILE_AND_TRAFFIC],
)
def test_a_tile_or_traffic_figure_altered_alone_is_refused(
    model_results, tmp_path, edit, check, field
) -> None:
    path = _written(model_results["float16"], tmp_path)
    _forge(path, edit)
    failed = _failed(path)
    assert list(failed) == [check], failed
    assert field in failed[check]


def test_a_tile_altered_consistently_with_itself_is_refused(model_results, tmp_path) -> None:
    """Valid and masked lanes moved together (their sum still the block), and a block doubled
    with its masked lanes: the tile agrees with itself, not with the width."""
    path = _written(model_results["float32"], tmp_path)

    def shift_lanes(data):
        data["tile"]["valid_lanes"] += 1
        data["tile"]["masked_lanes"] -= 1

    _forge(path, shift_lanes)
    assert list(_failed(path)) == ["tile"]
    path = _written(model_results["float32"], tmp_path / "doubled")

    def double_block(data):
        data["tile"]["masked_lanes"] += data["tile"]["block"]
        data["tile"]["block"] *= 2

    _forge(path, double_block)
    assert list(_failed(path)) == ["tile"]


def test_bytes_written_and_its_total_altered_together_are_refused(model_results, tmp_path):
    """One element more written, and the total moved with it: the ledger agrees with itself,
    not with the rows and width."""
    path = _written(model_results["bfloat16"], tmp_path)

    def one_element_more(data):
        data["traffic"]["bytes_written"] += data["traffic"]["itemsize"]
        data["traffic"]["bytes_total"] += data["traffic"]["itemsize"]

    _forge(path, one_element_more)
    failed = _failed(path)
    assert list(failed) == ["traffic ledger"]
    assert "bytes_written" in failed["traffic ledger"]


ROW_FLOATS = (
    "sum_squares",
    "mean_square",
    "rrms",
    "tiled_sum_squares",
    "tiled_mean_square",
    "tiled_rrms",
)
ROW_INTEGERS = ("index", "width", "block", "valid_lanes", "masked_lanes")


def _float32_ulp_up(value: float) -> float:
    """The next float32 value: a figure recorded from a float32 stays a float32 (a check that
    rounds the recorded figure to float32, or recomputes it from itself, sees no change)."""
    return float(np.nextafter(np.float32(value), np.float32(np.inf)))


ROW_STEPS = [(field, _ulp_up) for field in ROW_FLOATS] + [
    (field, _float32_ulp_up) for field in ROW_FLOATS
]
ROW_STEPS += [(field, lambda value: value + 1) for field in ROW_INTEGERS]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize(
    ("field", "step"), ROW_STEPS, ids=[f"{f}-{s.__name__}" for f, s in ROW_STEPS]
)
def test_a_row_intermediate_altered_by_one_step_is_refused(
    model_results, tmp_path, dtype, field, step
) -> None:
    path = _written(model_results[dtype], tmp_path)

    def one_step(data):
        data["rows"][1][field] = step(data["rows"][1][field])

    _forge(path, one_step)
    failed = _failed(path)
    assert list(failed) == ["rows recomputed by the oracle"], failed
    assert f"row 1 {field}: recorded" in failed["rows recomputed by the oracle"]


@pytest.mark.parametrize("name", ["x", "weight"])
def test_an_input_hash_altered_by_one_digit_is_refused(model_results, tmp_path, name) -> None:
    path = _written(model_results["float32"], tmp_path)

    def one_digit(data):
        digest = data["input"][f"{name}_sha256"]
        data["input"][f"{name}_sha256"] = ("1" if digest[0] == "0" else "0") + digest[1:]

    _forge(path, one_digit)
    assert list(_failed(path)) == [f"input.{name}_sha256"]


@pytest.mark.parametrize("key", ["max_abs", "max_rel"])
def test_a_headline_error_one_ulp_off_its_rows_is_refused(model_results, tmp_path, key) -> None:
    path = _written(model_results["float32"], tmp_path)
    _forge(path, _set("errors", key, lambda v, d: _ulp_up(v)))
    assert list(_failed(path)) == [f"errors.{key}"]
