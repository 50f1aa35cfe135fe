"""Where an output parts from the model, read from the output alone: the inferred rrms and the
signatures of known bugs, on outputs built by hand so each expectation can be checked."""

from __future__ import annotations

import math

import numpy as np
import pytest

from oracle.diagnose import SIGNATURE_TOLERANCE, diagnose, inferred_rrms

EPS = 1e-6


def _problem(rows=4, width=70, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, width))
    w = rng.uniform(-2.0, 2.0, width)
    rrms = 1.0 / np.sqrt((x * x).mean(axis=1) + EPS)
    return x, w, rrms, x * rrms[:, None] * w


def test_inferred_rrms_of_a_hand_row() -> None:
    # x = (3, 4), w = (0.5, -2): mean square 12.5, rrms 1/sqrt(12.5); y = x * rrms * w.
    x, w = np.array([[3.0, 4.0]]), np.array([0.5, -2.0])
    rrms = 1.0 / math.sqrt(12.5 + EPS)
    found = inferred_rrms(x, w, x * rrms * w, EPS)
    assert found.rrms[0] == pytest.approx(rrms, rel=1e-12)
    assert found.mean_square[0] == pytest.approx(12.5, rel=1e-9)
    assert found.spread[0] == pytest.approx(0.0, abs=1e-12)
    assert found.columns[0] == 2


def test_columns_where_x_times_w_is_near_zero_are_left_out() -> None:
    # The middle column's x * w is 1e-3 of the largest: its ratio (here garbage) is not used.
    x, w = np.array([[2.0, 0.002, -1.0]]), np.ones(3)
    y = np.array([[1.0, 99.0, -0.5]])
    found = inferred_rrms(x, w, y, EPS)
    assert found.columns[0] == 2
    assert found.rrms[0] == pytest.approx(0.5)
    assert found.spread[0] == pytest.approx(0.0)


def test_a_row_without_usable_columns_is_nan() -> None:
    found = inferred_rrms(np.zeros((1, 4)), np.ones(4), np.zeros((1, 4)), EPS)
    assert math.isnan(found.rrms[0])
    assert found.columns[0] == 0


def test_a_matching_output_needs_no_diagnosis() -> None:
    x, w, rrms, y = _problem()
    assert diagnose(x, w, y, y, rrms, EPS, 128) == []


def test_a_mean_over_block_is_named_with_its_factor() -> None:
    x, w, rrms, reference = _problem()
    wrong = 1.0 / np.sqrt((x * x).sum(axis=1) / 128 + EPS)
    lines = diagnose(x, w, x * wrong[:, None] * w, reference, rrms, EPS, 128)
    assert lines[0].startswith("first divergence: worst at row ")
    assert "they part at the rrms" in lines[2]
    assert lines[-1] == (
        "behaves like a divisor of BLOCK (128) instead of width (70): every rrms off by "
        f"sqrt(BLOCK / width) = {math.sqrt(128 / 70):.4f}"
    )


def test_a_mean_over_block_is_named_where_a_row_is_near_eps() -> None:
    # Row 2's mean square is about eps: there the bug moves rrms by less than sqrt(128/70)
    # (eps stays inside the root), and the signature must still be recognised.
    x, w, _, _ = _problem()
    x[2] *= 1e-3
    rrms = 1.0 / np.sqrt((x * x).mean(axis=1) + EPS)
    reference = x * rrms[:, None] * w
    wrong = 1.0 / np.sqrt((x * x).sum(axis=1) / 128 + EPS)
    assert wrong[2] / rrms[2] < 0.95 * math.sqrt(128 / 70)  # not the plain factor on that row
    lines = diagnose(x, w, x * wrong[:, None] * w, reference, rrms, EPS, 128)
    assert any(line.startswith("behaves like a divisor of BLOCK (128)") for line in lines)
    assert not any("sum instead of a mean" in line for line in lines)


def test_a_sum_instead_of_a_mean_is_named() -> None:
    x, w, rrms, reference = _problem()
    wrong = 1.0 / np.sqrt((x * x).sum(axis=1) + EPS)
    lines = diagnose(x, w, x * wrong[:, None] * w, reference, rrms, EPS, 128)
    assert lines[-1].startswith("behaves like a sum instead of a mean")


def test_a_ratio_just_outside_the_signature_tolerance_is_not_named() -> None:
    x, w, rrms, reference = _problem()
    factor = math.sqrt(128 / 70) * (1 + 1.5 * SIGNATURE_TOLERANCE)
    lines = diagnose(x, w, x * (rrms * factor)[:, None] * w, reference, rrms, EPS, 128)
    assert "they part at the rrms: each row's output is x * c * w with the wrong c" in lines
    assert not any(line.startswith("behaves like") for line in lines)


