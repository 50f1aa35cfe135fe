"""The timing protocol's CPU-safe rules: one CUDA-graph launch count and one eager-loop call
count per shape."""

from __future__ import annotations

import math

import pytest
import torch

from kernels import bench


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


def test_one_loop_call_count_per_shape_set_by_the_fastest_probe():
    # 9 us per call (ours) sets ceil(2000 / 9) = 223 calls for every implementation.
    assert bench.loop_calls([9.0, 11.0, 40.0]) == 223
    assert bench.loop_calls([40.0, 9.0]) == 223


def test_loop_calls_bounds():
    assert bench.loop_calls([500.0]) == bench.MIN_LOOP_CALLS  # ceil(2000 / 500) = 4, at the bound
    assert bench.loop_calls([400.0]) == 5  # one step inside it
    assert bench.loop_calls([5000.0]) == bench.MIN_LOOP_CALLS
    assert bench.loop_calls([2000.0 / bench.MAX_LOOP_CALLS]) == bench.MAX_LOOP_CALLS
    assert bench.loop_calls([0.01]) == bench.MAX_LOOP_CALLS
    assert bench.loop_calls([]) == bench.MIN_LOOP_CALLS
    assert bench.loop_calls([0.0, math.nan, -3.0]) == bench.MIN_LOOP_CALLS


@pytest.mark.parametrize(("calls", "samples"), [(0, 5), (5, 0), (-1, 1)])
def test_time_loop_refuses_empty_samples_before_touching_a_device(calls, samples):
    def never(index):
        raise AssertionError("no call may run")

    with pytest.raises(ValueError, match="calls and samples must be >= 1"):
        bench.time_loop(never, 1, calls=calls, samples=samples, device=torch.device("cuda"))


def test_loop_samples_are_interleaved_alternating_and_pooled_by_round(monkeypatch):
    from kernels.bench import harness, timing
    from kernels.bench.impls import Prepared

    order: list[str] = []

    def fake_time_loop(call, count, *, calls, samples, device):
        impl = call(0)
        order.append(impl)
        if impl == "broken":
            raise RuntimeError("loop failed")
        return [{"copy": 5.0, "ours": 9.0, "torch_eager": 10.0}[impl] + len(order) / 1000]

    monkeypatch.setattr(timing, "time_loop", fake_time_loop)

    def ready(impl, estimate):
        return harness._Ready(Prepared(call=None), lambda i, impl=impl: impl, 1, 1.0, estimate)

    impls = ["copy", "ours", "torch_eager", "broken"]
    items = {impl: ready(impl, 9.0 if impl == "ours" else 12.0) for impl in impls}
    rows = {impl: {"impl": impl} for impl in impls}
    config = harness.BenchConfig(shapes=[], dtypes=[], impls=impls, rounds=2, loop_samples=3)
    harness._time_loops(config, torch.device("cpu"), items, rows)
    # Sample 0 in impls order, sample 1 reversed (broken already dropped), and so on.
    assert order[:4] == ["copy", "ours", "torch_eager", "broken"]
    assert order[4:7] == ["torch_eager", "ours", "copy"]
    assert order[7:10] == ["copy", "ours", "torch_eager"]
    assert "broken" not in items
    assert rows["broken"]["status"] == "error"
    assert "loop failed" in rows["broken"]["note"]
    for impl in ("copy", "ours", "torch_eager"):
        assert len(rows[impl]["loop_samples_us"]) == 6  # rounds x loop_samples
        assert len(rows[impl]["loop_round_medians_us"]) == 2
        assert rows[impl]["loop_calls_per_sample"] == bench.loop_calls([9.0])  # the fastest
    assert rows["ours"]["loop_round_medians_us"][0] < rows["ours"]["loop_round_medians_us"][1]


def test_no_loop_samples_leaves_the_rows_without_a_loop_figure(monkeypatch):
    from kernels.bench import harness, timing

    monkeypatch.setattr(timing, "time_loop", lambda *a, **k: pytest.fail("no loop may run"))
    rows = {"ours": {"impl": "ours"}}
    config = harness.BenchConfig(shapes=[], dtypes=[], impls=["ours"], loop_samples=0)
    harness._time_loops(config, torch.device("cpu"), {"ours": object()}, rows)
    assert rows == {"ours": {"impl": "ours"}}
