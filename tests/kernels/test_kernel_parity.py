"""The real kernel against torch.nn.functional.rms_norm in float64, through the public launcher.

Runs wherever ``kernels`` runs: the Triton interpreter on a CPU machine, compiled on CUDA.
Grids stay small: the interpreter costs about a millisecond per program.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from kernel_cases import DTYPES, ODD_WIDTHS, TORCH_DTYPES, assert_close, torch_reference

import kernels

DEVICE = "cuda" if kernels.MODE == "compiled" else "cpu"


def _inputs(rows: int, width: int, dtype: str, seed: int, weight_dtype: str | None = None):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, width, generator=generator, dtype=torch.float64) * 3.0
    weight = torch.randn(width, generator=generator, dtype=torch.float64)
    x = x.to(TORCH_DTYPES[dtype]).to(DEVICE)
    weight = weight.to(TORCH_DTYPES[weight_dtype or dtype]).to(DEVICE)
    return x, weight


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", ODD_WIDTHS)
def test_matches_torch_float64_for_odd_widths(dtype: str, width: int) -> None:
    x, weight = _inputs(3, width, dtype, seed=width)
    y = kernels.rms_norm(x, weight, 1e-6)
    assert y.dtype == x.dtype
    assert y.shape == x.shape
    assert_close(y, torch_reference(x, weight, 1e-6), dtype, kernels.MODE, f"width {width}")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_float32_weight_keeps_input_dtype(dtype: str) -> None:
    x, weight = _inputs(4, 70, dtype, seed=3, weight_dtype="float32")
    y = kernels.rms_norm(x, weight)
    assert y.dtype == x.dtype  # torch.nn.functional.rms_norm semantics
    assert_close(y, torch_reference(x, weight, 1e-6), dtype, kernels.MODE, "float32 weight")


@pytest.mark.parametrize("dtype", DTYPES)
def test_three_dimensional_input_flattens_leading_dims(dtype: str) -> None:
    x, weight = _inputs(6, 31, dtype, seed=5)
    x3 = x.reshape(2, 3, 31)
    y = kernels.rms_norm(x3, weight, 1e-5)
    assert y.shape == (2, 3, 31)
    assert_close(y, torch_reference(x3, weight, 1e-5), dtype, kernels.MODE, "3-D input")


@pytest.mark.parametrize("dtype", DTYPES)
def test_padded_input_row_stride(dtype: str) -> None:
    wide, weight = _inputs(4, 83, dtype, seed=11)
    x = wide[:, :70]  # row stride 83, contiguous columns
    assert x.stride() == (83, 1)
    y = kernels.rms_norm(x, weight[:70].contiguous())
    assert y.is_contiguous()
    assert_close(y, torch_reference(x, weight[:70], 1e-6), dtype, kernels.MODE, "padded x")


def test_padded_out_row_stride_leaves_padding_alone() -> None:
    x, weight = _inputs(3, 70, "float32", seed=12)
    storage = torch.full((3, 90), 123.0, device=DEVICE)
    out = storage[:, :70]
    result = kernels.rms_norm(x, weight, out=out)
    assert result is out
    assert torch.all(storage[:, 70:] == 123.0), "the kernel wrote into out's row padding"
    assert_close(out, torch_reference(x, weight, 1e-6), "float32", kernels.MODE, "padded out")


@pytest.mark.parametrize("dtype", DTYPES)
def test_out_argument_and_in_place(dtype: str) -> None:
    x, weight = _inputs(3, 127, dtype, seed=13)
    expected = torch_reference(x, weight, 1e-6)
    out = torch.empty_like(x)
    assert kernels.rms_norm(x, weight, out=out) is out
    assert_close(out, expected, dtype, kernels.MODE, "out=")
    assert kernels.rms_norm(x, weight, out=x) is x
    assert_close(x, expected, dtype, kernels.MODE, "in place")


def test_zero_rows_return_empty_without_launch() -> None:
    x = torch.empty(0, 70, device=DEVICE)
    y = kernels.rms_norm(x, torch.ones(70, device=DEVICE))
    assert y.shape == (0, 70)


@pytest.mark.parametrize("eps", [kernels.EPS_MIN, kernels.EPS_MAX])
def test_zero_row_is_zero_and_eps_bounds_are_accepted(eps: float) -> None:
    x = torch.zeros(2, 31, device=DEVICE)
    x[1] = torch.linspace(-1, 1, 31)
    weight = torch.linspace(0.5, 2, 31, device=DEVICE)
    y = kernels.rms_norm(x, weight, eps)
    assert torch.all(y[0] == 0), "x * rsqrt(0 + eps) * w must be exactly 0 on a zero row"
    assert_close(y, torch_reference(x, weight, eps), "float32", kernels.MODE, f"eps {eps}")


def test_rows_are_isolated() -> None:
    x, weight = _inputs(3, 70, "float32", seed=14)
    before = kernels.rms_norm(x, weight).clone()
    x[1] *= -7.5
    after = kernels.rms_norm(x, weight)
    assert torch.equal(before[0], after[0])
    assert torch.equal(before[2], after[2])


def test_float16_square_sum_does_not_overflow() -> None:
    # 4096 values of 200: the float16 square sum would be 1.6e8, far past float16's 65504; the
    # float32 accumulator keeps it, and every output is exactly weight (x / rms(x) = 1).
    x = torch.full((1, 4096), 200.0, dtype=torch.float16, device=DEVICE)
    weight = torch.linspace(-2, 2, 4096, dtype=torch.float16, device=DEVICE)
    y = kernels.rms_norm(x, weight)
    assert torch.isfinite(y).all()
    assert_close(y, torch_reference(x, weight, 1e-6), "float16", kernels.MODE, "large fp16")


def test_max_width_row() -> None:
    width = kernels.MAX_WIDTH
    x, weight = _inputs(1, width, "bfloat16", seed=15)
    y = kernels.rms_norm(x, weight)
    assert_close(y, torch_reference(x, weight, 1e-6), "bfloat16", kernels.MODE, "MAX_WIDTH")


def test_mode_is_reported() -> None:
    assert kernels.MODE in ("interpreter", "compiled")
    expected = "compiled" if torch.cuda.is_available() else "interpreter"
    assert expected == kernels.MODE or "TRITON_INTERPRET" in kernels.MODE_REASON
    assert np.isfinite(kernels.EPS_MIN)
