"""The two oracle paths: hand-checked arithmetic, agreement with each other, dtype emulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from oracle import compare as cmp
from oracle import fixtures, scalar, tiled
from oracle.dtypes import bfloat16_bits, from_bfloat16_bits, round_to_dtype
from oracle.spec import make_problem, synthetic_problem
from oracle.traffic import ledger


def test_hand_checkable_row_scalar_and_tiled():
    # x = [3, 4]: squares 9 + 16 = 25, mean square 25 / 2 = 12.5 (the true width, not the tile).
    eps = 1e-6
    problem = make_problem([[3.0, 4.0]], [0.5, -2.0], eps=eps)
    rrms = 1.0 / math.sqrt(12.5 + eps)
    expected_y = [3.0 * rrms * 0.5, 4.0 * rrms * -2.0]  # ~[0.42426, -2.26274]

    ref = scalar.reference(problem)
    assert ref.sum_squares[0] == 25.0
    assert ref.mean_square[0] == 12.5
    assert ref.rrms[0] == pytest.approx(rrms, rel=1e-15)
    assert ref.y[0] == pytest.approx(expected_y, rel=1e-7)
    assert expected_y[0] == pytest.approx(0.4242640, rel=1e-6)

    model = tiled.model(problem)
    assert model.block == 2
    assert model.masked_lanes == 0
    assert model.sum_squares[0] == np.float32(25.0)
    assert model.mean_square[0] == np.float32(12.5)
    assert model.rrms[0] == pytest.approx(rrms, rel=1e-6)
    assert model.y[0] == pytest.approx(expected_y, rel=1e-6)


def test_width_70_tile_and_masked_lanes_are_exposed():
    problem = synthetic_problem(3, 70, seed=1)
    model = tiled.model(problem)
    assert (model.block, model.valid_lanes, model.masked_lanes) == (128, 70, 58)
    assert model.mask.sum() == 70
    # Tail lanes hold the poison as loaded, and contribute exactly zero to the tree.
    assert np.all(model.lanes[:, 70:] == np.float32(tiled.POISON))
    assert np.all(model.squares[:, 70:] == 0)
    # The tree halves each stage and ends at one lane holding the sum of squares.
    assert [s.shape[1] for s in model.stages] == [128, 64, 32, 16, 8, 4, 2, 1]
    np.testing.assert_array_equal(model.stages[-1][:, 0], model.sum_squares)
    np.testing.assert_allclose(model.sum_squares, (problem.x**2).sum(axis=1), rtol=1e-6)
    # Divisor is the true width (70), not the tile (128).
    np.testing.assert_allclose(model.mean_square, model.sum_squares / 70, rtol=1e-7)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize(
    ("rows", "width", "seed"), [(1, 1, 0), (3, 70, 1), (2, 255, 2), (5, 1000, 3)]
)
def test_scalar_and_tiled_agree_on_random_inputs(dtype, rows, width, seed):
    problem = synthetic_problem(rows, width, seed=seed, dtype=dtype)
    ref = scalar.reference(problem)
    model = tiled.model(problem)
    out = cmp.compare(model.y, ref.y, cmp.TOLERANCES[dtype])
    assert out.passed, out.describe()
    inter = cmp.compare(
        np.concatenate([model.mean_square, model.rrms]),
        np.concatenate([ref.mean_square, ref.rrms]),
        cmp.INTERMEDIATE_TOLERANCE,
    )
    assert inter.passed, inter.describe()


@pytest.mark.parametrize(
    "fixture",
    [f for f in fixtures.FIXTURES if f.check != "rejection"],
    ids=lambda f: f.name,
)
def test_scalar_and_tiled_agree_on_every_valid_fixture(fixture):
    problem = fixture.build()
    ref = scalar.reference(problem)
    model = tiled.model(problem)
    out = cmp.compare(model.y, ref.y, cmp.TOLERANCES[problem.dtype])
    assert out.passed, f"{fixture.name}: {out.describe()}"
    assert model.gap_writes == ()


def test_zero_row_is_finite_because_eps_is_inside_the_root():
    problem = make_problem([[0.0, 0.0, 0.0]], [1.0, 1.0, 1.0], eps=1e-6)
    ref = scalar.reference(problem)
    assert ref.rrms[0] == pytest.approx(1000.0)  # 1 / sqrt(0 + 1e-6)
    assert np.all(ref.y == 0)
    assert np.all(np.isfinite(tiled.model(problem).y))
    # Without eps the same row is not finite: the reason the fixture exists.
    assert not np.all(np.isfinite(tiled.model(problem, mutant="missing_epsilon").y))


def test_padded_stride_output_gaps_stay_poisoned():
    problem = synthetic_problem(3, 70, seed=4, row_stride=96)
    model = tiled.model(problem, poison=-5.0)
    buffer = model.out_buffer.reshape(3, 96)
    assert np.all(buffer[:, 70:] == -5.0)
    assert model.gap_writes == ()
    np.testing.assert_array_equal(buffer[:, :70], model.y)


def test_bfloat16_rounding_is_nearest_even_like_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    values = np.concatenate(
        [rng.standard_normal(4000) * 10.0 ** rng.integers(-6, 6, 4000), [0.0, -0.0, 1.0, 3.0]]
    ).astype(np.float32)
    # Exact ties: 1 + 2**-8 (halfway between two bfloat16 values) rounds to the even one.
    ties = np.array([1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8)], dtype=np.float32)
    values = np.concatenate([values, ties])
    ours = bfloat16_bits(values)
    theirs = torch.from_numpy(values).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(from_bfloat16_bits(ours)[-3:], [1.0, 1 + 2**-6, -1.0])


def test_float16_rounding_matches_numpy_and_saturates_to_inf():
    np.testing.assert_array_equal(round_to_dtype([1 + 2**-11], "float16"), [1.0])  # tie to even
    assert np.isinf(round_to_dtype([1e6], "float16"))[0]


def test_traffic_ledger_counts_by_hand():
    problem = synthetic_problem(4, 70, seed=0, dtype="bfloat16")
    model = ledger(problem)
    # 4 rows x 70 elements x 2 bytes for x, for w (per program) and for y; one reduction a row.
    assert model.bytes_read_x == 560
    assert model.bytes_read_weight == 560
    assert model.bytes_read_weight_unique == 140
    assert model.bytes_written == 560
    assert model.bytes_total == 1680
    assert model.reductions == 4
    assert "not measured" in model.note
