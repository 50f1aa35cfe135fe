"""The signatures diagnose reads an output against, each at a value that pins it: a float16
accumulation that rounds subnormal squares (a finite mean square, not an overflow), a float32
output never said to sum in float32, the cast before the weight only where the output lies
strictly closer to it than to the reference, and an rrms exactly ``rrms_agree`` away agreeing."""

from __future__ import annotations

import math
import re

import numpy as np

from oracle.compare import TOLERANCES, compare
from oracle.diagnose import diagnose
from oracle.dtypes import round_to_dtype

EPS = 1e-6
HALF_LINE = (
    "behaves like squares summed in float16, not float32 (a half-precision accumulation: its "
    "sum overflows, underflows or loses terms)"
)


def _inferred(line: str) -> float:
    found = re.search(r"inferred rrms (\S+) ", line)
    assert found, line
    return float(found.group(1))


def test_a_float16_accumulation_of_subnormal_squares_is_named_with_its_rrms() -> None:
    # Row 1 is 1.5 * 2**-12 in all 8 lanes: its square 2.25 * 2**-24 is a float16 subnormal and
    # rounds to 2 * 2**-24, so a float16 sum, mean and all give 2**-23 where float32 gives
    # 2.25 * 2**-24 (by hand: rrms 1 / sqrt(2**-23 + eps), 0.66% above the model's, eps
    # counting). Row 0 (normal values) is left as float32 has it (float16 moves it by ~1e-4).
    # 2 rows of 8: a mean over the rows or a sum times the width is far off, and so is eps
    # taken out of the sum (row 1's mean square is below eps).
    rng = np.random.default_rng(0)
    x = np.vstack([round_to_dtype(rng.standard_normal(8), "float16"), np.full(8, 1.5 * 2**-12)])
    w = round_to_dtype(rng.uniform(0.5, 2.0, 8) * rng.choice([-1.0, 1.0], 8), "float16")
    rrms = 1.0 / np.sqrt((x * x).mean(axis=1) + EPS)
    half_row_1 = 1.0 / math.sqrt(2.0**-23 + EPS)
    half = rrms.copy()
    half[1] = half_row_1
    reference = round_to_dtype(x * rrms[:, None] * w, "float16")
    y = round_to_dtype(x * half[:, None] * w, "float16")
    assert half_row_1 / rrms[1] > 1.006  # beyond rrms_agree: the rrms itself parts

    lines = diagnose(x, w, y, reference, rrms, EPS, 8, "float16")
    assert lines[1].startswith("row 1: inferred rrms ")
    # The rrms read from the float16 output: within an output ulp (2**-11) of the hand value.
    assert abs(_inferred(lines[1]) / half_row_1 - 1.0) < 2.0**-11
    assert lines[2] == "they part at the rrms: each row's output is x * c * w with the wrong c"
    assert lines[-1] == HALF_LINE


def test_a_float32_output_is_never_said_to_sum_its_squares_in_float32() -> None:
    # Every rrms 1% high (past rrms_agree, within the signature tolerance) on rows whose mean
    # square is near eps, so neither eps signature nor the divisors come near: no known bug
    # matches, and "summed in float32" is no bug of a float32 kernel.
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 70)) * 1e-3
    w = rng.uniform(-2.0, 2.0, 70)
    rrms = 1.0 / np.sqrt((x * x).mean(axis=1) + EPS)
    reference = x * rrms[:, None] * w
    lines = diagnose(x, w, x * (rrms * 1.01)[:, None] * w, reference, rrms, EPS, 70)
    assert lines[-1] == "they part at the rrms: each row's output is x * c * w with the wrong c"
    assert not any(line.startswith("behaves like") for line in lines)


def _float16_problem():
    rng = np.random.default_rng(2)
    x = round_to_dtype(rng.standard_normal((2, 70)), "float16")
    w = round_to_dtype(rng.uniform(-2.0, 2.0, 70), "float16")
    rrms = 1.0 / np.sqrt((x * x).mean(axis=1) + EPS)
    reference = round_to_dtype(x * rrms[:, None] * w, "float16")
    early = round_to_dtype(round_to_dtype(x * rrms[:, None], "float16") * w, "float16")
    return x, w, rrms, reference, early


def test_an_output_as_far_from_the_early_cast_as_from_the_reference_is_not_blamed_on_it() -> None:
    # y is the reference but for one lane, moved by exactly the largest distance between the
    # reference and the early cast, in a lane where those two agree: y is then exactly as far
    # from either (and within float16 tolerance of both), so nothing points at the double
    # rounding and the cast is not named (only an output strictly closer to it is).
    x, w, rrms, reference, early = _float16_problem()
    gap = np.abs(reference - early)
    move = float(gap.max())
    assert move > 0  # the early cast does differ somewhere
    agree = np.argwhere((gap == 0) & (np.abs(reference) >= 1.0))
    row, lane = agree[0]
    y = reference.copy()
    y[row, lane] += move
    to_reference = float(np.max(np.abs(y - reference)))
    to_early = float(np.max(np.abs(y - early)))
    assert to_early == to_reference == move  # the tie, exactly
    assert compare(y, early, TOLERANCES["float16"]).passed

    lines = diagnose(x, w, y, reference, rrms, EPS, 128, "float16")
    assert lines[0].startswith(f"first divergence: worst at row {row}, lane {lane}: ")
    assert lines[-1] == (
        "they part after the rrms: every row's rrms agrees, so the output step (the weight, "
        "the store, or the lanes written) differs"
    )
    assert not any("the cast to float16" in line for line in lines)
    # Closer to the early cast than to the reference, by one lane, it is named.
    closer = early.copy()
    closer[row, lane] += move / 2
    assert (
        "the cast to float16 before the weight"
        in diagnose(x, w, closer, reference, rrms, EPS, 128, "float16")[-1]
    )


def test_an_rrms_exactly_rrms_agree_away_still_agrees() -> None:
    # x = (2, -2, 2, -2), eps 0: mean square 4, rrms 0.5 exactly. The output's rrms is
    # 0.5 * (1 + 2**-9): every product and quotient below is exact, so the relative distance
    # is 2**-9 exactly, and with rrms_agree = 2**-9 the rrms agrees ("within" includes it);
    # a hair tighter and it does not.
    x = np.array([[2.0, -2.0, 2.0, -2.0]])
    w = np.array([1.0, 0.5, -0.25, 2.0])
    rrms = np.array([0.5])
    reference = x * 0.5 * w
    y = x * (0.5 * (1 + 2.0**-9)) * w
    after = (
        "they part after the rrms: every row's rrms agrees, so the output step (the weight, "
        "the store, or the lanes written) differs"
    )
    at = "they part at the rrms: each row's output is x * c * w with the wrong c"
    assert after in diagnose(x, w, y, reference, rrms, 0.0, 4, rrms_agree=2.0**-9)
    tighter = np.nextafter(2.0**-9, 0.0)
    assert at in diagnose(x, w, y, reference, rrms, 0.0, 4, rrms_agree=tighter)
