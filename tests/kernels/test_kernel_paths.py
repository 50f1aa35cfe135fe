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
from kernels import geometry, launcher, layout
from kernels.layout import LaunchConfig

MiB = 2**20

# Its launches take CPU tensors, which only the interpreter runs; on a GPU machine (compiled
# mode) test_kernel_gpu.py runs the same paths.
pytestmark = pytest.mark.skipif(
    kernels.MODE != "interpreter",
    reason="CPU tensors under the interpreter; compiled: test_kernel_gpu.py",
)


def _config(rows: int, width: int, itemsize: int) -> LaunchConfig:
    return kernels.choose_config(rows, width, itemsize, 132)


# What choose_config picks on an H200 (132 SMs) for product shapes: (path, rows per program,
# warps, block). One line per regime and its branches, read against the rule's docstring.
EXPECTED_LAYOUTS = {
    # 1. Short rows: fp32 and unaligned 2-byte rows 512-lane tiles up to 16384 rows (halved to
    # >= 4 programs per SM) ...
    (4096, 70, 2): ("multi_row", 4, 1, 128),
    (4096, 255, 2): ("multi_row", 2, 1, 256),
    (4096, 255, 4): ("multi_row", 2, 2, 256),
    # ... aligned 2-byte rows of up to 2 KiB 4 KiB programs, a warp per KiB ...
    (4096, 1000, 2): ("multi_row", 2, 4, 1024),
    (16384, 112, 2): ("multi_row", 16, 4, 128),
    # ... 4 KiB tiles beyond (aligned 2-byte: a warp per 2 KiB), and 2 KiB on one warp for
    # rows of 1-2 KiB.
    (65536, 128, 2): ("multi_row", 16, 2, 128),
    (65536, 256, 2): ("multi_row", 8, 2, 256),
    (65536, 256, 4): ("multi_row", 2, 1, 256),
    (65536, 512, 2): ("multi_row", 2, 1, 512),
    (65536, 512, 4): ("one_row", 1, 1, 512),
    # 2. Widths no 16-byte vector divides, 2048-8192 lanes: peeled tiles; 2-byte rows a warp per
    # 2 KiB of body lanes (2-4), the body split where the rest of the row is small; fp32 a
    # warp per 2 KiB of the row's bytes (nearest power of two, 4-8). The last field is the
    # tile's lanes (both body tiles).
    # The rest past 4096 too large to split (1029 of 5125, 2905 of 7001): the column loop on
    # 4096-lane chunks, 4 warps, at any row count.
    (4096, 5125, 2): ("column_loop", 1, 4, 4096),
    (1024, 7001, 2): ("column_loop", 1, 4, 4096),
    (32768, 4099 + 1024, 2): ("column_loop", 1, 4, 4096),
    (4096, 5125, 4): ("one_row", 1, 8, 8192),
    (8192, 2050, 2): ("one_row", 1, 2, 2064),  # 4-byte vectors only: still peeled; 2048 + 16
    (8192, 4097, 2): ("one_row", 1, 4, 4112),  # 4096 + 16
    (16384, 1539, 2): ("one_row", 1, 2, 2048),  # the rest (515) is half: one tile, 2 warps
    # 2049-4095 elements, the rest past 2048 too large to split: one 4096-lane tile on 4 warps
    # up to ODD_LOOP_ROWS rows, odd widths the column loop past them (chunks of fewer lanes:
    # 3 x 1024 for 3001, 2 x 2048 for 3333); even widths stay tiles (unpeeled).
    (8192, 3001, 2): ("one_row", 1, 4, 4096),
    (8193, 3001, 2): ("column_loop", 1, 4, 1024),
    (16384, 3333, 2): ("column_loop", 1, 4, 2048),
    (16384, 3590, 2): ("one_row", 1, 4, 4096),
    (12288, 2053, 4): ("one_row", 1, 4, 4096),  # fp32: the whole tile, a warp per 2 KiB of row
    (8192, 3074, 4): ("one_row", 1, 8, 4096),  # 12 KiB of row: 6 warps, the nearest power 8
    # 3. The column loop: rows over 8192 lanes, and rows of >= 8 KiB in >= 64 MiB problems.
    (4096, 4096, 4): ("column_loop", 1, 16, 2048),  # 64 MiB, full rows: half-row chunks
    (16384, 4096, 2): ("column_loop", 1, 8, 2048),
    (32768, 2048, 4): ("column_loop", 1, 8, 1024),
    (32768, 8192, 2): ("column_loop", 1, 16, 4096),  # a warp per 512 bytes of chunk
    (32768, 8192, 4): ("column_loop", 1, 32, 4096),
    (32768, 5120, 2): ("column_loop", 1, 8, 4096),  # partial 2-byte: a warp per KiB
    (32768, 5120, 4): ("column_loop", 1, 16, 2048),  # 4096 chunks would mask 37% of lanes
    (16384, 16384, 4): ("column_loop", 1, 32, 4096),
    (2048, 32768, 2): ("column_loop", 1, 32, 32768),
    (2048, 65536, 4): ("column_loop", 1, 32, 32768),
    (2048, 18433, 4): ("column_loop", 1, 16, 4096),  # partial fp32 past 16384 lanes: 1 KiB a warp
    # 4. One-row tiles: a warp per 512 lanes, 2-16 (8 for 2-byte).
    (1, 4096, 2): ("one_row", 1, 8, 4096),
    (1, 4096, 4): ("one_row", 1, 8, 4096),
    (4096, 1536, 2): ("one_row", 1, 4, 2048),
    (4096, 4096, 2): ("one_row", 1, 8, 4096),  # 32 MiB: under LOOP_PROBLEM_BYTES
    (32768, 2048, 2): ("one_row", 1, 4, 2048),  # rows of 4 KiB stay tiles at any size
    (512, 8192, 2): ("one_row", 1, 8, 8192),
    (512, 8192, 4): ("one_row", 1, 16, 8192),
}


