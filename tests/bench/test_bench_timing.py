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
