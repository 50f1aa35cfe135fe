"""The timing protocol's CPU-safe rules: one CUDA-graph launch count per shape."""

from __future__ import annotations

import math

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
