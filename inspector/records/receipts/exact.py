"""Numbers in receipts, exact both ways: JSON values, CSV cells and their comparison.

JSON has no literal for non-finite floats, so they are the strings ``"nan"``, ``"inf"`` and
``"-inf"``; CSV cells are ``repr`` text, which parses back to the same binary64.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np


def json_number(value: Any) -> float | str:
    """A float for JSON: finite as a number, non-finite as "nan" / "inf" / "-inf"."""
    number = float(value)
    if math.isnan(number):
        return "nan"
    if math.isinf(number):
        return "inf" if number > 0 else "-inf"
    return number


def from_json_number(value: Any) -> float:
    """Inverse of :func:`json_number` (strings "nan", "inf", "-inf" accepted).

    Raises:
        ValueError: ``value`` is not a JSON number (a bool is not one) nor one of those strings,
            or an integer past float64's range.
    """
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a number")
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            raise ValueError(
                f"an integer of {len(str(abs(value)))} digits is past float64"
            ) from None
    if isinstance(value, float):
        return value
    if isinstance(value, str) and value in ("nan", "inf", "-inf"):
        return float(value)
    raise ValueError(f"{value!r} is not a number")


def csv_cell(value: Any) -> str:
    """repr-exact text for a float, plain text for an int or a bool."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    return repr(float(value))  # 'nan', 'inf', '-inf' for non-finite


def same_float(a: float, b: float) -> bool:
    """Exact equality, NaN equal to NaN, -0.0 distinct from 0.0 (repr-exactness)."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def nan_max(values: Iterable[float]) -> float:
    """Largest value, NaN counted as the largest (it is the least flattering); 0.0 when empty."""
    numbers = [float(v) for v in values]
    if any(math.isnan(v) for v in numbers):
        return float("nan")
    return max(numbers) if numbers else 0.0
