"""The launch layouts of the one kernel family: heuristics, forced paths, one validation door.

Every path is run against torch float64 here under the interpreter (small grids) and, with the
``gpu`` marker, compiled in test_kernel_gpu.py. The mutant matrix per path is in
test_kernel_mutants.py.
"""

from __future__ import annotations

import pytest
import torch
import triton
from kernel_cases import TORCH_DTYPES, assert_close, torch_reference

import kernels
from kernels import launcher, layout
from kernels.layout import LaunchConfig

# What choose_config picks on an H200 (132 SMs) for the product shapes, bf16 and fp32.
EXPECTED_PATHS = {
    (4096, 70, 2): ("multi_row", 4, 1),
    (4096, 255, 2): ("multi_row", 2, 1),
    (4096, 255, 4): ("multi_row", 2, 2),
    (65536, 128, 2): ("multi_row", 16, 4),
    (65536, 256, 2): ("multi_row", 8, 4),
    # Rows of 1-2 KiB: a 2 KiB tile on one warp.
    (65536, 256, 4): ("multi_row", 2, 1),
    (65536, 512, 2): ("multi_row", 2, 1),
    (65536, 512, 4): ("one_row", 1, 1),
    (1, 4096, 2): ("one_row", 1, 8),
    (1, 4096, 4): ("one_row", 1, 8),
    (4096, 1000, 2): ("one_row", 1, 2),
    (4096, 1000, 4): ("one_row", 1, 4),
    (4096, 5125, 2): ("one_row", 1, 4),
    (4096, 5125, 4): ("one_row", 1, 8),  # peeled: a warp per 4 KiB of tile
    (32768, 5120, 2): ("one_row", 1, 4),
    (32768, 5120, 4): ("column_loop", 1, 16),
    (4096, 4096, 2): ("one_row", 1, 8),
    (4096, 4096, 4): ("column_loop", 1, 16),
    (16384, 4096, 2): ("column_loop", 1, 8),
    (16384, 4096, 4): ("column_loop", 1, 16),
    # Full fp32 rows of 2048: blocks of 2 rows on 16 warps; an odd count: 1 row.
    (32768, 2048, 4): ("column_loop", 2, 16),
    (4096, 2048, 4): ("column_loop", 2, 16),
    (32767, 2048, 4): ("column_loop", 1, 8),
    (32768, 8192, 2): ("column_loop", 1, 16),
    (32768, 8192, 4): ("column_loop", 1, 32),
    (32768, 16384, 2): ("column_loop", 1, 16),
    (16384, 16384, 4): ("column_loop", 1, 32),
    (2048, 32768, 2): ("column_loop", 1, 32),
    (2048, 65536, 2): ("column_loop", 1, 32),
    (2048, 65536, 4): ("column_loop", 1, 32),
}

# The column-loop variants choose_config picks (CHUNK, unrolled, one program per row, streaming).
EXPECTED_LOOPS = {
    (2048, 65536, 2): (32768, True),
    (2048, 65536, 4): (32768, False),
    (2048, 32768, 2): (16384, True),
    (2048, 32768, 4): (32768, False),
    # Full fp32 rows of 16384: the whole row as one chunk on 32 warps; a partial
    # one (10000) keeps the runtime loop of 8192 chunks.
    (16384, 16384, 4): (16384, True),
    (32768, 16384, 4): (16384, True),
    (4096, 10000, 4): (8192, False),
    (32768, 8192, 2): (8192, True),
    (32768, 8192, 4): (4096, True),
    (32768, 5120, 4): (2048, False),
}

# Full fp32 rows of 4096: plain stores, 16 warps, one program per row; a runtime
# loop of 2048 chunks below 16384 rows, one unrolled 4096 chunk from there.
EXPECTED_PLAIN_LOOPS = {
    (4096, 4096, 4): (2048, False),
    (16383, 4096, 4): (2048, False),
    (16384, 4096, 4): (4096, True),
    (32768, 4096, 4): (4096, True),
}


