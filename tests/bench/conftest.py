"""The fake device the benchmark's CPU tests run ``bench_main`` on."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from kernels.bench import harness, timing


@dataclasses.dataclass(frozen=True)
class FakeTimes:
    """What the fake timing primitives return, per call, in microseconds."""

    device_us: float = 1.25
    graph_us: float = 1.5
    loop_us: float = 2.5


@pytest.fixture
def fake_device(monkeypatch) -> FakeTimes:
    """A "CUDA" device that is the CPU: the timing primitives return fixed numbers, after
    calling the implementation where the real ones would (so every timed call still runs)."""
    times = FakeTimes()

    def time_events(call, count, *, samples, device):
        call(0)
        return [times.device_us] * samples

    def time_graph(call, count, *, launches, replays, device):
        call(0)
        return [times.graph_us] * replays

    def time_loop(call, count, *, calls, samples, device):
        call(0)
        return [times.loop_us] * samples

    def peak_extra_bytes(call, device):
        y = call()
        return y.numel() * y.element_size(), y.numel() * y.element_size()

    def first_call_seconds(fn, device):
        fn()
        return 0.001

    monkeypatch.setattr(harness, "require_cuda", lambda: torch.device("cpu"))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(timing, "device_l2_bytes", lambda device: (1, "fake"))
    monkeypatch.setattr(harness, "nvidia_smi_query", lambda: {"error": "fake device"})
    for name, fake in (
        ("time_events", time_events),
        ("time_graph", time_graph),
        ("time_loop", time_loop),
        ("peak_extra_bytes", peak_extra_bytes),
        ("first_call_seconds", first_call_seconds),
    ):
        monkeypatch.setattr(timing, name, fake)
    return times
