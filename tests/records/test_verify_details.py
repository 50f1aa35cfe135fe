"""What ``verify`` prints for a refused field is the whole of what a reader gets: each detail
below is held to its exact text, so a hash shortened to other than its first 16 hex digits, a
list of names cut at other than 8, or a drift list joined past other than its limit (4 for the
tile and ledger, 3 for the rows and the schema) is a failing test, not a quieter message. And
each condition of a check alone: an x value off its dtype beside an exact weight, a tile figure
recorded as a float, a fixture failed or off its expectation, a mutant "killed" by no fixture, a
user kernel (no forced layouts) against a kernel that ran without any.

A real receipt of a small model-only check is written in ``tmp_path`` (its CSV removed and its
hash forgotten where the CSV would only repeat the JSON); one thing is forged; the check that
refuses it is read by name. These need no kernel run, so a mutation run of ``verify.py`` that
orders this file first kills most of its mutants in seconds (docs/mutation/README.md).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from inspector.records.receipts import receipt, verify
from inspector.records.receipts.format import schema_errors
from oracle.matrix import NOT_JUDGED, OUT_OF_DOMAIN
from records.receipt_files import forge as _forge


def _written(result, folder: Path, *, keep_csv: bool = False) -> Path:
    receipt.write_receipts(result, folder)
    path = folder / "receipt.json"
    if not keep_csv:
        (folder / "receipt.csv").unlink()
        _forge(path, lambda data: data["export_check"].update(files={}))
    return path


def _detail(path: Path, name: str, csv_path: Path | None = None) -> str:
    checks = [c for c in verify.verify_receipts(path, csv_path).checks if c.name == name]
    assert len(checks) == 1, [c.name for c in verify.verify_receipts(path, csv_path).checks]
    return checks[0].detail


@pytest.mark.parametrize("name", ["x", "weight"])
def test_a_forged_input_hash_shows_the_first_16_hex_digits_of_each(model_results, tmp_path, name):
    path = _written(model_results["float32"], tmp_path)
    forged = "0123456789abcdef" * 4
    true = json.loads(path.read_text(encoding="utf-8"))["input"][f"{name}_sha256"]
    _forge(path, lambda data: data["input"].update({f"{name}_sha256": forged}))
    assert _detail(path, f"input.{name}_sha256") == (
        f"recomputed {true[:16]}..., recorded 0123456789abcdef..."
    )


def test_a_csv_changed_since_export_shows_the_first_16_hex_digits_of_each(model_results, tmp_path):
    path = _written(model_results["float32"], tmp_path, keep_csv=True)
    csv_path = tmp_path / "receipt.csv"
    csv_path.write_bytes(csv_path.read_bytes().replace(b"\n", b"\r\n"))  # same values
    digest = hashlib.sha256(csv_path.read_bytes()).hexdigest()
    recorded = json.loads(path.read_text(encoding="utf-8"))["export_check"]["files"]["csv_sha256"]
    assert _detail(path, "csv unchanged since export", csv_path) == (
        f"sha256 {digest[:16]}..., export recorded {recorded[:16]}..."
    )


@pytest.mark.parametrize("count", [8, 9])
def test_fixtures_outside_the_domain_are_named_up_to_8(model_results, tmp_path, count) -> None:
    path = _written(model_results["float32"], tmp_path)
    data = _forge(path, lambda d: [f.update(actual=OUT_OF_DOMAIN) for f in d["fixtures"][:count]])
    names = [f["name"] for f in data["fixtures"][:count]]
    assert _detail(path, "declared domain") == (
        f"{count} fixture(s) outside the kernel's declared domain, not run: "
        + ", ".join(names[:8])
        + (", ..." if count == 9 else "")
    )


@pytest.mark.parametrize("count", [8, 9])
def test_fixtures_not_judged_are_named_up_to_8(model_results, tmp_path, count) -> None:
    path = _written(model_results["float32"], tmp_path)
    data = _forge(path, lambda d: [f.update(actual=NOT_JUDGED) for f in d["fixtures"][:count]])
    names = [f"{f['target']} {f['name']}" for f in data["fixtures"][:count]]
    assert _detail(path, "every fixture judged") == (
        "not judged on the machine that ran it: "
        + ", ".join(names[:8])
        + (", ..." if count == 9 else "")
        + " (kernel.not_judged says why)"
    )


def test_five_ledger_figures_off_show_the_first_4(model_results, tmp_path) -> None:
    path = _written(model_results["float32"], tmp_path)
    names = ("bytes_read_x", "bytes_read_weight", "bytes_read_weight_unique", "bytes_read",
             "bytes_written")  # fmt: skip
    true = json.loads(path.read_text(encoding="utf-8"))["traffic"]
    _forge(path, lambda d: d["traffic"].update({n: true[n] + 1 for n in names}))
    shown = [f"{n}: recorded {true[n] + 1!r}, recomputed {true[n]}" for n in names[:4]]
    assert _detail(path, "traffic ledger") == "; ".join(shown) + " ..."


def test_four_row_fields_off_show_the_first_3(model_results, tmp_path) -> None:
    path = _written(model_results["float32"], tmp_path)
    rows = json.loads(path.read_text(encoding="utf-8"))["rows"]
    edits = [(0, "block"), (0, "masked_lanes"), (1, "width"), (2, "width")]

    def change(data):
        for index, name in edits:
            data["rows"][index][name] += 1

    _forge(path, change)
    shown = [
        f"row {i} {n}: recorded {rows[i][n] + 1!r}, expected {rows[i][n]}" for i, n in edits[:3]
    ]
    assert _detail(path, "rows recomputed by the oracle") == "; ".join(shown) + " ..."


def test_a_schema_invalid_receipt_shows_its_first_3_errors(model_results, tmp_path) -> None:
    path = _written(model_results["float32"], tmp_path)

    def change(data):
        for field in ("rows", "width", "row_stride", "eps"):
            data["input"][field] = "not a number"

    data = _forge(path, change)
    errors = schema_errors(data)
    assert len(errors) > 3
    assert _detail(path, "json schema") == "; ".join(errors[:3])


def test_a_report_without_checks_is_not_ok() -> None:
    assert not verify.VerifyReport(Path("receipt.json"), None).ok


def test_an_x_value_off_its_dtype_is_refused_though_the_weight_is_exact(model_results, tmp_path):
    path = _written(model_results["float32"], tmp_path)
    _forge(path, lambda d: d["input"]["x"][0].__setitem__(0, d["input"]["x"][0][0] + 2.0**-40))
    report = verify.verify_receipts(path)
    assert {c.name: c.ok for c in report.checks}["input exact in dtype"] is False


def test_a_tile_figure_recorded_as_a_float_is_refused(model_results, tmp_path) -> None:
    path = _written(model_results["float32"], tmp_path)
    data = _forge(path, lambda d: d["tile"].update(block=float(d["tile"]["block"])))
    block = data["tile"]["block"]
    assert _detail(path, "tile") == f"block: recorded {block!r}, recomputed {int(block)}"


def test_the_ledger_names_the_elements_it_recomputed(model_results, tmp_path) -> None:
    path = _written(model_results["float32"], tmp_path)  # 3 rows x 37, float32
    assert _detail(path, "traffic ledger") == "111 elements x 4 bytes: every figure recomputed"


def test_a_user_kernel_needs_no_launch_layouts(model_results, tmp_path) -> None:
    path = _written(model_results["float32"], tmp_path)
    assert "kernel launch layouts" not in {c.name for c in verify.verify_receipts(path).checks}
    source = {"kind": "user", "path": "mine.py", "function": "rms", "file_sha256": "0" * 64}
    _forge(path, lambda d: d["kernel"].update(source=source))
    checks = {c.name: c for c in verify.verify_receipts(path).checks}
    assert checks["kernel launch layouts"].ok
    assert checks["kernel launch layouts"].detail == (
        "a user kernel (mine.py:rms): its own launcher, no forced layouts"
    )


def test_a_kernel_that_ran_without_a_launch_layout_is_refused(model_results, tmp_path) -> None:
    path = _written(model_results["float32"], tmp_path)
    _forge(path, lambda d: d["kernel"].update(ran=True, paths=[]))
    checks = {c.name: c for c in verify.verify_receipts(path).checks}
    assert not checks["kernel launch layouts"].ok
    assert (
        checks["kernel launch layouts"].detail == "the kernel ran but no launch layout was checked"
    )


def test_a_failed_export_check_shows_its_first_problem(model_results, tmp_path) -> None:
    path = _written(model_results["float32"], tmp_path)
    _forge(path, lambda d: d["export_check"].update(status="failed", problems=["first", "second"]))
    assert _detail(path, "export_check") == "status 'failed': first"


@pytest.mark.parametrize(
    "change", [{"passed": False}, {"actual": "fail"}], ids=["passed False", "actual flipped"]
)
def test_a_fixture_failed_or_off_its_expectation_alone_misbehaves(model_results, tmp_path, change):
    path = _written(model_results["float32"], tmp_path)
    data = _forge(path, lambda d: d["fixtures"][0].update(change))
    fixture = data["fixtures"][0]
    assert fixture["expected"] == "pass"
    assert _detail(path, "fixtures behave") == (
        f"unexpected outcome: {fixture['target']} {fixture['name']}"
    )


def test_a_mutant_marked_killed_without_a_killer_survived(model_results, tmp_path) -> None:
    path = _written(model_results["float32"], tmp_path)
    data = _forge(path, lambda d: d["mutants"][0].update(killed_by=[]))
    mutant = data["mutants"][0]
    assert _detail(path, "mutants all killed") == f"survived: {mutant['target']} {mutant['name']}"


def test_a_receipt_without_mutants_is_not_all_killed(model_results, tmp_path) -> None:
    path = _written(model_results["float32"], tmp_path)
    _forge(path, lambda d: d.update(mutants=[]))
    checks = {c.name: c for c in verify.verify_receipts(path).checks}
    assert not checks["mutants all killed"].ok


def test_an_input_row_count_off_its_values_is_refused(model_results, tmp_path) -> None:
    path = _written(model_results["float32"], tmp_path)
    _forge(path, lambda d: d["input"].update(rows=d["input"]["rows"] + 1))
    assert _detail(path, "input dimensions") == "x 3 rows, weight 37 values for rows=4 width=37"
    assert not {c.name: c.ok for c in verify.verify_receipts(path).checks}["input dimensions"]
