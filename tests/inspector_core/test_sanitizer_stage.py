"""compute-sanitizer in the check: absent with its reason under the interpreter, the report
parsed, the stage end to end through a stand-in sanitizer for the bundled kernel and a user's,
and the child that makes the launches; on a GPU with compute-sanitizer (the ``gpu`` marker), a
store past a kernel's own allocation caught by the real memcheck."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import kernels
from inspector.check import stages
from kernels.sandbox.usercode import parse_kernel_spec
from oracle import fixtures

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "resources" / "kernels"
RUNNABLE = sum(f.check != "rejection" for f in fixtures.FIXTURES)


def test_the_interpreter_gets_no_sanitizer_and_says_why() -> None:
    if kernels.MODE != "interpreter":
        pytest.skip("the interpreter's answer")
    section = stages.sanitizer_stage(fixtures.get("hand_checkable").build())
    assert section == {"absent": "the Triton interpreter runs on the CPU; compute-sanitizer "
                                 "checks CUDA launches"}  # fmt: skip
    assert stages.sanitizer_failures(section) == []
    assert stages.sanitizer_line(section).startswith("compute-sanitizer: not run: ")


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
    assert stages.parse_sanitizer_output(text) == parsed


def _stand_in(folder: Path, errors: int, child: str = '"$@"') -> None:
    """A compute-sanitizer that writes its command line and the allocator switch it was given
    beside itself, runs ``child`` (the command after its own options, from the Python
    executable on) and reports ``errors``."""
    tool = folder / "compute-sanitizer"
    tool.write_text(
        f"#!/bin/sh\nprintf '%s\\n' \"$@\" > '{folder}/args.txt'\n"
        f"echo \"$PYTORCH_NO_CUDA_MEMORY_CACHING\" > '{folder}/caching.txt'\n"
        f'while [ "$#" -gt 0 ] && [ "$1" != "{sys.executable}" ]; do shift; done\n'
        f"{child}\nrc=$?\n"
        f"echo '========= ERROR SUMMARY: {errors} errors'\nexit $rc\n"
    )
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)


@pytest.mark.parametrize("errors", [0, 2])
def test_the_stage_end_to_end_through_a_stand_in(tmp_path, monkeypatch, errors: int) -> None:
    _stand_in(tmp_path, errors)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(kernels, "MODE", "compiled")
    section = stages.sanitizer_stage(fixtures.get("non_power_of_two_tail").build())
    assert section["ran"] is True
    assert section["launches"] == 1 + (1 + len(kernels.KERNEL_PATHS)) * RUNNABLE
    assert section["errors"] == errors
    assert section["passed"] is (errors == 0)
    assert section["tool"] == "compute-sanitizer --tool memcheck --padding 512"
    args = (tmp_path / "args.txt").read_text().splitlines()
    assert args[:6] == ["--tool", "memcheck", "--padding", "512", "--print-limit", "20"]
    assert args[6:9] == [sys.executable, "-m", "inspector.check.sanitize_child"]
    assert len(args) == 10  # INPUT.npz: the bundled kernel
    # Every tensor its own allocation: a store past one is past an allocation's end.
    assert (tmp_path / "caching.txt").read_text().strip() == "1"
    failures = stages.sanitizer_failures(section)
    assert failures == ([] if errors == 0 else [
        "compute-sanitizer memcheck: 2 error(s) in the kernel launches"])  # fmt: skip


def test_a_child_that_fails_is_a_failure_naming_its_exit_code(tmp_path, monkeypatch) -> None:
    _stand_in(tmp_path, 0, child="echo 'RuntimeError: CUDA error' >&2; false")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(kernels, "MODE", "compiled")
    section = stages.sanitizer_stage(fixtures.get("hand_checkable").build())
    assert section["passed"] is False
    assert section["launches"] is None
    (line,) = stages.sanitizer_failures(section)
    assert line.startswith("compute-sanitizer memcheck did not pass (exit code 1): ")


def test_a_sanitizer_that_cannot_start_is_a_failure_not_a_crash(tmp_path, monkeypatch) -> None:
    tool = tmp_path / "compute-sanitizer"
    tool.write_text("not a program")
    tool.chmod(0o755)  # executable, but no interpreter line: exec fails
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(kernels, "MODE", "compiled")
    section = stages.sanitizer_stage(fixtures.get("hand_checkable").build())
    assert section["ran"] is False
    assert section["report"].startswith("could not start: ")
    (line,) = stages.sanitizer_failures(section)
    assert "could not start" in line


def test_the_child_refuses_a_missing_argument() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "inspector.check.sanitize_child"], capture_output=True, text=True,
        cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert "usage: python -m inspector.check.sanitize_child INPUT.npz" in done.stderr


def test_a_users_kernel_runs_its_check_launches_under_the_sanitizer(tmp_path, monkeypatch) -> None:
    """The input and every fixture with numbers, once each (its launcher picks its layout), in
    the guarded buffers of its check, in the sanitizer's child."""
    _stand_in(tmp_path, 0)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(kernels, "MODE", "compiled")
    spec = parse_kernel_spec(f"{EXAMPLES / 'tutorial.py'}:rms_norm")
    section = stages.sanitizer_stage(fixtures.get("non_power_of_two_tail").build(), spec)
    assert section["launches"] == 1 + RUNNABLE
    assert section["errors"] == 0
    assert section["passed"] is True
    assert stages.sanitizer_failures(section) == []
    args = (tmp_path / "args.txt").read_text().splitlines()
    assert args[-2:] == [str(EXAMPLES / "tutorial.py"), "rms_norm"]
    assert stages.sanitizer_line(section) == (
        f"compute-sanitizer memcheck: 0 errors over {1 + RUNNABLE} launches"
    )


