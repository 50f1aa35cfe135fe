"""``kernels.run_checked``'s guards: the rstd output is guarded like the output, and both
guards reach past every phantom row a program of several rows holds, so a store of a phantom
row (or any store past either buffer) is an out-of-bounds store, never a write into memory
nobody watches.

The stores here are made by a launch wrapped around the real one (the real kernel stores
nothing out of bounds, which tests/kernels/test_kernel_layout_exact.py holds): each test puts
stores exactly where a faulty kernel would and asserts the run names them.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import kernels
from kernels.instruments import checked
from kernels.layout import LaunchConfig

WIDTH = 64
# Sixteen rows per program: a launch of one row holds fifteen phantom rows.
MULTI = LaunchConfig(False, 64, 1, 16, w_early=True)


def _run(monkeypatch, after_launch, rows: int = 1, config: LaunchConfig = MULTI, stride=WIDTH):
    real = checked.launch_kernel

    def launch(x2d, weight, y2d, eps, *, rstd=None, **kwargs):
        launched = real(x2d, weight, y2d, eps, rstd=rstd, **kwargs)
        after_launch(y2d, rstd)
        return launched

    monkeypatch.setattr(checked, "launch_kernel", launch)
    x = np.random.default_rng(1).standard_normal((rows, WIDTH))
    return kernels.run_checked(
        x, np.ones(WIDTH), eps=1e-6, dtype="float32", row_stride=stride, config=config,
        rstd=True,
    )  # fmt: skip


def _element(tensor: torch.Tensor, offset: int) -> torch.Tensor:
    """The one element ``offset`` elements from ``tensor``'s first (negative: before it)."""
    return torch.as_strided(tensor, (1,), (1,), tensor.storage_offset() + offset)


def test_a_clean_launch_stores_nothing_out_of_bounds(monkeypatch) -> None:
    run = _run(monkeypatch, lambda y2d, rstd: None)
    assert run.oob_writes == ()
    assert run.rstd_oob_writes == 0
    assert run.rstd.shape == (1,)
    assert np.isfinite(run.rstd).all()


@pytest.mark.parametrize("offset", [-1, 1, 15])
def test_a_store_before_or_past_the_rstd_output_is_out_of_bounds(monkeypatch, offset) -> None:
    # One row: element 0 is the row's rrms; -1 is before it, 1..15 are where the fifteen
    # phantom rows of its program would store theirs.
    run = _run(monkeypatch, lambda y2d, rstd: _element(rstd, offset).fill_(0.5))
    assert run.rstd_oob_writes == 1
    assert run.oob_writes == ()


def test_every_phantom_rows_rrms_lands_in_the_rstd_guard(monkeypatch) -> None:
    # A kernel without the row mask on its rstd store: every phantom row of the last program
    # stores an rrms. Each must be counted, the farthest included.
    rows = 3
    phantoms = MULTI.rows_per_program - rows

    def store_phantoms(y2d, rstd):
        for k in range(phantoms):
            _element(rstd, rows + k).fill_(0.25)

    run = _run(monkeypatch, store_phantoms, rows=rows)
    assert run.rstd_oob_writes == phantoms


@pytest.mark.parametrize("stride", [WIDTH, WIDTH + 5])
def test_every_phantom_rows_store_lands_in_the_output_guard(monkeypatch, stride) -> None:
    # A kernel without the row mask on its output: the fifteen phantom rows of a one-row
    # launch store whole rows past the last. Every element is an out-of-bounds store, owned by
    # the last row, and none reaches past the buffer (which would corrupt memory, not fail).
    def store_phantoms(y2d, rstd):
        for k in range(1, MULTI.rows_per_program):
            phantom = torch.as_strided(y2d, (WIDTH,), (1,), y2d.storage_offset() + k * stride)
            phantom.fill_(0.75)

    run = _run(monkeypatch, store_phantoms, stride=stride)
    phantom_elements = (MULTI.rows_per_program - 1) * WIDTH
    assert len(run.oob_writes) == phantom_elements
    assert {write.row for write in run.oob_writes} == {0}
    assert {write.value for write in run.oob_writes} == {0.75}
    last = run.guard + (MULTI.rows_per_program - 1) * stride + WIDTH - 1
    assert max(write.address for write in run.oob_writes) == last
    assert run.buffer.size > last


def test_a_store_past_the_output_after_the_last_row_is_out_of_bounds(monkeypatch) -> None:
    # One-row programs: the element right after the last row and the last guard element.
    config = LaunchConfig(False, 64, 1)

    def store_past(y2d, rstd):
        _element(y2d, 2 * WIDTH + WIDTH).fill_(1.5)
        _element(y2d, -1).fill_(1.5)

    run = _run(monkeypatch, store_past, rows=3, config=config)
    assert sorted(write.address for write in run.oob_writes) == [
        run.guard - 1,
        run.guard + 3 * WIDTH,
    ]
    assert [write.row for write in sorted(run.oob_writes, key=lambda w: w.address)] == [None, 2]
