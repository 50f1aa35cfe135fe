"""Out-of-bounds stores as the lane grid draws them: each write on the lane that made it.

A store is reported as an output address (``row * stride + lane`` in its frame; negative before
row 0). The grid shows programs, not the buffer, so an address is drawn on the tile lane that
can have written it: the masked tail lane of the program whose tile covers the address (a tail
lane stores to ``row * stride + lane`` with ``lane >= width``, the only lanes a mask keeps
from storing). Where the frame places the address on a tile lane but no tail covers it (a
mutant that stores valid lanes at a wrong stride), it is drawn where the frame puts it; an
address no tile of any row reaches (before row 0, past the last tile, or in padding wider than
the tile) goes to a margin row under the grid. Every distinct address is drawn once and counted
once; repeated addresses are one write.

A store into another row's *data* (a tail lane of row ``r`` whose address ``r * stride + lane``
lies inside row ``r + 1``) changes no guard element, and the later program's own store hides it
in the output; only the rows whose same lanes stored into a guard show it. Every program runs
the same code, so :func:`cross_row_stores` infers those stores from the tail lanes the guard saw
(labelled *inferred*).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

#: Most candidate programs looked at per address (tiles overlap only when the stride is
#: smaller than the tile; the layout rule keeps it above half a tile).
MAX_OVERLAP = 64


@dataclass(frozen=True)
class CrossRowStores:
    """Stores into another row's data, inferred from the tail lanes the guard saw storing.

    Attributes:
        rows, lanes: the program row and the tail lane that stores (where the grid draws it).
        addresses: where it stores (``row * stride + lane`` in the run's frame).
        target_rows, target_lanes: the row and lane of the data it lands on.
        seen_rows: for each, the row whose store of the same lane the guard saw.
    """

    rows: np.ndarray
    lanes: np.ndarray
    addresses: np.ndarray
    target_rows: np.ndarray
    target_lanes: np.ndarray
    seen_rows: np.ndarray

    @property
    def count(self) -> int:
        return int(self.rows.size)

    def from_lane(self, row: int, lane: int) -> tuple[int, int, int, int] | None:
        """(address, target row, target lane, seen row) of the store tail lane (row, lane)
        makes; None when it makes none."""
        hit = np.flatnonzero((self.rows == row) & (self.lanes == lane))
        if not hit.size:
            return None
        at = int(hit[0])
        return (
            int(self.addresses[at]),
            int(self.target_rows[at]),
            int(self.target_lanes[at]),
            int(self.seen_rows[at]),
        )

    def into(self, row: int, lane: int) -> list[tuple[int, int]]:
        """(row, lane) of every tail lane whose store lands on data lane (row, lane)."""
        hit = (self.target_rows == row) & (self.target_lanes == lane)
        return [(int(r), int(c)) for r, c in zip(self.rows[hit], self.lanes[hit], strict=True)]

    def lines(self, row: int, lane: int) -> list[str]:
        """The lane details' lines: the cross-row store tail lane (row, lane) makes, and those
        landing on data lane (row, lane) ("stray store from row r, lane l")."""
        lines = []
        made = self.from_lane(row, lane)
        if made is not None:
            address, target_row, target_lane, seen = made
            lines.append(
                f"cross-row STORE (inferred): stores to address {address} = row {target_row}, "
                f"lane {target_lane}, inside row {target_row}'s data, where no guard sees it "
                f"(row {seen}'s lane {lane} stored into a guard, and every program runs the "
                "same code)"
            )
        for source_row, source_lane in self.into(row, lane)[:4]:
            lines.append(
                f"stray store from row {source_row}, lane {source_lane} lands here (cross-row, "
                "inferred); y (kernel) is whichever of the two stores came last"
            )
        return lines


NO_CROSS = CrossRowStores(*(np.zeros(0, dtype=np.int64) for _ in range(6)))


@dataclass(frozen=True)
class OobWrites:
    """Distinct out-of-bounds addresses and where the grid draws them.

    Attributes:
        addresses, frames: each address drawn on a tile lane, and its frame (row stride).
        rows, lanes: the program row and tile lane each of them is drawn on.
        margin, margin_frames: the addresses no tile reaches (drawn in the margin row).
        margin_lanes: the margin-row lane each of them is drawn at.
        cross: the kernel's stores into another row's data (:func:`cross_row_stores`).
    """

    addresses: np.ndarray
    frames: np.ndarray
    rows: np.ndarray
    lanes: np.ndarray
    margin: np.ndarray
    margin_frames: np.ndarray
    margin_lanes: np.ndarray
    cross: CrossRowStores = NO_CROSS

    @property
    def count(self) -> int:
        """Distinct out-of-bounds writes the guard saw (each drawn once)."""
        return int(self.addresses.size + self.margin.size)

    def at(self, row: int, lane: int) -> list[tuple[int, int]]:
        """(address, frame) of the writes drawn on the tile cell (row, lane)."""
        hit = (self.rows == row) & (self.lanes == lane)
        return [
            (int(a), int(f)) for a, f in zip(self.addresses[hit], self.frames[hit], strict=True)
        ]

    def in_margin(self, lane: int) -> list[tuple[int, int]]:
        """(address, frame) of the writes drawn on the margin row's cell ``lane``."""
        hit = self.margin_lanes == lane
        return [
            (int(a), int(f)) for a, f in zip(self.margin[hit], self.margin_frames[hit], strict=True)
        ]


def _empty() -> np.ndarray:
    return np.zeros(0, dtype=np.int64)


NO_WRITES = OobWrites(*(_empty() for _ in range(7)))


def place_writes(
    addresses: tuple[int, ...] | list[int] | np.ndarray,
    *,
    rows: int,
    width: int,
    block: int,
    stride: int,
) -> OobWrites:
    """Where the grid draws each distinct out-of-bounds address (module docstring).

    Args:
        addresses: output addresses in the frame ``row * stride + lane``.
        rows, width, block: the grid (programs, valid lanes, tile lanes).
        stride: the addresses' frame (> 0).
    """
    stride = int(stride)
    unique = np.unique(np.asarray(list(addresses), dtype=np.int64))
    if unique.size == 0:
        return NO_WRITES
    row_of = np.full(unique.shape, -1, dtype=np.int64)
    lane_of = np.full(unique.shape, -1, dtype=np.int64)
    home = np.floor_divide(unique, stride)
    overlap = min(MAX_OVERLAP, -(-block // stride) + 1)
    # Largest covering program first: its tail lane is the nearest one to the address.
    for back in range(overlap):
        row = home - back
        lane = unique - row * stride
        tail = (row >= 0) & (row < rows) & (lane >= width) & (lane < block) & (row_of < 0)
        row_of[tail], lane_of[tail] = row[tail], lane[tail]
    offset = unique - home * stride
    in_frame = (row_of < 0) & (home >= 0) & (home < rows) & (offset < block)
    row_of[in_frame], lane_of[in_frame] = home[in_frame], offset[in_frame]
    drawn = row_of >= 0
    margin = unique[~drawn]
    end = rows * stride
    margin_lanes = np.clip(
        np.where(margin >= end, margin - end, np.mod(margin, stride)), 0, block - 1
    )
    return OobWrites(
        addresses=unique[drawn],
        frames=np.full(int(drawn.sum()), stride, dtype=np.int64),
        rows=row_of[drawn],
        lanes=lane_of[drawn],
        margin=margin,
        margin_frames=np.full(margin.size, stride, dtype=np.int64),
        margin_lanes=margin_lanes.astype(np.int64),
    )


def cross_row_stores(writes: OobWrites, *, rows: int, width: int, stride: int) -> CrossRowStores:
    """The stores into another row's data that ``writes`` (one kernel run's, in the frame
    ``stride``) imply: every tail lane the guard saw storing in some row stores in every row
    (one code for all programs), and where ``row * stride + lane`` lies in another row's valid
    elements no guard can see it.

    Args:
        writes: the run's placed writes (:func:`place_writes`).
        rows, width: the grid's programs and valid lanes.
        stride: the frame of ``writes`` (the output's row stride).
    """
    tail = writes.lanes >= width
    lanes, first = np.unique(writes.lanes[tail], return_index=True)
    if not lanes.size:
        return NO_CROSS
    seen = writes.rows[tail][first]
    row = np.repeat(np.arange(rows, dtype=np.int64), lanes.size)
    lane = np.tile(lanes, rows)
    address = row * int(stride) + lane
    target_row, target_lane = np.divmod(address, int(stride))
    inside = (target_row != row) & (target_row < rows) & (target_lane < width)
    return CrossRowStores(
        rows=row[inside],
        lanes=lane[inside],
        addresses=address[inside],
        target_rows=target_row[inside],
        target_lanes=target_lane[inside],
        seen_rows=np.tile(seen, rows)[inside],
    )


def place_run(
    addresses: tuple[int, ...] | list[int] | np.ndarray,
    *,
    rows: int,
    width: int,
    block: int,
    stride: int,
) -> OobWrites:
    """One kernel run's stores: :func:`place_writes` with the :func:`cross_row_stores` they
    imply."""
    placed = place_writes(addresses, rows=rows, width=width, block=block, stride=stride)
    cross = cross_row_stores(placed, rows=rows, width=width, stride=stride)
    return dataclasses.replace(placed, cross=cross)


def merge(first: OobWrites, second: OobWrites) -> OobWrites:
    """Both sets of writes (the lane model's and the kernel's): an address of one frame once;
    the kernel's (``second``) cross-row stores."""
    if second.count == 0:
        return first
    if first.count == 0:
        return second
    cells: dict[tuple[int, int], tuple[int, int]] = {}
    margin: dict[tuple[int, int], int] = {}
    for writes in (first, second):
        for a, f, r, c in zip(
            writes.addresses, writes.frames, writes.rows, writes.lanes, strict=True
        ):
            cells.setdefault((int(f), int(a)), (int(r), int(c)))
        for a, f, c in zip(writes.margin, writes.margin_frames, writes.margin_lanes, strict=True):
            margin.setdefault((int(f), int(a)), int(c))
    keys = sorted(cells)
    margin_keys = sorted(margin)
    return OobWrites(
        addresses=np.asarray([a for _, a in keys], dtype=np.int64),
        frames=np.asarray([f for f, _ in keys], dtype=np.int64),
        rows=np.asarray([cells[k][0] for k in keys], dtype=np.int64),
        lanes=np.asarray([cells[k][1] for k in keys], dtype=np.int64),
        margin=np.asarray([a for _, a in margin_keys], dtype=np.int64),
        margin_frames=np.asarray([f for f, _ in margin_keys], dtype=np.int64),
        margin_lanes=np.asarray([margin[k] for k in margin_keys], dtype=np.int64),
        cross=second.cross if second.cross.count else first.cross,
    )


def where_text(address: int, *, rows: int, width: int, stride: int) -> str:
    """Where one address lies in the buffer, in words ("row 1 lane 70 (padding)", ...)."""
    if address < 0:
        return f"{-address} element(s) before row 0"
    row, lane = divmod(int(address), stride)
    if row >= rows:
        return f"{address - rows * stride + 1} element(s) past the end of the buffer"
    return f"row {row} lane {lane}" + (" (padding)" if lane >= width else "")


def write_lines(stored: list[tuple[int, int]], *, rows: int, width: int) -> list[str]:
    """ "out-of-bounds WRITE: stored to ..." lines for the (address, frame) writes of one
    cell (the first four, then how many more)."""
    lines = []
    for address, frame in stored[:4]:
        where = where_text(address, rows=rows, width=width, stride=frame)
        lines.append(f"out-of-bounds WRITE: stored to address {address} ({where})")
    if len(stored) > 4:
        lines.append(f"... and {len(stored) - 4} more write(s) on this cell")
    return lines
