"""What the diagnosis says on outputs built by hand: which row it names and the ratio it
prints, where kernel and model part (after the rrms, at it, or in the lanes), the thresholds
at their value and one step past it, and the counts it reports.

Rows of ones with ``w = 1`` make each ratio ``y / (x * w)`` the output itself, so an output
of ``(100, 100, 101)`` has median 100 and a spread of exactly 1 / 100.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from oracle.diagnose import describe_stores, diagnose, inferred_rrms

EPS = 1e-6
AFTER = (
    "they part after the rrms: every row's rrms agrees, so the output step (the weight, "
    "the store, or the lanes written) differs"
)
AT = "they part at the rrms: each row's output is x * c * w with the wrong c"
WEIGHT_LEFT_OUT = "behaves like the weight left out: y = x * rrms in every row"
LANES_DISAGREE = (
    "1 row(s) are not x * c * w for any one c: the lanes of a row disagree (a tail, a mask, "
    "a stride or a wrong weight)"
)
SUM = (
    "behaves like a sum instead of a mean: the square sum divided by 1, not by the width: "
    "every rrms off by 1 / sqrt(width) = 0.1195"
)


def _random(rows=4, width=70, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, width))
    w = rng.uniform(-2.0, 2.0, width)
    rrms = 1.0 / np.sqrt((x * x).mean(axis=1) + EPS)
    return x, w, rrms, x * rrms[:, None] * w


def _ones_row(y, weight=(1.0, 1.0, 1.0), rrms=100.0):
    """diagnose of one row x = (1, 1, 1) whose reference rrms is ``rrms``."""
    x, w = np.ones((1, 3)), np.array(weight)
    reference = x * rrms * w
    return diagnose(x, w, np.array([y]), reference, np.array([rrms]), EPS, 128)


def test_one_float_step_in_one_lane_is_found_and_placed_after_the_rrms() -> None:
    x, w, rrms, reference = _random()
    y = reference.copy()
    y[1, 3] = np.nextafter(y[1, 3], np.inf)
    lines = diagnose(x, w, y, reference, rrms, EPS, 128)
    assert lines[0] == (
        f"first divergence: worst at row 1, lane 3: kernel {y[1, 3]:.6g}, "
        f"reference {reference[1, 3]:.6g}"
    )
    assert lines[-1] == AFTER


@pytest.mark.parametrize(("factor", "part"), [(1.0019, AFTER), (1.0021, AT), (0.9981, AFTER)])
def test_an_rrms_off_by_more_than_0_2_percent_parts_at_the_rrms(factor, part) -> None:
    x, w, rrms, reference = _random()
    lines = diagnose(x, w, x * (rrms * factor)[:, None] * w, reference, rrms, EPS, 128)
    assert lines[2] == part


def test_unwritten_lanes_part_after_the_rrms() -> None:
    # NaN lanes give no ratio; the lanes written agree on the model's rrms.
    x, w, rrms, reference = _random()
    y = reference.copy()
    y[:, 64:] = np.nan
    assert diagnose(x, w, y, reference, rrms, EPS, 128)[-1] == AFTER


def test_an_output_of_zeros_parts_at_the_rrms_with_c_zero() -> None:
    x, w, rrms, reference = _random()
    zeros = np.zeros_like(reference)
    found = inferred_rrms(x, w, zeros, EPS)
    assert (found.rrms == 0.0).all()
    assert (found.spread == 0.0).all()  # every column agrees on c = 0
    lines = diagnose(x, w, zeros, reference, rrms, EPS, 128)
    assert lines[1].endswith(": ratio 0")
    assert lines[-1] == AT


@pytest.mark.parametrize(
    ("factors", "named"),
    [((0.4, 1.3), "row 0: inferred rrms 0.2 (from y / (x * w), 4 columns) against the "
                  "model's 0.5: ratio 0.4"),
     ((0.7, 1.5), "row 1: inferred rrms 1.5 (from y / (x * w), 4 columns) against the "
                  "model's 1: ratio 1.5")],
)  # fmt: skip
def test_the_row_named_is_the_one_whose_rrms_is_furthest_from_the_model(factors, named):
    # Mean squares 4 and 1: model rrms 0.5 and 1. Row 0 is 60% low against row 1 30% high;
    # then row 0 30% low against row 1 50% high.
    x = np.array([[2.0, -2.0, 2.0, -2.0], [1.0, 1.0, -1.0, 1.0]])
    w = np.array([1.0, 2.0, 0.5, 1.0])
    rrms = 1.0 / np.sqrt((x * x).mean(axis=1) + EPS)
    y = x * (rrms * np.array(factors))[:, None] * w
    lines = diagnose(x, w, y, x * rrms[:, None] * w, rrms, EPS, 128)
    assert lines[1] == named


@pytest.mark.parametrize(
    ("y", "part"),
    [((100.0, 100.0, 100.99), AFTER), ((100.0, 100.0, 101.0), LANES_DISAGREE),
     ((100.0, 100.0, 101.5), LANES_DISAGREE)],
)  # fmt: skip
def test_lanes_agree_on_one_c_only_within_1_percent(y, part) -> None:
    lines = _ones_row(y)
    assert lines[1] == (
        "row 0: inferred rrms 100 (from y / (x * w), 3 columns) against the model's 100: ratio 1"
    )
    assert part in lines
    if part == LANES_DISAGREE:
        assert lines[-1] == "row 0: 1 of 3 lanes differ, lanes 2..2"


@pytest.mark.parametrize(
    ("y", "named"),
    [((100.0, 100.0, 100.99), True), ((100.0, 100.0, 101.0), False),
     ((100.0, 100.0, 101.5), False)],
)  # fmt: skip
def test_the_weight_left_out_is_named_only_where_the_unweighted_lanes_agree(y, named) -> None:
    # w = (1, 2, 4): the model's output is (100, 200, 400); y ignores the weight.
    lines = _ones_row(y, weight=(1.0, 2.0, 4.0))
    assert (lines[-1] == WEIGHT_LEFT_OUT) is named
    assert (LANES_DISAGREE in lines) is not named


def test_the_rows_whose_lanes_disagree_are_counted() -> None:
    x, w = np.ones((3, 3)), np.ones(3)
    reference = np.full((3, 3), 100.0)
    y = np.array([[100.0, 100.0, 100.0], [100.0, 100.0, 150.0], [100.0, 150.0, 100.0]])
    lines = diagnose(x, w, y, reference, np.full(3, 100.0), EPS, 128)
    assert lines[-2].startswith("2 row(s) are not x * c * w for any one c")
    assert lines[-1] == "row 1: 1 of 3 lanes differ, lanes 2..2"


def test_a_lane_differs_when_it_is_more_than_0_1_percent_off() -> None:
    # Lanes 1, 3, 5, 7 are off by 0.1% (exactly), 0.15%, 200% and 0.05%: only 3 and 5 count.
    x, w = np.ones((1, 8)), np.ones(8)
    reference = np.full((1, 8), 1000.0)
    y = np.array([[1000.0, 1001.0, 1000.0, 1001.5, 1000.0, 3000.0, 1000.0, 999.5]])
    lines = diagnose(x, w, y, reference, np.array([1000.0]), EPS, 128)
    assert lines[0].startswith("first divergence: worst at row 0, lane 5: kernel 3000")
    assert lines[-1] == "row 0: 2 of 8 lanes differ, lanes 3..5"


def test_the_sum_signature_states_its_factor_for_the_width() -> None:
    x, w, rrms, reference = _random()
    wrong = 1.0 / np.sqrt((x * x).sum(axis=1) + EPS)
    lines = diagnose(x, w, x * wrong[:, None] * w, reference, rrms, EPS, 128)
    assert lines[-1] == SUM  # 1 / sqrt(70) = 0.11952...


def test_a_sum_instead_of_a_mean_is_named_where_a_rows_square_sum_is_below_eps() -> None:
    # Row 2's square sum is about 7e-7, under eps: there the bug's rrms is
    # 1 / sqrt(7e-7 + 1e-6), nowhere near 1 / sqrt(70) of the model's.
    x, w, _, _ = _random()
    x[2] *= 1e-4
    rrms = 1.0 / np.sqrt((x * x).mean(axis=1) + EPS)
    wrong = 1.0 / np.sqrt((x * x).sum(axis=1) + EPS)
    assert (x[2] * x[2]).sum() < EPS
    assert wrong[2] / rrms[2] > 2 / math.sqrt(70)
    lines = diagnose(x, w, x * wrong[:, None] * w, x * rrms[:, None] * w, rrms, EPS, 128)
    assert SUM in lines


@pytest.mark.parametrize(("off", "named"), [(1.019, True), (0.981, True), (1.03, False)])
def test_a_signature_is_named_within_2_percent_of_its_factor(off: float, named: bool) -> None:
    x, w, rrms, reference = _random()
    factor = math.sqrt(128 / 70) * off
    lines = diagnose(x, w, x * (rrms * factor)[:, None] * w, reference, rrms, EPS, 128)
    assert any(line.startswith("behaves like a divisor of BLOCK (128)") for line in lines) is named


def test_a_column_at_exactly_5_percent_of_the_largest_is_left_out() -> None:
    # |x * w| of 0.05 (left out, its y garbage), one step above 0.05 and 0.07 (used).
    x = np.array([[1.0, 0.05, float(np.nextafter(0.05, 1.0)), 0.07, -1.0]])
    y = 0.5 * x
    y[0, 1] = 99.0
    found = inferred_rrms(x, np.ones(5), y, EPS)
    assert found.columns[0] == 4
    assert found.rrms[0] == 0.5
    assert found.spread[0] == 0.0


def test_the_spread_is_the_largest_distance_from_the_median_relative_to_it() -> None:
    # Ratios 2, 2, 2.1, 1.9: median 2, largest distance 0.1, spread 0.1 / 2.
    found = inferred_rrms(np.ones((1, 4)), np.ones(4), np.array([[2.0, 2.0, 2.1, 1.9]]), EPS)
    assert found.rrms[0] == 2.0
    assert found.spread[0] == pytest.approx(0.05, rel=1e-9, abs=0)


def test_describe_stores_puts_address_minus_1_before_row_0() -> None:
    assert describe_stores((-1, 0), 5, 2, 3) == " (1 element(s) before row 0, row 0 lane 0)"
