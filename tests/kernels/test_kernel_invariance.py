"""The batch-invariance certificate (kernels.instruments.invariance): it finds every layout the rule
can give a width, launches rows where they claim to, measures ulps by hand, and reports a row that
differs by a single ulp. Interpreter on a CPU; compiled (and the CUDA graph) on a GPU."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import kernels
from kernels.instruments import invariance as inv
from kernels.launcher import MAX_ROWS
from kernels.layout import LaunchConfig, choose_config

DEVICE = torch.device("cuda" if kernels.MODE == "compiled" else "cpu")


@pytest.mark.parametrize("itemsize", [2, 4])
@pytest.mark.parametrize("width", [1, 2, 70, 256, 512, 1000, 2053, 4096, 5125, 8192, 20000, 65536])
def test_every_layout_the_rule_gives_any_batch_is_found(width: int, itemsize: int) -> None:
    found = {config for _, config in inv.layouts_by_batch(width, itemsize, 132)}
    rng = np.random.default_rng(width * itemsize)
    rows = np.unique(np.exp(rng.uniform(0, np.log(MAX_ROWS), 3000)).astype(np.int64))
    dense = np.arange(1, 40000)
    for count in np.concatenate([dense, rows]):
        assert choose_config(int(count), width, itemsize, 132) in found, (width, itemsize, count)


def test_the_batch_of_one_comes_first_with_one_row_per_program() -> None:
    layouts = inv.layouts_by_batch(70, 4, 132)
    assert layouts[0][0] == 1
    assert layouts[0][1].rows_per_program == 1
    assert len({config for _, config in layouts}) == len(layouts)
    assert [batch for batch, _ in layouts] == sorted(batch for batch, _ in layouts)


@pytest.mark.parametrize(
    ("per", "positions"), [(1, (0,)), (2, (0, 1)), (3, (0, 1, 2)), (8, (0, 1, 4, 7))]
)
def test_positions_are_first_second_middle_last(per: int, positions: tuple[int, ...]) -> None:
    assert inv.positions_for(LaunchConfig(False, 128, 1, per)) == positions


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_ulp_distance_by_hand(dtype) -> None:
    one = torch.tensor([1.0], dtype=dtype)
    bits = torch.int32 if dtype == torch.float32 else torch.int16
    next_up = (one.view(bits) + 1).view(dtype)
    next_down = (one.view(bits) - 1).view(dtype)
    assert inv.ulp_distance(one, one).item() == 0
    assert inv.ulp_distance(next_up, one).item() == 1
    assert inv.ulp_distance(next_down, next_up).item() == 2
    zero = torch.tensor([0.0], dtype=dtype)
    assert inv.ulp_distance(zero, -zero).item() == 1
    tiny = (zero.view(bits) + 1).view(dtype)
    assert inv.ulp_distance(tiny, -tiny).item() == 3


def test_rows_land_where_the_launch_says() -> None:
    rng = np.random.default_rng(3)
    x = torch.from_numpy(rng.standard_normal((3, 70))).float().to(DEVICE)
    w = torch.from_numpy(rng.standard_normal(70)).float().to(DEVICE)
    config = LaunchConfig(False, 128, 1, 4, w_early=True)
    alone = inv._launch_at(x, w, 1e-6, LaunchConfig(False, 128, 1), 0, 70)
    expect = kernels.rms_norm(x, w, 1e-6)
    assert torch.equal(alone, expect)
    for position in (0, 1, 3):
        shifted = inv._launch_at(x, w, 1e-6, config, position, 80)
        assert torch.allclose(shifted, expect, rtol=1e-5, atol=1e-6), position


@pytest.mark.parametrize(("per", "position"), [(4, 0), (4, 1), (4, 3), (8, 4)])
def test_the_launch_puts_the_rows_at_their_position_and_fills_the_last_program(
    monkeypatch: pytest.MonkeyPatch, per: int, position: int
) -> None:
    seen = []

    def spy(batch, weight, out, eps, config):
        seen.append((batch.clone(), batch.stride(0), out.stride(0)))
        out.copy_(batch)

    monkeypatch.setattr(inv, "launch", spy)
    x = torch.arange(3 * 8, dtype=torch.float32).reshape(3, 8) + 1
    got = inv._launch_at(x, torch.ones(8), 1e-6, LaunchConfig(False, 8, 1, per), position, 11)
    ((batch, x_stride, y_stride),) = seen
    assert (x_stride, y_stride) == (11, 11)
    assert batch.shape[0] % per == 0
    assert batch.shape[0] >= position + 3
    assert torch.equal(batch[position : position + 3], x)
    assert torch.equal(got, x)
    # The rows around them are copies of the input's rows, never zeros or poison.
    assert all(any(torch.equal(row, r) for r in x) for row in batch)


def _exact_sum_rows() -> np.ndarray:
    """Rows of small integers: every sum of squares is exact in float32 in any order, so
    every layout must give the same bits."""
    return np.random.default_rng(4).integers(-4, 5, size=(4, 70)).astype(np.float64)


def test_rows_whose_sums_are_exact_are_bit_identical_in_every_layout() -> None:
    cert = inv.certify(_exact_sum_rows(), np.linspace(-2, 2, 70), 1e-6, "float32", DEVICE)
    assert cert.bit_identical, cert.differing_rows
    assert cert.differing_rows == ()


def test_a_row_one_ulp_off_in_one_layout_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """The certificate's own detection: a launch that moves row 2 by one ulp wherever it sits
    second in a program of several rows must show up as row 2, 1 ulp, in those launches."""
    real = inv._launch_at

    def one_ulp_off(x, weight, eps, config, position, row_stride):
        out = real(x, weight, eps, config, position, row_stride).clone()
        if config.rows_per_program > 1 and position == 1:
            out[2, 5] = (out[2, 5:6].view(torch.int32) + 1).view(torch.float32)[0]
        return out

    monkeypatch.setattr(inv, "_launch_at", one_ulp_off)
    cert = inv.certify(_exact_sum_rows(), np.ones(70), 1e-6, "float32", DEVICE)
    assert not cert.bit_identical
    assert cert.differing_rows == ({"row": 2, "max_ulp": 1},)
    for launch in cert.launches:
        off = launch["rows_per_program"] > 1 and launch["position"] == 1
        assert launch["rows_differing"] == (1 if off else 0), launch


@pytest.mark.parametrize(
    ("width", "dtype"), [(70, "float32"), (256, "bfloat16"), (4096, "float16")]
)
def test_the_certificate_of_the_real_kernel_is_consistent(width: int, dtype: str) -> None:
    rng = np.random.default_rng(width)
    torch_dtype = getattr(torch, dtype)
    x = torch.from_numpy(rng.standard_normal((6, width))).to(torch_dtype).double().numpy()
    w = torch.from_numpy(rng.standard_normal(width)).to(torch_dtype).double().numpy()
    cert = inv.certify(x, w, 1e-6, dtype, DEVICE, row_stride=width + 8)
    section = cert.to_receipt()
    assert section["rows_checked"] == 6
    assert section["batch_sizes"][0] == 1
    itemsize = torch.empty((), dtype=torch_dtype).element_size()
    layouts = inv.layouts_by_batch(width, itemsize, kernels.layout.sm_count_for(DEVICE))
    # rows of 70 + 8 fp32 elements start at 8-byte shifts of a 16-byte vector: both shifts run
    places = [len(inv.positions_for(c, width + 8, itemsize)) for _, c in layouts]
    assert len(section["launches"]) == sum(places)
    in_program = [len(inv.positions_for(c)) for _, c in layouts]
    assert (places != in_program) == bool((width + 8) % (16 // itemsize))
    assert section["bit_identical"] == (not section["differing_rows"])
    assert all(launch["rows_differing"] == 0 for launch in section["launches"]) or (
        not section["bit_identical"]
    )
    if DEVICE.type == "cuda":
        assert section["cuda_graph"] in ("same bits", "differs")
    else:
        assert section["cuda_graph"].startswith("not run")


def test_only_the_first_rows_are_compared_when_asked() -> None:
    x = np.ones((10, 8))
    cert = inv.certify(x, np.ones(8), 1e-6, "float32", DEVICE, max_rows=3)
    assert cert.rows_checked == 3
