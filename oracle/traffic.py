"""Modeled traffic ledger: what the simple forward path reads and writes.

A model, not a measurement: it ignores caches, instruction count, launch overhead, alignment,
occupancy and the memory system. It is useful for reviewing fusion, never as a speed claim.
"""

from __future__ import annotations

from dataclasses import dataclass

from oracle.dtypes import ITEMSIZE
from oracle.spec import Problem


@dataclass(frozen=True)
class Traffic:
    """Bytes the forward path touches, as modeled.

    Attributes:
        bytes_read_x: rows * width input elements.
        bytes_read_weight: rows * width weight elements (each program loads the whole weight).
        bytes_read_weight_unique: width weight elements (a lower bound if caches serve repeats).
        bytes_written: rows * width output elements (masked lanes never stored).
        reductions: one per row.
    """

    bytes_read_x: int
    bytes_read_weight: int
    bytes_read_weight_unique: int
    bytes_written: int
    reductions: int
    note: str = "modeled, not measured: ignores caches, launches, alignment and occupancy"

    @property
    def bytes_read(self) -> int:
        return self.bytes_read_x + self.bytes_read_weight

    @property
    def bytes_total(self) -> int:
        return self.bytes_read + self.bytes_written


def ledger(problem: Problem) -> Traffic:
    """Model the bytes read and written by the one-row-per-program forward."""
    item = ITEMSIZE[problem.dtype]
    elements = problem.rows * problem.width
    return Traffic(
        bytes_read_x=elements * item,
        bytes_read_weight=elements * item,
        bytes_read_weight_unique=problem.width * item,
        bytes_written=elements * item,
        reductions=problem.rows,
    )
