"""Dtype emulation in numpy: what a float16 / bfloat16 / float32 tensor can hold.

numpy has float16 (IEEE binary16, round-to-nearest-even on ``astype``) but no bfloat16, so
bfloat16 is emulated on float32 bit patterns: keep the top 16 bits, rounding to nearest-even
on the 16 dropped ones. Values are carried as float64 arrays holding exactly representable
numbers, so every later step can reason about them without a special type.
"""

from __future__ import annotations

import numpy as np

DTYPES: tuple[str, ...] = ("float32", "float16", "bfloat16")

# Largest finite value of each declared dtype.
FINITE_MAX: dict[str, float] = {
    "float32": float(np.finfo(np.float32).max),
    "float16": float(np.finfo(np.float16).max),
    "bfloat16": float(np.float32(np.frombuffer(np.uint32(0x7F7F0000).tobytes(), np.float32)[0])),
}

# Bytes per element, for the traffic ledger.
ITEMSIZE: dict[str, int] = {"float32": 4, "float16": 2, "bfloat16": 2}


def _bfloat16_bits_from_float32(values32: np.ndarray) -> np.ndarray:
    bits = np.ascontiguousarray(values32, dtype=np.float32).view(np.uint32)
    # Round to nearest, ties to even, on the 16 bits that bfloat16 drops.
    lsb = (bits >> np.uint32(16)) & np.uint32(1)
    rounded = (bits + np.uint32(0x7FFF) + lsb) >> np.uint32(16)
    # NaN must stay NaN (rounding could carry a NaN payload into infinity).
    nan = np.isnan(values32)
    rounded = np.where(nan, (bits >> np.uint32(16)) | np.uint32(0x0040), rounded)
    return rounded.astype(np.uint16)


def bfloat16_bits(values: np.ndarray) -> np.ndarray:
    """Bit patterns (uint16) of ``values`` rounded to bfloat16, nearest-even.

    Args:
        values: any float array.

    Returns:
        uint16 array of the same shape.
    """
    values32 = np.asarray(values, dtype=np.float64).astype(np.float32)
    return _bfloat16_bits_from_float32(values32)


def from_bfloat16_bits(bits: np.ndarray) -> np.ndarray:
    """Exact float64 values of bfloat16 bit patterns."""
    widened = np.asarray(bits, dtype=np.uint16).astype(np.uint32) << np.uint32(16)
    return widened.view(np.float32).astype(np.float64)


def round_to_dtype(values: np.ndarray, dtype: str) -> np.ndarray:
    """Round ``values`` to the nearest number ``dtype`` holds (ties to even), as float64.

    Args:
        values: any float array (float64 recommended).
        dtype: one of :data:`DTYPES`.

    Returns:
        A float64 array of exactly representable values.

    Raises:
        ValueError: for an unknown dtype.
    """
    array = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype == "float32":
            return array.astype(np.float32).astype(np.float64)
        if dtype == "float16":
            return array.astype(np.float16).astype(np.float64)
        if dtype == "bfloat16":
            return from_bfloat16_bits(bfloat16_bits(array))
    raise ValueError(f"dtype: {dtype!r} is not one of {', '.join(DTYPES)}")


def round_float32_to_dtype(values32: np.ndarray, dtype: str) -> np.ndarray:
    """The single cast a kernel makes at its store: float32 -> dtype, nearest-even, as float32."""
    values32 = np.asarray(values32, dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype == "float32":
            return values32.copy()
        if dtype == "float16":
            return values32.astype(np.float16).astype(np.float32)
        if dtype == "bfloat16":
            return from_bfloat16_bits(_bfloat16_bits_from_float32(values32)).astype(np.float32)
    raise ValueError(f"dtype: {dtype!r} is not one of {', '.join(DTYPES)}")
