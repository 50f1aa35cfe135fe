"""The kernels' optional per-row ``rstd`` output: each row's rrms exactly as the kernel computed
it, on every path (one-row, peeled, multi-row, column loop), the mutants' rrms included.

Run under the interpreter here (small grids) and compiled with the ``gpu`` marker. The output
``y`` is bit-identical with and without ``rstd``: storing it changes nothing else.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import kernels
from kernels import launcher
from kernels.layout import LaunchConfig, forced_config

DEVICE = "cuda" if kernels.MODE == "compiled" else "cpu"

# (rows, width, config): every path and the peeled variants of one-row tiles and column loops.
LAYOUTS = {
    "one_row": (3, 70, forced_config("one_row", 3, 70, 4)),
    "one_row_peeled": (3, 37, LaunchConfig(False, 64, 1)),
    "multi_row": (5, 70, forced_config("multi_row", 5, 70, 4)),
    "column_loop": (5, 70, forced_config("column_loop", 5, 70, 4)),
    "column_loop_peeled": (3, 37, LaunchConfig(True, 16, 1)),
    "column_loop_even": (5, 64, LaunchConfig(True, 16, 1)),
    "auto": (9, 1000, None),
}


def _inputs(rows: int, width: int, dtype: torch.dtype, seed: int):
    generator = torch.Generator().manual_seed(seed)
    x = (torch.randn(rows, width, generator=generator) * 3.0).to(dtype)
    w = torch.randn(width, generator=generator).to(dtype)
    return x.to(DEVICE), w.to(DEVICE)


def _run(x, w, eps, config, mutant=None, with_rstd=True):
    y = torch.empty_like(x)
    rstd = torch.full((x.shape[0],), float("nan"), device=DEVICE) if with_rstd else None
    launcher.launch_kernel(x, w, y, eps, mutant=mutant, config=config, rstd=rstd)
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    return y, rstd


def _rrms64(x: torch.Tensor, eps: float, divisor: float | None = None) -> np.ndarray:
    values = x.double().cpu().numpy()
    mean = (values * values).sum(axis=1) / (values.shape[1] if divisor is None else divisor)
    return 1.0 / np.sqrt(mean + eps)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_rstd_is_each_rows_rrms_and_leaves_y_unchanged(layout: str, dtype) -> None:
    rows, width, config = LAYOUTS[layout]
    x, w = _inputs(rows, width, dtype, seed=width + rows)
    y, rstd = _run(x, w, 1e-5, config)
    y_plain, _ = _run(x, w, 1e-5, config, with_rstd=False)
    assert torch.equal(y, y_plain)
    got = rstd.cpu().numpy().astype(np.float64)
    # A float32 tree sum and rsqrt: a few float32 ulps from the binary64 value.
    np.testing.assert_allclose(got, _rrms64(x, 1e-5), rtol=2e-6)
    # The output is x * rstd * w in float32, rounded once (the interpreter truncates to
    # bfloat16): within one unit in the last place of the dtype, rstd is the rrms it applied.
    rstd32 = torch.from_numpy(got).float().to(DEVICE)[:, None]
    implied = (x.float() * rstd32 * w.float()).cpu().numpy()
    ulp = float(torch.finfo(dtype).eps)
    np.testing.assert_allclose(y.float().cpu().numpy(), implied, rtol=ulp, atol=1e-30)


@pytest.mark.parametrize("layout", ["one_row", "multi_row", "column_loop", "one_row_peeled"])
def test_rstd_shows_a_mutants_rrms(layout: str) -> None:
    rows, width, config = LAYOUTS[layout]
    x, w = _inputs(rows, width, torch.float32, seed=3)
    _, rstd = _run(x, w, 1e-5, config, mutant="sum_instead_of_mean")
    np.testing.assert_allclose(rstd.cpu().numpy(), _rrms64(x, 1e-5, divisor=1.0), rtol=2e-6)
    _, rstd = _run(torch.zeros_like(x), w, 1e-5, config, mutant="missing_epsilon")
    assert np.all(np.isinf(rstd.cpu().numpy()))  # rsqrt(0): the NaN-to-be of an all-zero row


def test_rstd_of_the_wrong_shape_dtype_or_device_is_refused() -> None:
    x, w = _inputs(3, 70, torch.float32, seed=0)
    y = torch.empty_like(x)
    for bad, pattern in (
        (torch.zeros(4, device=DEVICE), r"shape \(3,\)"),
        (torch.zeros(3, dtype=torch.float64, device=DEVICE), r"got torch\.float64"),
        (torch.zeros(6, device=DEVICE)[::2], r"got non-contiguous torch\.float32 \(3,\)"),
        ([0.0, 0.0, 0.0], r"got list"),
    ):
        message = r"^rstd must be a contiguous float32 tensor.*" + pattern
        with pytest.raises(ValueError, match=message):
            launcher.launch_kernel(x, w, y, 1e-5, rstd=bad)


def test_the_rstd_output_compiles_to_nothing_when_not_asked_for() -> None:
    # Without rstd the pointer is a constexpr None: the compiled kernel takes the same runtime
    # arguments as before the output existed (what the plans' direct door passes).
    names = kernels.jit.rms_norm_tile_kernel.arg_names
    assert names[:8] == ["x_ptr", "w_ptr", "y_ptr", "rows", "width_v", "x_stride_v",
                         "y_stride_v", "eps"]  # fmt: skip
    assert names[-2:] == ["rstd_ptr", "STORE_RSTD"]
    assert kernels.jit.rms_norm_loop_kernel.arg_names[-2:] == ["rstd_ptr", "STORE_RSTD"]
