"""The derived error bound in the receipt: each row's exact error and bound, the section that
sums them up, verify holding the section to its rows, and version-1 receipts still read."""

from __future__ import annotations

import copy
import csv
import io
import json

import numpy as np
import pytest

import kernels
from inspector.check.report import receipt_lines
from inspector.records.receipts import receipt, verify
from oracle import error_bound as eb


def test_rows_carry_the_exact_error_and_the_bound_of_the_layout_that_ran(kernel_result):
    built = receipt.build_receipt(kernel_result)
    problem, kernel = kernel_result.problem, kernel_result.kernel
    exact = kernel_result.scalar.y_exact
    # The layout's additions: its tree, two more where the row was peeled.
    assert kernel.bound_adds - eb.layout_adds(problem.width, kernel.path, kernel.block) in (0, 2)
    want_bound = eb.row_bounds(problem, exact, kernel.bound_adds)
    rows = built["rows"]
    assert [r["exact_error"] for r in rows] == list(np.abs(kernel.y - exact).max(axis=1))
    assert [r["error_bound"] for r in rows] == list(want_bound)
    section = built["error_bound"]
    assert section["applies"] is True
    assert section["adds"] == kernel.bound_adds
    assert section["within"] is True
    ratios = [r["exact_error"] / r["error_bound"] for r in rows]
    assert section["worst_ratio"] == max(ratios)
    assert section["worst_row"] == ratios.index(max(ratios))
    assert section["relative"] == eb.relative_bound(problem.dtype, kernel.bound_adds)
    assert any(line.startswith("error bound: worst") for line in receipt_lines(built))


def test_a_model_only_receipt_bounds_the_lane_model(model_results):
    result = model_results["float32"]
    built = receipt.build_receipt(result)
    assert built["error_bound"]["adds"] == eb.tree_adds(result.problem.width)
    assert "tiled lane model" in built["error_bound"]["why"]
    assert built["error_bound"]["within"] is True


def _written(result, tmp_path):
    receipt.write_receipts(result, tmp_path)
    return tmp_path / "receipt.json", tmp_path / "receipt.csv"


def _verify(json_path, csv_path=None):
    return {c.name: c for c in verify.verify_receipts(json_path, csv_path).checks}


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda d: d["error_bound"].__setitem__("within", False), "within=False"),
        (lambda d: d["error_bound"].__setitem__("worst_row", 1), "at row 1"),
        (lambda d: d["error_bound"].__setitem__("worst_ratio", 0.5), "worst 0.5"),
        (lambda d: d["rows"][0].__setitem__("error_bound", 1e-30), "rows give within=False"),
    ],
)
def test_verify_holds_the_bound_section_to_its_rows(kernel_result, tmp_path, damage, why):
    json_path, _ = _written(kernel_result, tmp_path)
    assert _verify(json_path, None)["error_bound"].ok
    data = json.loads(json_path.read_text(encoding="utf-8"))
    damage(data)
    json_path.write_text(json.dumps(data), encoding="utf-8")
    check = _verify(json_path, None)["error_bound"]
    assert not check.ok
    assert why in check.detail


def test_a_version_2_receipt_without_the_bound_is_refused(kernel_result):
    built = receipt.build_receipt(kernel_result)
    for damage in (lambda d: d.pop("error_bound"), lambda d: d["rows"][0].pop("exact_error")):
        broken = copy.deepcopy(built)
        damage(broken)
        with pytest.raises(receipt.ReceiptError, match="does not match its schema"):
            receipt.validate_receipt(broken)


def test_a_version_1_receipt_still_verifies(kernel_result, tmp_path):
    """The receipts written before the bound (committed H200 records among them) read as
    version 1: no bound section nor any other field version 2 added, two CSV columns fewer."""
    from inspector.records.receipts.claims import NEWER_FIELDS

    json_path, csv_path = _written(kernel_result, tmp_path)
    data = json.loads(json_path.read_text(encoding="utf-8"))
    data["schema_version"] = 1
    for section, names in NEWER_FIELDS.items():
        for entry in data["rows"] if section == "rows[]" else [data[section] if section else data]:
            for name in names:
                entry.pop(name, None)
    data["export_check"]["files"] = {}
    json_path.write_text(json.dumps(data), encoding="utf-8")
    table = list(csv.reader(io.StringIO(csv_path.read_text(encoding="utf-8"))))
    csv_path.write_text(
        "".join(",".join(line[:-2]) + "\n" for line in table if line), encoding="utf-8"
    )
    report = verify.verify_receipts(json_path, csv_path)
    assert report.ok, report.problems
    assert "error_bound" not in {c.name for c in report.checks}
    # ... and a version-1 CSV beside a version-2 JSON is a wrong header.
    data["schema_version"] = 2
    json_path.write_text(json.dumps(data), encoding="utf-8")
    assert not verify.verify_receipts(json_path, csv_path).ok


def test_the_batch_invariance_certificate_is_in_the_receipt(kernel_result, model_results):
    section = receipt.build_receipt(kernel_result)["batch_invariance"]
    assert section == kernel_result.batch_invariance
    assert section["rows_checked"] == kernel_result.problem.rows
    assert section["batch_sizes"][0] == 1
    assert section["bit_identical"] == (not section["differing_rows"])
    assert any(line.startswith("batch invariance: ") for line in receipt_lines(
        receipt.build_receipt(kernel_result)))  # fmt: skip
    absent = receipt.build_receipt(model_results["float32"])["batch_invariance"]
    assert absent == {"absent": "the kernel did not run"}


def test_a_certificate_that_could_not_run_says_why(kernel_result):
    import dataclasses

    failed = dataclasses.replace(kernel_result, batch_invariance={"error": "ValueError: boom"})
    built = receipt.build_receipt(failed)
    assert built["batch_invariance"] == {"absent": "could not run: ValueError: boom"}
    receipt.validate_receipt(built)


def test_the_verdict_and_the_log_show_the_bound_and_the_certificate(kernel_result):
    import dataclasses

    from inspector.check import report

    html = report.check_verdict_html(kernel_result)
    assert "err/bound ≤ " in html
    log = report.check_log_lines(kernel_result)
    assert any(line.startswith("batch invariance: ") for line in log)
    section = dict(kernel_result.batch_invariance)
    section.update(bit_identical=False, differing_rows=[{"row": 1, "max_ulp": 3}])
    differs = dataclasses.replace(kernel_result, batch_invariance=section)
    assert "NOT batch-invariant: 1 row(s), ≤ 3 ulp" in report.check_verdict_html(differs)
    line = next(x for x in report.check_log_lines(differs) if x.startswith("batch invariance"))
    assert line.startswith("batch invariance: NOT bit-identical: 1 of ")


def test_the_device_evidence_says_what_ran_and_why_the_rest_did_not(kernel_result, model_results):
    evidence = receipt.build_receipt(kernel_result)["device_evidence"]
    assert evidence["sanitizer"] == kernel_result.sanitizer
    if kernels.MODE == "interpreter":
        # The interpreter times nothing: no DRAM figures either, and the receipt says why.
        assert evidence["dram"] == {"absent": f"no timing run: {kernel_result.timing['absent']}"}
        assert "Triton interpreter" in kernel_result.timing["absent"]
    model_only = receipt.build_receipt(model_results["float32"])["device_evidence"]
    assert model_only["sanitizer"] == {"absent": "the kernel did not run"}
