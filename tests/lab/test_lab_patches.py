"""The lab's patches of the product that wait for a GPU's figures (lab/README.md) apply to this
tree as it is: a change that breaks one shows here, not on the device."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Each patch, and files it must touch.
PATCHES = {
    "lab/exact_sum.patch": {
        "kernels/jit/tile.py", "kernels/plans.py", "tests/kernels/test_kernel_exact_sum.py",
    },
    "lab/unaligned_door.patch": {
        "kernels/api.py", "kernels/plans.py", "tests/kernels/test_kernel_plans_gpu.py",
    },
}  # fmt: skip


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.skipif(
    shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs a git checkout"
)
@pytest.mark.parametrize("patch", sorted(PATCHES))
def test_each_lab_patch_applies_to_this_tree(patch: str) -> None:
    check = _git("apply", "--check", patch)
    assert check.returncode == 0, check.stderr
    stat = _git("apply", "--numstat", patch)
    assert stat.returncode == 0, stat.stderr
    touched = {line.split("\t")[2] for line in stat.stdout.splitlines()}
    assert PATCHES[patch] <= touched
