"""compute-sanitizer in the check: absent with its reason under the interpreter, the report
parsed, the stage end to end through a stand-in sanitizer (the real one runs on the H200:
docs/gpu_check/invariance), and the child that makes the launches."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import kernels
from inspector import check_stages
from oracle import fixtures

ROOT = Path(__file__).resolve().parents[2]
RUNNABLE = sum(f.check != "rejection" for f in fixtures.FIXTURES)


def test_the_interpreter_gets_no_sanitizer_and_says_why() -> None:
    if kernels.MODE != "interpreter":
        pytest.skip("the interpreter's answer")
    section = check_stages.sanitizer_stage(fixtures.get("hand_checkable").build())
    assert section == {"absent": "the Triton interpreter runs on the CPU; compute-sanitizer "
                                 "checks CUDA launches"}  # fmt: skip
    assert check_stages.sanitizer_failures(section) == []
    assert check_stages.sanitizer_line(section).startswith("compute-sanitizer: not run: ")


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("launches 97\n========= ERROR SUMMARY: 0 errors\n", (0, 97)),
        ("========= Invalid __global__ write of size 4 bytes\n"
         "========= ERROR SUMMARY: 3 errors\nlaunches 5\n", (3, 5)),
        ("========= ERROR SUMMARY: 1 error\n", (1, None)),
        ("Traceback (most recent call last):\n", (None, None)),
    ],
)  # fmt: skip
def test_the_report_is_parsed(text: str, parsed) -> None:
    assert check_stages.parse_sanitizer_output(text) == parsed


def _stand_in(folder: Path, errors: int, child: str = '"$@"') -> None:
    """A compute-sanitizer that runs ``child`` (the command after its four options) and
    reports ``errors``."""
    tool = folder / "compute-sanitizer"
    tool.write_text(
        f"#!/bin/sh\nshift 4\n{child}\nrc=$?\n"
        f"echo '========= ERROR SUMMARY: {errors} errors'\nexit $rc\n"
    )
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)


@pytest.mark.parametrize("errors", [0, 2])
def test_the_stage_end_to_end_through_a_stand_in(tmp_path, monkeypatch, errors: int) -> None:
    _stand_in(tmp_path, errors)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(kernels, "MODE", "compiled")
    section = check_stages.sanitizer_stage(fixtures.get("non_power_of_two_tail").build())
    assert section["ran"] is True
    assert section["launches"] == 1 + (1 + len(kernels.KERNEL_PATHS)) * RUNNABLE
    assert section["errors"] == errors
    assert section["passed"] is (errors == 0)
    failures = check_stages.sanitizer_failures(section)
    assert failures == ([] if errors == 0 else [
        "compute-sanitizer memcheck: 2 error(s) in the kernel launches"])  # fmt: skip


def test_a_child_that_fails_is_a_failure_naming_its_exit_code(tmp_path, monkeypatch) -> None:
    _stand_in(tmp_path, 0, child="echo 'RuntimeError: CUDA error' >&2; false")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(kernels, "MODE", "compiled")
    section = check_stages.sanitizer_stage(fixtures.get("hand_checkable").build())
    assert section["passed"] is False
    assert section["launches"] is None
    (line,) = check_stages.sanitizer_failures(section)
    assert line.startswith("compute-sanitizer memcheck did not pass (exit code 1): ")


def test_a_sanitizer_that_cannot_start_is_a_failure_not_a_crash(tmp_path, monkeypatch) -> None:
    tool = tmp_path / "compute-sanitizer"
    tool.write_text("not a program")
    tool.chmod(0o755)  # executable, but no interpreter line: exec fails
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(kernels, "MODE", "compiled")
    section = check_stages.sanitizer_stage(fixtures.get("hand_checkable").build())
    assert section["ran"] is False
    assert section["report"].startswith("could not start: ")
    (line,) = check_stages.sanitizer_failures(section)
    assert "could not start" in line


def test_the_child_refuses_a_missing_argument() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "inspector.sanitize_child"], capture_output=True, text=True,
        cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert "usage: python -m inspector.sanitize_child INPUT.npz" in done.stderr