def _user_kernel_stage(tmp_path: Path, monkeypatch, source: str) -> dict:
    """The stage on the hand-checkable input for a user kernel file of ``source``, through a
    stand-in sanitizer that reports no error, as in compiled mode."""
    kernel = tmp_path / "user_kernel.py"
    kernel.write_text(source)
    _stand_in(tmp_path, 0)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(kernels, "MODE", "compiled")
    return stages.sanitizer_stage(
        fixtures.get("hand_checkable").build(), parse_kernel_spec(f"{kernel}:rms_norm")
    )


def test_a_users_kernel_that_raises_everywhere_checked_nothing_and_fails(
    tmp_path, monkeypatch
) -> None:
    section = _user_kernel_stage(
        tmp_path,
        monkeypatch,
        "def rms_norm(x, weight, eps, out=None):\n    raise ValueError('no')\n",
    )
    assert section["launches"] == 0
    assert section["passed"] is False
    assert "not counted: " in section["report"]
    assert "raised ValueError: no" in section["report"]
    assert stages.sanitizer_failures(section) == [
        "compute-sanitizer memcheck: no launch finished under it (every run raised), so it "
        "checked nothing"
    ]


def test_a_users_kernel_that_does_not_import_fails_the_stage(tmp_path, monkeypatch) -> None:
    section = _user_kernel_stage(tmp_path, monkeypatch, "raise ImportError('missing dependency')\n")
    assert section["passed"] is False
    assert section["exit_code"] == 1
    (line,) = stages.sanitizer_failures(section)
    assert line == (
        "compute-sanitizer memcheck did not pass (exit code 1): ImportError: missing dependency"
    )


def _gpu_and_sanitizer() -> str | None:
    if kernels.MODE != "compiled":
        return "needs a CUDA device (the kernel runs compiled)"
    if shutil.which("compute-sanitizer") is None:
        return "needs compute-sanitizer on the PATH"
    return None


@pytest.mark.gpu
@pytest.mark.skipif(_gpu_and_sanitizer() is not None, reason=str(_gpu_and_sanitizer()))
def test_memcheck_flags_a_store_past_the_kernels_own_allocation() -> None:
    """The planted bug's results are right and its guards clean; only the device sanitizer sees
    its last row store past the output it allocated (width 70 in a tile of 128: 58 elements)."""
    problem = fixtures.get("non_power_of_two_tail").build()
    assert problem.width & (problem.width - 1)  # not a power of two: the tile overruns the row
    bad = parse_kernel_spec(f"{EXAMPLES / 'bug_store_past_allocation.py'}:rms_norm")
    section = stages.sanitizer_stage(problem, bad)
    assert section["ran"] is True, section["report"]
    assert section["errors"] is not None, section["report"]
    assert section["errors"] > 0, section["report"]
    assert section["passed"] is False
    (line,) = stages.sanitizer_failures(section)
    assert (
        line == f"compute-sanitizer memcheck: {section['errors']} error(s) in the kernel launches"
    )


@pytest.mark.gpu
@pytest.mark.skipif(_gpu_and_sanitizer() is not None, reason=str(_gpu_and_sanitizer()))
def test_memcheck_passes_the_same_launches_of_a_kernel_that_stays_in_bounds() -> None:
    """The control: the tutorial kernel (masked stores into out=) on the same input is clean, so
    the errors above are the bug's, not the harness's."""
    good = parse_kernel_spec(f"{EXAMPLES / 'tutorial.py'}:rms_norm")
    section = stages.sanitizer_stage(fixtures.get("non_power_of_two_tail").build(), good)
    assert section["errors"] == 0, section["report"]
    assert section["launches"] == 1 + RUNNABLE, section["report"]
    assert section["passed"] is True


def test_errors_with_no_finished_run_say_the_fault_ended_the_runs() -> None:
    """The H200's report of the planted bug (2026-12-03): 144 errors in the first launch, after
    which every run of that process raised, so none was counted."""
    section = {"tool": stages.SANITIZER_TOOL, "ran": True, "errors": 144, "launches": 0,
               "passed": False, "exit_code": 0, "report": ""}  # fmt: skip
    assert stages.sanitizer_line(section) == (
        "compute-sanitizer memcheck: FAILED (144 error(s)) in the first launch; no run finished "
        "after the fault"
    )
    assert stages.sanitizer_failures(section) == [
        "compute-sanitizer memcheck: 144 error(s) in the kernel launches"
    ]
    assert stages.sanitizer_line({**section, "launches": 3}).endswith("over 3 launches")
