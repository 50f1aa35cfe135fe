"""The sweep's diagnostic pieces: probe kernels, the launch-cost fit, one launch count per shape.

The probe kernels run here under the Triton interpreter on small CPU tensors (on a GPU machine
compiled, on the GPU); the sweep itself needs the H200.
"""

from __future__ import annotations

import math

import pytest
import torch

from kernels import bench, bench_sweep
from kernels.bench_probe import Probe, probe_launch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

PROBES = [
    Probe(2, 4),
    Probe(1, 2),
    Probe(2, 4, int64=True),
    Probe(2, 4, stream_store=True),
    Probe(2, 4, runtime_width=True),
    Probe(1, 1, int64=True, stream_store=True, runtime_width=True),
    Probe(2, 1, one_pass=True),
    Probe(2, 1, one_pass=True, x_plain=True, w_plain=True, w_early=True),
    Probe(2, 2, w_early=True),
]


@pytest.mark.parametrize("probe", PROBES, ids=lambda p: p.label)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_probe_matches_the_float64_reference(probe, dtype):
    generator = torch.Generator().manual_seed(5)
    # Row scales 1e-2..1e2 so a missing normalization or a wrong divisor cannot pass.
    scales = torch.logspace(-2, 2, 6, dtype=torch.float64)[:, None]
    x = (torch.randn(6, 64, generator=generator, dtype=torch.float64) * scales).to(dtype)
    weight = torch.rand(64, generator=generator, dtype=torch.float64).add(0.5).to(dtype)
    x, weight = x.to(DEVICE), weight.to(DEVICE)
    y = probe_launch(x, weight, torch.empty_like(x), 1e-6, probe)
    parity = bench.check_parity(y, x, weight, 1e-6)
    assert parity.passed, parity


def test_probe_reads_each_row_alone():
    # A zero row next to a huge one: the zero row's output is exactly zero (eps keeps rsqrt
    # finite) and the huge row normalizes to unit RMS; a probe that mixed rows fails both.
    x = torch.zeros(2, 32, device=DEVICE)
    x[1] = 1e4
    weight = torch.ones(32, device=DEVICE)
    y = probe_launch(x, weight, torch.empty_like(x), 1e-6, Probe(2, 1))
    assert torch.equal(y[0], torch.zeros(32, device=DEVICE))
    torch.testing.assert_close(y[1], torch.ones(32, device=DEVICE))


@pytest.mark.parametrize(
    ("shape", "rows_per_program", "message"),
    [
        ((4, 48), 1, "width must be a power of two; got 48"),
        ((5, 32), 2, "rows (5) must be a multiple of rows_per_program (2)"),
        ((4, 32), 0, "rows (4) must be a multiple of rows_per_program (0)"),
    ],
)
def test_probe_refuses_what_it_cannot_run(shape, rows_per_program, message):
    x = torch.ones(shape, device=DEVICE)
    weight = torch.ones(shape[1], device=DEVICE)
    with pytest.raises(ValueError, match=f"probe: {message.replace('(', '.').replace(')', '.')}"):
        probe_launch(x, weight, torch.empty_like(x), 1e-6, Probe(rows_per_program, 1))


def test_probe_refuses_a_strided_input():
    x = torch.ones(4, 64, device=DEVICE)[:, :32]
    with pytest.raises(ValueError, match="contiguous 2-D"):
        probe_launch(x, torch.ones(32, device=DEVICE), torch.empty(4, 32), 1e-6, Probe(1, 1))


def test_probe_labels_name_every_switch():
    assert Probe(2, 16).label == "probe_R2_w16"
    assert Probe(1, 8, True, True, True).label == "probe_R1_w8_i64_cs_rtw"
    assert Probe(2, 1, stream_store=True).label == "probe_R2_w1_cs"
    assert Probe(2, 1, one_pass=True).label == "probe_R2_w1_1p"
    assert (
        Probe(2, 1, one_pass=True, x_plain=True, w_plain=True, w_early=True).label
        == "probe_R2_w1_1p_xplain_wplain_wearly"
    )


def test_fit_launch_cost_recovers_time_and_fixed_cost():
    # per_launch(L) = 33.2 + 3.5 / L exactly: the fit returns both numbers.
    data = {count: 33.2 + 3.5 / count for count in (8, 16, 64)}
    t, fixed = bench_sweep.fit_launch_cost(data)
    assert t == pytest.approx(33.2, abs=1e-9)
    assert fixed == pytest.approx(3.5, abs=1e-9)


def test_fit_launch_cost_needs_two_counts():
    with pytest.raises(ValueError, match="needs >= 2 launch counts; got \\[16\\]"):
        bench_sweep.fit_launch_cost({16: 126.0})


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("8,x", "--launch-counts must be comma-separated integers: '8,x'"),
        ("16", "--launch-counts needs >= 2 distinct counts in [1, 8192]; got '16'"),
        ("8,0", "--launch-counts needs >= 2 distinct counts in [1, 8192]; got '8,0'"),
        ("8,9000", "--launch-counts needs >= 2 distinct counts in [1, 8192]; got '8,9000'"),
    ],
)
def test_sweep_refuses_bad_launch_counts_before_touching_a_device(tmp_path, capsys, value, message):
    with pytest.raises(SystemExit) as info:
        bench_sweep.main(["--out", str(tmp_path / "s.json"), "--launch-counts", value])
    assert info.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "s.json").exists()


def test_one_launch_count_per_shape_set_by_the_fastest_estimate():
    # 33 us (the copy) sets ceil(2000 / 33) = 61 launches for every implementation of the
    # shape, also the one whose estimate says 133 us (host time that outlasted the sleep).
    assert bench.graph_launches([33.0, 133.0, 55.0], count=4) == 61
    assert bench.graph_launches([133.0, 33.0], count=4) == 61


def test_graph_launches_bounds():
    assert bench.graph_launches([126.0], count=2) == 16  # ceil(2000 / 126)
    assert bench.graph_launches([126.0], count=20) == 20  # every buffer at least once
    assert bench.graph_launches([5000.0], count=2) == bench.MIN_GRAPH_LAUNCHES
    assert bench.graph_launches([0.01], count=2) == bench.MAX_GRAPH_LAUNCHES
    # No usable estimate (none, zero, NaN): the minimum, never a division by zero.
    assert bench.graph_launches([], count=2) == bench.MIN_GRAPH_LAUNCHES
    assert bench.graph_launches([0.0, math.nan], count=2) == bench.MIN_GRAPH_LAUNCHES
    assert bench.graph_launches([math.nan, 40.0], count=2) == 50
