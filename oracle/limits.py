"""The declared limits of the proof boundary and the error every rejection raises.

Both the validator (:mod:`oracle.spec`) and the text parser (:mod:`oracle.parse`) read these;
neither imports the other's internals through it, so the two stay one-way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from oracle.dtypes import DTYPES


@dataclass(frozen=True)
class Limits:
    """Declared bounds of the inspector's proof boundary (all inclusive)."""

    min_rows: int = 1
    max_rows: int = 4096
    min_width: int = 1
    max_width: int = 65536
    # rows * row_stride: bounds memory and the scalar reference's Python loops.
    max_elements: int = 1 << 22
    min_eps: float = 1e-12
    max_eps: float = 1e-2
    max_abs_x: float = 1e6
    max_abs_weight: float = 1e6
    dtypes: tuple[str, ...] = DTYPES

    def as_rows(self) -> list[tuple[str, str]]:
        """(field, bound) pairs for help text and the README."""
        return [
            ("rows", f"integer in [{self.min_rows}, {self.max_rows}]"),
            ("width", f"integer in [{self.min_width}, {self.max_width}]"),
            ("row_stride", f"integer >= width; rows * row_stride <= {self.max_elements}"),
            ("eps", f"finite number in [{self.min_eps:g}, {self.max_eps:g}]"),
            ("x", f"rows x width finite values, |x| <= {self.max_abs_x:g} (and the dtype's max)"),
            (
                "weight",
                f"exactly width finite values, |w| <= {self.max_abs_weight:g}"
                " (and the dtype's max)",
            ),
            ("dtype", " | ".join(self.dtypes)),
        ]


LIMITS = Limits()


class ValidationError(ValueError):
    """A rejected input: which field, what value, which bound.

    The message always starts with the field name, so a command line can print it as one line.
    """

    def __init__(self, field: str, value: Any, bound: str, message: str | None = None):
        self.field = field
        self.value = value
        self.bound = bound
        shown = short(value)
        text = message or f"{field}: {shown} is out of bounds; expected {bound}"
        if not text.startswith(field):
            text = f"{field}: {text}"
        super().__init__(text)


# A plain number: ASCII digits, an optional sign, decimal point and exponent. Python's float()
# and int() also take "1_000", Arabic-Indic or full-width digits and surrounding Unicode space;
# text that others script against must mean one thing.
_PLAIN_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_NOT_FINITE = frozenset({"nan", "inf", "infinity"})


def plain_float(text: str) -> float:
    """``text`` (surrounding ASCII spaces allowed) as a float when it is a plain number, or NaN
    / infinity spelled out (callers refuse those as not finite).

    Raises:
        ValueError: anything else.
    """
    token = text.strip(" \t\r\n")
    if _PLAIN_NUMBER.fullmatch(token) or token.lstrip("+-").lower() in _NOT_FINITE:
        return float(token)
    raise ValueError(f"not a plain number: {short(text)}")


def short(value: Any, limit: int = 40) -> str:
    """``repr(value)``, cut to ``limit`` characters for an error message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
