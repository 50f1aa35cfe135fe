"""A user kernel's declared domain: the widths, dtypes and row strides its launcher supports.

A kernel with a documented limit (rows of at most 64 KB, half precision only) would fail every
fixture past it, and the check could not tell a limit from a bug. Its launcher may declare the
limit as an attribute::

    def rms_norm(x, weight, eps, out=None): ...
    rms_norm.inspector_domain = {"max_width": 32768, "dtypes": ["float16", "bfloat16"]}

Keys (each optional): ``min_width`` and ``max_width`` (integers, 1 <= min <= max), ``dtypes``
(a non-empty list of ``float32``, ``float16``, ``bfloat16``), ``row_strides``: ``"any"`` (the
default) or ``"contiguous"`` (x's row stride equal to its width). A fixture outside the domain is
*out of domain*: not run, neither passed nor failed, and counted as such; the receipt and the
window show the domain. Anything else in the attribute is refused by name when the kernel loads.
"""

from __future__ import annotations

from typing import Any

DTYPES = ("float32", "float16", "bfloat16")
KEYS = ("min_width", "max_width", "dtypes", "row_strides")
ATTRIBUTE = "inspector_domain"


class DomainError(ValueError):
    """A declared domain that is not one (the message names the key and what it must be)."""


def parse_domain(value: Any) -> dict[str, Any] | None:
    """The declared domain, checked, with every key filled in; None when nothing is declared.

    Raises:
        DomainError: not a dict, an unknown key, or a value out of its bounds.
    """
    if value is None:
        return None
    if not isinstance(value, dict):
        raise DomainError(f"{ATTRIBUTE} must be a dict; got {type(value).__name__}")
    unknown = sorted(str(k) for k in value if k not in KEYS)
    if unknown:
        raise DomainError(f"{ATTRIBUTE}: unknown key(s) {', '.join(unknown)}; known: {KEYS}")
    domain: dict[str, Any] = {}
    for key in ("min_width", "max_width"):
        number = value.get(key, 1 if key == "min_width" else None)
        if number is not None and (type(number) is not int or number < 1):
            raise DomainError(f"{ATTRIBUTE}.{key} must be an integer >= 1; got {number!r}")
        domain[key] = number
    if domain["max_width"] is not None and domain["max_width"] < domain["min_width"]:
        raise DomainError(
            f"{ATTRIBUTE}.max_width must be >= min_width ({domain['min_width']}); "
            f"got {domain['max_width']}"
        )
    dtypes = value.get("dtypes", list(DTYPES))
    if not isinstance(dtypes, (list, tuple)) or not dtypes or any(d not in DTYPES for d in dtypes):
        raise DomainError(
            f"{ATTRIBUTE}.dtypes must be a non-empty list of {DTYPES}; got {dtypes!r}"
        )
    domain["dtypes"] = sorted(set(dtypes), key=DTYPES.index)
    strides = value.get("row_strides", "any")
    if strides not in ("any", "contiguous"):
        raise DomainError(f"{ATTRIBUTE}.row_strides must be 'any' or 'contiguous'; got {strides!r}")
    domain["row_strides"] = strides
    return domain


def outside(domain: dict[str, Any] | None, width: int, dtype: str, row_stride: int) -> str:
    """Why a problem of this layout is outside ``domain`` ("" when inside, or none declared)."""
    if domain is None:
        return ""
    if width < domain["min_width"]:
        return f"width {width} < min_width {domain['min_width']}"
    if domain["max_width"] is not None and width > domain["max_width"]:
        return f"width {width} > max_width {domain['max_width']}"
    if dtype not in domain["dtypes"]:
        return f"dtype {dtype} not in {', '.join(domain['dtypes'])}"
    if domain["row_strides"] == "contiguous" and row_stride != width:
        return f"row stride {row_stride} != width {width} (row_strides: contiguous)"
    return ""


def describe(domain: dict[str, Any] | None) -> str:
    """The domain in one line ("every input the inspector makes" when none is declared)."""
    if domain is None:
        return "none declared: every input the inspector makes"
    widths = f"widths {domain['min_width']}..{domain['max_width'] or 'any'}"
    return f"{widths}, dtypes {', '.join(domain['dtypes'])}, row strides {domain['row_strides']}"
