"""Launch layouts of the RMSNorm kernels: which kernel, the tile or chunk, rows and warps.

:func:`choose_config` is the launcher's rule for every shape: four regimes of the row's bytes,
the problem's bytes and the rows, each with its reason; docs/LAYOUT.md has the H200
measurements behind the thresholds. :func:`forced_config`
gives a small layout of each path (the check and the tests run every path), and
:func:`kernel_constexprs` turns a config into the kernels' layout constexprs.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import torch

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
        block2: a peeled one-row tile's second body tile (0: none): the body is ``block``
            lanes (a power of two under the width) then ``block2`` (a power of two), so the
            lanes past the row hold few registers (2053: 2048 + 16 lanes, not 4096).
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
    block2: int = 0

    @property
    def path(self) -> str:
        """One of KERNEL_PATHS."""
        if self.loop:
            return "column_loop"
        return "multi_row" if self.rows_per_program > 1 else "one_row"

    def lanes(self, width: int) -> int:
        """Lanes read past each row start when nothing is masked (the guard a check needs)."""
        if self.loop:
            return cdiv(width, self.block) * self.block
        return self.block + self.block2

    def grid(self, rows: int) -> int:
        """Number of programs for ``rows`` rows."""
        blocks = cdiv(rows, self.rows_per_program)
        if self.loop and self.programs > 0:
            return min(blocks, self.programs)
        return blocks


def cdiv(a: int, b: int) -> int:
    """``ceil(a / b)`` for positive ints (``triton.cdiv``'s value, without its JIT wrapper: the
    coverage map calls the rule millions of times)."""
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= ``n`` (0 for 0), as ``triton.next_power_of_2``."""
    return 1 << (n - 1).bit_length() if n > 0 else 0


def _nearest_power_of_2(value: float) -> int:
    """The power of two nearest ``value`` (> 0) on a log scale."""
    return 1 << max(0, round(math.log2(value)))


def block_for(width: int) -> int:
    """Lane count of a row's tile for a row of ``width`` elements: the next power of two."""
    return next_power_of_2(width)


