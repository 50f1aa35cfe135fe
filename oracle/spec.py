"""The proof boundary: declared limits, the validated problem, and every rejection.

One table (:data:`LIMITS`) declares what the inspector accepts. :func:`make_problem` turns raw
values (numbers, strings from a text field or a command line, arrays) into a frozen
:class:`Problem` or raises :class:`ValidationError` naming the field, the value and the bound.
Validation is shared by the scalar reference and the tiled model; normalization is not.
``LIMITS`` and ``ValidationError`` are defined in :mod:`oracle.limits` (the text parser reads
them too) and importable from here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from oracle.dtypes import FINITE_MAX, round_to_dtype
from oracle.limits import LIMITS, ValidationError, plain_float
from oracle.limits import short as _short
from oracle.parse import parse_matrix, parse_vector


@dataclass(frozen=True, eq=False)
class Problem:
    """A validated RMSNorm forward problem.

    Attributes:
        x: (rows, width) float64 values, each exactly representable in ``dtype``.
        weight: (width,) float64 values, exactly representable in ``dtype``.
        eps: float, in [LIMITS.min_eps, LIMITS.max_eps].
        dtype: the declared input/output dtype name.
        row_stride: elements between row starts in input and output (>= width).
    """

    x: np.ndarray
    weight: np.ndarray
    eps: float
    dtype: str
    row_stride: int
    name: str = field(default="input")

    @property
    def rows(self) -> int:
        return int(self.x.shape[0])

    @property
    def width(self) -> int:
        return int(self.x.shape[1])

    @property
    def block(self) -> int:
        """Power-of-two tile: the next power of two >= width."""
        return next_power_of_two(self.width)

    def with_row(self, row: int, values: np.ndarray) -> Problem:
        """A copy with one row replaced (used by the row-isolation fixture)."""
        x = self.x.copy()
        x[row] = values
        return make_problem(
            x,
            self.weight,
            eps=self.eps,
            dtype=self.dtype,
            row_stride=self.row_stride,
            name=self.name,
        )


def next_power_of_two(n: int) -> int:
    """Smallest power of two >= n (n >= 1)."""
    return 1 << (int(n) - 1).bit_length()


# ---------------------------------------------------------------- scalar field checks


def check_int(field: str, value: Any, low: int, high: int | None) -> int:
    """An integer field: accepts ints and integral text; rejects bools, fractions, junk."""
    bound = f"an integer in [{low}, {high}]" if high is not None else f"an integer >= {low}"
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ValidationError(field, value, bound, f"{field}: missing; expected {bound}")
    if isinstance(value, bool):
        raise ValidationError(field, value, bound, f"{field}: {value!r} is not an integer")
    if isinstance(value, (int, np.integer)):
        number = int(value)
    else:
        try:
            as_float = plain_float(value) if isinstance(value, str) else float(value)
        except (TypeError, ValueError):
            raise ValidationError(
                field, value, bound, f"{field}: {_short(value)} is not a number; expected {bound}"
            ) from None
        if not math.isfinite(as_float) or as_float != int(as_float):
            raise ValidationError(
                field, value, bound, f"{field}: {_short(value)} is not an integer; expected {bound}"
            )
        number = int(as_float)
    if number < low or (high is not None and number > high):
        raise ValidationError(
            field, value, bound, f"{field}: {number} is out of range; expected {bound}"
        )
    return number


def check_eps(value: Any) -> float:
    """eps: finite, numeric, in [min_eps, max_eps]."""
    bound = f"a finite number in [{LIMITS.min_eps:g}, {LIMITS.max_eps:g}]"
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ValidationError("eps", value, bound, f"eps: missing; expected {bound}")
    if isinstance(value, bool):
        raise ValidationError("eps", value, bound, f"eps: {value!r} is not a number")
    try:
        number = plain_float(value) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        raise ValidationError(
            "eps", value, bound, f"eps: {_short(value)} is not a number; expected {bound}"
        ) from None
    if not math.isfinite(number):
        raise ValidationError("eps", value, bound, f"eps: {_short(value)} is not finite")
    if not LIMITS.min_eps <= number <= LIMITS.max_eps:
        raise ValidationError(
            "eps", value, bound, f"eps: {number:g} is out of range; expected {bound}"
        )
    return number


def check_dtype(value: Any) -> str:
    bound = " | ".join(LIMITS.dtypes)
    if not isinstance(value, str) or value.strip() not in LIMITS.dtypes:
        raise ValidationError(
            "dtype", value, bound, f"dtype: {_short(value)} is not one of {bound}"
        )
    return value.strip()


def _check_values(field: str, array: np.ndarray, max_abs: float, dtype: str) -> None:
    limit = min(max_abs, FINITE_MAX[dtype])
    bound = f"finite values with |{field}| <= {limit:g}"
    finite = np.isfinite(array)
    if not finite.all():
        index = tuple(int(i) for i in np.argwhere(~finite)[0])
        raise ValidationError(
            field,
            array[index],
            bound,
            f"{field}: element {list(index)} is {float(array[index])!r}, not finite; "
            f"expected {bound}",
        )
    over = np.abs(array) > limit
    if over.any():
        index = tuple(int(i) for i in np.argwhere(over)[0])
        raise ValidationError(
            field,
            array[index],
            bound,
            f"{field}: element {list(index)} = {array[index]:g} exceeds {limit:g} ({dtype})",
        )


#: Per array field: its text parser, what a missing value should be, and what is said when the
#: value is not numbers.
_ARRAY_FIELDS = {
    "x": (
        parse_matrix,
        "rows x width numbers",
        "a rectangular rows x width table of numbers",
        "x: rows have different widths or non-numeric values (width mismatch)",
    ),
    "weight": (parse_vector, "width numbers", "numbers", "weight: non-numeric values"),
}


def _as_array(field_name: str, value: Any) -> np.ndarray:
    """``value`` of ``field_name`` ("x" or "weight") as float64 numbers, any dimensions."""
    parse, expected, numbers, not_numbers = _ARRAY_FIELDS[field_name]
    if isinstance(value, str):
        return parse(value, field=field_name)
    if value is None:
        raise ValidationError(field_name, value, expected, f"{field_name}: missing")
    try:
        return np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValidationError(field_name, value, numbers, not_numbers) from None


def _as_matrix(x: Any) -> np.ndarray:
    array = _as_array("x", x)
    if array.ndim == 1:
        array = array.reshape(1, -1)
    if array.ndim != 2:
        raise ValidationError("x", array.shape, "2 dimensions", f"x: {array.ndim} dimensions")
    return array


def _as_vector(weight: Any) -> np.ndarray:
    array = _as_array("weight", weight)
    if array.ndim != 1:
        raise ValidationError(
            "weight", array.shape, "1 dimension", f"weight: {array.ndim} dimensions, expected 1"
        )
    return array


def make_problem(
    x: Any,
    weight: Any,
    *,
    eps: Any,
    dtype: Any = "float32",
    row_stride: Any = None,
    rows: Any = None,
    width: Any = None,
    name: str = "input",
) -> Problem:
    """Validate every field and build a :class:`Problem`.

    Args:
        x: (rows, width) numbers, or text (rows by ``;``, values by ``,`` or spaces, ``@file``).
        weight: width numbers, or text.
        eps: number or text.
        dtype: "float32" | "float16" | "bfloat16".
        row_stride: elements between row starts (default: width).
        rows: declared row count, checked against ``x`` when given.
        width: declared width, checked against ``x`` when given.
        name: a label carried into reports.

    Returns:
        The validated problem, x and weight rounded to ``dtype``.

    Raises:
        ValidationError: naming the first field that is out of bounds.
    """
    dtype_name = check_dtype(dtype)
    declared_rows = (
        check_int("rows", rows, LIMITS.min_rows, LIMITS.max_rows) if rows is not None else None
    )
    declared_width = (
        check_int("width", width, LIMITS.min_width, LIMITS.max_width) if width is not None else None
    )
    eps_value = check_eps(eps)
    matrix = _as_matrix(x)
    if matrix.size == 0:
        raise ValidationError(
            "x", "", "at least one value", "x: empty; expected at least one value"
        )
    check_int("rows", matrix.shape[0], LIMITS.min_rows, LIMITS.max_rows)
    check_int("width", matrix.shape[1], LIMITS.min_width, LIMITS.max_width)
    if declared_rows is not None and declared_rows != matrix.shape[0]:
        raise ValidationError(
            "rows",
            declared_rows,
            f"{matrix.shape[0]} (rows given in x)",
            f"rows: declared {declared_rows} but x has {matrix.shape[0]} rows",
        )
    if declared_width is not None and declared_width != matrix.shape[1]:
        raise ValidationError(
            "width",
            declared_width,
            f"{matrix.shape[1]} (values per row in x)",
            f"width: declared {declared_width} but x rows have {matrix.shape[1]} values"
            " (width mismatch)",
        )
    row_count, width_value = matrix.shape
    stride = (
        width_value
        if row_stride is None
        else check_int("row_stride", row_stride, 1, LIMITS.max_elements)
    )
    if stride < width_value:
        raise ValidationError(
            "row_stride",
            stride,
            f"row_stride >= width = {width_value}",
            f"row_stride: {stride} is below the width; "
            f"expected row_stride >= width = {width_value}",
        )
    if row_count * stride > LIMITS.max_elements:
        raise ValidationError(
            "row_stride",
            stride,
            f"rows * row_stride <= {LIMITS.max_elements}",
            f"row_stride: rows * row_stride = {row_count * stride} exceeds {LIMITS.max_elements}",
        )
    _check_values("x", matrix, LIMITS.max_abs_x, dtype_name)
    vector = _as_vector(weight)
    if vector.shape[0] != width_value:
        raise ValidationError(
            "weight",
            vector.shape[0],
            f"exactly width = {width_value} values",
            f"weight: {vector.shape[0]} values, expected exactly width = {width_value}",
        )
    _check_values("weight", vector, LIMITS.max_abs_weight, dtype_name)
    x_rounded = round_to_dtype(matrix, dtype_name)
    w_rounded = round_to_dtype(vector, dtype_name)
    x_rounded.setflags(write=False)
    w_rounded.setflags(write=False)
    return Problem(
        x=x_rounded,
        weight=w_rounded,
        eps=eps_value,
        dtype=dtype_name,
        row_stride=stride,
        name=name,
    )


def synthetic_problem(
    rows: Any,
    width: Any,
    *,
    seed: Any = 0,
    eps: Any = 1e-6,
    dtype: Any = "float32",
    row_stride: Any = None,
) -> Problem:
    """Random synthetic input: x ~ N(0, 1), asymmetric weights in [-2, 2]; reproducible by seed."""
    row_count = check_int("rows", rows, LIMITS.min_rows, LIMITS.max_rows)
    width_value = check_int("width", width, LIMITS.min_width, LIMITS.max_width)
    seed_value = check_int("seed", seed, 0, 2**32 - 1)
    if row_count * width_value > LIMITS.max_elements:
        raise ValidationError(
            "rows",
            row_count,
            f"rows * width <= {LIMITS.max_elements}",
            f"rows: rows * width = {row_count * width_value} exceeds {LIMITS.max_elements}",
        )
    rng = np.random.default_rng(seed_value)
    x = rng.standard_normal((row_count, width_value))
    weight = rng.uniform(-2.0, 2.0, width_value)
    return make_problem(
        x, weight, eps=eps, dtype=dtype, row_stride=row_stride, name=f"synthetic(seed={seed_value})"
    )
