"""Timing on the device: CUDA events, CUDA-graph replays, eager loops, statistics, rotation.

Two figures per implementation. *Device time*: every sample lies between two CUDA events, with
a GPU sleep queued ahead of the start event so the host work of the call (Python, guards,
launch) finishes while the stream is still busy and never lands inside the events. Calls that
move less than ``GRAPH_BYTES_THRESHOLD`` are timed as CUDA-graph replays of many launches (time
per launch = replay / launches), because there the launch itself would dominate. Inputs rotate
over enough buffers that the working set is more than ``L2_FACTOR`` times the L2 cache, so no
sample is served from cache. *Loop time* (what a user calling the function in a plain Python
loop pays, host included): the wall time of back-to-back calls on the same rotated buffers,
from a synchronized start to a synchronized end, divided by the calls; launch-bound shapes then
show the host's cost, large ones the device's.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

# Below this many bytes per call a shape is timed as CUDA-graph replays of many launches.
GRAPH_BYTES_THRESHOLD = 2**30
# The rotated working set (inputs + outputs of all distinct buffers) exceeds this many L2s.
L2_FACTOR = 2.0
FALLBACK_L2_BYTES = 60 * 2**20  # H200; used only when the device does not report its L2
MIN_GRAPH_LAUNCHES = 8
MAX_GRAPH_LAUNCHES = 8192
GRAPH_REPLAY_TARGET_US = 2000.0  # a replay of the fastest implementation lasts about this long
MIN_SAMPLES = 10
MAX_SAMPLES = 400
SLEEP_US_BEFORE_SAMPLE = 60.0  # GPU sleep queued ahead of each sample (hides host time)
# Eager-loop samples: each about this long, of MIN..MAX back-to-back calls, the same count for
# every implementation of a shape (the closing synchronization is shared out alike).
LOOP_SAMPLE_TARGET_US = 2000.0
MIN_LOOP_CALLS = 4
MAX_LOOP_CALLS = 4096
LOOP_SAMPLES = 15  # per round and implementation
MAX_LOOP_SAMPLES = 400
LOOP_PROBE_CALLS = 20


@dataclasses.dataclass(frozen=True)
class TimingStats:
    """Distribution of per-call times in microseconds."""

    n: int
    median_us: float
    p20_us: float
    p80_us: float
    min_us: float
    max_us: float
    mean_us: float
    std_us: float


def summarize(samples_us: Sequence[float]) -> TimingStats:
    """Median, p20, p80, min, max, mean, std of ``samples_us`` (linear interpolation).

    Raises:
        ValueError: no samples, or a non-finite or negative sample.
    """
    values = np.asarray(samples_us, dtype=np.float64)
    if values.size == 0:
        raise ValueError("samples_us must hold at least one timing")
    if not np.all(np.isfinite(values)) or np.any(values < 0):
        raise ValueError("samples_us must be finite and non-negative")
    p20, median, p80 = np.percentile(values, [20.0, 50.0, 80.0])
    return TimingStats(
        n=int(values.size),
        median_us=float(median),
        p20_us=float(p20),
        p80_us=float(p80),
        min_us=float(values.min()),
        max_us=float(values.max()),
        mean_us=float(values.mean()),
        std_us=float(values.std(ddof=1)) if values.size > 1 else 0.0,
    )


def gbps(nbytes: int, time_us: float) -> float:
    """Bytes over microseconds as GB/s (1e9 bytes per second)."""
    return nbytes / (time_us * 1e-6) / 1e9 if time_us > 0 else float("nan")


def device_l2_bytes(device: torch.device) -> tuple[int, str]:
    """``(L2 cache bytes, where that number comes from)`` for ``device``."""
    props = torch.cuda.get_device_properties(device)
    value = int(getattr(props, "L2_cache_size", 0) or 0)
    if value > 0:
        return value, "torch.cuda.get_device_properties().L2_cache_size"
    return FALLBACK_L2_BYTES, "fallback constant (device did not report L2_cache_size)"


def buffer_count(bytes_per_call: int, l2_bytes: int) -> int:
    """Distinct (input, output) buffers so that they sum to more than ``L2_FACTOR`` x L2."""
    return max(2, math.floor(L2_FACTOR * l2_bytes / max(1, bytes_per_call)) + 1)


def first_call_seconds(fn: Callable[[], Any], device: torch.device) -> float:
    """Wall seconds of one synchronized call of ``fn`` (compile and first launch included)."""
    torch.cuda.synchronize(device)
    start = time.perf_counter()
    fn()
    torch.cuda.synchronize(device)
    return time.perf_counter() - start


def _sleep_cycles(device: torch.device, microseconds: float) -> int:
    props = torch.cuda.get_device_properties(device)
    clock_khz = getattr(props, "clock_rate", 0) or 1_980_000  # kHz; H200 boost when unknown
    return max(1000, int(microseconds * clock_khz / 1000))


def _event_samples(run: Callable[[int], Any], samples: int, device: torch.device) -> list[float]:
    """Microseconds of ``run(i)`` for each ``i < samples``, between two CUDA events each.

    A GPU sleep of ``SLEEP_US_BEFORE_SAMPLE`` is queued before each start event.
    """
    sleep = getattr(torch.cuda, "_sleep", None)
    cycles = _sleep_cycles(device, SLEEP_US_BEFORE_SAMPLE)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
    torch.cuda.synchronize(device)
    for index in range(samples):
        if sleep is not None:
            sleep(cycles)
        starts[index].record()
        run(index)
        ends[index].record()
    torch.cuda.synchronize(device)
    return [s.elapsed_time(e) * 1000.0 for s, e in zip(starts, ends, strict=True)]


def time_events(
    call: Callable[[int], Any],
    count: int,
    *,
    samples: int,
    device: torch.device,
) -> list[float]:
    """Time ``call(i)`` one call per sample with CUDA events, ``i`` rotating over ``count``.

    Args:
        call: runs the implementation on buffer ``i``.
        count: the number of buffers.
        samples: how many calls to time.
        device: the CUDA device.

    Returns:
        Microseconds per call, one per sample.
    """
    return _event_samples(lambda index: call(index % count), samples, device)


def time_graph(
    call: Callable[[int], Any],
    count: int,
    *,
    launches: int,
    replays: int,
    device: torch.device,
) -> list[float]:
    """Capture ``launches`` calls (buffer ``i % count``) in one CUDA graph; time each replay.

    Outputs made during capture are kept alive until the capture ends, so every launch writes a
    distinct output buffer as it reads a distinct input.

    Args:
        call: runs the implementation on buffer ``i`` (capturable: no host synchronization).
        count: the number of buffers.
        launches: calls captured in the graph.
        replays: how many replays to time.
        device: the CUDA device.

    Returns:
        Per-launch microseconds (replay time / launches), one per replay.
    """
    stream = torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        for index in range(min(3, count)):
            call(index)
    torch.cuda.current_stream(device).wait_stream(stream)
    torch.cuda.synchronize(device)
    graph = torch.cuda.CUDAGraph()
    outputs = []
    with torch.cuda.graph(graph):
        for index in range(launches):
            outputs.append(call(index % count))
    del outputs
    graph.replay()  # warm-up replay
    per_replay = _event_samples(lambda _: graph.replay(), replays, device)
    return [value / launches for value in per_replay]


def peak_extra_bytes(call: Callable[[], Any], device: torch.device) -> tuple[int, int]:
    """``(peak bytes allocated during one call above the start, bytes of its output)``."""
    torch.cuda.synchronize(device)
    base = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    out = call()
    torch.cuda.synchronize(device)
    peak = torch.cuda.max_memory_allocated(device) - base
    out_bytes = out.numel() * out.element_size() if isinstance(out, torch.Tensor) else 0
    return int(peak), int(out_bytes)


def time_loop(
    call: Callable[[int], Any],
    count: int,
    *,
    calls: int,
    samples: int,
    device: torch.device,
) -> list[float]:
    """Per-call microseconds of ``calls`` back-to-back calls in a Python loop, host included.

    Each sample synchronizes the device, reads the wall clock, makes the calls (buffer
    ``i % count``, outputs dropped as a loop drops them), synchronizes again and divides the
    elapsed time by ``calls``: the cost of one call to a user whose loop does nothing else.

    Args:
        call: runs the implementation on buffer ``i``.
        count: the number of buffers.
        calls: calls per sample (>= 1).
        samples: how many samples.
        device: the CUDA device.

    Returns:
        Microseconds per call, one per sample.

    Raises:
        ValueError: ``calls`` or ``samples`` below 1.
    """
    if calls < 1 or samples < 1:
        raise ValueError(f"calls and samples must be >= 1; got {calls} and {samples}")
    results = []
    index = 0
    for _ in range(samples):
        torch.cuda.synchronize(device)
        start = time.perf_counter()
        for _ in range(calls):
            call(index % count)
            index += 1
        torch.cuda.synchronize(device)
        results.append((time.perf_counter() - start) * 1e6 / calls)
    return results


def loop_calls(estimates_us: Sequence[float]) -> int:
    """Calls per eager-loop sample for one shape, the same for all its implementations.

    Enough that the fastest implementation's sample lasts about ``LOOP_SAMPLE_TARGET_US``,
    within ``[MIN_LOOP_CALLS, MAX_LOOP_CALLS]``; NaN, zero and negative estimates are ignored.
    """
    fastest = min((e for e in estimates_us if e > 0 and math.isfinite(e)), default=0.0)
    wanted = math.ceil(LOOP_SAMPLE_TARGET_US / fastest) if fastest > 0 else MIN_LOOP_CALLS
    return int(min(MAX_LOOP_CALLS, max(MIN_LOOP_CALLS, wanted)))


def graph_launches(estimates_us: Sequence[float], count: int) -> int:
    """Launches per CUDA-graph replay for one shape, the same for all its implementations.

    Enough launches that the fastest implementation's replay lasts about
    ``GRAPH_REPLAY_TARGET_US`` (so every replay does), and at least one per input buffer;
    within ``[MIN_GRAPH_LAUNCHES, MAX_GRAPH_LAUNCHES]``.

    A replay's time holds a fixed cost besides its launches (the graph launch, the first
    kernel's ramp-up), and time per launch = replay / launches shares it out; one count per
    shape makes that share the same for every implementation, where a count per
    implementation would favour the one with more launches. The smallest estimate sets the
    count because the estimates of fast calls are the least reliable (host time can outlast
    the queued sleep).

    Args:
        estimates_us: first per-call estimates of the shape's implementations.
        count: the number of input buffers.

    Returns:
        The launch count.
    """
    fastest = min((e for e in estimates_us if e > 0 and math.isfinite(e)), default=0.0)
    wanted = math.ceil(GRAPH_REPLAY_TARGET_US / fastest) if fastest > 0 else MIN_GRAPH_LAUNCHES
    return int(min(MAX_GRAPH_LAUNCHES, max(MIN_GRAPH_LAUNCHES, count, wanted)))


def round_order(impls: Sequence[str], round_index: int) -> list[str]:
    """The order in which timing round ``round_index`` times ``impls``.

    As given in even rounds, reversed in odd ones: over two rounds every implementation has the
    same mean position, so a drift of the machine during one shape's rounds (clocks,
    temperature), and whatever the implementation timed just before leaves behind, do not
    always favour the same one.
    """
    order = list(impls)
    return order[::-1] if round_index % 2 else order
