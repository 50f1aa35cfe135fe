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
from kernels.geometry import peel_elements
from kernels.layout import LaunchConfig, block_for

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
    from kernels.geometry import vector_width

    vec = vector_width(width, *strides, itemsize)
    assert peel_elements(config, width, vec, *strides, itemsize) == expected


def _reference(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + eps) * weight


LAYOUTS = {
    "tile": lambda width: LaunchConfig(False, block_for(width), 4),
    # A body of two tiles (the rule splits 2-byte rows whose rest is small; any split runs).
    "split_tile": lambda width: LaunchConfig(
        False, block_for(width) // 2, 4, block2=block_for(width) // 2
    ),
    "split_tile_early_weight": lambda width: LaunchConfig(
        False, block_for(width) // 2, 4, w_early=True, block2=block_for(width) // 2
    ),
    "loop": lambda width: LaunchConfig(True, 256, 4),
    "streaming_loop": lambda width: LaunchConfig(True, 256, 4, stream_store=True),
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


@pytest.mark.parametrize("loop", [False, True])
@pytest.mark.parametrize("mutant", ["unmasked_store", "masked_tail_inclusion"])
@pytest.mark.parametrize("row_stride", [70, 75])
def test_tail_mutants_touch_the_same_lanes_peeled_or_not(
    mutant: str, row_stride: int, loop: bool
) -> None:
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
            config=LaunchConfig(loop, 32 if loop else 128, 2, peel=peel),
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


@pytest.mark.parametrize("mutant", ["unmasked_store", "masked_tail_inclusion"])
def test_tail_mutants_act_on_the_lanes_of_a_split_body_past_the_row(mutant: str) -> None:
    # 70 lanes as 64 + 16 (the rule's split for a small rest): the tile reaches 10 lanes past
    # the row, where the unsplit tile reaches 58; the mutants act on those and are caught.
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 70))
    runs = {
        name: kernels.run_checked(
            x,
            np.ones(70),
            eps=1e-6,
            dtype="bfloat16",
            row_stride=75,
            mutant=mutant,
            config=config,
            device=DEVICE,
        )
        for name, config in (
            ("split", LaunchConfig(False, 64, 2, block2=16)),
            ("whole", LaunchConfig(False, 128, 2)),
        )
    }
    split, whole = runs["split"], runs["whole"]
    assert (split.block, split.peel) == (80, 8)
    split_oob = {(w.row, w.address) for w in split.oob_writes}
    assert split_oob <= {(w.row, w.address) for w in whole.oob_writes}
    if mutant == "unmasked_store":
        assert split_oob
        assert len(split_oob) < len(whole.oob_writes)
    else:
        assert not np.allclose(split.y, _reference(x, np.ones(70), 1e-6), atol=5e-2)


def test_a_split_is_two_powers_of_two_that_fit_the_row() -> None:
    from kernels.geometry import kernel_constexprs, settled

    split = LaunchConfig(False, 2048, 2, block2=16)
    # Peeled: the body's two tiles cover the row past its head.
    assert kernel_constexprs(split, 2053, 1, 1, 8)["BLOCK2"] == 16
    kernel_constexprs(split, 2064, 1, 1, 8)  # at the bound: 2048 + 16
    with pytest.raises(ValueError, match=r"block \+ config\.block2 must be >= width \(2065\)"):
        kernel_constexprs(split, 2065, 1, 1, 8)
    with pytest.raises(ValueError, match=r"block2 \(16\) of a peeled row needs rows_per_program 1"):
        kernel_constexprs(LaunchConfig(False, 2048, 2, 2, block2=16), 2053, 1, 1, 8)
    # Unpeeled (strides not peeled): two tiles while the first is narrower than the row and
    # both reach its end; otherwise the whole power of two.
    for width in (2049, 2053, 2064):
        assert settled(split, width, 0) == split
    unpeeled = kernel_constexprs(split, 2053, 1, 1, 0)
    assert (unpeeled["BLOCK"], unpeeled["BLOCK2"], unpeeled["EVEN"]) == (2048, 16, False)
    assert kernel_constexprs(split, 2064, 16, 1, 0)["EVEN"]  # the tiles end at the row's end
    assert settled(split, 2065, 0) == LaunchConfig(False, 4096, 2)
    assert settled(split, 2048, 0) == LaunchConfig(False, 2048, 2)
    with pytest.raises(ValueError, match=r"block \(2048\) of an unpeeled split must be < width"):
        kernel_constexprs(split, 2048, 1, 1, 0)
    with pytest.raises(ValueError, match=r"config\.block2 must be 0 or a power of two; got 24"):
        kernels.launcher.launch(
            torch.zeros(2, 2053, dtype=torch.bfloat16, device=DEVICE),
            torch.ones(2053, dtype=torch.bfloat16, device=DEVICE),
            torch.zeros(2, 2053, dtype=torch.bfloat16, device=DEVICE),
            1e-6,
            config=LaunchConfig(False, 2048, 2, block2=24),
        )
    with pytest.raises(ValueError, match=r"config\.block2 \(24\) must be a power of two"):
        kernel_constexprs(LaunchConfig(False, 2048, 2, block2=24), 2053, 1, 1, 0)


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
