"""What one launch of a :class:`kernels.layout.LaunchConfig` compiles: the vector width the
width and row strides allow, the peel, the config as it settles on the strides (and on an
output that is the input), and the kernels' layout constexprs with the bounds they keep.

The rule (:mod:`kernels.layout`) picks a config from the problem's shape alone; these functions
add what the tensors' strides and aliasing decide, for :mod:`kernels.launcher`, the coverage
map and the compile views, which must all reach the same constexprs.
"""

from __future__ import annotations

import dataclasses

from kernels.layout import MAX_CHUNKS, LaunchConfig, block_for, cdiv


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


def settled(config: LaunchConfig, width: int, peel: int, in_place: bool = False) -> LaunchConfig:
    """``config`` as it launches: a split (``block2``) left unpeeled (a multi-row tile, a width
    a 16-byte vector divides, strides that disagree modulo the vector) runs as two tiles when
    they fit the row, the first narrower than it (it is read unmasked) and both together at
    least as wide; otherwise as the whole power of two. A row in parts (``row_parts``) runs
    as one program when y is x (``in_place``): a part's stores would overwrite the row the
    other parts are still summing."""
    if in_place and config.row_parts != 1:
        config = dataclasses.replace(config, row_parts=1)
    fits = config.block < width <= config.block + config.block2
    if config.block2 and not peel and not fits:
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
    parts = config.row_parts
    if config.loop:
        chunks = cdiv(width, config.block)
        if chunks > MAX_CHUNKS:
            raise ValueError(
                f"config.block (CHUNK) {config.block} gives {chunks} chunks for width {width}; "
                f"at most {MAX_CHUNKS}"
            )
        _check_parts(parts, rows)
        return {
            "CHUNK": config.block,
            "NUM_CHUNKS": chunks,
            "VEC": vec,
            "EVEN": width == chunks * config.block and chunks % parts == 0,
            "STREAM_STORE": config.stream_store,
            "PEEL": peel,
            "ORDERED": bool(peel) and config.ordered,
            "PARTS": parts,
        }
    if parts != 1:
        raise ValueError(f"config.row_parts must be 1 on a tile (loop=False); got {parts}")
    if config.block2:
        if config.block2 & (config.block2 - 1):
            raise ValueError(f"config.block2 ({config.block2}) must be a power of two")
        if peel and config.rows_per_program != 1:
            raise ValueError(
                f"config.block2 ({config.block2}) of a peeled row needs rows_per_program 1"
            )
        if not peel and config.block >= width:
            raise ValueError(
                f"config.block ({config.block}) of an unpeeled split must be < width ({width})"
            )
        if config.block + config.block2 < width:
            raise ValueError(
                f"config.block + config.block2 must be >= width ({width}); "
                f"got {config.block} + {config.block2}"
            )
    elif config.block < width:
        raise ValueError(f"config.block must be >= width ({width}); got {config.block}")
    if config.ordered:
        raise ValueError("config.ordered is the column loop's (loop=True); got a tile")
    multi_row = config.rows_per_program > 1
    # Unpeeled split tiles and multi-row tiles drop their column masks where the row fills them.
    unmasked = multi_row or (config.block2 > 0 and not peel)
    return {
        "BLOCK": config.block,
        "BLOCK2": config.block2,
        "ROWS": config.rows_per_program,
        "VEC": vec,
        "W_EARLY": config.w_early,
        "STREAM_STORE": config.stream_store,
        "EVEN": unmasked and width == config.block + config.block2,
        "ROW_MASK": multi_row and rows % config.rows_per_program != 0,
        "PEEL": peel,
    }


# CUDA's grid x dimension limit: a launch's programs, rows times row_parts on the column loop.
MAX_GRID = 2**31 - 1


def _check_parts(parts: int, rows: int) -> None:
    """Refuse a column loop's ``row_parts`` below 1 or past MAX_GRID programs. Each part owns
    ``cdiv(chunks, parts)`` consecutive chunks; a part past the row's last chunk stores nothing
    (masked), which the rule never chooses."""
    if isinstance(parts, bool) or not isinstance(parts, int) or parts < 1:
        raise ValueError(f"config.row_parts must be an int >= 1; got {parts!r}")
    if rows * parts > MAX_GRID:
        raise ValueError(
            f"config.row_parts {parts} gives {rows * parts} programs for {rows} rows; "
            f"at most {MAX_GRID}"
        )
