"""Typed HDF5 datasets for session files: values exact in their dtype, texts, strings.

The helpers read and write one dataset or attribute each and raise :class:`Damaged` when what
is stored is not what the layout says (a missing node, a wrong shape or storage dtype).
h5py is imported where it is used, so that importing the session code does not load it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from oracle.dtypes import bfloat16_bits, from_bfloat16_bits

if TYPE_CHECKING:  # pragma: no cover - typing only
    import h5py


class Damaged(Exception):
    """A structural problem found while reading (the session reader makes it a SessionError)."""


def write_strings(group: h5py.Group, name: str, values: Iterable[str]) -> None:
    """A 1-D dataset of variable-length UTF-8 strings."""
    import h5py

    group.create_dataset(name, data=np.array(list(values), dtype=object), dtype=h5py.string_dtype())


def write_text(group: h5py.Group, name: str, text: str) -> None:
    """Long text (receipts, IR listings) as gzip-compressed UTF-8 bytes."""
    raw = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    if raw.size:
        dataset = group.create_dataset(name, data=raw, compression="gzip", compression_opts=6)
    else:
        dataset = group.create_dataset(name, shape=(0,), dtype=np.uint8)
    dataset.attrs["encoding"] = "utf-8"


def write_values(group: h5py.Group, name: str, values: np.ndarray, dtype: str) -> None:
    """x or weight in the declared dtype, exactly (bfloat16 as its uint16 bits)."""
    dataset = group.create_dataset(name, data=_encode(np.asarray(values, dtype=np.float64), dtype))
    dataset.attrs["dtype"] = dtype
    dataset.attrs["storage"] = "uint16 bit patterns" if dtype == "bfloat16" else dtype


def _encode(values: np.ndarray, dtype: str) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype == "bfloat16":
            return bfloat16_bits(values)
        return values.astype(np.float16 if dtype == "float16" else np.float32)


def _decode(raw: np.ndarray, dtype: str) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        if dtype == "bfloat16":
            return from_bfloat16_bits(raw)
        return raw.astype(np.float64)


def write_output(group: h5py.Group, name: str, values: np.ndarray, dtype: str) -> None:
    """An output array in the declared dtype when that is exact, else as float64.

    Outputs are values of the declared dtype, so the short form is the rule; a value that is
    not (an edited session) is kept exactly as float64. The attribute ``dtype`` says which.
    """
    array = np.asarray(values, dtype=np.float64)
    encoded = _encode(array, dtype)
    decoded = _decode(encoded, dtype)
    exact = np.array_equal(decoded, array, equal_nan=True) and np.array_equal(
        np.signbit(decoded), np.signbit(array)
    )
    dataset = group.create_dataset(name, data=encoded if exact else array)
    dataset.attrs["dtype"] = dtype if exact else "float64"


def attr(item: Any, name: str) -> Any:
    """An attribute as a plain Python value (str, int, float, bool).

    Raises:
        Damaged: ``item`` has no attribute ``name``.
    """
    if name not in item.attrs:
        raise Damaged(f"{item.name} has no attribute {name!r}")
    value = item.attrs[name]
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.generic):
        return value.item()
    return value


def node(parent: Any, name: str) -> Any:
    """The group or dataset ``name`` of ``parent``.

    Raises:
        Damaged: it is missing.
    """
    if name not in parent:
        raise Damaged(f"missing {parent.name.rstrip('/')}/{name}")
    return parent[name]


def read_strings(group: Any, name: str) -> tuple[str, ...]:
    """A dataset written by :func:`write_strings`."""
    return tuple(str(v) for v in node(group, name).asstr()[...].tolist())


def read_text(group: Any, name: str) -> str:
    """A dataset written by :func:`write_text` (or a plain string dataset)."""
    dataset = node(group, name)
    if dataset.dtype == np.uint8:
        return np.asarray(dataset[...], dtype=np.uint8).tobytes().decode("utf-8")
    return str(dataset.asstr()[()])


def read_array(group: Any, name: str, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """A dataset as a numpy array, of ``shape`` when one is given.

    Raises:
        Damaged: missing, or of another shape.
    """
    array = np.array(node(group, name)[...])
    if shape is not None and array.shape != shape:
        raise Damaged(f"{group.name}/{name} has shape {array.shape}, expected {shape}")
    return array


def read_values(group: Any, name: str, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    """x or weight written by :func:`write_values`, as float64.

    Raises:
        Damaged: missing, stored as another dtype or storage, or of another shape.
    """
    dataset = node(group, name)
    stored = attr(dataset, "dtype")
    if stored != dtype:
        raise Damaged(f"{dataset.name} is stored as {stored!r}, the problem says {dtype!r}")
    raw = np.array(dataset[...])
    if raw.shape != shape:
        raise Damaged(f"{dataset.name} has shape {raw.shape}, expected {shape}")
    expected_kind = {"float32": np.float32, "float16": np.float16, "bfloat16": np.uint16}[dtype]
    if raw.dtype != expected_kind:
        raise Damaged(f"{dataset.name} holds {raw.dtype}, expected {np.dtype(expected_kind)}")
    return _decode(raw, dtype)


def read_output(group: Any, name: str, shape: tuple[int, ...]) -> np.ndarray:
    """An output written by :func:`write_output`, as float64.

    Raises:
        Damaged: missing, of another shape, or not stored as its ``dtype`` attribute says.
    """
    dataset = node(group, name)
    dtype = str(attr(dataset, "dtype")) if "dtype" in dataset.attrs else "float64"
    raw = read_array(group, name, shape)
    storage = {"float64": np.float64, "float32": np.float32, "float16": np.float16}
    expected = storage.get(dtype, np.uint16 if dtype == "bfloat16" else None)
    if expected is None or raw.dtype != expected:
        raise Damaged(f"{dataset.name} holds {raw.dtype}, its dtype attribute says {dtype!r}")
    return _decode(raw, dtype) if dtype != "float64" else raw