# Tile layouts with streaming hints: on where x is at most 8 MiB (launch-bound), off above.
EXPECTED_STREAM_TILES = {
    (1, 4096, 2): True,
    (512, 4096, 4): True,  # exactly 8 MiB
    (4096, 70, 2): True,
    (4096, 255, 4): True,
    (4096, 1000, 2): True,
    (4096, 1000, 4): False,
    (65536, 128, 2): False,
    (4096, 4096, 2): False,
    (32768, 2048, 2): False,
    (32768, 5120, 2): False,
    (65536, 512, 4): False,
    (4096, 5125, 2): False,
}


@pytest.mark.parametrize(("rows", "width", "itemsize"), sorted(EXPECTED_STREAM_TILES))
def test_choose_config_streams_tiles_where_measured(rows, width, itemsize) -> None:
    config = kernels.choose_config(rows, width, itemsize, 132)
    assert not config.loop
    assert config.stream_store is EXPECTED_STREAM_TILES[(rows, width, itemsize)]


@pytest.mark.parametrize(("rows", "width", "itemsize"), sorted(EXPECTED_LOOPS))
def test_choose_config_column_loops_are_per_row_and_streaming(rows, width, itemsize) -> None:
    config = kernels.choose_config(rows, width, itemsize, 132)
    assert (config.block, config.unroll) == EXPECTED_LOOPS[(rows, width, itemsize)]
    assert config.loop
    assert config.stream_store
    assert config.grid(rows) == rows  # one program per row: the PER_ROW kernel, no row loop


def test_two_row_blocks_of_full_fp32_2048_rows_have_no_mask_at_all() -> None:
    # Inductor's layout at 32768x2048 fp32: 16384 programs of 2 rows, 16 warps, plain stores;
    # the row count is even and the width one whole chunk, so neither rows nor lanes are masked.
    config = kernels.choose_config(32768, 2048, 4, 132)
    assert config.grid(32768) == 16384
    assert not config.stream_store
    constexprs = layout.kernel_constexprs(config, 2048, 4, 32768)
    assert constexprs["ROWS"] == 2
    assert constexprs["EVEN"] is True
    assert constexprs["ROW_MASK"] is False
    assert constexprs["PER_ROW"] is True
    # The same layout forced onto an odd row count masks the phantom row of the last block.
    assert layout.kernel_constexprs(config, 2048, 4, 32767)["ROW_MASK"] is True


@pytest.mark.parametrize(("rows", "width", "itemsize"), sorted(EXPECTED_PLAIN_LOOPS))
def test_choose_config_full_fp32_4096_rows_store_plainly(rows, width, itemsize) -> None:
    config = kernels.choose_config(rows, width, itemsize, 132)
    assert config.loop
    assert (config.block, config.unroll) == EXPECTED_PLAIN_LOOPS[(rows, width, itemsize)]
    assert config.num_warps == 16
    assert not config.stream_store
    assert config.grid(rows) == rows


@pytest.mark.parametrize(("rows", "width", "itemsize"), sorted(EXPECTED_PATHS))
def test_choose_config_for_product_shapes(rows: int, width: int, itemsize: int) -> None:
    config = kernels.choose_config(rows, width, itemsize, 132)
    assert (config.path, config.rows_per_program, config.num_warps) == EXPECTED_PATHS[
        (rows, width, itemsize)
    ]


def test_every_launch_rule_decides_some_shape() -> None:
    # No rule of the table is shadowed by the rules before it, and each says why.
    widths = sorted({*(2**k + d for k in range(17) for d in (-1, 0, 1)), 70, 1000, 5120})
    decided = set()
    for itemsize in (2, 4):
        for rows in (1, 600, 4096, 5000, 16384, 16385, 32767, 32768, 70000):
            for width in widths:
                if not 1 <= width <= kernels.MAX_WIDTH:
                    continue
                lanes = layout.block_for(width)
                decided.add(
                    next(
                        index
                        for index, rule in enumerate(layout.LAUNCH_RULES)
                        if rule.matches(rows, width, lanes, itemsize)
                    )
                )
    assert decided == set(range(len(layout.LAUNCH_RULES)))
    assert all(rule.why for rule in layout.LAUNCH_RULES)


