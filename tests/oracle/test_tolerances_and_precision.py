"""The tolerance table at its edges, and the scalar reference's binary64 arithmetic.

Each tolerance is checked where it bites: an error of exactly ``atol`` (at an expected 0) passes
and the next double fails, and at a large expected value an error of 0.999x the allowed one
passes and 1.001x fails. So a loosened (or tightened) table fails here; the numbers are written
out, as in the module docstring of ``oracle.compare`` that justifies them.

The scalar reference is the binary64 side of every comparison; a case whose float32 sum is
wrong by one unit proves it accumulates in binary64, row by row.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from oracle import compare as cmp
from oracle import scalar
from oracle.spec import make_problem

TABLE = {
    "float32": (1e-5, 2e-5),
    "float16": (1e-3, 2e-3),
    "bfloat16": (1e-2, 1.6e-2),
}


@pytest.mark.parametrize("dtype", sorted(TABLE))
def test_output_tolerance_at_its_edges(dtype: str) -> None:
    atol, rtol = TABLE[dtype]
    tolerance = cmp.TOLERANCES[dtype]
    zero = np.zeros(1)
    assert cmp.compare(np.array([atol]), zero, tolerance).passed
    assert not cmp.compare(np.array([math.nextafter(atol, 1.0)]), zero, tolerance).passed
    expected = np.array([1024.0, -3.0e4])
    allowed = atol + rtol * np.abs(expected)
    assert cmp.compare(expected + 0.999 * allowed, expected, tolerance).passed
    assert not cmp.compare(expected + 1.001 * allowed, expected, tolerance).passed
    assert cmp.compare(expected - 0.999 * allowed, expected, tolerance).passed
    assert not cmp.compare(expected - 1.001 * allowed, expected, tolerance).passed


def test_intermediate_tolerance_is_relative_1e_5_only() -> None:
    tolerance = cmp.INTERMEDIATE_TOLERANCE
    assert not cmp.compare(np.array([1e-300]), np.zeros(1), tolerance).passed  # no atol
    expected = np.array([2.0**20])
    assert cmp.compare(expected * (1 + 0.999e-5), expected, tolerance).passed
    assert not cmp.compare(expected * (1 + 1.001e-5), expected, tolerance).passed


def test_every_declared_dtype_has_an_output_tolerance_and_a_reason() -> None:
    assert sorted(cmp.TOLERANCES) == sorted(TABLE)
    assert all(t.dtype == name and t.why for name, t in cmp.TOLERANCES.items())


def test_the_scalar_reference_sums_in_binary64() -> None:
    """4096**2 + 1 = 16777217 needs 25 significant bits: float32 rounds it to 16777216."""
    problem = make_problem(np.array([[4096.0, 1.0]]), np.ones(2), eps=1e-6)
    ref = scalar.reference(problem)
    assert float(np.float32(4096.0) ** 2 + np.float32(1.0)) == 16777216.0  # what float32 gives
    assert ref.sum_squares[0] == 16777217.0
    assert ref.mean_square[0] == 8388608.5
    assert ref.rrms[0] == 1.0 / math.sqrt(8388608.5 + 1e-6)
    assert ref.y_exact[0, 1] == 1.0 / math.sqrt(8388608.5 + 1e-6)
