"""verify recomputes the receipt's judgements from what it records: a forged verdict, loosened
tolerances, a ``passed`` that contradicts its mismatch count, a hidden out-of-bounds count, a
deleted CSV and duplicate or absurd JSON are each refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inspector.records.receipts import receipt, verify


def _written(result, folder: Path) -> Path:
    receipt.write_receipts(result, folder)
    return folder / "receipt.json"


def _forge(path: Path, change) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def _problems(path: Path) -> str:
    report = verify.verify_receipts(path)
    assert not report.ok
    return " | ".join(report.problems)


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