def test_choose_config_is_valid_for_every_width() -> None:
    widths = sorted({*range(1, 300), *(2**k + d for k in range(8, 17) for d in (-1, 0, 1))})
    for itemsize in (2, 4):
        for rows in (1, 7, 600, 5000, 70000):
            for width in widths:
                if width > kernels.MAX_WIDTH:
                    continue
                config = kernels.choose_config(rows, width, itemsize)
                assert config.num_warps in (1, 2, 4, 8, 16, 32), (rows, width, config)
                assert config.grid(rows) >= 1
                if config.loop:
                    assert triton.cdiv(width, config.block) <= layout.MAX_CHUNKS
                    assert config.lanes(width) <= triton.next_power_of_2(width)
                else:
                    assert config.block == triton.next_power_of_2(width)
                    assert config.block <= layout.SINGLE_TILE_MAX
                    if config.rows_per_program > 1:  # packed short rows: a ~4 KiB tile at most
                        assert config.block * config.rows_per_program * itemsize <= 4096


def _forced_parity(rows, width, dtype, config, *, pad=0, out_pad=0, seed=0):
    generator = torch.Generator().manual_seed(seed)
    storage = torch.randn(rows, width + pad, generator=generator).to(TORCH_DTYPES[dtype]) * 3
    x = storage[:, :width]
    weight = torch.randn(width, generator=generator).to(TORCH_DTYPES[dtype])
    out_storage = torch.full((rows, width + out_pad), 7.0, dtype=x.dtype)
    out = out_storage[:, :width]
    checked = kernels.validate(x, weight, 1e-5, out)
    launched = launcher.launch(checked.x2d, weight, out, checked.eps, config=config)
    assert launched == config
    assert_close(out, torch_reference(x, weight, 1e-5), dtype, kernels.MODE, str(config))
    assert torch.all(out_storage[:, width:] == 7.0)  # padding of out untouched


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize(
    ("rows", "width", "config"),
    [
        (5, 70, LaunchConfig(False, 128, 1, 4, 0, True)),  # 2 programs, 3 phantom rows
        (7, 96, LaunchConfig(False, 128, 2, 8, 0, False)),  # one program, one phantom row
        (3, 1000, LaunchConfig(False, 1024, 4, 1, 0, True)),  # VEC hint at width 1000
        (6, 255, LaunchConfig(True, 64, 2, 1, 4)),  # 4 chunks, 1-lane hole; 4 programs
        (4, 130, LaunchConfig(True, 32, 1, 1, 1)),  # 5 chunks, one program for all rows
        (2, 64, LaunchConfig(True, 64, 2)),  # one chunk, one program per row
        (3, 128, LaunchConfig(True, 32, 1, stream_store=True)),  # EVEN: 4 full chunks, no mask
        (3, 128, LaunchConfig(True, 32, 1, unroll=False)),  # EVEN, runtime chunk loop
        (5, 100, LaunchConfig(True, 32, 1, unroll=False, stream_store=True)),  # tail, runtime
        (5, 96, LaunchConfig(True, 32, 2, 1, 2, unroll=False)),  # EVEN, 2 programs stride rows
        (2, 70, LaunchConfig(True, 32, 1, max_registers=64)),  # a register cap
        (4, 128, LaunchConfig(True, 32, 2, 2)),  # blocks of 2 rows, EVEN, no mask at all
        (5, 128, LaunchConfig(True, 32, 2, 2, unroll=False)),  # last block: 1 phantom row
        (7, 70, LaunchConfig(True, 32, 2, 4, 1, stream_store=True)),  # 2 blocks/program, tail
        (6, 2048, LaunchConfig(True, 2048, 16, 2)),  # choose_config's fp32 2048 layout
        (5, 2048, LaunchConfig(True, 2048, 16, 2)),  # the same with a phantom row
    ],
)
def test_forced_layouts_agree_with_torch(rows, width, config, dtype) -> None:
    _forced_parity(rows, width, dtype, config, pad=3, out_pad=5, seed=rows * width)


def test_auto_multi_row_through_the_public_launcher() -> None:
    # 1100 rows of 16 fp32: choose_config packs 2 rows per program (550 programs >= 4 per SM).
    config = kernels.choose_config(1100, 16, 4)
    assert (config.path, config.rows_per_program) == ("multi_row", 2)
    x = torch.randn(1100, 16, generator=torch.Generator().manual_seed(3))
    weight = torch.linspace(-2, 2, 16)
    y = kernels.rms_norm(x, weight, 1e-6)
    assert_close(y, torch_reference(x, weight, 1e-6), "float32", kernels.MODE, "auto multi_row")


