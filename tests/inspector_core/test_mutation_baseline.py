"""mutate counts only what ran: the unmutated kernel runs first and mutants are judged only on
the fixtures it passes (a kernel that already fails never exits 0), and a mutant Triton refuses
to compile or trace is stillborn, out of the score, never a kill."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from inspector.mutate.baseline_run import is_stillborn

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "resources" / "kernels"
NEAR_EPS = [
    "max_eps",
    "float32_mean_square_near_eps",
    "float16_mean_square_near_eps",
    "bfloat16_mean_square_near_eps",
    "mean_square_near_small_eps",
]


def _mutate(kernel: str, out: Path, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    done = subprocess.run(
        [sys.executable, str(ROOT / "main.py"), "mutate", "--kernel", kernel, "--no-ttir",
         "--jobs", "2", "--out", str(out), *extra],
        capture_output=True, text=True, cwd=ROOT, timeout=240, check=False,
        env={**os.environ, "TRITON_INTERPRET": "1"},
    )  # fmt: skip
    path = out / "mutation.json"
    return done, json.loads(path.read_text()) if path.exists() else {}


@pytest.mark.parametrize(
    ("detail", "stillborn"),
    [
        ("implementation raised UserKernelFailed: user kernel error: "
         "triton.runtime.errors.InterpreterError: ValueError('`other` cannot be provided "
         "without `mask`')", True),
        ("implementation raised UserKernelFailed: user kernel error: "
         "triton.compiler.errors.CompilationError: at 12:8: ...", True),
        ("output vs scalar reference: FAIL (float32: atol=1e-05, rtol=2e-05) max_abs=2", False),
        ("implementation raised UserKernelFailed: user kernel crashed: the kernel's process "
         "ended (signal SIGSEGV)", False),
        ("implementation raised UserKernelFailed: user kernel error: ValueError: shape", False),
    ],
)  # fmt: skip
def test_only_triton_refusing_the_program_is_stillborn(detail: str, stillborn: bool) -> None:
    assert is_stillborn(detail) is stillborn


def test_a_kernel_that_already_fails_is_judged_on_what_it_passes_and_never_exits_0(
    tmp_path,
) -> None:
    # eps outside the root fails the five rows near eps; `+ eps` -> `- eps` (m022) can only
    # show there, so with those left out it survives (before, their failure "killed" it).
    kernel = f"{KERNELS / 'bug_eps_outside_root.py'}:rms_norm"
    done, data = _mutate(kernel, tmp_path / "out", "--sites", "m007,m008,m022")
    assert done.returncode == 1, done.stdout + done.stderr
    assert [f["fixture"] for f in data["baseline"]["failed"]] == NEAR_EPS
    assert data["baseline"]["passed"] == data["baseline"]["fixtures"] - 5
    outcome = {m["id"]: m for m in data["mutants"]}
    assert outcome["m022"]["outcome"] == "survived"
    assert outcome["m008"]["outcome"] == "killed"
    assert not set(outcome["m008"]["killed_by"]) & set(NEAR_EPS)
    assert "baseline: the unmutated kernel FAILS 5 fixture(s) (max_eps, " in done.stdout


def test_a_mutant_triton_refuses_is_stillborn_and_out_of_the_score(tmp_path) -> None:
    # The tutorial's `row * x_stride` -> `row / x_stride` makes a pointer plus a float, which
    # Triton refuses while tracing: the mutant never ran a fixture.
    kernel = f"{KERNELS / 'tutorial.py'}:rms_norm"
    done, data = _mutate(kernel, tmp_path / "out", "--sites", "m012,m008")
    assert done.returncode == 0, done.stdout + done.stderr
    outcome = {m["id"]: m for m in data["mutants"]}
    assert outcome["m012"]["outcome"] == "stillborn"
    assert outcome["m012"]["killed_by"] == ["hand_checkable"]
    assert "invalid operands of type pointer<fp32>" in outcome["m012"]["detail"]
    assert (data["stillborn"], data["killed"], data["score"]) == (1, 1, 1.0)
    assert data["baseline"]["failed"] == []
    assert "stillborn m012 _rms_norm_row:20 Mult -> Div: Triton refused it" in done.stdout


def test_a_kernel_that_passes_no_fixture_is_refused_with_the_reason(tmp_path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text(
        (KERNELS / "tutorial.py")
        .read_text()
        .replace(
            "    return y.reshape(x.shape) if out is None else out",
            "    raise RuntimeError('always broken')",
        )
    )
    done, data = _mutate(f"{broken}:rms_norm", tmp_path / "out", "--sites", "m001")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "the unmutated kernel passes none of the" in done.stderr + done.stdout
    assert "always broken" in done.stderr + done.stdout
    assert data == {}
