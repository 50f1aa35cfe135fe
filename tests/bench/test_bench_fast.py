"""The tuned candidate kernels.rmsnorm_fast: same results and checks as kernels.rms_norm (CPU,
Triton interpreter), whatever launch layout it picks."""

from __future__ import annotations

import pytest
import torch

from kernels import bench
from kernels import rmsnorm_fast as fast

EPS = 1e-6


def _inputs(rows, width, dtype, seed=0):
    generator = torch.Generator().manual_seed(seed)
    x = bench.make_parity_input(bench.Shape(rows, width), dtype, "cpu", generator=generator)
    weight = bench.make_weight(width, dtype, "cpu", generator=generator)
    return x, weight


def _configs(width):
    block = 1 << (width - 1).bit_length()
    return [
        None,
        fast.FastConfig("rows", block, 1, 4, w_early=False),
        fast.FastConfig("rows", block, 4, 2, evict=True),
        fast.FastConfig("cols", 16, 1, 4, 3, evict=True),
        fast.FastConfig("cols", 32, 1, 4, 2, evict=False, unroll=True),
    ]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize(("rows", "width"), [(5, 70), (3, 33), (9, 64), (1, 7)])
def test_every_layout_matches_the_reference_and_the_base_kernel(dtype, rows, width):
    import kernels

    x, weight = _inputs(rows, width, dtype)
    base = kernels.rms_norm(x, weight, EPS)
    for config in _configs(width):
        y = fast.rms_norm_fast(x, weight, EPS, config=config)
        parity = bench.check_parity(y, x, weight, EPS)
        assert parity.passed, (config, parity.reason)
        limit = 1e-6 if dtype == torch.float32 else 2e-2
        assert (y.float() - base.float()).abs().max().item() <= limit, config


def test_padded_rows_out_and_vector_hint():
    x = torch.randn(6, 80)[:, :72]  # row stride 80, width 72: vector width 8
    weight = torch.randn(72)
    assert fast.vector_width(72, 80, 72, 2) == 8
    assert fast.vector_width(70, 70, 70, 2) == 2
    assert fast.vector_width(1000, 1000, 1000, 4) == 4
    out = torch.full((6, 72), float("nan"))
    fast.rms_norm_fast(x, weight, EPS, out=out, config=fast.FastConfig("rows", 128, 4, 1))
    assert bench.check_parity(out, x, weight, EPS).passed


@pytest.mark.parametrize(
    ("call", "error", "fragment"),
    [
        (lambda x, w: fast.rms_norm_fast(x, w, eps=1.0), ValueError, "eps must be in"),
        (lambda x, w: fast.rms_norm_fast(x, w[:3]), ValueError, "weight.shape"),
        (lambda x, w: fast.rms_norm_fast(x.double(), w), TypeError, "x.dtype"),
        (lambda x, w: fast.rms_norm_fast(x.t(), w), ValueError, "stride"),
    ],
)
def test_rejections_match_the_base_launcher(call, error, fragment):
    x, weight = _inputs(4, 4, torch.float32)
    with pytest.raises(error, match=fragment):
        call(x, weight)


def test_choose_config_covers_every_width():
    for width in (1, 70, 127, 1000, 4096, 5125, 16384, 32768, 65536):
        for rows in (1, 4096, 65536):
            for itemsize in (2, 4):
                config = fast.choose_config(rows, width, itemsize)
                assert 1 <= config.num_warps <= 32
                if config.kind == "rows":
                    assert config.block == 1 << (width - 1).bit_length()
                    assert config.block * config.rows_per_program <= 32768
                else:
                    assert width > fast.SINGLE_TILE_MAX
                    assert 1 <= config.programs <= rows
