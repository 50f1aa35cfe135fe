"""What differs between two receipts or two sessions, and timings beyond their spread."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import numpy as np

from inspector.records.receipts.exact import from_json_number, same_float

if TYPE_CHECKING:  # pragma: no cover - typing only
    from inspector.records.sessions.data import Session

# ----------------------------------------------------------------------------- receipts


@dataclass(frozen=True)
class Difference:
    """One way two receipts differ."""

    section: str
    detail: str

    def __str__(self) -> str:
        return f"{self.section}: {self.detail}"


_DIFF_INPUT_KEYS = ("rows", "width", "row_stride", "dtype", "eps", "x_sha256", "weight_sha256")
_DIFF_ROW_KEYS = ("sum_squares", "mean_square", "rrms", "tiled_sum_squares", "tiled_mean_square",
                  "tiled_rrms", "max_abs_error", "max_rel_error")  # fmt: skip
_DIFF_ERROR_KEYS = ("max_abs", "max_rel", "atol", "rtol", "compare_dtype", "passed", "compared")
_DIFF_KERNEL_KEYS = ("mode", "source_sha256", "block", "num_warps", "oob_writes")


def _same_value(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float, str)) and isinstance(b, (int, float, str)):
        try:
            return same_float(from_json_number(a), from_json_number(b))
        except ValueError:
            return a == b
    return a == b


def diff_receipts(a: dict[str, Any], b: dict[str, Any]) -> list[Difference]:
    """What differs between two receipts (ignoring timestamps and free-text details).

    Compared: input dimensions, dtype, eps and hashes; per-row intermediates and errors
    (exactly); headline errors and tolerance; fixture and mutant outcomes per target; kernel
    mode, source hash, block, num_warps; device; versions; the verdict; the timings, each
    implementation's device and eager-loop samples where their medians moved beyond their
    spread; and every field, at any depth, of the error bound, the batch-invariance
    certificate, the device evidence, the coverage, the tile, the model checks, the traffic and
    the rows' sources (free text aside).

    Args:
        a: the first receipt (schema-valid).
        b: the second receipt (schema-valid).

    Returns:
        The differences, empty when the receipts are equivalent.
    """
    found: list[Difference] = []

    def compare(section: str, left: dict[str, Any], right: dict[str, Any], keys: Iterable[str]):
        for key in keys:
            if not _same_value(left.get(key), right.get(key)):
                found.append(Difference(section, f"{key} {left.get(key)!r} -> {right.get(key)!r}"))

    compare("input", a["input"], b["input"], _DIFF_INPUT_KEYS)
    if len(a["rows"]) != len(b["rows"]):
        found.append(Difference("rows", f"{len(a['rows'])} rows -> {len(b['rows'])} rows"))
    else:
        changed = [
            f"row {index} {key}"
            for index, (left, right) in enumerate(zip(a["rows"], b["rows"], strict=True))
            for key in _DIFF_ROW_KEYS
            if not _same_value(left.get(key), right.get(key))
        ]
        if changed:
            more = f" (+{len(changed) - 6} more)" if len(changed) > 6 else ""
            found.append(Difference("rows", ", ".join(changed[:6]) + more))
    compare("errors", a["errors"], b["errors"], _DIFF_ERROR_KEYS)
    for section, key_of, value_of in (
        ("fixtures", lambda f: (f["target"], f["name"]), lambda f: (f["actual"], f["passed"])),
        (
            "mutants",
            lambda m: (m["target"], m["name"]),
            lambda m: (m["killed"], tuple(m["killed_by"])),
        ),
    ):
        left = {key_of(item): value_of(item) for item in a[section]}
        right = {key_of(item): value_of(item) for item in b[section]}
        for key in sorted(set(left) | set(right)):
            label = f"{key[0]} {key[1]}"
            if key not in right:
                found.append(Difference(section, f"{label} only in the first"))
            elif key not in left:
                found.append(Difference(section, f"{label} only in the second"))
            elif left[key] != right[key]:
                found.append(Difference(section, f"{label} {left[key]!r} -> {right[key]!r}"))
    compare("kernel", a["kernel"], b["kernel"], _DIFF_KERNEL_KEYS)
    if a["device"] != b["device"]:
        found.append(Difference("device", f"{a['device']!r} -> {b['device']!r}"))
    compare(
        "versions", a["versions"], b["versions"], sorted(set(a["versions"]) | set(b["versions"]))
    )
    compare("verdict", a["verdict"], b["verdict"], ("passed", "outcome"))
    found += [Difference("timing", line) for line in _timing_differences(a, b)]
    for section in _NESTED_SECTIONS:
        changed = _leaf_differences(a.get(section), b.get(section))
        if changed:
            more = f" (+{len(changed) - 6} more)" if len(changed) > 6 else ""
            found.append(Difference(section, ", ".join(changed[:6]) + more))
    return found


#: Sections compared leaf by leaf (every field at any depth, free text aside): what the receipt
#: proves beyond the rows, the fixtures and the headline errors.
_NESTED_SECTIONS = ("error_bound", "batch_invariance", "device_evidence", "coverage", "tile",
                    "model_checks", "traffic", "rows_source")  # fmt: skip
#: Fields that say in words what the numbers beside them say (never compared).
_FREE_TEXT = frozenset({"note", "why", "tolerance_why", "report", "checked_at"})


def _leaves(value: Any, path: str, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if key not in _FREE_TEXT:
                _leaves(item, f"{path}.{key}" if path else str(key), out)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _leaves(item, f"{path}[{index}]", out)
    else:
        out[path] = value


def _leaf_differences(a: Any, b: Any) -> list[str]:
    """Each leaf (by path) that differs between two sections, ``path left -> right``; a section
    only one receipt holds is one line."""
    if a is None or b is None:
        return [] if a is b else [f"{'absent' if a is None else 'present'} in the first only"]
    left: dict[str, Any] = {}
    right: dict[str, Any] = {}
    _leaves(a, "", left)
    _leaves(b, "", right)
    said = []
    for path in sorted(set(left) | set(right), key=str):
        if path not in right or path not in left or not _same_value(left[path], right[path]):
            said.append(f"{path or 'value'} {left.get(path)!r} -> {right.get(path)!r}")
    return said


def _timing_differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Two receipts' timings: presence, then each implementation's device and eager-loop
    samples moved beyond their spread (:func:`bench_differences`)."""
    left, right = a.get("timing"), b.get("timing")
    if left is None or right is None:
        return []  # a version-2 receipt from before the timing: nothing to compare
    if "absent" in left or "absent" in right:
        if ("absent" in left) != ("absent" in right):
            said = "absent" if "absent" in left else "measured"
            return [
                f"{said} in the first, {'measured' if said == 'absent' else 'absent'} in the second"
            ]
        return []
    shape = ("rows", "width", "dtype", "device")
    if any(left[key] != right[key] for key in shape):
        moved = ", ".join(
            f"{key} {left[key]!r} -> {right[key]!r}" for key in shape if left[key] != right[key]
        )
        return [f"not comparable: {moved}"]

    def samples(section: dict[str, Any]) -> dict[str, np.ndarray]:
        out = {}
        for row in section["results"]:
            for key, label in (("samples_us", "device us"), ("loop_samples_us", "loop us")):
                if row.get(key):
                    out[f"{row['impl']} {label}"] = np.asarray(row[key], dtype=np.float64)
        return out

    return [
        line.removeprefix("bench ") for line in bench_differences(samples(left), samples(right))
    ]