def test_a_missing_weight_is_named() -> None:
    x, w, rrms, reference = _problem()
    lines = diagnose(x, w, x * rrms[:, None], reference, rrms, EPS, 128)
    assert lines[-1] == "behaves like the weight left out: y = x * rrms in every row"


def test_a_missing_epsilon_shows_on_a_row_near_zero() -> None:
    x, w, _, _ = _problem()
    x[2] *= 1e-4
    mean_square = (x * x).mean(axis=1)
    rrms = 1.0 / np.sqrt(mean_square + EPS)
    reference = x * rrms[:, None] * w
    lines = diagnose(x, w, x * (1 / np.sqrt(mean_square))[:, None] * w, reference, rrms, EPS, 128)
    assert lines[1].startswith("row 2: inferred rrms")
    assert lines[-1].startswith("behaves like eps left out of the square root")


def test_wrong_tail_lanes_are_counted_in_the_worst_row() -> None:
    x, w, rrms, reference = _problem()
    y = reference.copy()
    y[:, 64:] *= 3.0  # the last 6 lanes of every row
    lines = diagnose(x, w, y, reference, rrms, EPS, 128)
    assert "the lanes of a row disagree" in lines[-2]
    assert lines[-1].endswith("6 of 70 lanes differ, lanes 64..69")


def test_describe_stores_names_rows_lanes_padding_and_the_guards() -> None:
    from oracle.diagnose import describe_stores

    # 2 rows of width 3 at stride 5: lane 3 is padding, 10 is one past the last row.
    assert describe_stores((1, 3, 10), 5, 2, 3) == (
        " (row 0 lane 1, row 0 lane 3 (padding), 1 element(s) past the last row)"
    )
    assert describe_stores((-2,), 5, 2, 3) == " (2 element(s) before row 0)"
    assert describe_stores((0, 1, 2, 3), 5, 2, 3, shown=2) == " (row 0 lane 0, row 0 lane 1, ...)"
    assert describe_stores((), 5, 2, 3) == ""


def test_eps_outside_the_root_is_named_on_rows_near_eps() -> None:
    x, w, _, _ = _problem()
    x *= 1e-3  # mean squares ~1e-6 = eps: where eps sits shows
    mean_square = (x * x).mean(axis=1)
    rrms = 1.0 / np.sqrt(mean_square + EPS)
    reference = x * rrms[:, None] * w
    outside = 1.0 / (np.sqrt(mean_square) + EPS)
    lines = diagnose(x, w, x * outside[:, None] * w, reference, rrms, EPS, 128)
    assert "behaves like eps outside the square root: 1 / (sqrt(mean square) + eps)" in lines
    assert not any("eps left out" in line for line in lines)


def test_a_float16_sum_that_overflowed_is_named_as_half_accumulation() -> None:
    # |x| ~14 over 4096 columns: the float16 sum of squares is inf, so the kernel stores zeros.
    from oracle.dtypes import round_to_dtype

    rng = np.random.default_rng(3)
    x = round_to_dtype(rng.uniform(12, 16, (2, 4096)) * rng.choice([-1, 1], (2, 4096)), "float16")
    w = np.resize(np.array([0.5, 1.25, -2.0]), 4096)
    rrms = 1.0 / np.sqrt((x * x).mean(axis=1) + EPS)
    reference = round_to_dtype(x * rrms[:, None] * w, "float16")
    lines = diagnose(x, w, np.zeros_like(x), reference, rrms, EPS, 4096, "float16")
    assert any(line.startswith("behaves like squares summed in float16") for line in lines)
    # the same output read as float32 names no half accumulation (there is none to have)
    lines32 = diagnose(x, w, np.zeros_like(x), reference, rrms, EPS, 4096)
    assert not any("summed in" in line for line in lines32)


def test_weights_applied_as_one_plus_w_are_named() -> None:
    x, w, rrms, reference = _problem()
    lines = diagnose(x, w, x * rrms[:, None] * (1.0 + w), reference, rrms, EPS, 128)
    assert lines[-1].startswith("behaves like weights applied as (1 + w)")


def test_the_cast_before_the_weight_is_named_in_bfloat16() -> None:
    from oracle.dtypes import round_to_dtype

    x, w, rrms, _ = _problem()
    x, w = round_to_dtype(x, "bfloat16"), round_to_dtype(w, "bfloat16")
    rrms = 1.0 / np.sqrt((x * x).mean(axis=1) + EPS)
    reference = round_to_dtype(x * rrms[:, None] * w, "bfloat16")
    early = round_to_dtype(round_to_dtype(x * rrms[:, None], "bfloat16") * w, "bfloat16")
    lines = diagnose(x, w, early, reference, rrms, EPS, 128, "bfloat16")
    assert (
        "behaves like the cast to bfloat16 before the weight: y = (x * rrms).to(bfloat16) * w"
        in lines
    )
