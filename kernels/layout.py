"""Launch layouts of the RMSNorm kernels: which kernel, the tile or chunk, rows and warps.

:func:`choose_config` is the launcher's rule for every shape: the first row of the table
:data:`RULES` (name, predicate, layout, one-line reason) that applies; docs/LAYOUT.md has the H200
measurements behind each row, by name. :func:`forced_config` gives a small layout of each path
(the check and the tests run every path); :mod:`kernels.geometry` turns a config into what one
launch compiles (the vector width, the peel, the kernels' layout constexprs).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import NamedTuple

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
        loop: False: ``rms_norm_tile_kernel``; True: ``rms_norm_loop_kernel`` (one program per
            row).
        block: tile kernel: lanes per row (next_power_of_2(width)); loop kernel: CHUNK.
        num_warps: warps per program.
        rows_per_program: the tile kernel's ROWS, rows per program (1 is ``one_row``, > 1
            ``multi_row``); 1 on the column loop.
        w_early: tile kernel: weight loaded together with x, before the reduction.
        stream_store: stores marked streaming (``.cs``); the tile kernel also loads x
            evict-first and the weight evict-last.
        peel: one-row tiles of a width no 16-byte vector divides load and store head, aligned
            body and tail apart (:func:`peel_elements`); False keeps narrow accesses.
        block2: a peeled one-row tile's second body tile (0: none): the body is ``block``
            lanes (a power of two under the width) then ``block2`` (a power of two), so the
            lanes past the row hold few registers (2053: 2048 + 16 lanes, not 4096).
        row_parts: column loop: programs per row (``PARTS``): each sums the whole row and
            stores its share of the chunks, so a few long rows fill every SM; 1 on a tile.
        ordered: column loop: a peeled row is summed in the order of its unpeeled lanes (the
            accumulator rotated back by the head's length, head and tail placed in it), so
            its bits do not depend on where the row starts: the batch-invariant mode's peel
            (:func:`kernels.plans.invariant_config`); False on a tile.
    """

    loop: bool
    block: int
    num_warps: int
    rows_per_program: int = 1
    _: dataclasses.KW_ONLY
    w_early: bool = False
    stream_store: bool = False
    peel: bool = True
    block2: int = 0
    row_parts: int = 1
    ordered: bool = False

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
        return cdiv(rows, self.rows_per_program) * self.row_parts


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


# Problems of this many bytes or more (about an H200's 60 MiB L2) run rows of 8 KiB or more as
# the column loop ("column loop" in RULES).
LOOP_PROBLEM_BYTES = 64 * MiB

# Odd 2-byte rows of one 4096-lane body take the column loop past this many rows.
ODD_LOOP_ROWS = 8192


# A column loop of at most one row per SM (under LOOP_PROBLEM_BYTES, so every batch of 64 MiB or
# more keeps the layout the batch-invariant mode launches) gives each row several programs ("few
# long rows"): as many as keep PARTS_PROGRAMS_PER_SM programs per SM, at most MAX_ROW_PARTS.
PARTS_PROGRAMS_PER_SM = 2
MAX_ROW_PARTS = 8


