"""Every declared bound of the validator, at the bound and one step past it.

The numbers are written out here, not read from ``oracle.limits.LIMITS``: a bound moved by one
step, loosened by 1.5x or compared with ``<`` instead of ``<=`` must fail a test, and a test
that reads the bound it checks would move with it. They are the limits README and DESIGN.md
declare. "One step" is one integer for counts and the next double (``nextafter``) for reals.
"""

from __future__ import annotations

import numpy as np
import pytest

from oracle.limits import ValidationError
from oracle.spec import make_problem

UP, DOWN = np.inf, -np.inf


def _past(value: float, direction: float) -> float:
    return float(np.nextafter(value, direction))


def _problem(x, weight=None, **kwargs):
    x = np.asarray(x, dtype=np.float64)
    weight = np.ones(x.shape[1]) if weight is None else weight
    return make_problem(x, weight, **{"eps": 1e-6, **kwargs})


def _refused(field: str, fragment: str, x, weight=None, **kwargs) -> None:
    with pytest.raises(ValidationError) as info:
        _problem(x, weight, **kwargs)
    assert info.value.field == field, str(info.value)
    assert str(info.value).startswith(field)
    assert fragment in str(info.value), str(info.value)


def test_rows_from_1_to_4096() -> None:
    assert _problem(np.ones((4096, 1))).rows == 4096
    _refused("rows", "[1, 4096]", np.ones((4097, 1)))
    assert _problem(np.ones((1, 3)), rows=1).rows == 1
    _refused("rows", "[1, 4096]", np.ones((1, 3)), rows=0)
    _refused("rows", "[1, 4096]", np.ones((1, 3)), rows=4097)


def test_width_from_1_to_65536() -> None:
    assert _problem(np.ones((1, 65536))).width == 65536
    _refused("width", "[1, 65536]", np.ones((1, 65537)))
    assert _problem(np.ones((2, 1))).width == 1
    _refused("width", "[1, 65536]", np.ones((1, 3)), width=0)
    _refused("width", "[1, 65536]", np.ones((1, 3)), width=65537)


@pytest.mark.parametrize("rows", [1, 2, 64])
def test_rows_times_row_stride_at_most_4194304(rows: int) -> None:
    stride = (1 << 22) // rows
    assert _problem(np.ones((rows, 1)), row_stride=stride).row_stride == stride
    _refused(
        "row_stride",
        "exceeds 4194304" if rows > 1 else "4194304",
        np.ones((rows, 1)),
        row_stride=stride + 1,
    )


def test_row_stride_at_least_the_width() -> None:
    assert _problem(np.ones((2, 5)), row_stride=5).row_stride == 5
    _refused("row_stride", "row_stride >= width = 5", np.ones((2, 5)), row_stride=4)


@pytest.mark.parametrize(("bound", "direction"), [(1e-12, DOWN), (1e-2, UP)])
def test_eps_in_1e_12_to_1e_2(bound: float, direction: float) -> None:
    assert _problem(np.ones((1, 3)), eps=bound).eps == bound
    _refused("eps", "[1e-12, 0.01]", np.ones((1, 3)), eps=_past(bound, direction))


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_x_and_weight_magnitudes_at_most_1e6(sign: float) -> None:
    at = sign * 1e6
    past = _past(at, sign * np.inf)
    assert _problem([[at, 1.0]]).x[0, 0] == at
    _refused("x", "exceeds 1e+06", [[1.0, past]])
    assert _problem([[1.0, 1.0]], weight=np.array([1.0, at])).weight[1] == at
    _refused("weight", "exceeds 1e+06", [[1.0, 1.0]], weight=np.array([past, 1.0]))


def test_float16_values_at_most_its_largest_finite() -> None:
    """65504 is float16's largest finite value, below the 1e6 bound: the dtype's max rules."""
    past = _past(65504.0, UP)
    assert _problem([[65504.0, -65504.0]], dtype="float16").x[0, 0] == 65504.0
    _refused("x", "exceeds 65504 (float16)", [[past, 1.0]], dtype="float16")
    _refused(
        "weight",
        "exceeds 65504 (float16)",
        [[1.0, 1.0]],
        weight=np.array([1.0, -past]),
        dtype="float16",
    )
    # float32 and bfloat16 can hold more than 1e6, so there the 1e6 bound is the one.
    for dtype in ("float32", "bfloat16"):
        _refused("x", f"exceeds 1e+06 ({dtype})", [[_past(1e6, UP), 1.0]], dtype=dtype)


# 4194305 = 5 * 397 * 2113: products exactly one element past the limit, each factor in range.
ONE_PAST_PRODUCTS = [(5, 838861), (397, 10565), (2113, 1985)]


@pytest.mark.parametrize(("rows", "stride"), ONE_PAST_PRODUCTS)
def test_rows_times_a_padded_row_stride_one_element_past_is_refused(rows: int, stride: int):
    product = rows * stride
    assert product == 4194305
    with pytest.raises(ValidationError) as info:
        _problem(np.ones((rows, 1)), row_stride=stride)
    assert info.value.field == "row_stride"
    assert str(info.value) == f"row_stride: rows * row_stride = {product} exceeds 4194304"
    # One element less of stride is inside (the product drops by ``rows``).
    assert _problem(np.ones((rows, 1)), row_stride=stride - 1).row_stride == stride - 1


@pytest.mark.parametrize(("rows", "width"), [(2113, 1985), (4096, 1025)])
def test_packed_rows_one_past_the_element_limit_are_refused(rows: int, width: int) -> None:
    """Without a row stride the stride is the width: rows * width is the product held."""
    with pytest.raises(ValidationError) as info:
        _problem(np.ones((rows, width)))
    assert info.value.field == "row_stride"
    assert f"rows * row_stride = {rows * width} exceeds 4194304" in str(info.value)


def test_packed_rows_at_the_element_limit_are_accepted() -> None:
    problem = _problem(np.ones((4096, 1024)))
    assert (problem.rows, problem.width, problem.row_stride) == (4096, 1024, 1024)


def test_one_row_of_stride_4194304_and_not_one_more() -> None:
    assert _problem(np.ones((1, 3)), row_stride=4194304).row_stride == 4194304
    _refused("row_stride", "[1, 4194304]", np.ones((1, 3)), row_stride=4194305)


def test_weight_of_exactly_width_values() -> None:
    assert _problem(np.ones((2, 5)), weight=np.ones(5)).weight.shape == (5,)
    for count in (4, 6):
        _refused("weight", "exactly width = 5", np.ones((2, 5)), weight=np.ones(count))


def test_synthetic_rows_and_width_at_their_bounds_and_one_past() -> None:
    from oracle.spec import synthetic_problem

    assert synthetic_problem(4096, 1).rows == 4096
    assert synthetic_problem(1, 65536).width == 65536
    for rows, width, field in ((4097, 1, "rows"), (0, 1, "rows"), (1, 65537, "width"),
                               (1, 0, "width")):  # fmt: skip
        with pytest.raises(ValidationError) as info:
            synthetic_problem(rows, width)
        assert info.value.field == field, str(info.value)
        assert "[1, 4096]" in str(info.value) or "[1, 65536]" in str(info.value)
