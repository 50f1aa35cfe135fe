"""Peeled one-row tiles: head, 16-byte aligned body, tail, for widths no vector divides.

The peel changes which lanes hold a row's elements, so these tests pin: when it applies (at
its bounds and one step past), that every head length (0..PEEL-1) gives the right row, that the
tail mutants touch exactly the lanes they touch in an unpeeled tile (same out-of-bounds
writes), and that it is off where x and y rows would start differently. Interpreter on a CPU,
compiled on a GPU.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import kernels
from kernels.layout import LaunchConfig, block_for, peel_elements

DEVICE = "cuda" if kernels.MODE == "compiled" else "cpu"
TILE = LaunchConfig(False, 128, 2)


@pytest.mark.parametrize(
    ("width", "itemsize", "strides", "config", "expected"),
    [
        (16, 2, (16, 16), TILE, 0),  # a whole vector divides the width: nothing to peel
        (15, 2, (15, 15), TILE, 0),  # one step under two vectors: too short
        (16 + 1, 2, (17, 17), TILE, 8),  # odd, two vectors and one: peeled in 8s
        (8, 4, (8, 8), TILE, 0),
        (9, 4, (9, 9), TILE, 4),  # fp32: vectors of 4
        (7, 4, (7, 7), TILE, 0),  # under two fp32 vectors
        (70, 2, (70, 70), TILE, 8),  # even but not a multiple of 8
        (64, 2, (64, 67), TILE, 0),  # strides differ modulo 8: x and y heads would differ
        (64, 2, (67, 75), TILE, 8),  # 67 and 75 agree modulo 8
        (70, 2, (70, 70), LaunchConfig(False, 128, 2, 2), 0),  # multi-row tiles do not peel
        (70, 2, (70, 70), LaunchConfig(True, 32, 2), 8),  # the column loop of single rows does
        (70, 2, (70, 70), LaunchConfig(True, 32, 2, 2), 0),  # blocks of 2 rows do not
        (70, 2, (70, 70), LaunchConfig(False, 128, 2, peel=False), 0),
    ],
)
def test_peel_applies_where_it_keeps_16_byte_accesses(width, itemsize, strides, config, expected):
    from kernels.layout import vector_width

    vec = vector_width(width, *strides, itemsize)
    assert peel_elements(config, width, vec, *strides, itemsize) == expected


def _reference(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + eps) * weight


LAYOUTS = {
    "tile": lambda width: LaunchConfig(False, block_for(width), 4),
    # A grid of 8 programs over 16 rows (bf16) or 8 (fp32): each program takes every 8th row.
    "persistent_tile": lambda width: LaunchConfig(False, block_for(width), 4, programs=8),
    "loop": lambda width: LaunchConfig(True, 256, 4, unroll=False),
    "persistent_loop": lambda width: LaunchConfig(True, 256, 4, programs=3),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize(("dtype", "peel"), [("bfloat16", 8), ("float32", 4)])
def test_every_head_length_gives_the_right_row(dtype: str, peel: int, layout: str) -> None:
    # Row stride 1001 (odd): row r starts r mod PEEL elements past a vector boundary, so the
    # 2*PEEL rows take every head length, twice.
    rng = np.random.default_rng(3)
    rows, width = 2 * peel, 997
    x = rng.standard_normal((rows, width)) * 4.0
    weight = rng.standard_normal(width)
    config = LAYOUTS[layout](width)
    run = kernels.run_checked(
        x, weight, eps=1e-6, dtype=dtype, row_stride=1001, config=config, device=DEVICE
    )
    assert run.peel == peel
    assert run.oob_writes == ()
    rounded = torch.from_numpy(x).to(kernels.SUPPORTED_DTYPES[dtype]).double().numpy()
    w_rounded = torch.from_numpy(weight).to(kernels.SUPPORTED_DTYPES[dtype]).double().numpy()
    expected = _reference(rounded, w_rounded, 1e-6)
    tolerance = 4e-2 if dtype == "bfloat16" else 1e-5
    np.testing.assert_allclose(run.y, expected, atol=tolerance, rtol=tolerance)


@pytest.mark.parametrize(
    ("programs", "rows", "grid"),
    [
        (8, 21, 8),  # 21 rows on 8 programs: 3, 3, 3, 3, 3, 2, 2, 2 rows each
        (12, 21, 8),  # rounded down to a multiple of PEEL (8), so a program's rows share a head
        (7, 21, 8),  # at least PEEL programs
        (64, 21, 21),  # no more programs than rows
    ],
)
def test_a_persistent_peeled_tile_gives_the_one_row_tile_bits(
    programs: int, rows: int, grid: int
) -> None:
    rng = np.random.default_rng(11)
    x = rng.standard_normal((rows, 997)) * 3.0
    weight = rng.standard_normal(997)
    runs = {
        count: kernels.run_checked(
            x,
            weight,
            eps=1e-6,
            dtype="bfloat16",
            row_stride=1001,
            config=LaunchConfig(False, 1024, 4, programs=count),
            device=DEVICE,
        )
        for count in (0, programs)
    }
    assert runs[programs].peel == runs[0].peel == 8
    assert runs[0].programs == rows
    assert runs[programs].programs == grid
    assert runs[programs].oob_writes == ()
    np.testing.assert_array_equal(runs[programs].y, runs[0].y)


@pytest.mark.parametrize("layout", ["tile", "persistent_tile", "loop"])
@pytest.mark.parametrize("mutant", ["unmasked_store", "masked_tail_inclusion"])
@pytest.mark.parametrize("row_stride", [70, 75])
def test_tail_mutants_touch_the_same_lanes_peeled_or_not(
    mutant: str, row_stride: int, layout: str
) -> None:
    loop = layout == "loop"
    programs = 8 if layout == "persistent_tile" else 0
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 70))
    runs = {
        peel: kernels.run_checked(
            x,
            np.ones(70),
            eps=1e-6,
            dtype="bfloat16",
            row_stride=row_stride,
            mutant=mutant,
            config=LaunchConfig(loop, 32 if loop else 128, 2, programs=programs, peel=peel),
            device=DEVICE,
        )
        for peel in (True, False)
    }
    assert runs[True].peel == 8
    assert runs[False].peel == 0
    peeled, plain = runs[True], runs[False]
    assert {(w.row, w.address) for w in peeled.oob_writes} == {
        (w.row, w.address) for w in plain.oob_writes
    }
    if mutant == "unmasked_store":
        assert peeled.oob_writes  # past each row: the guard or the next row's padding
    else:
        # Lanes past the row feed the sum: the rows come out wrong alike, peeled or not.
        assert not np.allclose(peeled.y, _reference(x, np.ones(70), 1e-6), atol=5e-2)
        np.testing.assert_allclose(peeled.y, plain.y, atol=5e-2, rtol=5e-2)


def test_strides_that_differ_modulo_the_vector_are_not_peeled_and_still_right() -> None:
    rng = np.random.default_rng(9)
    x_full = torch.from_numpy(rng.standard_normal((6, 67))).to(torch.bfloat16).to(DEVICE)
    x = x_full[:, :64]  # stride 67
    weight = torch.from_numpy(rng.standard_normal(64)).to(torch.bfloat16).to(DEVICE)
    out = torch.empty(6, 64, dtype=torch.bfloat16, device=DEVICE)  # stride 64
    launched = kernels.launcher.launch_kernel(
        x, weight, out, 1e-6, config=LaunchConfig(False, 64, 2)
    )
    assert launched.peel == 0
    expected = _reference(x.double().cpu().numpy(), weight.double().cpu().numpy(), 1e-6)
    np.testing.assert_allclose(out.double().cpu().numpy(), expected, atol=4e-2, rtol=4e-2)