@pytest.mark.parametrize(("rows", "width", "itemsize"), sorted(EXPECTED_LAYOUTS))
def test_choose_config_for_product_shapes(rows: int, width: int, itemsize: int) -> None:
    config = _config(rows, width, itemsize)
    got = (config.path, config.rows_per_program, config.num_warps, config.block + config.block2)
    assert got == EXPECTED_LAYOUTS[(rows, width, itemsize)]


@pytest.mark.parametrize("itemsize", [2, 4])
def test_the_loop_starts_at_loop_problem_bytes_for_rows_of_8_kib(itemsize: int) -> None:
    # Full rows of 8 KiB: exactly LOOP_PROBLEM_BYTES is a loop, one row fewer a tile.
    width = 8192 // itemsize
    rows = layout.LOOP_PROBLEM_BYTES // (width * itemsize)
    assert _config(rows, width, itemsize).loop
    assert not _config(rows - 1, width, itemsize).loop
    # Rows of 4 KiB never loop below 8193 lanes, however large the problem.
    assert not _config(1 << 20, 4096 // itemsize, itemsize).loop


@pytest.mark.parametrize("itemsize", [2, 4])
def test_rows_over_8192_lanes_always_loop(itemsize: int) -> None:
    assert not _config(1, 8192, itemsize).loop
    assert _config(1, 8193, itemsize).loop
    assert _config(1, 65536, itemsize).loop


def test_short_rows_pack_512_lanes_up_to_16384_rows_and_4_kib_beyond() -> None:
    # fp32, and 2-byte rows of scalar accesses: 512 lanes, then 4 KiB (32 rows of 63 2-byte
    # lanes halved once: 513 programs of 32 would be < 4 per SM).
    for width, itemsize, rows_at, rows_past in ((64, 4, 8, 16), (63, 2, 8, 16)):
        at_bound, past = _config(16384, width, itemsize), _config(16385, width, itemsize)
        assert (at_bound.rows_per_program, past.rows_per_program) == (rows_at, rows_past)
        assert at_bound.num_warps == rows_at * 64 * itemsize // 1024  # a warp per KiB
        assert past.num_warps == rows_past * 64 * itemsize // 1024
        assert at_bound.w_early
        assert past.w_early
    # Aligned 2-byte rows: 4 KiB on both sides (32 rows of 64, halved to 16 at 16384 rows:
    # 512 programs < 4 per SM), a warp per KiB at the bound, per 2 KiB past it.
    at_bound, past = _config(16384, 64, 2), _config(16385, 64, 2)
    assert (at_bound.rows_per_program, at_bound.num_warps) == (16, 2)
    assert (past.rows_per_program, past.num_warps) == (16, 1)
    assert _config(70000, 64, 2).rows_per_program == 32
    # 2-byte rows of 1024 lanes: short rows up to 16384 rows when aligned, one-row tiles past
    # it and when no 16-byte vector divides the width (a one-row tile peels, a multi-row one
    # cannot).
    assert _config(16384, 1024, 2).rows_per_program == 2
    assert _config(16385, 1024, 2).rows_per_program == 1
    assert _config(16384, 1023, 2).rows_per_program == 1
    # 513 lanes leave the short-row regime past 16384 rows: one row per program.
    assert _config(70000, 512, 2).rows_per_program == 2
    assert _config(70000, 513, 2).rows_per_program == 1


def test_short_row_tiles_halve_until_four_programs_per_sm() -> None:
    # 4096 rows of 64 lanes: 8 rows per program give 512 programs < 4 * 132; 4 rows give 1024
    # (with 64 SMs 16 rows give 256 = 4 * 64).
    assert _config(4096, 64, 2).rows_per_program == 4
    assert _config(4096, 64, 2).grid(4096) >= 4 * 132
    assert kernels.choose_config(4096, 64, 2, 64).rows_per_program == 16  # fewer SMs


@pytest.mark.parametrize(
    ("width", "chunk"),
    [
        (4096, 2048),  # full: half the row, no padding
        (5120, 2048),  # 4096: 3072 masked lanes (60% of the width); 2048: 1024, a fifth
        (5116, 1024),  # 2048: 1028 masked lanes, more than a fifth of 5116 (1023)
        (9001, 2048),
        (11008, 4096),  # 1280 masked lanes: 11.6%
        (40000, 8192),  # 32768 and 16384 chunks mask 64% and 23%; 8192: 960
        (49152, 16384),  # the widest row of one program (192 KiB); wider ones: two parts
        (18433, 4096),  # 8192 chunks mask a third; the floor is 4096
        (18000, 4096),  # aligned: 32 warps, where the peeled 18433 takes 16
    ],
)
def test_fp32_loop_chunks_halve_while_a_fifth_of_the_width_is_masked(width, chunk) -> None:
    config = _config(32768, width, 4)
    assert config.loop
    assert config.block == chunk
    padding = triton.cdiv(width, chunk) * chunk - width
    assert padding <= width // 5 or chunk == (4096 if width > 16384 else 1024)
    # One 16-byte vector per thread; two in peeled rows over 16384 lanes; half of one in rows
    # of more than four 1024-lane chunks (5116: five).
    per_warp = 1024 if width % 4 and width > 16384 else 512
    if chunk == 1024 and triton.cdiv(width, chunk) > 4:
        per_warp = 256
    assert config.num_warps == min(32, chunk * 4 // per_warp)
    assert config.stream_store
    assert config.grid(32768) == 32768


@pytest.mark.parametrize(
    ("rows", "width", "itemsize", "chunks", "warps"),
    [
        (32768, 2048, 4, 2, 8),
        (8192, 3072, 4, 3, 8),
        (8192, 3300, 4, 4, 8),  # MANY_CHUNKS: the bound
        (8192, 4200, 4, 5, 16),  # one chunk past it
        (8192, 6656, 4, 7, 16),
        (8192, 8301, 4, 9, 16),  # peeled
        (96, 8300, 4, 9, 16),  # few long rows: two programs per row, the same warps
    ],
)
def test_fp32_loops_of_more_than_four_1024_lane_chunks_run_16_warps(
    rows, width, itemsize, chunks, warps
) -> None:
    config = _config(rows, width, itemsize)
    assert (config.loop, config.block) == (True, 1024)
    assert triton.cdiv(width, config.block) == chunks
    assert config.num_warps == warps
    assert kernels.layout.MANY_CHUNKS == 4


@pytest.mark.parametrize(
    ("rows", "width", "itemsize", "tiles"),
    [
        (4096, 8200, 2, (8192, 16)),  # two 16-byte vectors at least; the row ends 8 lanes in
        (4096, 10240, 2, (8192, 2048)),
        (1, 12288, 2, (8192, 4096)),  # WIDE_SPLIT_MAX: the bound, on any number of rows
        (1 << 20, 12288, 2, (8192, 4096)),
        (4096, 12296, 2, None),  # one vector past it: the column loop
        (4096, 8193, 2, None),  # no 16-byte vector divides it
        (4096, 8192, 2, None),  # 8192 lanes: a row of one tile
        (4096, 10240, 4, None),  # fp32
    ],
)
def test_wide_split_rows_hold_2_byte_rows_of_8193_to_12288_in_8192_lanes_and_a_second_tile(
    rows, width, itemsize, tiles
) -> None:
    config = _config(rows, width, itemsize)
    if tiles is None:
        assert layout.rule_for(rows, width, itemsize).name != "wide split rows"
        return
    assert layout.rule_for(rows, width, itemsize).name == "wide split rows"
    assert layout.WIDE_SPLIT_MAX == 12288
    assert (config.loop, config.block, config.block2) == (False, *tiles)
    assert (config.num_warps, config.rows_per_program, config.peel) == (16, 1, False)
    assert config.w_early
    assert config.lanes(width) >= width


def test_partial_2_byte_rows_of_8192_to_16384_lanes_take_4096_chunks_on_8_warps() -> None:
    # 16-byte aligned (odd ones peel), and more than an eighth of 4096 past it (less splits).
    for width in (4616, 5120, 12296, 14336, 16376):
        config = _config(32768, width, 2)
        assert (config.loop, config.block, config.num_warps) == (True, 4096, 8), width
    # Full rows and rows of 4096 lanes keep the vector per thread.
    assert (_config(32768, 8192, 2).block, _config(32768, 8192, 2).num_warps) == (4096, 16)
    assert (_config(32768, 3584, 2).block, _config(32768, 3584, 2).num_warps) == (2048, 8)


@pytest.mark.parametrize(
    ("width", "itemsize", "tiles"),
    [
        (2049, 2, None),  # no 16-byte vector divides it: the peeled rules
        (2056, 2, (2048, 16)),  # two 16-byte vectors at least
        (2176, 2, (2048, 128)),
        (2304, 2, (2048, 256)),  # an eighth of the first tile: the bound
        (2312, 2, None),  # one vector past it
        (4104, 2, (4096, 16)),
        (4608, 2, (4096, 512)),
        (8448, 2, None),  # 16384 lanes: wide split rows (8192 + 256 lanes, 16 warps)
        (1152, 4, (1024, 128)),
        (1156, 4, None),
        (2304, 4, None),  # fp32 rows of 4096 lanes keep the loop
    ],
)
def test_aligned_rows_just_past_a_power_of_two_run_as_two_tiles(width, itemsize, tiles) -> None:
    config = _config(16384, width, itemsize)
    if tiles is None:
        name = layout.rule_for(16384, width, itemsize).name
        assert name != "split rows"
        if name != "wide split rows":
            assert not config.block2 or config.peel, (width, config)
        return
    assert layout.rule_for(16384, width, itemsize).name == "split rows"
    assert (config.block, config.block2) == tiles
    assert (config.loop, config.rows_per_program, config.num_warps) == (False, 1, 4)
    assert config.w_early
    assert not config.peel


def test_short_2_byte_rows_just_past_512_lanes_hold_their_rows_on_two_tiles() -> None:
    config = _config(16384, 576, 2)
    assert (config.block, config.block2, config.rows_per_program) == (512, 64, 2)
    assert not config.peel
    assert _config(16384, 640, 2).block2 == 0  # 128 past 512: more than an eighth
    assert _config(16384, 576, 4).block2 == 0  # fp32: a one-row tile of 1024 lanes
    assert _config(16384, 288, 2).block2 == 0  # 512 lanes: unmeasured, the whole tile


def test_one_row_tiles_load_the_weight_early_in_full_unaligned_fp32_and_one_wave_rows() -> None:
    assert _config(4096, 2048, 2).w_early  # full
    assert not _config(4096, 1536, 2).w_early  # partial 2-byte rows, 16-byte vectors
    assert _config(4096, 1000, 4).w_early  # partial fp32 rows
    assert _config(2048, 3072, 4).w_early
    assert _config(4096, 5125, 4).w_early  # fp32 peeled tiles
    assert _config(16385, 1023, 2).w_early  # no 16-byte vector divides 1023 (not peeled)
    assert not _config(8192, 2053, 2).w_early  # 2-byte split bodies: after the reduction
    assert not _config(8192, 4097, 2).w_early
    assert _config(4096, 3077, 2).w_early  # 2-byte one 4096-lane tile: with x
    assert _config(4096, 3590, 2).w_early
    # One wave at half the warp slots: 1536 of 2048 lanes on 4 warps, 8 programs per SM.
    assert _config(8 * 132, 1536, 2).w_early
    assert not _config(8 * 132 + 1, 1536, 2).w_early
    assert _config(4 * 132, 5120, 2).w_early  # 8 warps: 4 programs per SM
    assert not _config(4 * 132 + 1, 5120, 2).w_early


def test_odd_2_byte_rows_of_one_4096_lane_tile_loop_past_odd_loop_rows() -> None:
    bound = layout.ODD_LOOP_ROWS
    for width in (2561, 2501, 3001, 3077, 3333, 4095):  # 2049-2560 split their body
        at, past = _config(bound, width, 2), _config(bound + 1, width, 2)
        assert (at.path, at.block, at.num_warps, at.peel) == ("one_row", 4096, 4, True), width
        assert (past.path, past.num_warps, past.stream_store) == ("column_loop", 4, True), width
        lanes = {chunk: triton.cdiv(width, chunk) * chunk for chunk in (1024, 2048)}
        fewest = min(lanes.values())
        assert past.block == max(chunk for chunk, n in lanes.items() if n == fewest), width
    assert bound + 1 in layout.row_thresholds(132)


def test_even_2_byte_rows_of_one_4096_lane_tile_are_not_peeled() -> None:
    for width in (2054 + 512, 3074, 3590, 4092):  # 4-byte or 8-byte vectors divide them
        for rows in (1, 4096, 70000):
            config = _config(rows, width, 2)
            assert (config.path, config.block, config.peel, config.w_early) == (
                "one_row", 4096, False, True,
            ), (rows, width)  # fmt: skip
    # Split bodies keep the peel: 2048 + 16 lanes for 2050.
    assert _config(8192, 2050, 2).peel
    assert _config(8192, 2050, 2).block2 == 16


# Tile layouts with streaming hints: on where x is at most 8 MiB (launch-bound), off above.
EXPECTED_STREAM_TILES = {
    (1, 4096, 2): True,
    (512, 4096, 4): True,  # exactly 8 MiB
    (513, 4096, 4): False,  # one row past it
    (4096, 70, 2): True,
    (4096, 255, 4): True,
    (4096, 1000, 2): True,
    (4096, 1000, 4): False,
    (65536, 128, 2): False,
    (4096, 4096, 2): False,
    (32768, 2048, 2): False,
    (65536, 512, 4): False,
    (4096, 3077, 2): False,
}


@pytest.mark.parametrize(("rows", "width", "itemsize"), sorted(EXPECTED_STREAM_TILES))
def test_choose_config_streams_tiles_where_measured(rows, width, itemsize) -> None:
    config = _config(rows, width, itemsize)
    assert not config.loop
    assert config.stream_store is EXPECTED_STREAM_TILES[(rows, width, itemsize)]


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
                elif config.block2:  # a split peeled body: two powers of two over the width
                    assert config.block * 2 == triton.next_power_of_2(width)
                    assert width < config.block + config.block2 <= config.block * 9 // 8
                    assert config.rows_per_program == 1
                    assert itemsize == 2
                else:
                    assert config.block == triton.next_power_of_2(width)
                    assert config.block <= layout.SINGLE_TILE_MAX
                    if config.rows_per_program > 1:  # packed short rows: a ~4 KiB tile at most
                        assert config.block * config.rows_per_program * itemsize <= 4096


def test_choose_config_refuses_a_width_below_one() -> None:
    with pytest.raises(ValueError, match="no launch layout for width=0, itemsize=2"):
        layout.choose_config(4, 0, 2)


def _rule_layouts() -> dict[tuple[int, int, int], tuple[int, int, int]]:
    """Every distinct layout choose_config gives over a grid of shapes, with the first shape
    that gave it: powers of two and their neighbours, odd and 2- or 4-byte aligned widths, at
    row counts on both sides of each row threshold of the rule."""
    widths = sorted(
        {*(2**k + d for k in range(17) for d in (-3, -2, -1, 0, 1, 2)), 70, 1000, 5120, 9001}
    )
    found: dict[LaunchConfig, tuple[int, int, int]] = {}
    for itemsize in (2, 4):
        for rows in (1, 600, 4096, 8192, 16384, 16385, 32768, 70000):
            for width in widths:
                if 1 <= width <= kernels.MAX_WIDTH:
                    found.setdefault(_config(rows, width, itemsize), (rows, width, itemsize))
    return found


RULE_LAYOUTS = _rule_layouts()


def test_the_rule_reaches_every_regime_and_kernel_path() -> None:
    paths = {config.path for config in RULE_LAYOUTS}
    assert paths == set(kernels.KERNEL_PATHS)
    assert any(c.loop and c.block == 32768 for c in RULE_LAYOUTS)  # wide rows
    assert any(not c.loop and not c.w_early for c in RULE_LAYOUTS)  # peeled / partial tiles
    assert 30 <= len(RULE_LAYOUTS) <= 200  # the grid covers the rule, and stays testable


@pytest.mark.parametrize(
    "config",
    sorted(RULE_LAYOUTS, key=lambda c: RULE_LAYOUTS[c]),
    ids=lambda c: str(RULE_LAYOUTS[c]),
)
def test_every_layout_the_rule_reaches_agrees_with_torch(config: LaunchConfig) -> None:
    # The rule's own layout (its tile or chunk, warps, rows per program, masks, peel), launched
    # on a few rows of the shape that reached it, against torch in float64, with padded row
    # strides and a guarded out (its padding must stay untouched). The paddings agree modulo
    # 16 bytes, so a peeled layout stays peeled (and a split body split).
    _, width, itemsize = RULE_LAYOUTS[config]
    rows = min(2 * config.rows_per_program + 1, 5)
    dtype = "float32" if itemsize == 4 else "bfloat16"
    _forced_parity(rows, width, dtype, config, pad=3, out_pad=19, seed=width)


@pytest.mark.parametrize(("pad", "out_pad"), [(0, 1), (1, 0)], ids=["out-odd", "x-odd"])
@pytest.mark.parametrize(
    "config",
    sorted(RULE_LAYOUTS, key=lambda c: RULE_LAYOUTS[c]),
    ids=lambda c: str(RULE_LAYOUTS[c]),
)
def test_every_layout_with_an_output_row_stride_unlike_the_inputs(
    config: LaunchConfig, pad: int, out_pad: int
) -> None:
    # One side's rows start one element apart from a vector boundary, the other's do not: the
    # vector width must come from both strides (a width taken from one side alone would
    # address the other side's rows at the wrong place from row 1 on).
    _, width, itemsize = RULE_LAYOUTS[config]
    rows = min(2 * config.rows_per_program + 1, 5)
    dtype = "float32" if itemsize == 4 else "bfloat16"
    # Strides that disagree modulo the vector also unpeel a row: a split body then launches as
    # the whole power-of-two tile (geometry.settled), which is the layout expected here.
    expected = geometry.settled(config, width, 0)
    _forced_parity(
        rows, width, dtype, config, pad=pad, out_pad=out_pad, seed=width + pad, launches=expected
    )


def _forced_parity(rows, width, dtype, config, *, pad=0, out_pad=0, seed=0, launches=None):
    generator = torch.Generator().manual_seed(seed)
    storage = torch.randn(rows, width + pad, generator=generator).to(TORCH_DTYPES[dtype]) * 3
    x = storage[:, :width]
    weight = torch.randn(width, generator=generator).to(TORCH_DTYPES[dtype])
    out_storage = torch.full((rows, width + out_pad), 7.0, dtype=x.dtype)
    out = out_storage[:, :width]
    checked = kernels.validate(x, weight, 1e-5, out)
    launched = launcher.launch(checked.x2d, weight, out, checked.eps, config=config)
    assert launched == (config if launches is None else launches)
    assert_close(out, torch_reference(x, weight, 1e-5), dtype, kernels.MODE, str(config))
    assert torch.all(out_storage[:, width:] == 7.0)  # padding of out untouched


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize(
    ("rows", "width", "config"),
    [
        (5, 70, LaunchConfig(False, 128, 1, 4, w_early=True)),  # 2 programs, 3 phantom rows
        (7, 96, LaunchConfig(False, 128, 2, 8)),  # one program, one phantom row
        (3, 1000, LaunchConfig(False, 1024, 4, 1, w_early=True)),  # VEC hint at width 1000
        (6, 255, LaunchConfig(True, 64, 2)),  # 4 chunks, 1-lane hole
        (4, 130, LaunchConfig(True, 32, 1)),  # 5 chunks
        (2, 64, LaunchConfig(True, 64, 2)),  # one chunk, one program per row
        (3, 128, LaunchConfig(True, 32, 1, stream_store=True)),  # EVEN: 4 full chunks, no mask
        (5, 100, LaunchConfig(True, 32, 1, stream_store=True)),  # tail
        (7, 70, LaunchConfig(True, 32, 2, stream_store=True)),  # tail of 6 lanes in 3 chunks
        (6, 2048, LaunchConfig(True, 2048, 16)),  # one full chunk
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
    # Width 40000 fp32 on 2 rows: few long rows, 10 unrolled chunks of 4096 lanes (the last
    # one masked: 3136 lanes in the row) in 5 parts of 2 chunks; in place each row stays in one
    # program (a part's stores would overwrite what the others still sum).
    width = 40000
    config = kernels.choose_config(2, width, 4)
    assert (config.path, config.block, triton.cdiv(width, config.block)) == (
        "column_loop",
        4096,
        10,
    )
    assert config.row_parts == 5
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
        (4096, 4096, 4100, 2, 4),  # the output's stride alone narrows it
        (4096, 4096, 4097, 2, 1),
        (1024, 1024, 1026, 4, 2),
        (1024, 1026, 1024, 4, 2),
    ],
)
def test_vector_width_divides_width_and_both_strides(width, x_stride, y_stride, itemsize, vec):
    assert geometry.vector_width(width, x_stride, y_stride, itemsize) == vec


@pytest.mark.parametrize(
    ("config", "error", "pattern"),
    [
        (LaunchConfig(False, 64, 4), ValueError, r"config\.block must be >= width \(70\)"),
        (LaunchConfig(False, 128, 3), ValueError, r"config\.num_warps must be a power of two"),
        (LaunchConfig(False, 128, 4, 3), ValueError, r"rows_per_program must be a power"),
        (LaunchConfig(True, 1, 4), ValueError, r"gives 70 chunks for width 70; at most 64"),
        (LaunchConfig(True, 32, 4, 3), ValueError, r"rows_per_program must be a power of two"),
        (LaunchConfig(True, 32, 4, 2), ValueError, r"rows_per_program must be 1 for the column"),
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


@pytest.mark.parametrize(
    ("rows", "width", "itemsize", "name"),
    [
        (4096, 64, 4, "short rows"),
        (4096, 2176, 2, "split rows"),
        (4096, 10240, 2, "wide split rows"),
        (4096, 3001, 4, "peeled fp32 tile"),
        (4096, 5125, 2, "2-byte rows of one 8192-lane body"),
        (16384, 3001, 2, "odd 2-byte rows of one 4096-lane body, many rows"),
        (8192, 3001, 2, "odd 2-byte rows of one 4096-lane body"),
        (4096, 3590, 2, "even 2-byte rows of one 4096-lane body"),
        (4096, 2053, 2, "peeled 2-byte tile"),
        (2, 40000, 4, "few long rows"),
        (264, 40000, 4, "column loop"),
        (4096, 4096, 2, "one-row tile"),
    ],
)
def test_each_row_of_the_rule_table_gives_the_layout_of_its_cases(rows, width, itemsize, name):
    rule = layout.rule_for(rows, width, itemsize)
    assert rule.name == name
    assert rule.reason
    expected = rule.layout(layout.problem(rows, width, itemsize, 132))
    assert layout.choose_config(rows, width, itemsize) == expected
    # No earlier row applies: the table is read top down.
    earlier = layout.RULES[: layout.RULES.index(rule)]
    assert not any(r.applies(layout.problem(rows, width, itemsize, 132)) for r in earlier)


def test_the_rule_table_names_each_row_once_and_ends_with_a_row_for_every_problem() -> None:
    names = [rule.name for rule in layout.RULES]
    assert len(set(names)) == len(names) == 13
    assert layout.RULES[-1].applies(layout.problem(1, 1, 2, 132))
    with pytest.raises(ValueError, match=r"^no launch layout for width=0, itemsize=2$"):
        layout.rule_for(1, 0, 2)