# ----------------------------------------------------------------------------- sessions


def session_differences(a: Session, b: Session) -> list[str]:
    """Field-by-field differences (arrays bit-exact, NaN equal to NaN).

    Args:
        a: the first session.
        b: the second session.

    Returns:
        One line per differing field, named by its path; empty when the sessions are equal.
    """
    return _differences(a, b, "session")


def _differences(a: Any, b: Any, where: str) -> list[str]:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return [f"{where}: {type(a).__name__} vs {type(b).__name__}"]
        if a.shape != b.shape or a.dtype != b.dtype:
            return [f"{where}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"]
        if a.dtype.kind == "f":
            same = np.array_equal(a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}"))
        else:
            same = np.array_equal(a, b)
        return [] if same else [f"{where}: values differ"]
    if hasattr(a, "__dataclass_fields__") and type(a) is type(b):
        found = []
        for item in fields(a):
            found += _differences(
                getattr(a, item.name), getattr(b, item.name), f"{where}.{item.name}"
            )
        return found
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        if set(a) != set(b):
            return [f"{where}: keys {sorted(a)} vs {sorted(b)}"]
        found = []
        for key in a:
            found += _differences(a[key], b[key], f"{where}[{key!r}]")
        return found
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return [f"{where}: length {len(a)} vs {len(b)}"]
        found = []
        for index, (left, right) in enumerate(zip(a, b, strict=False)):
            found += _differences(left, right, f"{where}[{index}]")
        return found
    if isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b):
        return []
    return [] if a == b and type(a) is type(b) else [f"{where}: {a!r} vs {b!r}"]


def bench_differences(
    first: Mapping[str, np.ndarray], second: Mapping[str, np.ndarray]
) -> list[str]:
    """Timing distributions that moved by more than the spread recorded in their samples.

    A key is flagged when its medians differ by more than the larger of the two interquartile
    ranges (noise as the samples themselves measured it); keys present in one only are listed.

    Args:
        first: samples by key (a session's ``bench_samples``).
        second: the samples to compare with.

    Returns:
        One line per flagged key, empty when nothing moved beyond its spread.
    """
    found = []
    for key in sorted(set(first) | set(second)):
        if key not in second:
            found.append(f"bench {key}: only in the first")
            continue
        if key not in first:
            found.append(f"bench {key}: only in the second")
            continue
        left = np.asarray(first[key], dtype=np.float64).ravel()
        right = np.asarray(second[key], dtype=np.float64).ravel()
        left, right = left[np.isfinite(left)], right[np.isfinite(right)]
        if not left.size or not right.size:
            if left.size != right.size:
                found.append(f"bench {key}: {left.size} finite samples -> {right.size}")
            continue
        q1_left, median_left, q3_left = np.percentile(left, [25, 50, 75])
        q1_right, median_right, q3_right = np.percentile(right, [25, 50, 75])
        spread = max(q3_left - q1_left, q3_right - q1_right)
        if abs(median_right - median_left) > spread:
            found.append(
                f"bench {key}: median {median_left:.6g} -> {median_right:.6g} "
                f"(beyond the spread {spread:.3g})"
            )
    return found
