"""The harness's parity check: right implementations pass, wrong ones are rejected (CPU)."""

from __future__ import annotations

import math

import pytest
import torch

from kernels import bench

EPS = 1e-6


def _inputs(dtype, rows=37, width=70, seed=0):
    generator = torch.Generator().manual_seed(seed)
    shape = bench.Shape(rows, width)
    x = bench.make_parity_input(shape, dtype, "cpu", generator=generator)
    weight = bench.make_weight(width, dtype, "cpu", generator=generator)
    return x, weight


def right(x, weight):
    """fp32 accumulation, one rounding: what every correct implementation does."""
    x32 = x.float()
    rrms = torch.rsqrt((x32 * x32).mean(-1, keepdim=True) + EPS)
    return (x32 * rrms * weight.float()).to(x.dtype)


def llama_casting(x, weight):
    """Liger's default: round x*rrms to the input dtype, then multiply by the weight there."""
    x32 = x.float()
    rrms = torch.rsqrt((x32 * x32).mean(-1, keepdim=True) + EPS)
    return (x32 * rrms).to(x.dtype) * weight


def missing_weight(x, weight):
    x32 = x.float()
    return (x32 * torch.rsqrt((x32 * x32).mean(-1, keepdim=True) + EPS)).to(x.dtype)


def sum_instead_of_mean(x, weight):
    x32 = x.float()
    return (x32 * torch.rsqrt((x32 * x32).sum(-1, keepdim=True) + EPS) * weight.float()).to(x.dtype)


def tail_poisoned(x, weight):
    y = right(x, weight)
    y[:, -1] = float("nan")
    return y


def one_element_off(x, weight):
    y = right(x, weight).clone()
    y[3, 5] = y[3, 5] * 1.5 + 1.0
    return y


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("impl", [right, llama_casting])
def test_correct_implementations_pass(dtype, impl):
    x, weight = _inputs(dtype)
    parity = bench.check_parity(impl(x, weight), x, weight, EPS)
    assert parity.passed, parity.reason
    assert parity.bad_elements == 0
    assert parity.nonfinite == 0
    assert parity.worst_ratio <= 1.0


def test_torch_rms_norm_passes_in_every_dtype():
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        x, weight = _inputs(dtype, rows=9, width=1000)
        y = torch.nn.functional.rms_norm(x, (1000,), weight, EPS)
        assert bench.check_parity(y, x, weight, EPS).passed


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize(
    "wrong", [missing_weight, sum_instead_of_mean, tail_poisoned, one_element_off]
)
def test_deliberately_wrong_implementations_are_rejected(dtype, wrong):
    x, weight = _inputs(dtype)
    parity = bench.check_parity(wrong(x, weight), x, weight, EPS)
    assert not parity.passed
    assert parity.reason != "ok"
    if wrong is tail_poisoned:
        assert parity.nonfinite == 37
        assert "non-finite" in parity.reason
    else:
        assert parity.bad_elements >= 1


def test_chunking_does_not_change_the_verdict():
    x, weight = _inputs(torch.bfloat16, rows=50, width=127)
    y = one_element_off(x, weight)
    whole = bench.check_parity(y, x, weight, EPS)
    chunked = bench.check_parity(y, x, weight, EPS, chunk_elements=127 * 3)
    assert whole.bad_elements == chunked.bad_elements == 1
    assert math.isclose(whole.rel_l2, chunked.rel_l2, rel_tol=1e-9)
    assert whole.max_abs == chunked.max_abs


def test_wrong_shape_dtype_or_type_is_rejected():
    x, weight = _inputs(torch.float32)
    y = right(x, weight)
    assert "shape" in bench.check_parity(y[:, :-1], x, weight, EPS).reason
    assert "dtype" in bench.check_parity(y.double(), x, weight, EPS).reason
    assert "not a tensor" in bench.check_parity(None, x, weight, EPS).reason


def test_copy_must_be_exact():
    x, _ = _inputs(torch.bfloat16)
    assert bench.check_copy(x.clone(), x).passed
    bad = x.clone()
    bad[0, 0] += 1
    assert not bench.check_copy(bad, x).passed


def test_our_kernel_passes_the_harness_check_on_the_cpu_interpreter():
    kernels = pytest.importorskip("kernels")
    if kernels.MODE != "interpreter":
        pytest.skip("this test runs the kernel under the Triton interpreter")
    x, weight = _inputs(torch.bfloat16, rows=3, width=70)
    y = kernels.rms_norm(x, weight, EPS)
    parity = bench.check_parity(y, x, weight, EPS)
    assert parity.passed, parity.reason
