"""verify recomputes the receipt's judgements from what it records: a forged verdict, loosened
tolerances, a ``passed`` that contradicts its mismatch count, a hidden out-of-bounds count, a
deleted CSV and duplicate or absurd JSON are each refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inspector.records.receipts import receipt, verify
from records.receipt_files import forge as _forge
from records.receipt_files import problems as _problems


def _written(result, folder: Path) -> Path:
    receipt.write_receipts(result, folder)
    return folder / "receipt.json"


def test_an_untouched_receipt_passes_every_claim_check(kernel_result, tmp_path) -> None:
    report = verify.verify_receipts(_written(kernel_result, tmp_path))
    names = {check.name: check.ok for check in report.checks}
    assert report.ok, report.problems
    for name in ("tolerances as declared", "comparisons follow their mismatches",
                 "verdict follows the outcomes"):  # fmt: skip
        assert names[name]


def test_a_verdict_flipped_to_failed_without_a_failure_is_refused(model_results, tmp_path):
    path = _written(model_results["float32"], tmp_path)
    _forge(path, lambda d: d["verdict"].update(passed=False))
    assert "verdict follows the outcomes: passed=False, 0 failure(s)" in _problems(path)


def test_a_verdict_left_green_beside_a_misbehaving_fixture_is_refused(model_results, tmp_path):
    path = _written(model_results["float16"], tmp_path)

    def change(data):
        fixture = data["fixtures"][3]
        fixture["actual"] = "fail" if fixture["expected"] == "pass" else "pass"

    _forge(path, change)
    problems = _problems(path)
    assert "verdict follows the outcomes: passed=True" in problems
    assert "the outcomes fail it" in problems


@pytest.mark.parametrize("field", ["atol", "rtol"])
def test_tolerances_loosened_past_the_declared_table_are_refused(model_results, tmp_path, field):
    path = _written(model_results["bfloat16"], tmp_path)
    _forge(path, lambda d: d["errors"].update({field: 1.0}))
    problems = _problems(path)
    assert "tolerances as declared: errors: " in problems
    assert f"{field}=1.0" in problems
    assert "for 'bfloat16', declared 0.01 / 0.016" in problems


def test_a_passed_flag_that_contradicts_its_mismatches_is_refused(kernel_result, tmp_path):
    path = _written(kernel_result, tmp_path)
    _forge(path, lambda d: d["kernel"]["vs_torch_float64"].update(mismatches=7))
    assert (
        "comparisons follow their mismatches: kernel.vs_torch_float64: passed=True with 7"
        in _problems(path)
    )


def test_out_of_bounds_writes_under_a_green_verdict_are_refused(kernel_result, tmp_path):
    path = _written(kernel_result, tmp_path)
    _forge(path, lambda d: d["kernel"].update(oob_writes=5))
    assert "kernel.oob_writes 5" in _problems(path)


def test_a_deleted_csv_is_refused_when_the_receipt_says_one_was_exported(
    model_results, tmp_path
) -> None:
    path = _written(model_results["float32"], tmp_path)
    (tmp_path / "receipt.csv").unlink()
    assert "csv: the receipt says a CSV was exported; none given or found" in _problems(path)


def test_duplicate_keys_deep_nesting_and_a_bare_value_are_refused_cleanly(
    model_results, tmp_path
) -> None:
    path = _written(model_results["float32"], tmp_path)
    text = path.read_text(encoding="utf-8")
    # A forged first "verdict", the real one after it: readers differ on which wins.
    path.write_text(text.replace("{", '{"verdict": {"passed": true}, ', 1), encoding="utf-8")
    assert "not valid JSON: duplicate key 'verdict'" in _problems(path)
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    assert "not valid JSON: nested too deeply" in _problems(path)
    path.write_text("null", encoding="utf-8")
    assert "not a receipt: the top level is NoneType" in _problems(path)


def test_a_csv_cell_past_the_csv_modules_limit_is_a_clean_refusal(model_results, tmp_path):
    path = _written(model_results["float32"], tmp_path)
    csv_path = tmp_path / "receipt.csv"
    csv_path.write_text(csv_path.read_text() + '"' + "9" * 140_000 + '"\n', encoding="utf-8")
    problems = _problems(path)
    assert "csv parse: receipt.csv: not a receipt CSV (field larger than field limit" in problems


def test_an_out_of_memory_is_a_clean_usage_line(monkeypatch, capsys, tmp_path) -> None:
    from inspector.cli import entry

    def exhausted(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(verify, "verify_receipts", exhausted)
    assert entry.main(["verify", str(tmp_path / "receipt.json")]) == 2
    assert capsys.readouterr().err == (
        "error: out of memory: the input is more than this machine can hold\n"
    )


# ---- every claim against the receipt's own data (each forgery refused by its named check) ----


def _without_csv(path: Path) -> None:
    """The CSV gone and its hash forgotten: the forgeries below edit rows the CSV repeats."""
    (path.parent / "receipt.csv").unlink()
    _forge(path, lambda d: d["export_check"].update(files={}))


def _refused_by(path: Path, name: str) -> str:
    """The detail of the check ``name``, which must be the one that failed (or among them)."""
    report = verify.verify_receipts(path)
    failed = {check.name: check.detail for check in report.checks if not check.ok}
    assert name in failed, report.problems
    return failed[name]


def test_rows_past_the_tolerance_under_a_passed_comparison_are_refused(kernel_result, tmp_path):
    path = _written(kernel_result, tmp_path)
    _without_csv(path)

    def change(data):  # 150,000x the float32 tolerance, the headline consistent with it
        data["rows"][1]["max_abs_error"] = 1.5
        data["errors"]["max_abs"] = 1.5

    _forge(path, change)
    detail = _refused_by(path, "row errors within the tolerance")
    assert detail.startswith("errors.passed=True but row 1 records max_abs_error 1.5, ")
    assert "x its tolerance" in detail
    assert [c.name for c in verify.verify_receipts(path).checks if not c.ok] == [
        "row errors within the tolerance"
    ]


def test_a_fixture_recorded_as_pass_with_errors_past_its_tolerance_is_refused(
    model_results, tmp_path
) -> None:
    path = _written(model_results["float32"], tmp_path)

    def change(data):
        fixture = next(f for f in data["fixtures"] if f["name"] == "multiple_rows")
        fixture.update(max_abs_error=1.5)

    _forge(path, change)
    detail = _refused_by(path, "fixture errors within the tolerance")
    assert detail.startswith("model multiple_rows recorded pass with max_abs_error 1.5, ")
    assert "x its float32 tolerance" in detail


def test_nan_errors_under_a_passed_comparison_are_a_failure(model_results, tmp_path) -> None:
    path = _written(model_results["float32"], tmp_path)
    _without_csv(path)

    def change(data):
        data["errors"]["max_abs"] = "nan"
        data["rows"][0]["max_abs_error"] = "nan"
        next(f for f in data["fixtures"] if f["name"] == "width_3")["max_abs_error"] = "nan"

    _forge(path, change)
    detail = _refused_by(path, "NaN counts as a failure")
    assert detail.startswith("errors: passed=True with max_abs='nan'")
    assert "row 0 max_abs_error='nan'" in detail
    assert "model width_3 recorded pass with max_abs_error 'nan'" in _refused_by(
        path, "fixture errors within the tolerance"
    )


def test_an_error_past_its_bound_under_a_passed_verdict_is_refused(kernel_result, tmp_path):
    path = _written(kernel_result, tmp_path)
    _without_csv(path)

    def change(data):  # the bound section consistent with its rows: only the verdict is left
        row = data["rows"][2]
        row["exact_error"] = 2 * row["error_bound"]
        data["error_bound"].update(within=False, worst_row=2, worst_ratio=2.0)

    _forge(path, change)
    report = verify.verify_receipts(path)
    assert {c.name: c.ok for c in report.checks}["error_bound"]
    detail = _refused_by(path, "verdict follows the outcomes")
    assert "error_bound: row 2 past its derived bound" in detail


def test_sanitizer_errors_under_a_passed_verdict_are_refused(kernel_result, tmp_path) -> None:
    path = _written(kernel_result, tmp_path)
    section = {
        "tool": "compute-sanitizer --tool memcheck --padding 512",
        "ran": True,
        "errors": 144,
        "launches": 32,
        "passed": True,
        "exit_code": 0,
        "report": "========= ERROR SUMMARY: 144 errors",
    }
    _forge(path, lambda d: d["device_evidence"].update(sanitizer=dict(section)))
    assert _refused_by(path, "device_evidence.sanitizer") == (
        "passed=True with 144 error(s), exit code 0, 32 launch(es): those give passed=False; "
        "its report counts 144 error(s)"
    )
    section.update(passed=False, exit_code=1)  # consistent with itself: the verdict is not
    _forge(path, lambda d: d["device_evidence"].update(sanitizer=dict(section)))
    assert "device_evidence.sanitizer: 144 error(s)" in _refused_by(
        path, "verdict follows the outcomes"
    )


def test_a_mutant_killed_by_a_fixture_that_does_not_exist_is_refused(model_results, tmp_path):
    path = _written(model_results["float32"], tmp_path)
    name = ""

    def change(data):
        nonlocal name
        name = data["mutants"][0]["name"]
        data["mutants"][0]["killed_by"] = ["no_such_fixture"]

    _forge(path, change)
    assert _refused_by(path, "mutants killed by recorded fixtures") == (
        f"model mutant {name} killed by 'no_such_fixture', not a fixture the model passed here"
    )


def test_a_fixture_whose_expectation_was_flipped_with_its_outcome_is_refused(
    model_results, tmp_path
) -> None:
    path = _written(model_results["float16"], tmp_path)
    _forge(
        path,
        lambda d: next(f for f in d["fixtures"] if f["name"] == "width_31").update(
            expected="fail", actual="fail", passed=True
        ),
    )
    assert _refused_by(path, "fixtures as the matrix declares them") == (
        "model width_31: expected 'fail' (positive), the matrix declares 'pass' (positive)"
    )


def test_a_batch_certificate_that_contradicts_its_rows_is_refused(kernel_result, tmp_path):
    path = _written(kernel_result, tmp_path)
    _forge(path, lambda d: d["batch_invariance"]["differing_rows"].append({"row": 0, "max_ulp": 3}))
    assert _refused_by(path, "batch invariance").startswith(
        "bit_identical=True with 1 row(s) listed"
    )


def test_a_version_2_receipt_relabelled_1_is_refused(kernel_result, tmp_path, capsys) -> None:
    from inspector.cli import entry

    path = _written(kernel_result, tmp_path)
    _without_csv(path)

    def change(data):  # the bound dropped with the label: the rest is of version 2
        data["schema_version"] = 1
        data.pop("error_bound")
        for row in data["rows"]:
            del row["exact_error"], row["error_bound"]

    _forge(path, change)
    assert _refused_by(path, "schema version of the content").startswith(
        "labelled 1 but holds what version 2 added: batch_invariance; device_evidence; coverage"
    )
    assert entry.main(["verify", str(path)]) == 1
    assert "FAIL schema version of the content: " in capsys.readouterr().out


@pytest.mark.parametrize(
    "path",
    sorted(Path(__file__).resolve().parents[2].glob("docs/gpu_check/**/receipt.json")),
    ids=lambda p: p.parent.name,
)
def test_the_committed_receipts_verify_as_their_verdicts_say(path) -> None:
    """Genuine receipts (compiled on an H200, a version 1 one among them): each passing one
    verifies; each failing one is refused only for what it records as failed."""
    data = json.loads(path.read_text(encoding="utf-8"))
    report = verify.verify_receipts(path)
    assert report.ok == data["verdict"]["passed"], report.problems
    assert {p.split(":")[0] for p in report.problems} <= {"fixtures behave"}
