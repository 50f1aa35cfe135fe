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


#: Run in a child process: an int32 offset would wrap to a wild address, and under the
#: interpreter that store lands in this process's memory (a crash, or silent corruption).
_PAST_2_31 = """
import sys, torch, kernels
from kernels import launcher, layout
device = sys.argv[1]
rows, stride = 3, 2**30 + 8  # row 2 starts at element 2**31 + 16
def strided(width):
    storage = torch.empty((rows - 1) * stride + width, dtype=torch.bfloat16, device=device)
    return storage.as_strided((rows, width), (stride, 1))  # untouched: pages stay uncommitted
for path in kernels.KERNEL_PATHS:
    for width in (64, 70):
        gen = torch.Generator().manual_seed(7)
        values = torch.randn(rows, width, generator=gen).to(torch.bfloat16).to(device)
        x, out = strided(width), strided(width)
        x.copy_(values)
        weight = torch.linspace(-2, 2, width, dtype=torch.bfloat16, device=device)
        checked = kernels.validate(x, weight, 1e-6, out)
        config = layout.forced_config(path, rows, width, 2)
        print(path, width, "launching", flush=True)  # the last line names a case that crashed
        launcher.launch(checked.x2d, weight, out, checked.eps, config=config)
        expected = torch.nn.functional.rms_norm(values.double(), (width,), weight.double(), 1e-6)
        ulp = torch.finfo(torch.bfloat16).eps * expected.abs().clamp_min(2**-126)
        worst = ((out.double() - expected) / ulp).abs().amax(dim=1)
        print(path, width, "ulps per row:", [round(float(v), 2) for v in worst], flush=True)
        del x, out
"""


def test_rows_that_start_past_2_31_elements_are_read_and_written_where_they_are() -> None:
    """Row offsets are 64-bit on every path, peeled (width 70: 2-element vectors, so the row
    is split into head, 16-byte body and tail) or not (width 64): row 2 of x and of out starts
    at element 2**31 + 16 and comes out within 2 bf16 ulps of torch in float64 (the
    interpreter truncates where CUDA rounds); int32 offsets would wrap to a negative address.
    One child process runs every case: a wrapped store under the interpreter would land in its
    memory, not this one's."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _PAST_2_31, DEVICE],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 0, (
        f"exit {done.returncode} after:\n{done.stdout}{done.stderr[-2000:]}"
    )
    results = [line.split(" ulps per row: ") for line in lines if " ulps per row: " in line]
    assert [case for case, _ in results] == [
        f"{path} {width}" for path in kernels.KERNEL_PATHS for width in (64, 70)
    ]
    for case, ulps in results:
        assert all(float(u) <= 2 for u in ulps.strip("[]").split(", ")), (case, ulps)
