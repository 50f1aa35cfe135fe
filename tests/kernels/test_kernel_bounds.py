"""Every declared bound of the launcher (``kernels.launcher.validate``), at the bound and one
step past it, with the numbers written out (a test reading the bound it checks would move with
a mutant of it). A row count at its bound is an expanded view, so no memory is committed."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

import kernels
from kernels.launcher import validate

DEVICE = "cuda" if kernels.MODE == "compiled" else "cpu"
ROOT = Path(__file__).resolve().parents[2]


def _w(width: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.ones(width, dtype=dtype, device=DEVICE)


def test_width_from_1_to_65536() -> None:
    for width in (1, 65536):
        x = torch.ones(1, width, dtype=torch.float16, device=DEVICE)
        assert validate(x, _w(width, torch.float16)).width == width
    x = torch.ones(1, 65537, dtype=torch.float16, device=DEVICE)
    with pytest.raises(ValueError, match=r"width\) must be in \[1, 65536\]; got 65537$"):
        validate(x, _w(65537, torch.float16))


@pytest.mark.parametrize(("bound", "toward"), [(1e-12, 0.0), (1e-2, 1.0)])
def test_eps_from_1e_12_to_1e_2(bound: float, toward: float) -> None:
    x = torch.ones(2, 8, device=DEVICE)
    assert validate(x, _w(8), bound).eps == bound
    past = math.nextafter(bound, toward)
    with pytest.raises(ValueError, match=r"^eps must be in \[1e-12, 0\.01\]; got "):
        validate(x, _w(8), past)


def test_rows_up_to_the_grid_limit_2_31_minus_1() -> None:
    one = torch.zeros(1, 4, device=DEVICE)
    assert validate(one.expand(2**31 - 1, 4), _w(4)).rows == 2**31 - 1
    with pytest.raises(ValueError, match=r"^x has 2147483648 rows; at most 2147483647 \(grid"):
        validate(one.expand(2**31, 4), _w(4))


def test_rows_that_start_past_2_31_elements_are_read_and_written_where_they_are() -> None:
    """Row offsets are 64-bit on every path and in split tiles, peeled (width 70: 2-element
    vectors, so the row is split into head, 16-byte body and tail) or not (width 64): row 2 of
    x and of out starts at element 2**31 + 16 and comes out within 2 bf16 ulps of torch in
    float64 (the interpreter truncates where CUDA rounds); int32 offsets would wrap to a
    negative address.
    One child process (``python -m kernels.instruments.past_2_31``) runs every case: a wrapped store
    under the interpreter would land in its memory, not this one's."""
    import subprocess
    import sys

    from kernels.instruments import past_2_31

    done = subprocess.run(
        [sys.executable, "-m", "kernels.instruments.past_2_31", DEVICE],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=ROOT,
    )
    assert past_2_31.failures(done.stdout, done.returncode) == [], done.stderr[-2000:]
    assert done.stdout.count(" ulps per row: ") == len(past_2_31.cases()) == 14


@pytest.mark.parametrize(
    ("stdout", "returncode", "problem"),
    [
        ("one_row 64 launching\n", -11, "exit code -11 while launching one_row 64"),
        ("", 1, "exit code 1 while launching nothing yet"),
        ("one_row 64 ulps per row: [0.0, 2.5, 1.0]\n", 0, "one_row 64: ulps per row [0.0, 2.5"),
        ("one_row 64 ulps per row: [0.0, 1.0]\n", 0, "one_row 64: ulps per row [0.0, 1.0]"),
    ],
)  # fmt: skip
def test_a_past_2_31_run_that_crashed_or_missed_a_row_is_a_failure(stdout, returncode, problem):
    from kernels.instruments import past_2_31

    found = past_2_31.failures(stdout, returncode)
    assert found[0].startswith(problem)
    if returncode == 0:  # the other cases printed nothing
        assert len(found) == len(past_2_31.cases())


def test_a_past_2_31_run_at_the_bound_passes() -> None:
    from kernels.instruments import past_2_31

    text = "".join(f"{case} ulps per row: [2.0, 0.0, 1.0]\n" for case in past_2_31.cases())
    assert past_2_31.failures(text, 0) == []
