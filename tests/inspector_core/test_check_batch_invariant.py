"""``check --batch-invariant``: the bundled kernel runs the input in its batch-invariant mode,
the certificate is of that mode and required to pass (a failure otherwise, named), the receipt
records both, and the flag is refused with a user's kernel or without a kernel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import kernels
from inspector.check import pipeline, report, stages
from inspector.cli import entry
from inspector.records.receipts import verify
from kernels.plans import invariant_config
from oracle.spec import synthetic_problem

ROOT = Path(__file__).resolve().parents[2]

#: A certificate of the mode in which one row came out 2 ulp away in one batch.
DIFFERING = {
    "mode": "batch_invariant",
    "bit_identical": False,
    "rows_checked": 2,
    "batch_sizes": [1, 2, 3],
    "differing_rows": [{"row": 1, "max_ulp": 2}],
    "launches": [
        {
            "batch_size": 3,
            "path": "multi_row",
            "block": 16,
            "num_warps": 4,
            "rows_per_program": 8,
            "position": 0,
            "rows_differing": 1,
        },
    ],
    "cuda_graph": "not run: CUDA graphs need a CUDA device",
    "device": "cpu",
}


def test_check_with_the_flag_passes_and_its_receipt_names_the_mode(tmp_path):
    out = tmp_path / "out"
    completed = subprocess.run(
        [sys.executable, str(ROOT / "main.py"), "check", "--rows", "2", "--width", "8",
         "--device", "cpu", "--batch-invariant", "--quiet", "--out", str(out)],
        capture_output=True, text=True, cwd=ROOT, env=dict(os.environ), timeout=300, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "batch invariance of the batch-invariant mode (one layout: " in completed.stdout
    assert completed.stdout.splitlines()[-1].startswith("PASS")
    data = json.loads((out / "receipt.json").read_text(encoding="utf-8"))
    assert data["kernel"]["batch_invariant"] is True
    assert data["batch_invariance"]["mode"] == "batch_invariant"
    assert data["batch_invariance"]["bit_identical"] is True
    layout = invariant_config(8, 4)
    assert data["kernel"]["path"] == layout.path
    assert data["kernel"]["block"] == layout.block
    result = verify.verify_receipts(out / "receipt.json", out / "receipt.csv")
    assert result.ok, result.problems


@pytest.mark.parametrize(
    ("extra", "other"),
    [(["--kernel", "nowhere.py:rms_norm"], "--kernel"), (["--model-only"], "--model-only")],
)
def test_the_flag_is_a_usage_error_without_the_bundled_kernel(tmp_path, capsys, extra, other):
    argv = ["check", "--batch-invariant", *extra, "--quiet", "--out", str(tmp_path / "out")]
    assert entry.main(argv) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error
    assert "--batch-invariant" in error
    assert other in error
    assert not (tmp_path / "out").exists()


def test_check_help_lists_the_flag(capsys):
    assert entry.main(["check", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--batch-invariant" in text
    assert "batch-invariant mode" in text


@pytest.fixture
def failing_certificate(monkeypatch):
    """A small check (no forced layouts, no kernel mutants) whose certificate differs; returns
    a runner of it with or without the flag, and the modes the stage was asked for."""
    asked: list[bool] = []

    def certificate(problem, device, *, batch_invariant=False):
        asked.append(batch_invariant)
        return {**DIFFERING, "mode": "batch_invariant" if batch_invariant else "default"}

    monkeypatch.setattr(stages, "invariance_stage", certificate)
    monkeypatch.setattr(kernels, "KERNEL_PATHS", ())
    monkeypatch.setattr(kernels, "KERNEL_MUTANTS", ())
    problem = synthetic_problem(2, 8, seed=3)

    def run(flag: bool) -> pipeline.CheckResult:
        config = pipeline.CheckConfig(device="cpu", timing=False, batch_invariant=flag)
        return pipeline.run_check(problem, config)

    return run, asked


def test_a_differing_certificate_fails_the_check_only_with_the_flag(failing_certificate):
    run, asked = failing_certificate
    without = run(False)
    assert without.passed, without.failures
    required, optional = report._evidence_words(without)
    assert not any("batch-invariant" in word for word in required)
    assert "NOT batch-invariant: 1 row(s), ≤ 2 ulp" in optional

    with_flag = run(True)
    assert asked == [False, True]
    assert with_flag.verdict == "failed"
    assert with_flag.batch_invariant is True
    assert len(with_flag.failures) == 1, with_flag.failures
    failure = with_flag.failures[0]
    assert failure.startswith("batch invariance required (--batch-invariant): ")
    assert "NOT bit-identical: 1 of 2 row(s)" in failure
    required, optional = report._evidence_words(with_flag)
    assert "NOT batch-invariant: 1 row(s), ≤ 2 ulp" in required
    assert not optional
    html = report.check_verdict_html(with_flag)
    assert "required: " in html
    assert "not required to pass" not in html


def test_the_flag_runs_the_input_in_the_modes_layout(failing_certificate):
    run, _ = failing_certificate
    problem_layout = invariant_config(8, 4)
    kernel = run(True).kernel
    assert (kernel.path, kernel.block) == (problem_layout.path, problem_layout.block)


@pytest.mark.parametrize(
    ("section", "said"),
    [
        (None, "but not certified"),
        ({"error": "RuntimeError: boom"}, "but not certified: RuntimeError: boom"),
        ({**DIFFERING, "mode": "default", "bit_identical": True, "differing_rows": []},
         "but the certificate is of mode 'default'"),
        ({k: v for k, v in DIFFERING.items() if k != "mode"},
         "but the certificate is of mode 'default'"),
        (DIFFERING, "NOT bit-identical"),
    ],
)  # fmt: skip
def test_a_required_certificate_fails_unless_it_is_the_modes_and_identical(section, said):
    failures = stages.invariance_failures(section)
    assert len(failures) == 1, failures
    assert said in failures[0]
    identical = {**DIFFERING, "bit_identical": True, "differing_rows": []}
    assert stages.invariance_failures(identical) == []


def test_the_line_and_the_words_name_the_mode():
    line = stages.invariance_line(DIFFERING)
    assert line.startswith(
        "batch invariance of the batch-invariant mode (one layout: multi_row, 8 rows per "
        "program): NOT bit-identical: 1 of 2 row(s)"
    )
    identical = {**DIFFERING, "bit_identical": True, "differing_rows": []}
    required, optional = report.section_words(None, identical, None)
    assert (required, optional) == (["batch-invariant at 3 batch sizes"], [])
    required, optional = report.section_words(None, {"absent": "x"}, None, batch_invariant=True)
    assert (required, optional) == (["batch-invariant: NOT certified"], [])
    default = {**identical, "mode": "default"}
    assert report.section_words(None, default, None) == ([], ["batch-invariant over 3 layouts"])
