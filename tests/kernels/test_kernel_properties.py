"""Property checks: random shapes/strides/dtypes agree with torch float64; concurrent launches."""

from __future__ import annotations

import threading

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_cases import DTYPES, TORCH_DTYPES, assert_close, torch_reference

import kernels

DEVICE = "cuda" if kernels.MODE == "compiled" else "cpu"


@settings(max_examples=30, deadline=None, derandomize=True, database=None)
@given(
    rows=st.integers(1, 4),
    width=st.integers(1, 300),
    pad=st.integers(0, 9),
    dtype=st.sampled_from(DTYPES),
    eps=st.sampled_from([kernels.EPS_MIN, 1e-6, 1e-3, kernels.EPS_MAX]),
    scale=st.sampled_from([1e-3, 1.0, 50.0]),
    seed=st.integers(0, 2**16),
)
def test_random_problems_match_torch_float64(rows, width, pad, dtype, eps, scale, seed) -> None:
    generator = torch.Generator().manual_seed(seed)
    storage = torch.randn(rows, width + pad, generator=generator, dtype=torch.float64) * scale
    weight = torch.randn(width, generator=generator, dtype=torch.float64)
    x = storage.to(TORCH_DTYPES[dtype]).to(DEVICE)[:, :width]  # row stride width + pad
    weight = weight.to(TORCH_DTYPES[dtype]).to(DEVICE)
    y = kernels.rms_norm(x, weight, eps)
    what = f"rows={rows} width={width} pad={pad} eps={eps} scale={scale} seed={seed}"
    assert_close(y, torch_reference(x, weight, eps), dtype, kernels.MODE, what)


def test_concurrent_launches_from_threads_are_correct() -> None:
    # The interpreter is not thread-safe; kernels serializes its launches with a lock. Several
    # threads (as the GUI worker and a check could) must each get their own right answer.
    inputs = [torch.randn(3, 70 + 13 * i, device=DEVICE) for i in range(6)]
    weights = [torch.randn(x.shape[1], device=DEVICE) for x in inputs]
    results: dict[int, torch.Tensor] = {}
    errors: list[BaseException] = []

    def work(index: int) -> None:
        try:
            for _ in range(3):
                results[index] = kernels.rms_norm(inputs[index], weights[index])
        except BaseException as err:  # collected and re-raised in the test thread
            errors.append(err)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    for index, x in enumerate(inputs):
        expected = torch_reference(x, weights[index], 1e-6)
        assert_close(results[index], expected, "float32", kernels.MODE, f"thread {index}")