def row_thresholds(sm_count: int) -> set[int]:
    """The first row count past each fixed row threshold of :func:`choose_config` (16384 rows,
    ODD_LOOP_ROWS, one wave of one-row tiles, the few long rows and each of their part counts);
    the halving to four programs per SM and the byte thresholds depend on the width and are
    added by the callers. The coverage walk and the invariance certificate read the rule's row
    classes from here."""
    starts = {16385, ODD_LOOP_ROWS + 1, sm_count + 1}
    starts.update(sm_count * max(1, 32 // warps) + 1 for warps in (2, 4, 8, 16))
    starts.update(
        PARTS_PROGRAMS_PER_SM * sm_count // parts + 1 for parts in range(1, MAX_ROW_PARTS + 1)
    )
    return starts


class Problem(NamedTuple):
    """What the layout rule reads of a launch: the problem and the numbers derived from it."""

    rows: int
    width: int
    itemsize: int
    sm_count: int
    lanes: int  # next_power_of_2(width): the row's tile
    row_bytes: int  # lanes * itemsize: the tile's bytes
    problem_bytes: int  # rows * width * itemsize
    unaligned: bool  # no 16-byte vector divides the width
    stream: bool  # x is at most STREAM_TILE_BYTES: tiles stream
    body: tuple[int, int]  # split_body(width, itemsize): a peeled row's tiles


def problem(rows: int, width: int, itemsize: int, sm_count: int) -> Problem:
    """The :class:`Problem` of a ``rows x width`` launch of ``itemsize``-byte elements."""
    lanes = block_for(width)
    nbytes = rows * width * itemsize
    return Problem(
        rows, width, itemsize, sm_count, lanes, lanes * itemsize, nbytes,
        width % max(1, 16 // itemsize) != 0, nbytes <= STREAM_TILE_BYTES,
        split_body(width, itemsize),
    )  # fmt: skip


class Rule(NamedTuple):
    """One row of the layout rule: where it applies, the layout it gives, and why; ``invariant``
    False where the batch-invariant mode (:func:`kernels.plans.invariant_config`) skips the row
    and takes the next one that applies."""

    name: str
    applies: Callable[[Problem], bool]
    layout: Callable[[Problem], LaunchConfig]
    reason: str
    invariant: bool = True


def _peeled_width(p: Problem) -> bool:
    """A width no 16-byte vector divides, on 2048-8192 lanes: the peeled one-row tiles."""
    return p.unaligned and 2048 <= p.lanes <= 8192


def _peeled_2_byte(p: Problem) -> bool:
    """:func:`_peeled_width` of elements narrower than 4 bytes."""
    return _peeled_width(p) and p.itemsize < 4


def _short_rows(p: Problem) -> LaunchConfig:
    """Several rows per program: 4 KiB per program of 2-byte rows a 16-byte vector divides (a
    warp per KiB, per 2 KiB past 16384 rows); otherwise 512 lanes (4 KiB past 16384 rows) on a
    warp per KiB; rows of 1-2 KiB past 16384 rows 2 KiB on one warp. The rows per program are
    halved until the grid has 4 programs per SM (not on one warp). 2-byte rows of a 1024-lane
    tile just past a power of two (:func:`_split_aligned`: 576 = 512 + 64) hold the same rows
    on the two tiles of :func:`split_body`."""
    one_warp = p.rows > 16384 and p.row_bytes >= 1 * KiB
    if one_warp:
        program, per_warp = 2 * KiB, 2 * KiB
    elif p.itemsize <= 2 and not p.unaligned:
        program, per_warp = 4 * KiB, (1 * KiB if p.rows <= 16384 else 2 * KiB)
    else:
        program, per_warp = (512 * p.itemsize if p.rows <= 16384 else 4 * KiB), 1 * KiB
    per = max(1, program // p.row_bytes)
    while not one_warp and per > 1 and cdiv(p.rows, per) < 4 * p.sm_count:
        per //= 2
    warps = _warps_for_bytes(per * p.row_bytes, 16, 1, per_warp)
    block, block2 = p.lanes, 0
    if p.itemsize <= 2 and p.lanes >= 1024 and _split_aligned(p):
        block, block2 = p.body
    return LaunchConfig(
        False, block, warps, per, w_early=True, stream_store=p.stream, peel=not block2,
        block2=block2,
    )  # fmt: skip


def _split_aligned(p: Problem) -> bool:
    """A width a 16-byte vector divides whose :func:`split_body` is two tiles (just past a power
    of two: 2176 = 2048 + 128 lanes): the row's lanes then fit with no peel."""
    return not p.unaligned and p.body[1] > 0


def _rows_to_split(p: Problem) -> bool:
    """:func:`_split_aligned` rows of 2048-8192 lanes (2-byte) or of 2048 (fp32)."""
    lanes_ok = 2048 <= p.lanes <= 8192 if p.itemsize <= 2 else p.lanes == 2048
    return lanes_ok and _split_aligned(p)


# 2-byte rows of 16384 lanes up to this many elements (a body of 8192 lanes and a second tile of
# at most 4096) run as one split tile ("wide split rows").
WIDE_SPLIT_MAX = 12288


def _wide_split(p: Problem) -> bool:
    """2-byte rows of 8193-WIDE_SPLIT_MAX elements a 16-byte vector divides."""
    return p.itemsize <= 2 and p.lanes == 16384 and not p.unaligned and p.width <= WIDE_SPLIT_MAX


def _wide_split_tile(p: Problem) -> LaunchConfig:
    """:func:`split_body`'s 8192 lanes and a second tile of up to half of them, both unpeeled,
    the weight with x, on 16 warps."""
    first, second = split_body(p.width, p.itemsize, 2)
    return LaunchConfig(
        False, first, 16, w_early=True, stream_store=p.stream, peel=False, block2=second
    )


def _peeled_fp32_tile(p: Problem) -> LaunchConfig:
    """The whole tile, the weight with x, a warp per 2 KiB of the row's own bytes (4-8)."""
    warps = min(8, max(4, _nearest_power_of_2(p.width * p.itemsize / (2 * KiB))))
    return LaunchConfig(False, p.lanes, warps, w_early=True, stream_store=p.stream)


def _split_tile(p: Problem) -> LaunchConfig:
    """A peeled tile on :func:`split_body`'s tiles, the weight after the reduction, a warp per
    2 KiB of those lanes (2-4)."""
    block, block2 = p.body
    warps = _warps_for_bytes((block + block2) * p.itemsize, 4, 2, 2 * KiB)
    return LaunchConfig(False, block, warps, stream_store=p.stream, block2=block2)


# fp32 column loops of more than this many 1024-lane chunks run 16 warps, not 8 (8192x6656
# fp32: 16 warps 99.7% of copy against 8 warps' 94.1% on an H100, 104.2 us against 109.8 on an
# H200); rows of fewer chunks keep 8 (32768x2048 fp32, two chunks, on an H200: 126.7 us on 8
# warps, 140.5 on 16). docs/LAYOUT.md has the sweep.
MANY_CHUNKS = 4


def _loop_config(p: Problem) -> LaunchConfig:
    """One program per row in two passes over its chunks: 4096 lanes (at most half the row);
    past 16384 lanes 32768, or 8192 for partial 2-byte rows; halved (down to 1024, or 4096 past
    16384 lanes) while the last chunk's masked lanes exceed a fifth of the width. A warp per
    512 bytes of chunk, at most 32 (peeled fp32 rows past 16384 lanes a warp per KiB; fp32
    rows of more than MANY_CHUNKS 1024-lane chunks a warp per 256 bytes, 16); partial 2-byte
    rows of 8192-16384 lanes 4096-lane chunks on a warp per KiB."""
    width, lanes, itemsize = p.width, p.lanes, p.itemsize
    if itemsize <= 2 and width < lanes and 8192 <= lanes <= 16384:
        return LaunchConfig(True, 4096, 8, stream_store=True)
    if lanes > 16384:
        chunk = 8192 if itemsize <= 2 and width < lanes else 32768
        fewest = 4096
    else:
        chunk, fewest = min(lanes // 2, 4096), 1024
    chunk = _trimmed_chunk(width, chunk, fewest)
    per_warp = 1 * KiB if itemsize >= 4 and lanes > 16384 and width % 4 else 512
    if itemsize >= 4 and chunk == 1024 and cdiv(width, chunk) > MANY_CHUNKS:
        per_warp = 256
    return LaunchConfig(
        True, chunk, _warps_for_bytes(chunk * itemsize, 32, 1, per_warp), stream_store=True
    )


def _trimmed_chunk(width: int, chunk: int, fewest: int) -> int:
    """``chunk`` halved, down to ``fewest``, while the last chunk's masked lanes exceed a fifth
    of the width."""
    while chunk > fewest and cdiv(width, chunk) * chunk - width > width // 5:
        chunk //= 2
    return chunk


def _column_loop(p: Problem) -> bool:
    """Rows past 8192 lanes, or of 8 KiB or more in a problem past the L2."""
    return p.lanes > 8192 or (p.row_bytes >= 8 * KiB and p.problem_bytes >= LOOP_PROBLEM_BYTES)


def _row_parts(rows: int, chunks: int, sm_count: int) -> int:
    """Programs per row of a column loop of few rows: the most, up to MAX_ROW_PARTS and the
    chunks, that keep ``rows * parts`` within PARTS_PROGRAMS_PER_SM programs per SM and leave
    every part a chunk of its own."""
    most = min(MAX_ROW_PARTS, chunks, PARTS_PROGRAMS_PER_SM * sm_count // rows)
    for parts in range(most, 1, -1):
        if (parts - 1) * cdiv(chunks, parts) < chunks:
            return parts
    return 1


# The widest chunk of a row in parts: a part's share is whole chunks, so wide chunks leave
# few parts.
PARTS_CHUNK = 4096


def _parted_loop(p: Problem) -> LaunchConfig:
    """The column loop's layout, its chunk at most PARTS_CHUNK (halved down to 1024 while the
    last chunk's masked lanes exceed a fifth of the width, a warp per 512 bytes of chunk), with
    :func:`_row_parts` programs per row."""
    config = _loop_config(p)
    if config.block > PARTS_CHUNK:
        chunk = _trimmed_chunk(p.width, PARTS_CHUNK, 1024)
        warps = _warps_for_bytes(chunk * p.itemsize, 32, 1, 512)
        config = dataclasses.replace(config, block=chunk, num_warps=warps)
    parts = _row_parts(p.rows, cdiv(p.width, config.block), p.sm_count)
    return dataclasses.replace(config, row_parts=parts)


# Rows of more than this many bytes run the column loop in two programs per row ("widest rows").
WIDEST_ROW_BYTES = 192 * KiB


def _widest_rows(p: Problem) -> bool:
    """Column-loop rows of more than WIDEST_ROW_BYTES (fp32 rows past 49152 lanes)."""
    return _column_loop(p) and p.width * p.itemsize > WIDEST_ROW_BYTES


def _widest_loop(p: Problem) -> LaunchConfig:
    """Two programs per row on 32 warps: 32768-lane chunks, 16384 on a peeled row (32768-lane
    chunks of a peeled row take a quarter to a third longer)."""
    chunk = 16384 if p.unaligned else 32768
    return LaunchConfig(True, chunk, 32, stream_store=True, row_parts=2)


def _one_row_tile(p: Problem) -> LaunchConfig:
    """A warp per 512 lanes, 2-16 (2-byte: 2-8); the weight with x in full rows, widths no
    16-byte vector divides, fp32 rows and grids of one wave at half the SM's warp slots; after
    the reduction otherwise."""
    warps = min(max(p.lanes // 512, 2), 8 if p.itemsize <= 2 else 16)
    one_wave = p.rows <= p.sm_count * max(1, 32 // warps)
    early = p.width == p.lanes or p.unaligned or p.itemsize >= 4 or one_wave
    return LaunchConfig(False, p.lanes, warps, w_early=early, stream_store=p.stream)


# The layout rule: the first row whose predicate holds gives the layout. docs/LAYOUT.md has the
# H200 measurements behind each row, by name.
RULES: tuple[Rule, ...] = (
    Rule(
        "short rows",
        lambda p: (
            p.row_bytes <= 2 * KiB and (p.lanes <= 512 or (p.rows <= 16384 and not p.unaligned))
        ),
        _short_rows,
        "one program must move enough bytes to hide a memory round trip",
    ),
    Rule(
        "split rows",
        _rows_to_split,
        lambda p: LaunchConfig(
            False, p.body[0], 4, w_early=True, stream_store=p.stream, peel=False, block2=p.body[1]
        ),
        "a row just past a power of two in two tiles beats the loop and the whole power of two",
        invariant=False,
    ),
    Rule(
        "wide split rows",
        _wide_split,
        _wide_split_tile,
        "one pass over a row held in 8192 + 4096 lanes beats the loop's two and 16384 lanes",
        invariant=False,
    ),
    Rule(
        "peeled fp32 tile",
        lambda p: _peeled_width(p) and p.itemsize >= 4,
        _peeled_fp32_tile,
        "fp32 odd rows of 2048-8192 lanes: the whole tile in registers is fastest",
    ),
    Rule(
        "2-byte rows of one 8192-lane body",
        lambda p: _peeled_2_byte(p) and p.body == (8192, 0),
        lambda p: LaunchConfig(True, 4096, 4, stream_store=True),
        "an 8192-lane tile holds too many registers for enough rows per SM",
    ),
    Rule(
        "odd 2-byte rows of one 4096-lane body, many rows",
        lambda p: (
            _peeled_2_byte(p)
            and p.body == (4096, 0)
            and p.width % 2 == 1
            and p.rows > ODD_LOOP_ROWS
        ),
        lambda p: LaunchConfig(True, _least_lanes_chunk(p.width, 1024, 2048), 4, stream_store=True),
        "past ODD_LOOP_ROWS rows the loop, holding fewer registers, beats the tile",
    ),
    Rule(
        "odd 2-byte rows of one 4096-lane body",
        lambda p: _peeled_2_byte(p) and p.body == (4096, 0) and p.width % 2 == 1,
        lambda p: LaunchConfig(False, 4096, 4, w_early=True, stream_store=p.stream),
        "the weight loaded with x: one memory round trip, not two",
    ),
    Rule(
        "even 2-byte rows of one 4096-lane body",
        lambda p: _peeled_2_byte(p) and p.body == (4096, 0),
        lambda p: LaunchConfig(False, 4096, 4, w_early=True, stream_store=p.stream, peel=False),
        "x and the weight share a 4-byte vector: unpeeled beats the peeled tile",
    ),
    Rule(
        "peeled 2-byte tile",
        _peeled_2_byte,
        _split_tile,
        "a split body holds registers for the row's lanes, not a whole power of two",
    ),
    Rule(
        "few long rows",
        lambda p: _column_loop(p) and p.rows <= p.sm_count and p.problem_bytes < LOOP_PROBLEM_BYTES,
        _parted_loop,
        "a program per row leaves SMs idle; two programs per SM, each re-reading its row from L2",
    ),
    Rule(
        "widest rows",
        _widest_rows,
        _widest_loop,
        "a program per row holds an SM's rows in L2 until pass 2; past 192 KiB they overflow it",
    ),
    Rule(
        "column loop",
        _column_loop,
        _loop_config,
        "a tile past 8192 lanes spills; past the L2 a second pass costs less than registers",
    ),
    Rule(
        "one-row tile",
        lambda p: True,
        _one_row_tile,
        "every other row: one tile, 16 elements a thread",
    ),
)


def rule_for(rows: int, width: int, itemsize: int, sm_count: int = 132) -> Rule:
    """The row of :data:`RULES` that gives a problem's layout.

    Raises:
        ValueError: a width or an itemsize below 1.
    """
    if width < 1 or itemsize < 1:
        raise ValueError(f"no launch layout for width={width}, itemsize={itemsize}")
    p = problem(rows, width, itemsize, sm_count)
    return next(rule for rule in RULES if rule.applies(p))


# A pure function of four integers, called on every launch: it runs once per shape.
@functools.lru_cache(maxsize=4096)
def choose_config(rows: int, width: int, itemsize: int, sm_count: int = 132) -> LaunchConfig:
    """The launch layout for a ``rows x width`` problem of ``itemsize``-byte elements: the
    first row of :data:`RULES` that applies. Tiles stream (x evict-first, weight evict-last,
    y ``.cs``) when x is at most ``STREAM_TILE_BYTES``; column loops always stream y. Multi-row
    tiles of full rows drop their column masks, and their row mask where ``ROWS`` divides the
    rows (:func:`kernel_constexprs`).

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
    p = problem(rows, width, itemsize, sm_count)
    for rule in RULES:
        if rule.applies(p):
            return rule.layout(p)
    raise AssertionError("the last rule applies to every problem")


def split_body(width: int, itemsize: int, fraction: int = 8) -> tuple[int, int]:
    """``(block, block2)`` of a peeled row's body: the largest power of two under the width and
    a second power of two covering the rest (at least two 16-byte vectors, so the tile always
    reaches past the row and the tail mutants have lanes to act on), when that second tile is
    at most ``1 / fraction`` of the first (an eighth; "wide split rows" take up to a half);
    else ``(next_power_of_2(width), 0)``, one tile.

    The lanes past the row hold registers like the row's own: 2053 elements on 4096 lanes fit
    half the rows per SM that 2048 + 16 lanes do (H200: 86% of copy against 74%).
    """
    lanes = block_for(width)
    first = lanes // 2
    second = max(2 * (16 // itemsize), next_power_of_2(max(1, width - first)))
    if first >= 16 and second <= first // fraction:
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


def forced_config(path: str, rows: int, width: int, itemsize: int) -> LaunchConfig:
    """A config that takes ``path`` on a small problem, for the check and the tests: the
    knobs the rule sets, on values that reach the path's edges.

    ``one_row``: one row per program, late weight (the wide-row layout). ``multi_row``: 2 rows
    per program, early weight, so an odd row count leaves a masked phantom row in the last
    program. ``column_loop``: CHUNK = a quarter of the tile (width 70 -> 3 chunks of 32, the
    last one 6 lanes into the row), streaming stores, as the rule's loops.

    Raises:
        ValueError: an unknown path.
    """
    block = block_for(width)
    if path == "one_row":
        return LaunchConfig(False, block, _warps_for_bytes(block * itemsize, 8))
    if path == "multi_row":
        warps = _warps_for_bytes(2 * block * itemsize, 8)
        return LaunchConfig(False, block, warps, 2, w_early=True)
    if path == "column_loop":
        chunk = max(1, block // 4)
        return LaunchConfig(True, chunk, _warps_for_bytes(chunk * itemsize, 8), stream_store=True)
    raise ValueError(f"path must be 'auto' or one of {', '.join(KERNEL_PATHS)}; got {path!r}")


@functools.lru_cache(maxsize=8)
def _sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def sm_count_for(device: torch.device) -> int:
    """SMs of ``device`` (CUDA), or an H200's 132 for the interpreter and compile targets."""
    if device.type == "cuda":
        return _sm_count(device.index if device.index is not None else torch.cuda.current_device())
    return 132
