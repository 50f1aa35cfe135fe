"""The error bound's count of additions held to a brute-force count over each tiling.

``oracle.error_bound`` bounds a sum's error by the number of additions a square takes part in
(``tree_adds``, ``layout_adds``). Here the sum itself is walked: every lane of every tile of
the kernel's reduction (a power-of-two tile, a column loop's chunks summed lane-wise and then a
tree, a peeled row's head, body tiles and tail) carries the largest number of additions any of
its squares has gone through, and an addition counts only where both operands hold some square
of the row (a masked lane adds an exact 0.0, which rounds nothing). The bound must cover that
count on every tiling, and be it where nothing is peeled, at widths and chunks at each power of
two, one below and one past it.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from oracle import error_bound as eb

EMPTY = -1  # a lane that holds no square of the row


def _next_power_of_two(n: int) -> int:
    power = 1
    while power < n:
        power *= 2
    return power


def _combine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Lane-wise ``a + b``: one more addition where both hold squares, else the one that does."""
    both = (a != EMPTY) & (b != EMPTY)
    return np.where(both, np.maximum(a, b) + 1, np.maximum(a, b))


def _tile(lanes: int, filled: int) -> np.ndarray:
    """A tile of ``lanes`` lanes whose first ``filled`` hold one square each (0 additions)."""
    return np.where(np.arange(lanes) < filled, 0, EMPTY)


def _tree(tile: np.ndarray) -> int:
    """The pairwise halving tree (lane i + lane i + half) down to one lane."""
    while tile.size > 1:
        half = tile.size // 2
        tile = _combine(tile[:half], tile[half:])
    return int(tile[0])


def _add(*partial_sums: int) -> int:
    """Scalar partial sums added left to right."""
    total = np.array([partial_sums[0]])
    for value in partial_sums[1:]:
        total = _combine(total, np.array([value]))
    return int(total[0])


def _chunked(elements: int, *, chunk: int, num_chunks: int) -> int:
    """A column loop over ``elements``: ``num_chunks`` chunks added lane-wise, then the tree."""
    acc = np.full(chunk, EMPTY)
    for index in range(num_chunks):
        acc = _combine(acc, _tile(chunk, elements - index * chunk))
    return _tree(acc)


def _peeled(width: int, peel: int, head: int, body_sum) -> int:
    """A peeled row: ``body_sum(body)`` plus the head's PEEL-lane tile plus the tail's."""
    head = min(head, width)
    body = (width - head) // peel * peel
    tail = width - head - body
    return _add(body_sum(body), _tree(_tile(peel, head)), _tree(_tile(peel, tail)))


def _widths() -> list[int]:
    """1..130 whole, then each power of two to 65536 with one below and one past it."""
    edges = {1 << k for k in range(8, 17)}
    return sorted(set(range(1, 131)) | edges | {w - 1 for w in edges} | {w + 1 for w in edges})


def _chunks_of(width: int) -> list[int]:
    """Every power-of-two chunk up to the width's tile; for wide rows the last few, as the
    column loop takes them (at most 32 chunks)."""
    top = _next_power_of_two(width)
    chunks = [1 << k for k in range(top.bit_length()) if width <= 64 * (1 << k)]
    return chunks if width <= 130 else [c for c in chunks if c >= top // 32]


WIDTHS = _widths()


def test_an_unpeeled_tile_counts_the_additions_of_its_tree() -> None:
    wrong = []
    for width in WIDTHS:
        for block in (_next_power_of_two(width), 2 * _next_power_of_two(width)):
            brute = _tree(_tile(block, width))
            for path in ("one_row", "multi_row"):
                if eb.layout_adds(width, path, block) != brute:
                    wrong.append((width, path, block, eb.layout_adds(width, path, block), brute))
            if eb.tree_adds(width) != brute:
                wrong.append((width, "tree_adds", block, eb.tree_adds(width), brute))
    assert not wrong, f"(width, path, block, counted, brute force): {wrong[:6]}"


def test_a_column_loop_counts_its_chunk_sums_and_its_tree() -> None:
    """Chunks of every power of two across every width, at each chunk's multiple and one past:
    a count of ``floor(width / chunks)`` lanes is one short where two chunks cover one lane
    more than a chunk."""
    wrong = []
    checked_one_past = 0
    for width in WIDTHS:
        for chunk in _chunks_of(width):
            num_chunks = -(-width // chunk)
            brute = _chunked(width, chunk=chunk, num_chunks=num_chunks)
            counted = eb.layout_adds(width, "column_loop", chunk)
            direct = eb.tree_adds(width, num_chunks)
            if counted != brute or direct != brute:
                wrong.append((width, chunk, num_chunks, counted, direct, brute))
            checked_one_past += width % chunk == 1 and num_chunks == 2
    assert not wrong, f"(width, chunk, chunks, layout_adds, tree_adds, brute): {wrong[:6]}"
    assert checked_one_past >= 8  # widths one past a chunk were walked


def _one_tile(body: int, block: int) -> int:
    return _tree(_tile(block, body))


def _split_tiles(body: int, first: int) -> int:
    """The split body: a tile of ``first`` lanes, then the rest (at most ``first``) added."""
    return _add(_tree(_tile(first, body)), _tree(_tile(first, body - first)))


@pytest.mark.parametrize("peel", [4, 8])  # 16 bytes of float32, of a 2-byte dtype
def test_a_peeled_row_is_covered_and_the_cover_is_reached(peel: int) -> None:
    """Every head length (every row offset modulo PEEL), the body as one power-of-two tile, as
    the split body's two tiles, or in chunks: the bound covers each count, and is the count
    of some row of each path (a bound one addition loose would fail that)."""
    short, reached = [], {"one_row": 0, "split": 0, "column_loop": 0}
    for width in [w for w in WIDTHS if w >= 2 * peel and w % peel]:
        block = _next_power_of_two(width)
        tilings = [("one_row", block, partial(_one_tile, block=block))]
        if width > block // 2 + 1:
            tilings.append(("split", block // 2, partial(_split_tiles, first=block // 2)))
        for chunk in _chunks_of(width)[-3:]:
            body_sum = partial(_chunked, chunk=chunk, num_chunks=-(-width // chunk))
            tilings.append(("column_loop", chunk, body_sum))
        for name, lanes, body_sum in tilings:
            path = "one_row" if name == "split" else name
            counted = eb.layout_adds(width, path, lanes, peel)
            for head in range(peel):
                brute = _peeled(width, peel, head, body_sum)
                if brute > counted:
                    short.append((width, name, lanes, head, counted, brute))
                reached[name] += brute == counted
    assert not short, f"(width, path, block, head, counted, brute force): {short[:6]}"
    assert all(reached.values()), reached
