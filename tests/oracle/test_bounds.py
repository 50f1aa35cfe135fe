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
