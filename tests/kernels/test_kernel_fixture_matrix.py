"""The oracle's whole fixture matrix against the kernel on every forced launch path.

``main.py check`` runs the matrix on the path the launcher picks for each fixture's shape (the
fixtures are small, so that is one row per program). Here the same fixtures and the same seven
kernel mutants run through the two other code paths as well: several rows per program (2 per
program, so the 3-row padded fixture leaves a phantom row) and the column loop (chunks of a
quarter tile, 2 rows per program on the strided grid). A path where a mutant survives every
fixture, or where the real kernel fails one, fails here by name.

The test joins the floors (oracle judges kernels), which only tests may do; ``oracle`` is numpy
only, so this also runs on the GPU image (device "auto": compiled there).
"""

from __future__ import annotations

import numpy as np
import pytest

import kernels
from oracle import fixtures, matrix
from oracle.spec import Problem


def _implementation(path: str) -> matrix.Implementation:
    def run(problem: Problem, poison: float, mutant: str | None) -> matrix.RunOutput:
        result = kernels.run_checked(
            np.array(problem.x),
            np.array(problem.weight),
            eps=problem.eps,
            dtype=problem.dtype,
            row_stride=problem.row_stride,
            mutant=mutant,
            poison=poison,
            path=path,
        )
        assert result.path == path
        return matrix.RunOutput(y=result.y, oob_writes=len(result.oob_writes))

    return run


@pytest.mark.parametrize("path", kernels.KERNEL_PATHS)
def test_every_kernel_mutant_is_killed_on_every_path(path: str) -> None:
    result = matrix.kill_matrix(
        _implementation(path), kernels.KERNEL_MUTANTS, fixtures.FIXTURES, target=f"kernel {path}"
    )
    assert not result.baseline_failures, (
        f"real kernel fails on path {path}: {result.baseline_failures}"
    )
    assert not result.survivors, f"mutants survive on path {path}: {result.survivors}"
    assert set(result.mutants) == set(kernels.KERNEL_MUTANTS)
    print("\n".join(result.summary_lines()))
    # The padded-stride fixture is what kills wrong_row_stride, on every path.
    assert "padded_row_stride" in result.killed_by("wrong_row_stride")
