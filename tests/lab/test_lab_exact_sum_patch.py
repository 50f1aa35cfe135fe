"""lab/exact_sum.patch (the batch-invariant mode with exact tiles, waiting for a GPU's figures)
applies to this tree as it is: a kernel change that breaks it shows here, not on the device."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(
    shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs a git checkout"
)
def test_the_exact_sum_patch_applies_to_this_tree() -> None:
    check = subprocess.run(
        ["git", "apply", "--check", "lab/exact_sum.patch"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert check.returncode == 0, check.stderr
    stat = subprocess.run(
        ["git", "apply", "--numstat", "lab/exact_sum.patch"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    touched = {line.split("\t")[2] for line in stat.splitlines()}
    assert {
        "kernels/jit/tile.py",
        "kernels/plans.py",
        "tests/kernels/test_kernel_exact_sum.py",
    } <= touched
