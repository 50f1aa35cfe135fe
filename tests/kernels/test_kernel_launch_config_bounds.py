"""The launcher's refusals of a forced layout, a device and a row stride, each at its bound and
one step past it.

A ``LaunchConfig`` passed to ``launch_kernel`` is the inspector's way to force a layout, so its
bounds are declared like the arguments': block, warps and rows per program powers of two >= 1,
the second body tile 0 or a power of two, the grid size >= 0, a register cap 0 or in
[24, 255] (ptxas' range). The numbers are written out here, not read from the launcher.
"""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch

import kernels
from kernels import launcher
from kernels.layout import LaunchConfig

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
BASE = LaunchConfig(loop=False, block=8, num_warps=1)


def _launch(**changes) -> torch.Tensor:
    x = torch.randn(2, 8, generator=torch.Generator().manual_seed(7)).to(DEVICE)
    w = torch.randn(8, generator=torch.Generator().manual_seed(8)).to(DEVICE)
    y = torch.empty_like(x)
    launcher.launch_kernel(x, w, y, 1e-6, config=dataclasses.replace(BASE, **changes))
    expected = torch.nn.functional.rms_norm(x.double(), (8,), w.double(), 1e-6)
    torch.testing.assert_close(y.double(), expected, atol=1e-6, rtol=1e-5)
    return y


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("block", 0),
        ("block", 6),
        ("num_warps", 0),
        ("rows_per_program", 0),
        ("rows_per_program", 3),
    ],
)
def test_a_tile_count_that_is_not_a_power_of_two_of_at_least_one_is_refused(
    field: str, value: int
) -> None:
    message = f"config.{field} must be a power of two >= 1; got {value}"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        _launch(**{field: value})


def test_the_smallest_tile_counts_and_an_unsplit_body_launch() -> None:
    _launch(num_warps=1, rows_per_program=1, block2=0)


@pytest.mark.parametrize("value", [1, 2, 16])
def test_a_second_body_tile_of_any_power_of_two_is_accepted(value: int) -> None:
    _launch(block2=value)


@pytest.mark.parametrize("value", [-1, 3, 6])
def test_a_second_body_tile_that_is_not_zero_or_a_power_of_two_is_refused(value: int) -> None:
    message = f"config.block2 must be 0 or a power of two; got {value}"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        _launch(block2=value)


def test_the_column_loop_takes_one_row_per_program_and_refuses_two() -> None:
    _launch(loop=True, block=16, rows_per_program=1)
    message = "config.rows_per_program must be 1 for the column loop (one program per row); got 2"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        _launch(loop=True, block=16, rows_per_program=2)


@pytest.mark.parametrize("value", [1, 0, "yes", None])
def test_an_ordered_flag_that_is_not_a_bool_is_refused(value: object) -> None:
    message = f"config.ordered must be a bool; got {type(value).__name__}"
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        _launch(loop=True, block=16, ordered=value)


def test_the_column_loop_takes_either_ordered_flag_and_a_tile_refuses_true() -> None:
    _launch(loop=True, block=16, ordered=True)
    _launch(loop=True, block=16, ordered=False)
    message = "config.ordered is the column loop's (loop=True); got a tile"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        _launch(ordered=True)


@pytest.mark.skipif(DEVICE == "cuda", reason="the interpreter's message (CPU tensors allowed)")
def test_a_tensor_on_neither_a_gpu_nor_the_cpu_is_refused_naming_its_device() -> None:
    message = "x must be on a cuda or cpu (Triton interpreter mode) device in interpreter mode"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}; got meta$"):
        kernels.rms_norm(torch.ones(2, 4, device="meta"), torch.ones(4, device="meta"))


def test_the_row_stride_bound_holds_for_rows_of_one_element() -> None:
    # Rows of one element have no column stride to speak of; their row stride still reaches
    # the kernels as a 32-bit integer. The storage (8 GiB) is allocated, never touched.
    storage = torch.empty(2**31 + 1, dtype=torch.float32, device=DEVICE)
    weight = torch.ones(1, device=DEVICE)
    assert launcher.validate(storage.as_strided((2, 1), (2**31 - 1, 1)), weight).rows == 2
    with pytest.raises(ValueError, match=r"^x's row stride must be at most 2147483647 elements"):
        launcher.validate(storage.as_strided((2, 1), (2**31, 1)), weight)
    out = storage.as_strided((2, 1), (2**31, 1))
    with pytest.raises(ValueError, match=r"^out's row stride must be at most 2147483647 elements"):
        launcher.validate(torch.zeros(2, 1, device=DEVICE), weight, out=out)


