"""verify and ``check --batch-invariant`` receipts: a receipt whose check required the mode
needs a bit-identical certificate of that mode beside a passing verdict, the certificate's mode
must be the one the check ran, receipts from before the mode still verify, and ``--rerun``
reruns the kernel in the recorded mode."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from inspector.check import pipeline, stages
from inspector.cli import verify_rerun
from inspector.records.receipts import receipt, verify
from records.receipt_files import forge as _forge
from records.receipt_files import problems as _problems

REQUIRED = "batch_invariance: required (kernel.batch_invariant)"


@pytest.fixture(scope="module")
def mode_result(kernel_result) -> pipeline.CheckResult:
    """The shared check as ``check --batch-invariant`` makes it: the mode's certificate of the
    input's rows (the input's own run is the same 4 x 70 rows; its layout is the rerun's)."""
    section = stages.invariance_stage(kernel_result.problem, "cpu", batch_invariant=True)
    assert section["bit_identical"], section
    return dataclasses.replace(kernel_result, batch_invariant=True, batch_invariance=section)


def _written(result, folder: Path) -> Path:
    receipt.write_receipts(result, folder)
    return folder / "receipt.json"


def _differ(data) -> None:
    """One row of the certificate 3 ulp away in its first launch, consistently recorded."""
    section = data["batch_invariance"]
    section["bit_identical"] = False
    section["differing_rows"] = [{"row": 0, "max_ulp": 3}]
    section["launches"][0]["rows_differing"] = 1


def test_a_receipt_of_the_mode_verifies(mode_result, tmp_path) -> None:
    path = _written(mode_result, tmp_path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["kernel"]["batch_invariant"] is True
    assert data["batch_invariance"]["mode"] == "batch_invariant"
    report = verify.verify_receipts(path)
    assert report.ok, report.problems


def test_a_passing_verdict_beside_a_differing_required_certificate_is_refused(
    mode_result, tmp_path
) -> None:
    path = _written(mode_result, tmp_path)
    _forge(path, _differ)
    problems = _problems(path)
    assert "verdict follows the outcomes: passed=True" in problems
    assert REQUIRED in problems


def test_a_required_certificate_that_is_absent_or_of_the_default_is_refused(
    mode_result, kernel_result, tmp_path
) -> None:
    path = _written(mode_result, tmp_path / "absent")
    _forge(path, lambda d: d.update(batch_invariance={"absent": "could not run: boom"}))
    assert REQUIRED in _problems(path)
    default = dataclasses.replace(kernel_result, batch_invariant=True)
    problems = _problems(_written(default, tmp_path / "default"))
    assert "a certificate of mode 'default' with kernel.batch_invariant True" in problems
    assert REQUIRED in problems


def test_a_failed_verdict_beside_a_differing_required_certificate_verifies(
    mode_result, tmp_path
) -> None:
    failure = "batch invariance required (--batch-invariant): NOT bit-identical"
    path = _written(dataclasses.replace(mode_result, failures=(failure,)), tmp_path)
    _forge(path, _differ)
    report = verify.verify_receipts(path)
    assert report.ok, report.problems


def test_a_certificate_of_the_mode_without_the_flag_is_refused(mode_result, tmp_path) -> None:
    path = _written(mode_result, tmp_path)
    _forge(path, lambda d: d["kernel"].update(batch_invariant=False))
    assert "a certificate of mode 'batch_invariant' with kernel.batch_invariant False" in (
        _problems(path)
    )


def test_without_the_flag_a_differing_certificate_does_not_fail_the_verdict(
    kernel_result, tmp_path
) -> None:
    path = _written(kernel_result, tmp_path)
    _forge(path, _differ)
    report = verify.verify_receipts(path)
    assert report.ok, report.problems


def test_a_receipt_from_before_the_mode_verifies(kernel_result, tmp_path) -> None:
    path = _written(kernel_result, tmp_path)

    def older(data) -> None:
        del data["kernel"]["batch_invariant"]
        del data["batch_invariance"]["mode"]

    _forge(path, older)
    report = verify.verify_receipts(path)
    assert report.ok, report.problems


def test_rerun_runs_the_kernel_in_the_recorded_mode(mode_result, tmp_path, monkeypatch) -> None:
    asked: list[bool] = []
    real = pipeline.run_kernel_on

    def spy(problem, **kwargs):
        asked.append(kwargs.get("batch_invariant", False))
        return real(problem, **kwargs)

    monkeypatch.setattr(pipeline, "run_kernel_on", spy)
    data = json.loads(_written(mode_result, tmp_path).read_text(encoding="utf-8"))
    checks = verify_rerun.rerun_checks(data, "cpu")
    assert all(check.ok for check in checks), [c for c in checks if not c.ok]
    assert asked
    assert all(asked)
    data["kernel"]["batch_invariant"] = False
    asked.clear()
    verify_rerun.rerun_checks(data, "cpu")
    assert asked
    assert not any(asked)
