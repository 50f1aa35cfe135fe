"""The batch-invariance certificate launches the layout of every side of every row threshold
of the layout rule: wherever the rule's layout changes at a threshold (read from
``kernels.layout``: its fixed row thresholds, the four-programs-per-SM halvings, the byte
thresholds of the tile's stream and the column loop), the certificate's launches include the
layout on both sides, at a batch size that gets it. A certificate of the batch of 1 alone, or of
some thresholds only, fails here.

The launches themselves are replaced by a recorder (the real ones are
test_kernel_invariance.py's), so the widths can be wide and the batch sizes large.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kernels.instruments import invariance as inv
from kernels.layout import (
    LOOP_PROBLEM_BYTES,
    ODD_LOOP_ROWS,
    STREAM_TILE_BYTES,
    cdiv,
    choose_config,
    row_thresholds,
    sm_count_for,
)

DEVICE = torch.device("cpu")
SM = sm_count_for(DEVICE)

# (dtype, width): short rows (row-count halvings, 16384 rows), one-row tiles (the stream's
# bytes; 2-byte partial rows load the weight early within one wave), odd 2-byte rows
# (ODD_LOOP_ROWS), rows that turn into the column loop past LOOP_PROBLEM_BYTES.
CASES = (
    ("float32", 70),
    ("bfloat16", 1000),
    ("float16", 4096),
    ("bfloat16", 2501),
    ("float32", 4096),
    ("bfloat16", 64),
    ("bfloat16", 3000),
)


def _thresholds(width: int, itemsize: int) -> set[int]:
    """The first row count past each threshold of the rule for this width, from
    ``kernels.layout``'s own constants and functions."""
    row_bytes = width * itemsize
    starts = set(row_thresholds(SM))
    starts.add(ODD_LOOP_ROWS + 1)
    starts.update((4 * SM - 1) * 2**k + 1 for k in range(13))  # four programs per SM
    starts.update({STREAM_TILE_BYTES // row_bytes + 1, cdiv(LOOP_PROBLEM_BYTES, row_bytes)})
    return {t for t in starts if t >= 2}


def _changes(width: int, itemsize: int) -> list[tuple[int, object, object]]:
    """``(threshold, layout below, layout at)`` wherever the rule's layout changes."""
    found = []
    for start in sorted(_thresholds(width, itemsize)):
        below = choose_config(start - 1, width, itemsize, SM)
        at = choose_config(start, width, itemsize, SM)
        if below != at:
            found.append((start, below, at))
    return found


def _certified(monkeypatch, width: int, dtype: str):
    """The certificate of two rows of ``width`` and the layouts it launched."""
    launched = []

    def record(x, weight, eps, config, position, row_stride):
        launched.append(config)
        return x.clone()

    monkeypatch.setattr(inv, "_launch_at", record)
    x = np.ones((2, width))
    cert = inv.certify(x, np.ones(width), 1e-6, dtype, DEVICE)
    return cert, launched


@pytest.mark.parametrize(("dtype", "width"), CASES)
def test_the_certificate_launches_both_sides_of_every_threshold(monkeypatch, dtype, width):
    itemsize = torch.empty((), dtype=getattr(torch, dtype)).element_size()
    changes = _changes(width, itemsize)
    assert changes, f"no threshold changes the layout of {dtype} rows of {width}: a useless case"
    cert, launched = _certified(monkeypatch, width, dtype)
    certified = set(launched)
    for start, below, at in changes:
        assert below in certified, f"{start - 1} rows: {below} never certified"
        assert at in certified, f"{start} rows: {at} never certified"
    # Each batch size is one the rule gives its layout at: the certificate says what it ran.
    assert cert.batch_sizes[0] == 1
    by_batch = {}
    for entry in cert.launches:
        by_batch.setdefault(entry["batch_size"], set()).add(
            (entry["path"], entry["block"], entry["num_warps"], entry["rows_per_program"])
        )
    assert sorted(by_batch) == sorted(cert.batch_sizes)
    for batch in cert.batch_sizes:
        config = choose_config(batch, width, itemsize, SM)
        described = (config.path, config.block, config.num_warps, config.rows_per_program)
        assert by_batch[batch] == {described}, batch
    assert len(cert.batch_sizes) >= 1 + len({at for _, _, at in changes} - {changes[0][1]})


@pytest.mark.parametrize(("dtype", "width"), CASES)
def test_the_batch_sizes_are_where_each_layout_first_appears(monkeypatch, dtype, width):
    # Between two thresholds the layout is constant, so each layout first appears at 1 row or
    # at a threshold: the certificate's batch sizes are exactly those rows, the smallest batch
    # that gets each layout it certifies (not a power of two somewhere past it).
    itemsize = torch.empty((), dtype=getattr(torch, dtype)).element_size()
    first = {choose_config(1, width, itemsize, SM): 1}
    for start, _, at in _changes(width, itemsize):
        first.setdefault(at, start)
    cert, _ = _certified(monkeypatch, width, dtype)
    assert list(cert.batch_sizes) == sorted(first.values())


def test_the_cases_meet_every_kind_of_threshold() -> None:
    # The fixed row thresholds, a halving of the rows per program and both byte thresholds
    # each change the layout of some case above.
    met = set()
    for dtype, width in CASES:
        itemsize = torch.empty((), dtype=getattr(torch, dtype)).element_size()
        for start, _, _ in _changes(width, itemsize):
            row_bytes = width * itemsize
            if start in row_thresholds(SM):
                met.add("row threshold")
            if start == STREAM_TILE_BYTES // row_bytes + 1:
                met.add("stream bytes")
            if start == cdiv(LOOP_PROBLEM_BYTES, row_bytes):
                met.add("loop bytes")
            if (start - 1) % (4 * SM - 1) == 0:
                met.add("programs per SM")
    assert met == {"row threshold", "stream bytes", "loop bytes", "programs per SM"}
    starts = {
        start
        for dtype, width in CASES
        for start, _, _ in _changes(width, torch.empty((), dtype=getattr(torch, dtype)).itemsize)
    }
    assert {ODD_LOOP_ROWS + 1, 16385} <= starts
    assert starts & (row_thresholds(SM) - {ODD_LOOP_ROWS + 1, 16385}), "no one-wave threshold"