def test_auto_column_loop_through_the_public_launcher_in_place() -> None:
    # Width 40000 fp32: the column loop, one program per row, a runtime loop over 2 chunks of
    # 32768 lanes, the second one masked (7232 lanes in the row).
    width = 40000
    config = kernels.choose_config(2, width, 4)
    assert (config.path, config.block, triton.cdiv(width, config.block)) == (
        "column_loop",
        32768,
        2,
    )
    assert not config.unroll
    x = torch.randn(2, width, generator=torch.Generator().manual_seed(4))
    weight = torch.randn(width, generator=torch.Generator().manual_seed(5))
    expected = torch_reference(x, weight, 1e-6)
    y = kernels.rms_norm(x, weight, 1e-6, out=x)  # in place: pass 2 reads x before writing it
    assert y is x
    assert_close(y, expected, "float32", kernels.MODE, "auto column loop, in place")


@pytest.mark.parametrize(
    ("width", "x_stride", "y_stride", "itemsize", "vec"),
    [
        (1000, 1000, 1000, 2, 8),
        (1000, 1000, 1000, 4, 4),
        (70, 96, 70, 2, 2),
        (5125, 5125, 5125, 2, 1),
        (4096, 4104, 4096, 2, 8),
        (4096, 4100, 4096, 2, 4),
    ],
)
def test_vector_width_divides_width_and_both_strides(width, x_stride, y_stride, itemsize, vec):
    assert layout.vector_width(width, x_stride, y_stride, itemsize) == vec


@pytest.mark.parametrize(
    ("config", "error", "pattern"),
    [
        (LaunchConfig(False, 64, 4), ValueError, r"config\.block must be >= width \(70\)"),
        (LaunchConfig(False, 128, 3), ValueError, r"config\.num_warps must be a power of two"),
        (LaunchConfig(False, 128, 4, 3), ValueError, r"rows_per_program must be a power"),
        (LaunchConfig(True, 1, 4), ValueError, r"gives 70 chunks for width 70; at most 64"),
        (LaunchConfig(True, 32, 4, 3), ValueError, r"rows_per_program must be a power of two"),
        (
            LaunchConfig(True, 32, 4, max_registers=16),
            ValueError,
            r"config\.max_registers must be 0 or in \[24, 255\]; got 16",
        ),
        ("tile", TypeError, r"config must be a LaunchConfig or None"),
    ],
)
def test_launch_rejects_unusable_configs(config, error, pattern) -> None:
    x = torch.ones(2, 70)
    with pytest.raises(error, match=pattern):
        launcher.launch(x, torch.ones(70), torch.empty_like(x), 1e-6, config=config)


def test_forced_config_names_the_paths() -> None:
    for path in kernels.KERNEL_PATHS:
        assert layout.forced_config(path, 3, 70, 4).path == path
    with pytest.raises(ValueError, match=r"path must be 'auto' or one of one_row"):
        layout.forced_config("rows", 3, 70, 4)


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ((torch.ones(2, 4), torch.ones(3)), ValueError),
        ((torch.ones(2, 4).double(), torch.ones(4)), TypeError),
        ((torch.ones(2, 4), torch.ones(4), 1.0), ValueError),
        ((torch.ones(4, 2).t(), torch.ones(4)), ValueError),
        ((torch.ones(2, 4), torch.ones(4), 1e-6, torch.ones(2, 5)), ValueError),
    ],
)
def test_validate_is_the_launchers_only_check(args, error) -> None:
    # The launcher raises exactly what validate raises: one door, one message.
    with pytest.raises(error) as from_validate:
        kernels.validate(*args)
    out = args[3] if len(args) > 3 else None
    with pytest.raises(error) as from_launcher:
        kernels.rms_norm(*args[:3], out=out)
    assert str(from_validate.value) == str(from_launcher.value)


def test_validate_returns_the_row_view_without_allocating() -> None:
    x = torch.randn(2, 3, 70)
    checked = kernels.validate(x, torch.ones(70), 1e-6)
    assert (checked.rows, checked.width, checked.eps) == (6, 70, 1e-6)
    assert checked.x2d.data_ptr() == x.data_ptr()
    assert checked.x2d.shape == (6, 70)
