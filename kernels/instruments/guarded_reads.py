"""Reads out of bounds, seen under the interpreter: every load a user's kernel makes is checked
against the guarded buffers of its run.

A user kernel's ``x``, weight and output each sit in a buffer with a poisoned guard before and
after the data (and, for ``x`` and the output, a row stride's padding between rows). On a GPU,
compute-sanitizer sees a read past an allocation; a read into a guard stays inside one and only
shows if the output used the poison. Under the interpreter every load goes through
``interpreter_builder.create_masked_load`` with its addresses and mask, so :func:`watching`
checks each active lane's address: one that falls in a watched buffer but outside its data is a
read out of bounds, named by buffer and element. Addresses outside every watched buffer are not
judged (a launcher may read tensors of its own).
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

#: Most out-of-bounds reads kept per buffer and run (the count goes on).
MAX_KEPT = 4096

_state = threading.local()


class Watch:
    """The buffers of one run: ``name -> (base address, itemsize, valid element mask)``, and the
    out-of-bounds reads found (element indices into each buffer)."""

    def __init__(self) -> None:
        self.buffers: dict[str, tuple[int, int, np.ndarray]] = {}
        self.found: dict[str, list[int]] = {}
        self.counts: dict[str, int] = {}

    def add(self, name: str, base: int, itemsize: int, valid: np.ndarray) -> None:
        self.buffers[name] = (int(base), int(itemsize), np.asarray(valid, dtype=bool))

    def check(self, addresses: np.ndarray, mask: np.ndarray) -> None:
        addresses = np.asarray(addresses)
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != addresses.shape:
            mask = np.broadcast_to(mask, addresses.shape)
        active = addresses[mask] if not mask.all() else addresses.ravel()
        if not active.size:
            return
        low, high = int(active.min()), int(active.max())
        for name, (base, itemsize, valid) in self.buffers.items():
            end = base + itemsize * valid.size
            if high < base or low >= end:  # this load touches another buffer
                continue
            inside = (
                active if low >= base and high < end else active[(active >= base) & (active < end)]
            )
            index = (inside.astype(np.int64) - base) // itemsize
            bad = ~valid[index]
            if not bad.any():
                continue
            found = np.unique(index[bad])
            self.counts[name] = self.counts.get(name, 0) + int(found.size)
            kept = self.found.setdefault(name, [])
            kept.extend(int(i) for i in found[: max(0, MAX_KEPT - len(kept))])


@contextlib.contextmanager
def watching(watch: Watch) -> Iterator[Watch]:
    """Check every interpreter load against ``watch``'s buffers inside the block."""
    install()
    previous = getattr(_state, "watch", None)
    _state.watch = watch
    try:
        yield watch
    finally:
        _state.watch = previous


_installed = False


def install() -> bool:
    """Wrap the interpreter's masked load once (its plain load calls it); False without one."""
    global _installed
    if _installed:
        return True
    try:
        from triton.runtime import interpreter
    except ImportError:  # pragma: no cover
        return False
    builder = getattr(interpreter, "interpreter_builder", None)
    load = getattr(builder, "create_masked_load", None)
    if load is None:
        return False

    @functools.wraps(load)
    def masked_load(ptrs: Any, mask: Any, *args: Any, **kwargs: Any) -> Any:
        watch = getattr(_state, "watch", None)
        if watch is not None:
            watch.check(ptrs.data, mask.data)
        return load(ptrs, mask, *args, **kwargs)

    builder.create_masked_load = masked_load
    _installed = True
    return True


def strided_valid(guard: int, rows: int, width: int, stride: int) -> np.ndarray:
    """The data elements of a buffer of ``2 * guard + rows * stride`` elements: ``width`` of
    every row of ``stride`` after a guard of ``guard``."""
    valid = np.zeros(2 * guard + rows * stride, dtype=bool)
    for row in range(rows):
        start = guard + row * stride
        valid[start : start + width] = True
    return valid


def describe(
    reads: tuple[tuple[str, int, tuple[int, ...]], ...],
    rows: int,
    width: int,
    x_stride: int,
    out_stride: int,
    guard: int,
) -> str:
    """Reads out of bounds in words: per buffer, how many and where the first were (row and
    lane of x or the output, lane of the weight; a guard or a row's padding)."""
    parts = []
    for name, count, first in reads:
        places = []
        for index in first[:3]:
            offset = index - guard
            if offset < 0:
                places.append(f"{-offset} element(s) before its first")
            elif name == "weight":
                places.append(f"lane {offset}" + (" (past the width)" if offset >= width else ""))
            else:
                stride = x_stride if name == "x" else out_stride
                row, lane = divmod(offset, stride)
                if row >= rows:
                    places.append(f"{offset - rows * stride + 1} element(s) past its last row")
                else:
                    places.append(
                        f"row {row} lane {lane}" + (" (padding)" if lane >= width else "")
                    )
        more = ", ..." if count > len(places) else ""
        parts.append(f"{count} of {name} ({', '.join(places)}{more})")
    return "; ".join(parts)


def checked_reads(run: Any) -> tuple[int, str]:
    """How many reads out of bounds a bundled kernel's checked run (``kernels.instruments.checked``)
    made, and where, in words."""
    reads = getattr(run, "oob_reads", ())
    where = describe(
        reads, run.y.shape[0], run.y.shape[1], run.row_stride, run.out_row_stride, run.guard
    )
    return sum(count for _, count, _ in reads), where