def test_an_output_of_one_column_may_have_any_column_stride() -> None:
    # One column has no neighbour, so its column stride addresses nothing; a width > 1 output
    # must have contiguous columns (tested in test_kernel_launcher.py).
    x = torch.tensor([[3.0], [-0.5]], device=DEVICE)
    weight = torch.tensor([2.0], device=DEVICE)
    storage = torch.full((6,), 7.0, device=DEVICE)
    out = storage.as_strided((2, 1), (3, 2))
    kernels.rms_norm(x, weight, 1e-6, out=out)
    # y = x / sqrt(x**2 + eps) * w: the sign of x times 2, short of it by about eps / x**2.
    torch.testing.assert_close(
        out.flatten().double(), torch.tensor([2.0, -2.0]).double().to(DEVICE), atol=1e-5, rtol=0
    )
    assert storage[[1, 2, 4, 5]].tolist() == [7.0] * 4  # nothing written between the rows


# ------------------------------------------------------------------ column strides and overlap
# A stride check that reads the wrong axis, or that starts at the wrong width, passes on the
# 2-D contiguous tensors most tests use; these pick the shapes where the axes differ.


def _strided(shape: tuple[int, ...], strides: tuple[int, ...], fill: float = 1.0) -> torch.Tensor:
    size = 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True))
    return torch.full((size,), fill, device=DEVICE).as_strided(shape, strides)


def test_one_dimensional_x_is_one_row() -> None:
    x = torch.tensor([3.0, -4.0], device=DEVICE)
    y = kernels.rms_norm(x, torch.ones(2, device=DEVICE), 1e-6)
    # rms = sqrt((9 + 16) / 2) = 3.5355...; y = x / rms
    torch.testing.assert_close(
        y.double().cpu(), torch.tensor([0.848528, -1.131371]).double(), atol=1e-5, rtol=0
    )


@pytest.mark.parametrize("name", ["x", "weight", "out"])
def test_width_two_needs_contiguous_columns_in_each_tensor(name: str) -> None:
    tensors = {"x": torch.ones(2, 2, device=DEVICE), "weight": torch.ones(2, device=DEVICE)}
    tensors["out"] = torch.empty(2, 2, device=DEVICE)
    tensors[name] = _strided(tuple(tensors[name].shape), (4, 2) if name != "weight" else (2,))
    got = "stride 2" if name == "weight" else "got 2"
    with pytest.raises(ValueError, match=f"^{name}[.' ].*{got}"):
        launcher.validate(tensors["x"], tensors["weight"], out=tensors["out"])


def test_width_one_takes_any_column_stride_of_x_and_weight() -> None:
    x = _strided((2, 1), (3, 5), fill=-2.0)
    weight = _strided((1,), (4,), fill=0.5)
    y = kernels.rms_norm(x, weight, 1e-6)
    torch.testing.assert_close(y.flatten().double().cpu(), torch.tensor([-0.5, -0.5]).double())


@pytest.mark.parametrize("name", ["x", "out"])
def test_a_column_stride_refusal_names_the_last_axis_of_a_3d_tensor(name: str) -> None:
    # (2, 3, 4) with strides (48, 16, 2): stride(-1) is 2, stride(1) 16, stride(0) 48.
    tensors = {"x": torch.ones(2, 3, 4, device=DEVICE), "out": torch.empty(2, 3, 4, device=DEVICE)}
    tensors[name] = _strided((2, 3, 4), (48, 16, 2))
    message = f"{name}.stride(-1) must be 1 (contiguous columns); got 2"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}"):
        launcher.validate(tensors["x"], torch.ones(4, device=DEVICE), out=tensors["out"])


def test_rows_of_one_element_that_overlap_in_out_are_refused() -> None:
    x = torch.ones(2, 1, device=DEVICE)
    message = "out's row stride must be >= width (1) so rows do not overlap; got 0"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        launcher.validate(x, torch.ones(1, device=DEVICE), out=_strided((2, 1), (0, 1)))


def test_a_one_element_out_beside_x_in_its_storage_is_refused() -> None:
    base = torch.zeros(2, device=DEVICE)
    with pytest.raises(ValueError, match=r"^out shares memory with x but is not x itself"):
        launcher.validate(
            base[0:1].view(1, 1), torch.ones(1, device=DEVICE), out=base[1:2].view(1, 1)
        )


def test_empty_x_and_out_with_different_strides_share_nothing() -> None:
    x = torch.empty(0, 4, device=DEVICE)
    out = torch.empty(0, device=DEVICE).as_strided((0, 4), (8, 1))
    assert launcher.validate(x, torch.ones(4, device=DEVICE), out=out).rows == 0