def _warps_for_bytes(
    tile_bytes: int, most: int = 16, fewest: int = 1, bytes_per_warp: int = 1024
) -> int:
    """One warp per ``bytes_per_warp`` of tile (1 KiB: two 16-byte vectors per thread),
    ``fewest..most``."""
    return min(most, max(fewest, tile_bytes // bytes_per_warp))


KiB = 1024
MiB = 1024 * KiB


# Problems past this many bytes (about an H200's 60 MiB L2) run rows of 8 KiB or more as the
# column loop: 4096x4096 fp32 (64 MiB) 2% ahead of the tile, 8192x3072 bf16 (48 MiB) 5% behind.
LOOP_PROBLEM_BYTES = 64 * MiB


# Odd 2-byte rows of one 4096-lane tile take the column loop past this many rows (H200: at
# 16384 rows and more the loop reaches 87-97% of the copy against the tile's 80-92%; at 4096 the
# tile is 3-4 points ahead).
ODD_LOOP_ROWS = 8192


def row_thresholds(sm_count: int) -> set[int]:
    """The first row count past each fixed row threshold of :func:`choose_config` (16384 rows,
    ODD_LOOP_ROWS, one wave of one-row tiles); the halving to four programs per SM and the byte
    thresholds depend on the width and are added by the callers. The coverage walk and the
    invariance certificate read the rule's row classes from here."""
    starts = {16385, ODD_LOOP_ROWS + 1}
    starts.update(sm_count * max(1, 32 // warps) + 1 for warps in (2, 4, 8, 16))
    return starts


# A pure function of four integers, called on every launch: it runs once per shape.
@functools.lru_cache(maxsize=4096)
def choose_config(rows: int, width: int, itemsize: int, sm_count: int = 132) -> LaunchConfig:
    """The launch layout for a ``rows x width`` problem of ``itemsize``-byte elements.

    A function of the row's lanes (the next power of two of the width) and tile bytes
    (``lanes * itemsize``), the problem's bytes, the row count and the SMs, in four regimes;
    docs/LAYOUT.md gives the H200 measurements behind each threshold.

    1. Rows of at most 2 KiB of tile (fp32 512 lanes; 2-byte 512, or 1024 in launches of up
       to 16384 rows whose width a 16-byte vector divides): several rows per program, so that
       one program moves enough bytes to hide a memory round trip, the weight loaded with x.
       Rows a 16-byte vector divides, 2-byte: 4 KiB per program, on a warp per KiB up to
       16384 rows and per 2 KiB beyond (four vectors per thread). Otherwise (fp32, and 2-byte
       rows of scalar accesses, which want fewer bytes per thread): 512 lanes per program up
       to 16384 rows, 4 KiB beyond, on a warp per KiB. Rows of 1-2 KiB past 16384 rows: 2 KiB
       on one warp, reduced inside that warp. The rows per program are halved until the grid
       has 4 programs per SM.
    2. A width no 16-byte vector divides, 2048-8192 lanes: a peeled one-row tile (head,
       16-byte body, tail). 2-byte rows: the weight after the reduction; the body is the
       largest power of two under the width plus a second power-of-two tile of at least two
       vectors when that one is at most an eighth of the first (:func:`split_body`: 2053 is
       2048 + 16 lanes, not 4096), on a warp per 2 KiB of those lanes (2-4). 2-byte rows whose
       body stays one 8192-lane tile (4097-8191 elements, a large rest) take the column loop
       instead, 4096-lane chunks on 4 warps: the tile holds 109 registers per thread, a
       quarter occupancy waiting on memory; the loop keeps fewer. 2-byte rows of 2049-4095
       elements with a large rest (one 4096-lane tile) load the weight with x, on 4 warps;
       where a 4-byte vector divides the width the row is not peeled (x and the weight then
       share that vector instead of a 16-byte body beside a weight loaded element by element);
       odd widths past ODD_LOOP_ROWS rows take the column loop, on 4 warps, in 1024- or
       2048-lane chunks, whichever covers the row with fewer lanes. fp32 rows keep
       the whole tile, the weight loaded with x, on a warp per 2 KiB of the row's own bytes
       (the nearest power of two, 4-8: rows just past a power of two leave half the tile
       masked and want the fewer warps).
    3. Rows over 8192 lanes, and rows of 8 KiB or more in problems of LOOP_PROBLEM_BYTES or
       more: the column loop, one program per row, two passes over its chunks (the second
       re-reads the row from L1/L2, which costs less than holding it in registers). The
       chunk: 4096 lanes (at most half the row); for rows over 16384 lanes 32768, or 8192 for
       partial 2-byte rows; halved (down to 1024, or 4096 for rows over 16384 lanes) while
       the last chunk's masked lanes exceed a fifth of the width: idle lanes hold warps that
       other rows could use. A warp per 512 bytes of chunk (one 16-byte vector per thread),
       at most 32; fp32 rows over 16384 lanes that no 16-byte vector divides (peeled) a warp
       per KiB (two vectors per thread: 17001-25001 measured 1-7 points ahead of one, where
       the aligned 18000 lost 8 points); partial 2-byte rows of 8192-16384 lanes keep
       4096-lane chunks on a warp per KiB.
    4. The rest: a one-row tile on a warp per 512 lanes (16 elements per thread), 2 to 16
       (8 for 2-byte elements). The weight is loaded with x in full rows (width a power of
       two), in widths no 16-byte vector divides, in fp32 rows and in grids that fit one wave
       at half the SM's warp slots (``rows <= sm_count * 32 / warps``: one memory round trip
       instead of two is the whole time there); after the reduction in other partial rows of
       2-byte elements.

    Tiles stream (x evict-first, weight evict-last, y ``.cs``) when x is at most
    ``STREAM_TILE_BYTES`` (launch-bound); column loops always stream y, which nothing
    re-reads, and keep L2 for the second pass. Multi-row tiles of full rows drop their column
    masks, and their row mask where ``ROWS`` divides the rows (:func:`kernel_constexprs`).

    Args:
        rows: rows of the problem.
        width: elements per row, 1..65536.
        itemsize: bytes per element (2 or 4).
        sm_count: SMs of the device (short-row tiles keep >= 4 programs per SM).

    Raises:
        ValueError: a width or an itemsize below 1.
    """
    if width < 1 or itemsize < 1:
        raise ValueError(f"no launch layout for width={width}, itemsize={itemsize}")
    lanes = block_for(width)
    row = lanes * itemsize
    unaligned = width % max(1, 16 // itemsize) != 0
    stream = rows * width * itemsize <= STREAM_TILE_BYTES
    if row <= 2 * KiB and (lanes <= 512 or (rows <= 16384 and not unaligned)):
        return _short_rows(rows, lanes, row, itemsize, sm_count, stream, unaligned)
    if unaligned and 2048 <= lanes <= 8192:
        if itemsize >= 4:
            warps = min(8, max(4, _nearest_power_of_2(width * itemsize / (2 * KiB))))
            return LaunchConfig(False, lanes, warps, w_early=True, stream_store=stream)
        block, block2 = split_body(width, itemsize)
        if block == 8192:  # 4097-8191 elements, the rest past 4096 too large to split
            return LaunchConfig(True, 4096, 4, stream_store=True)
        if block == 4096 and not block2:  # 2049-4095 elements, a large rest
            if width % 2:
                if rows > ODD_LOOP_ROWS:
                    return LaunchConfig(
                        True, _least_lanes_chunk(width, 1024, 2048), 4, stream_store=True
                    )
                return LaunchConfig(False, block, 4, w_early=True, stream_store=stream)
            return LaunchConfig(False, block, 4, w_early=True, stream_store=stream, peel=False)
        warps = _warps_for_bytes((block + block2) * itemsize, 4, 2, 2 * KiB)
        return LaunchConfig(False, block, warps, stream_store=stream, block2=block2)
    if lanes > 8192 or (row >= 8 * KiB and rows * width * itemsize >= LOOP_PROBLEM_BYTES):
        return _loop_config(width, lanes, itemsize)
    warps = min(max(lanes // 512, 2), 8 if itemsize <= 2 else 16)
    one_wave = rows <= sm_count * max(1, 32 // warps)
    early = width == lanes or unaligned or itemsize >= 4 or one_wave
    return LaunchConfig(False, lanes, warps, w_early=early, stream_store=stream)


def _short_rows(
    rows: int, lanes: int, row: int, itemsize: int, sm_count: int, stream: bool, unaligned: bool
) -> LaunchConfig:
    """The multi-row tile of :func:`choose_config`'s first regime."""
    one_warp = rows > 16384 and row >= 1 * KiB
    if one_warp:
        program, per_warp = 2 * KiB, 2 * KiB
    elif itemsize <= 2 and not unaligned:
        program, per_warp = 4 * KiB, (1 * KiB if rows <= 16384 else 2 * KiB)
    else:
        program, per_warp = (512 * itemsize if rows <= 16384 else 4 * KiB), 1 * KiB
    per = max(1, program // row)
    while not one_warp and per > 1 and cdiv(rows, per) < 4 * sm_count:
        per //= 2
    warps = _warps_for_bytes(per * row, 16, 1, per_warp)
    return LaunchConfig(False, lanes, warps, per, w_early=True, stream_store=stream)


def split_body(width: int, itemsize: int) -> tuple[int, int]:
    """``(block, block2)`` of a peeled row's body: the largest power of two under the width and
    a second power of two covering the rest (at least two 16-byte vectors, so the tile always
    reaches past the row and the tail mutants have lanes to act on), when that second tile is
    at most an eighth of the first; else ``(next_power_of_2(width), 0)``, one tile.

    The lanes past the row hold registers like the row's own: 2053 elements on 4096 lanes fit
    half the rows per SM that 2048 + 16 lanes do (H200: 86% of copy against 74%).
    """
    lanes = block_for(width)
    first = lanes // 2
    second = max(2 * (16 // itemsize), next_power_of_2(max(1, width - first)))
    if first >= 16 and second <= first // 8:
        return first, second
    return lanes, 0


def _least_lanes_chunk(width: int, fewest: int, most: int) -> int:
    """The power-of-two chunk in ``fewest..most`` whose chunks cover the width with the fewest
    lanes, the larger chunk on a tie (fewer chunks)."""
    chunk, best = most, most
    while chunk >= fewest:
        if cdiv(width, chunk) * chunk < cdiv(width, best) * best:
            best = chunk
        chunk //= 2
    return best


def _loop_config(width: int, lanes: int, itemsize: int) -> LaunchConfig:
    """The column loop of :func:`choose_config`'s third regime."""
    if itemsize <= 2 and width < lanes and 8192 <= lanes <= 16384:
        return LaunchConfig(True, 4096, 8, stream_store=True)
    if lanes > 16384:
        chunk = 8192 if itemsize <= 2 and width < lanes else 32768
        fewest = 4096
    else:
        chunk, fewest = min(lanes // 2, 4096), 1024
    while chunk > fewest and cdiv(width, chunk) * chunk - width > width // 5:
        chunk //= 2
    per_warp = 1 * KiB if itemsize >= 4 and lanes > 16384 and width % 4 else 512
    return LaunchConfig(
        True, chunk, _warps_for_bytes(chunk * itemsize, 32, 1, per_warp), stream_store=True
    )


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
            programs=cdiv(rows, 2),
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


def settled(config: LaunchConfig, width: int, peel: int) -> LaunchConfig:
    """``config`` as it launches: a split body (``block2``) needs the peel; where the row is not
    peeled (strides that disagree modulo the vector) the tile is the whole power of two."""
    if config.block2 and not peel:
        return dataclasses.replace(config, block=block_for(width), block2=0)
    return config


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
        chunks = cdiv(width, config.block)
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
    if config.block2:
        if config.rows_per_program != 1 or not peel or config.block2 & (config.block2 - 1):
            raise ValueError(
                f"config.block2 ({config.block2}) needs a peeled one-row tile and a power of two"
            )
        if config.block + config.block2 < width:
            raise ValueError(
                f"config.block + config.block2 must be >= width ({width}); "
                f"got {config.block} + {config.block2}"
            )
    elif config.block < width:
        raise ValueError(f"config.block must be >= width ({width}); got {config.block}")
    multi_row = config.rows_per_program > 1
    return {
        "BLOCK": config.block,
        "BLOCK2": config.block2,
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
