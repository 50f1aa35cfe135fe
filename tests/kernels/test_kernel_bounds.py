"""Every declared bound of the launcher (``kernels.launcher.validate``), at the bound and one
step past it, with the numbers written out (a test reading the bound it checks would move with
a mutant of it). A row count at its bound is an expanded view, so no memory is committed."""

from __future__ import annotations

import math

import pytest
import torch

import kernels
from kernels.launcher import validate

DEVICE = "cuda" if kernels.MODE == "compiled" else "cpu"


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
