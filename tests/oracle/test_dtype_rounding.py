"""float32 -> bfloat16 by hand: bit patterns at ties, at the top of the range, and for NaN.

A bfloat16 is the top 16 bits of a float32: sign, 8 exponent bits, 7 mantissa bits. Between
1.0 (0x3F80) and its neighbour 1 + 2**-7 (0x3F81) the halfway point is 1 + 2**-8; the largest
finite bfloat16 is 0x7F7F = (2 - 2**-7) * 2**127, one step above it is infinity (0x7F80), and
0x7FC0 is the quiet NaN.
"""

from __future__ import annotations

import numpy as np
import pytest

from oracle.dtypes import (
    FINITE_MAX,
    bfloat16_bits,
    from_bfloat16_bits,
    round_float32_to_dtype,
    round_to_dtype,
)
from oracle.spec import make_problem
from oracle.traffic import ledger

BF16_MAX = 3.3895313892515355e38  # (2 - 2**-7) * 2**127
FLOAT32_MAX = 3.4028234663852886e38  # (2 - 2**-23) * 2**127


@pytest.mark.parametrize(
    ("value", "bits"),
    [
        (1.0, 0x3F80),
        (1 + 2**-8, 0x3F80),  # halfway, 0x3F80 is even: down
        (1 + 2**-8 + 2**-23, 0x3F81),  # one float32 step past halfway: up
        (1 + 2**-8 - 2**-23, 0x3F80),  # one float32 step short of halfway: down
        (1 + 3 * 2**-8, 0x3F82),  # halfway, 0x3F81 is odd: up to the even 0x3F82
        (-(1 + 2**-8), 0xBF80),
        (0.0, 0x0000),
        (-0.0, 0x8000),
        (BF16_MAX, 0x7F7F),
        (BF16_MAX + 2**119 - 2**104, 0x7F7F),  # one float32 step short of halfway to 2**128
        (BF16_MAX + 2**119, 0x7F80),  # halfway, 0x7F7F is odd: up, and that is infinity
        (FLOAT32_MAX, 0x7F80),
        (-FLOAT32_MAX, 0xFF80),
        (np.inf, 0x7F80),
        (-np.inf, 0xFF80),
        (np.nan, 0x7FC0),
    ],
)
def test_bfloat16_bits_by_hand(value: float, bits: int) -> None:
    assert int(bfloat16_bits(np.array([value]))[0]) == bits


def test_the_largest_finite_bfloat16_holds_and_one_step_more_is_infinite() -> None:
    assert FINITE_MAX["bfloat16"] == BF16_MAX == (2 - 2**-7) * 2.0**127
    np.testing.assert_array_equal(
        round_to_dtype([BF16_MAX, -BF16_MAX], "bfloat16"),
        [
            BF16_MAX,
            -BF16_MAX,
        ],
    )
    np.testing.assert_array_equal(round_to_dtype([BF16_MAX + 2**120], "bfloat16"), [np.inf])
    np.testing.assert_array_equal(
        from_bfloat16_bits(np.array([0x7F7F, 0x7F80])),
        [
            BF16_MAX,
            np.inf,
        ],
    )


def test_a_nan_with_payload_only_in_the_dropped_bits_stays_nan_at_the_store() -> None:
    # Truncated, 0x7F800001 and 0xFF800001 would keep only 0x7F80 / 0xFF80: infinities.
    nan_bits = np.array([0x7F800001, 0xFF800001, 0x7F80FFFF, 0x7FC00000], dtype=np.uint32)
    stored = round_float32_to_dtype(nan_bits.view(np.float32), "bfloat16")
    assert stored.dtype == np.float32
    assert np.isnan(stored).all(), stored
    # Ordinary values at the same store round as the table above says.
    ordinary = np.array([1 + 2**-8, 1 + 3 * 2**-8, FLOAT32_MAX], dtype=np.float32)
    np.testing.assert_array_equal(
        round_float32_to_dtype(ordinary, "bfloat16"), [1.0, 1 + 2**-6, np.inf]
    )


@pytest.mark.parametrize(("dtype", "itemsize"), [("float32", 4), ("float16", 2)])
def test_traffic_ledger_counts_bytes_by_hand(dtype: str, itemsize: int) -> None:
    problem = make_problem(
        [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [1.0, 1.0, 1.0], eps=1e-6, dtype=dtype
    )
    model = ledger(problem)
    # 2 rows x 3 elements each of x, of w (every program loads it) and of y.
    assert model.bytes_read_x == 6 * itemsize
    assert model.bytes_read_weight == 6 * itemsize
    assert model.bytes_read_weight_unique == 3 * itemsize
    assert model.bytes_written == 6 * itemsize
    assert model.bytes_total == {"float32": 72, "float16": 36}[dtype]
