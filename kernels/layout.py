"""Launch layouts of the RMSNorm kernels: which kernel, the tile or chunk, rows and warps.

:func:`choose_config` is the launcher's rule for every shape: the first row of
:data:`LAUNCH_RULES` that matches gives the layout. Each row names what it matches, the launch
and its reason; docs/LAYOUT.md has the H200 measurements behind them. :func:`forced_config`
gives a small layout of each path (the check and the tests run every path), and
:func:`kernel_constexprs` turns a config into the kernels' layout constexprs.
"""

from __future__ import annotations

import dataclasses
import functools

import torch
import triton

# The code paths a launch can take (LaunchConfig.path); run_checked(path=...) forces one.
KERNEL_PATHS: tuple[str, ...] = ("one_row", "multi_row", "column_loop")

# Widest row a tile layout may hold in registers (forced one_row / multi_row and explicit
# configs): 32768 fp32 lanes on 32 warps do not spill on sm_90; 65536 on 16 warps spill 364
# bytes per thread (ptxas).
SINGLE_TILE_MAX = 32768

# Most chunks the column loop takes (65536 / 1024); forced configs stay far below.
MAX_CHUNKS = 64

# Largest x (bytes) whose tile launches stream (x evict-first, weight evict-last, y .cs).
STREAM_TILE_BYTES = 8 * 2**20


@dataclasses.dataclass(frozen=True)
class LaunchConfig:
    """How one launch is cut into programs.

    Attributes:
        loop: False: ``rms_norm_tile_kernel``; True: ``rms_norm_loop_kernel``.
        block: tile kernel: lanes per row (next_power_of_2(width)); loop kernel: CHUNK.
        num_warps: warps per program.
        rows_per_program: ROWS, rows per program (tile kernel: 1 is ``one_row``, > 1
            ``multi_row``) or per block of the column loop.
        programs: loop kernel's grid size (0: one program per block of rows).
        w_early: tile kernel: weight loaded together with x, before the reduction.
        unroll: loop kernel: chunk loops unrolled at compile time (False: a runtime loop).
        stream_store: stores marked streaming (``.cs``); the tile kernel also loads x
            evict-first and the weight evict-last.
        max_registers: registers per thread the compiler may use (ptxas ``.maxnreg``); 0 leaves
            it to the compiler. A cap can fit one more program per SM at the price of spills.
        even: drop the column masks where no lane is past the row (the kernels' EVEN): the
            column loop when the width is a multiple of the chunk, the multi-row tile when
            it is the tile's width. False keeps the masks (to measure what EVEN buys).
            One-row tiles always mask: unmasked ones measured slower on the H200.
        peel: one-row tiles of a width no 16-byte vector divides load and store head, aligned
            body and tail apart (:func:`peel_elements`); False keeps narrow accesses.
    """

    loop: bool
    block: int
    num_warps: int
    rows_per_program: int = 1
    programs: int = 0
    w_early: bool = False
    unroll: bool = True
    stream_store: bool = False
    max_registers: int = 0
    even: bool = True
    peel: bool = True

    @property
    def path(self) -> str:
        """One of KERNEL_PATHS."""
        if self.loop:
            return "column_loop"
        return "multi_row" if self.rows_per_program > 1 else "one_row"

    def lanes(self, width: int) -> int:
        """Lanes read past each row start when nothing is masked (the guard a check needs)."""
        if self.loop:
            return triton.cdiv(width, self.block) * self.block
        return self.block

    def grid(self, rows: int) -> int:
        """Number of programs for ``rows`` rows."""
        blocks = triton.cdiv(rows, self.rows_per_program)
        if self.loop and self.programs > 0:
            return min(blocks, self.programs)
        return blocks


def block_for(width: int) -> int:
    """Lane count of a row's tile for a row of ``width`` elements: the next power of two."""
    return triton.next_power_of_2(width)


def _warps_for_bytes(
    tile_bytes: int, most: int = 16, fewest: int = 1, bytes_per_warp: int = 1024
) -> int:
    """One warp per ``bytes_per_warp`` of tile (1 KiB: two 16-byte vectors per thread),
    ``fewest..most``."""
    return min(most, max(fewest, tile_bytes // bytes_per_warp))


@dataclasses.dataclass(frozen=True)
class TileLaunch:
    """A tile-kernel launch: each row whole in registers, one or several rows per program.

    Attributes:
        warps: (fewest, most) warps; in between, one warp per KiB of the program's tile.
        w_early: the weight is loaded together with x, before the reduction.
        pack_lanes: rows per program = this many lanes // the row's lanes (0: see pack_bytes).
        pack_bytes: rows per program = this many bytes // the row's tile bytes (0: one row).
        fill_sms: halve the rows per program while the grid has fewer than 4 programs per SM.
        bytes_per_warp: tile bytes per warp (1 KiB: two 16-byte vectors per thread).
    """

    warps: tuple[int, int]
    w_early: bool
    pack_lanes: int = 0
    pack_bytes: int = 0
    fill_sms: bool = False
    bytes_per_warp: int = 1024

    def config(
        self, rows: int, width: int, lanes: int, itemsize: int, sm_count: int
    ) -> LaunchConfig:
        """The LaunchConfig for one shape; it streams when x is at most STREAM_TILE_BYTES."""
        row_bytes = lanes * itemsize
        per_program = 1
        if self.pack_lanes:
            per_program = max(1, self.pack_lanes // lanes)
        elif self.pack_bytes:
            per_program = max(1, self.pack_bytes // row_bytes)
        while self.fill_sms and per_program > 1 and triton.cdiv(rows, per_program) < 4 * sm_count:
            per_program //= 2
        fewest, most = self.warps
        return LaunchConfig(
            False,
            lanes,
            _warps_for_bytes(per_program * row_bytes, most, fewest, self.bytes_per_warp),
            per_program,
            w_early=self.w_early,
            stream_store=rows * width * itemsize <= STREAM_TILE_BYTES,
        )


@dataclasses.dataclass(frozen=True)
class Rule:
    """One row of LAUNCH_RULES: the shapes it matches, the launch they get, and why.

    Attributes:
        why: the measured reason (docs/LAYOUT.md has the figures).
        launch: a fixed column-loop LaunchConfig, or a TileLaunch.
        lanes: (fewest, most) lanes of the row's tile, next_power_of_2(width); None: no bound.
        itemsize: 2: elements of at most 2 bytes; 4: wider elements; None: any.
        full_row: True: width == lanes (a power of two); False: width < lanes; None: either.
        rows: (fewest, most) rows of the problem; None: no bound.
        even_rows: the row count must be even.
        min_row_bytes: the row's tile (lanes * itemsize) has at least this many bytes.
        unaligned: True: no 16-byte vector divides the width (the launch peels a contiguous
            row: :func:`peel_elements`); None: any width.
    """

    why: str
    launch: LaunchConfig | TileLaunch
    lanes: tuple[int, int | None]
    itemsize: int | None = None
    full_row: bool | None = None
    rows: tuple[int, int | None] = (0, None)
    even_rows: bool = False
    min_row_bytes: int = 0
    unaligned: bool | None = None

    def matches(self, rows: int, width: int, lanes: int, itemsize: int) -> bool:
        """Whether a ``rows x width`` problem (tile ``lanes``) of ``itemsize`` matches."""
        return (
            _within(lanes, self.lanes)
            and _within(rows, self.rows)
            and (self.itemsize is None or (itemsize <= 2) == (self.itemsize == 2))
            and (self.full_row is None or (width == lanes) == self.full_row)
            and (not self.even_rows or rows % 2 == 0)
            and lanes * itemsize >= self.min_row_bytes
            and (self.unaligned is None or bool(width % (16 // itemsize)) == self.unaligned)
        )


def _within(value: int, bounds: tuple[int, int | None]) -> bool:
    fewest, most = bounds
    return fewest <= value and (most is None or value <= most)


def _loop(
    chunk: int, warps: int, rows: int = 1, *, unroll: bool = True, stream: bool = True
) -> LaunchConfig:
    """The column loop, one program per block of ``rows`` rows."""
    return LaunchConfig(True, chunk, warps, rows, unroll=unroll, stream_store=stream)


_WIDE_2_BYTE = (
    "two unrolled chunks of half the tile, a warp per 1024 lanes (at most 32): a row's loads are "
    "in flight together and only 2-4 rows per SM wait in L2 for pass 2; faster than one tile"
)

# First match wins. Rows of more than 8192 lanes never fit a tile; full rows of 2048-8192 in
# large problems are column loops too; the rest are tiles.
LAUNCH_RULES: tuple[Rule, ...] = (
    Rule(
        "rows of 1025-8191 that no 16-byte vector divides: a peeled one-row tile (head, aligned "
        "body, tail) on a warp per 4 KiB of tile (4-8), the weight after the reduction; "
        "74-97% of copy where unpeeled tiles and the column loop keep 2-byte accesses (47-80%)",
        TileLaunch((4, 8), w_early=False, bytes_per_warp=4096), lanes=(2048, 8192),
        unaligned=True,
    ),
    Rule(_WIDE_2_BYTE, _loop(8192, 16), lanes=(16384, 16384), itemsize=2),
    Rule(_WIDE_2_BYTE, _loop(16384, 32), lanes=(32768, 32768), itemsize=2),
    Rule(_WIDE_2_BYTE, _loop(32768, 32), lanes=(65536, None), itemsize=2),
    Rule(
        "full fp32 rows of 16384: the whole row as one chunk on 32 warps (Inductor's layout), "
        "0.1% ahead of two 8192 chunks",
        _loop(16384, 32), lanes=(16384, 16384), itemsize=4, full_row=True,
    ),
    Rule(
        "fp32 rows of 8193-16383: a runtime loop of 8192 chunks on 32 warps, the best two-chunk "
        "layout of full 16384 rows (16 warps 1.6-5% slower)",
        _loop(8192, 32, unroll=False), lanes=(16384, 16384), itemsize=4,
    ),
    Rule(
        "fp32 rows over 16384 lanes: a runtime loop of 32768 chunks on 32 warps, 6% ahead of "
        "16384 chunks at 65536 lanes",
        _loop(32768, 32, unroll=False), lanes=(32768, None), itemsize=4,
    ),
    Rule(
        "full 2-byte rows of 8192: one chunk on 16 warps; two 4096 chunks on 8 warps are 0.7% "
        "and the one-row tile 3.5% slower",
        _loop(8192, 16), lanes=(8192, 8192), itemsize=2, full_row=True,
    ),
    Rule(
        "full fp32 rows of 8192: two 4096 chunks on 32 warps, ahead of 16 warps and of "
        "torch.compile",
        _loop(4096, 32), lanes=(8192, 8192), itemsize=4, full_row=True,
    ),
    Rule(
        "full fp32 rows of 4096, 4096-16383 rows: a runtime loop of 2048 chunks, plain stores, "
        "ahead of the streaming loop",
        _loop(2048, 16, unroll=False, stream=False), lanes=(4096, 4096), itemsize=4,
        full_row=True, rows=(4096, 16383),
    ),
    Rule(
        "full fp32 rows of 4096, from 16384 rows: one 4096 chunk, plain stores (Inductor's "
        "layout); tiles are 3% slower",
        _loop(4096, 16, stream=False), lanes=(4096, 4096), itemsize=4, full_row=True,
        rows=(16384, None),
    ),
    Rule(
        "full fp32 rows of 2048, an even count from 4096 rows: blocks of 2 rows on 16 warps, "
        "plain stores (Inductor's layout), ahead of one row on 8 warps",
        _loop(2048, 16, 2, stream=False), lanes=(2048, 2048), itemsize=4, full_row=True,
        rows=(4096, None), even_rows=True,
    ),
    Rule(
        "full fp32 rows of 2048, an odd count from 4096 rows: one row on 8 warps; one-pass "
        "tiles are 3-8% slower",
        _loop(2048, 8), lanes=(2048, 2048), itemsize=4, full_row=True, rows=(4096, None),
    ),
    Rule(
        "full 2-byte rows of 4096, from 16384 rows: two 2048 chunks on 8 warps, 2% ahead of "
        "Liger",
        _loop(2048, 8), lanes=(4096, 4096), itemsize=2, full_row=True, rows=(16384, None),
    ),
    Rule(
        "fp32 rows of 4097-8191, from 16384 rows: a runtime loop of 2048 chunks on 16 warps, "
        "3% ahead of the tile",
        _loop(2048, 16, unroll=False), lanes=(8192, 8192), itemsize=4, full_row=False,
        rows=(16384, None),
    ),
    Rule(
        "2-byte rows of 4097-8191: one tile on 4 warps, the weight with x (8 warps: 3% slower)",
        TileLaunch((4, 4), w_early=True), lanes=(8192, 8192), itemsize=2, full_row=False,
    ),
    Rule(
        "fp32 rows of 4097-8191, fewer rows: one tile on 16 warps (a warp per KiB, at most 16), "
        "the weight after the reduction",
        TileLaunch((16, 16), w_early=False), lanes=(8192, 8192), itemsize=4, full_row=False,
    ),
    Rule(
        "2-byte rows of 513-1024: one tile on 2 warps, the weight after the reduction, 1% "
        "ahead of 4 warps with the weight early",
        TileLaunch((2, 2), w_early=False), lanes=(1024, 1024), itemsize=2,
    ),
    Rule(
        "rows of 513-4096 otherwise: one tile, a warp per KiB (4-8), the weight with x (one "
        "memory round trip in a latency-bound launch)",
        TileLaunch((4, 8), w_early=True), lanes=(1024, 4096),
    ),
    Rule(
        "short rows, at most 16384 rows (latency-bound): 512-lane tiles of several rows, "
        "halved to >= 4 programs per SM; 1024-lane tiles are 13% slower at 4096x255",
        TileLaunch((1, 16), True, pack_lanes=512, fill_sms=True), lanes=(1, 512),
        rows=(0, 16384),
    ),
    Rule(
        "rows of 1-2 KiB, more than 16384 rows: a 2 KiB tile on one warp, each row whole in "
        "that warp (no shared-memory reduction)",
        TileLaunch((1, 1), True, pack_bytes=2048), lanes=(1, 512), rows=(16385, None),
        min_row_bytes=1024,
    ),
    Rule(
        "other short rows, more than 16384 rows: ~4 KiB tiles of several rows (one 128-lane "
        "row per program is 4x slower), halved to >= 4 programs per SM",
        TileLaunch((1, 16), True, pack_bytes=4096, fill_sms=True), lanes=(1, 512),
        rows=(16385, None),
    ),
)  # fmt: skip


# A pure function of four integers, called on every launch: the table walk runs once per shape.
@functools.lru_cache(maxsize=4096)
def choose_config(rows: int, width: int, itemsize: int, sm_count: int = 132) -> LaunchConfig:
    """The launch layout for a ``rows x width`` problem of ``itemsize``-byte elements.

    The first rule of :data:`LAUNCH_RULES` that matches gives it. Tile layouts stream (x
    evict-first, weight evict-last, y ``.cs``) when x is at most ``STREAM_TILE_BYTES``: that
    helps launch-bound shapes and measured no gain or a loss on larger ones. Multi-row tiles of
    full rows drop their column masks, and their row mask where ``ROWS`` divides the rows
    (:func:`kernel_constexprs`).

    Args:
        rows: rows of the problem.
        width: elements per row, 1..65536.
        itemsize: bytes per element (2 or 4).
        sm_count: SMs of the device (short-row tiles keep >= 4 programs per SM).

    Returns:
        The LaunchConfig.

    Raises:
        ValueError: no rule matches (a width below 1).
    """
    lanes = block_for(width)
    for rule in LAUNCH_RULES:
        if rule.matches(rows, width, lanes, itemsize):
            if isinstance(rule.launch, TileLaunch):
                return rule.launch.config(rows, width, lanes, itemsize, sm_count)
            return rule.launch
    raise ValueError(f"no launch rule for rows={rows}, width={width}, itemsize={itemsize}")


def forced_config(path: str, rows: int, width: int, itemsize: int) -> LaunchConfig:
    """A config that takes ``path`` on a small problem, for the check and the tests.

    ``one_row``: one row per program, late weight (the wide-row layout). ``multi_row``: 2 rows
    per program, early weight, so an odd row count leaves a masked phantom row in the last
    program. ``column_loop``: CHUNK = a quarter of the tile (width 70 -> 3 chunks of 32, the
    last one 6 lanes into the row), 2 rows per program on the strided grid.

    Raises:
        ValueError: an unknown path.
    """
    block = block_for(width)
    if path == "one_row":
        return LaunchConfig(False, block, _warps_for_bytes(block * itemsize, 8))
    if path == "multi_row":
        return LaunchConfig(False, block, _warps_for_bytes(2 * block * itemsize, 8), 2, 0, True)
    if path == "column_loop":
        chunk = max(1, block // 4)
        return LaunchConfig(
            True,
            chunk,
            _warps_for_bytes(chunk * itemsize, 8),
            programs=triton.cdiv(rows, 2),
            unroll=False,
            stream_store=True,
        )
    raise ValueError(f"path must be 'auto' or one of {', '.join(KERNEL_PATHS)}; got {path!r}")


def vector_width(width: int, x_row_stride: int, y_row_stride: int, itemsize: int) -> int:
    """Largest power of two <= 16 bytes / itemsize dividing the width and both row strides."""
    vec = max(1, 16 // itemsize)
    while vec > 1 and (width % vec or x_row_stride % vec or y_row_stride % vec):
        vec //= 2
    return vec


def peel_elements(
    config: LaunchConfig, width: int, vec: int, x_stride: int, y_stride: int, itemsize: int
) -> int:
    """The kernels' ``PEEL``: elements of 16 bytes where peeling keeps 16-byte accesses.

    A one-row tile, or a column loop of one row per block, peels when no full vector divides
    the width or a stride (``vec`` is narrower than 16 bytes), the strides agree modulo the
    vector (x and y rows then start equally far from a 16-byte boundary) and the row holds at
    least two vectors; otherwise 0.
    The split depends on the strides only, never on the addresses: the same values and layout
    give the same bits wherever the tensors live (the accesses are 16-byte wide when Triton
    sees 16-byte aligned base pointers, which torch's allocator gives). It does depend on a
    row's offset modulo the vector: the head's length sets which lanes the body's elements
    occupy, so two equal rows at offsets that differ modulo the vector can differ in the last
    bit of their sum of squares.
    """
    full = 16 // itemsize
    if config.rows_per_program != 1 or not config.peel:
        return 0
    if vec >= full or (x_stride - y_stride) % full or width < 2 * full:
        return 0
    return full


def kernel_constexprs(
    config: LaunchConfig, width: int, vec: int, rows: int = 1, peel: int = 0
) -> dict[str, object]:
    """The layout constexprs of ``config`` for ``rows`` rows of ``width`` (``MUTANT`` aside);
    ``peel`` is :func:`peel_elements`'s value (tile kernel only).

    Raises:
        ValueError: the config does not fit the width (a tile narrower than the row, or more
            than MAX_CHUNKS chunks).
    """
    if config.loop:
        chunks = triton.cdiv(width, config.block)
        if chunks > MAX_CHUNKS:
            raise ValueError(
                f"config.block (CHUNK) {config.block} gives {chunks} chunks for width {width}; "
                f"at most {MAX_CHUNKS}"
            )
        return {
            "CHUNK": config.block,
            "NUM_CHUNKS": chunks,
            "ROWS": config.rows_per_program,
            "VEC": vec,
            "UNROLL": config.unroll,
            "EVEN": config.even and width == chunks * config.block,
            "ROW_MASK": rows % config.rows_per_program != 0,
            "PER_ROW": config.programs == 0,
            "STREAM_STORE": config.stream_store,
            "PEEL": peel,
        }
    if config.block < width:
        raise ValueError(f"config.block must be >= width ({width}); got {config.block}")
    multi_row = config.rows_per_program > 1
    return {
        "BLOCK": config.block,
        "ROWS": config.rows_per_program,
        "VEC": vec,
        "W_EARLY": config.w_early,
        "STREAM_STORE": config.stream_store,
        "EVEN": config.even and multi_row and width == config.block,
        "ROW_MASK": multi_row and rows % config.rows_per_program != 0,
        "PEEL": peel,
    }


@functools.lru_cache(maxsize=8)
def _sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def sm_count_for(device: torch.device) -> int:
    """SMs of ``device`` (CUDA), or an H200's 132 for the interpreter and compile targets."""
    if device.type == "cuda":
        return _sm_count(device.index if device.index is not None else torch.cuda.current_device())
    return 132
