"""Device benchmark of the fused RMSNorm forward against the alternatives a kernel engineer has.

A benchmark is a program, not a timed test. For every shape of the chosen product shape sets
(``resources/shapes/*.json``) and every dtype it:

1. builds enough input buffers that the rotated working set is more than twice the L2 cache
   (read off ``torch.cuda.get_device_properties``), so no timing is served from cache;
2. prepares each implementation (``ours``: ``kernels.rms_norm``, the product launcher, its
   per-shape layout recorded in the row's ``note``; ``torch_eager``: ``F.rms_norm``;
   ``torch_compile``: the same function under ``torch.compile(dynamic=False)``, compiled once per
   shape with its compile time recorded apart; ``liger`` when Liger-Kernel imports; ``copy``: a
   device-to-device copy of the same bytes, the bandwidth ceiling);
3. checks output parity against a float64 reference on fresh random input, inside the harness,
   for every implementation and shape: a wrong result is flagged (``status="wrong"``), reported,
   and kept out of the chart and of the "% of copy" figures;
4. measures the peak extra device memory of one call (``torch.cuda.max_memory_allocated`` delta);
5. times with CUDA events: small shapes (``< GRAPH_BYTES_THRESHOLD`` per call) as CUDA-graph
   replays of many launches, each on another buffer (time per launch = replay / launches); large
   shapes call by call, with a GPU sleep queued before each start event so host overhead never
   lands inside the timed region. Warm-up first; median, p20, p80, min, max, mean and the raw
   samples are kept.

It writes ``results.json`` (the exact record: protocol, bytes formula, versions, device, driver,
clocks, every sample), ``results.csv`` (one line per shape x dtype x implementation) and
``bench.png`` (GB/s against width, one line per implementation, the copy ceiling drawn; % of copy
per shape) when matplotlib imports.

CPU-safe parts (shape sets, parity check, statistics, report writing, the command line without
CUDA) are plain functions tested in ``tests/bench``. This module imports no Qt, nothing of
``oracle`` or ``inspector``, and imports ``kernels.rms_norm`` only when it is benchmarked.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import datetime as _dt
import hashlib
import json
import math
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

SCHEMA_VERSION = "rmsnorm-bench/1"
SHAPES_SCHEMA = "rmsnorm-shapes/1"

SHAPES_DIR = Path(__file__).resolve().parent.parent / "resources" / "shapes"
DEFAULT_SETS = ("launch_bound", "tails", "llm", "narrow", "wide")

DTYPES: dict[str, torch.dtype] = {
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "float32": torch.float32,
}

# Display order; "copy" is the ceiling, measured first for every shape.
IMPLEMENTATIONS = ("copy", "ours", "torch_eager", "torch_compile", "liger")

BYTES_FORMULA = (
    "rmsnorm: bytes = rows*width*itemsize(x) [x read] + width*itemsize(weight) [weight read] "
    "+ rows*width*itemsize(y) [y written]; weight and y have x's dtype. "
    "copy: bytes = rows*width*itemsize(x) [x read] + rows*width*itemsize(x) [y written]. "
    "GB/s = bytes / time / 1e9; pct_of_copy = GB/s(impl) / GB/s(copy) * 100 for the same shape, "
    "dtype and run."
)

# Below this many bytes per call a shape is timed as CUDA-graph replays of many launches.
GRAPH_BYTES_THRESHOLD = 2**30
# The rotated working set (inputs + outputs of all distinct buffers) exceeds this many L2s.
L2_FACTOR = 2.0
FALLBACK_L2_BYTES = 60 * 2**20  # H200; used only when the device does not report its L2
MIN_GRAPH_LAUNCHES = 8
MAX_GRAPH_LAUNCHES = 8192
GRAPH_REPLAY_TARGET_US = 2000.0  # a replay of the fastest implementation lasts about this long
MIN_SAMPLES = 10
MAX_SAMPLES = 400
SLEEP_US_BEFORE_SAMPLE = 60.0  # GPU sleep queued ahead of each eager sample (hides host time)


class BenchUsageError(ValueError):
    """A bad option value: shape text, dtype, implementation name, shape-set file."""


class CudaUnavailableError(RuntimeError):
    """The benchmark needs a CUDA device and there is none."""


# --------------------------------------------------------------------------------------------
# Shapes and shape sets
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Shape:
    """One benchmarked problem: ``rows`` x ``width`` elements, reduced over ``width``."""

    rows: int
    width: int

    def __str__(self) -> str:
        return f"{self.rows}x{self.width}"


@dataclasses.dataclass(frozen=True)
class ShapeSet:
    """A named list of product shapes (one ``resources/shapes/NAME.json`` file)."""

    name: str
    description: str
    shapes: tuple[Shape, ...]


_SHAPE_RE = re.compile(r"^\s*(\d+)\s*[xX]\s*(\d+)\s*$")
_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
MAX_ROWS = 2**31 - 1
MAX_ELEMENTS = 2**33  # 8 Gi elements (32 GiB of fp32 per tensor): far past any product shape


def _positive_int(value: object, field: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BenchUsageError(f"{where}: {field} must be an integer; got {value!r}")
    if value < 1:
        raise BenchUsageError(f"{where}: {field} must be >= 1; got {value}")
    return value


def _check_shape_numbers(raw_rows: object, raw_width: object, where: str) -> Shape:
    rows = _positive_int(raw_rows, "rows", where)
    width = _positive_int(raw_width, "width", where)
    if rows > MAX_ROWS:
        raise BenchUsageError(f"{where}: rows must be <= {MAX_ROWS}; got {rows}")
    if rows * width > MAX_ELEMENTS:
        raise BenchUsageError(
            f"{where}: rows*width must be <= {MAX_ELEMENTS}; got {rows}*{width}={rows * width}"
        )
    return Shape(rows, width)


def parse_shape(text: str) -> Shape:
    """Parse ``"MxN"`` (rows x width), e.g. ``"4096x70"``.

    Raises:
        BenchUsageError: the text is not two positive integers joined by ``x``.
    """
    match = _SHAPE_RE.match(text)
    if not match:
        raise BenchUsageError(
            f"--shapes: {text!r} is neither a shape ROWSxWIDTH (e.g. 4096x70) nor a known set"
        )
    return _check_shape_numbers(int(match.group(1)), int(match.group(2)), f"--shapes {text!r}")


def validate_shape_set(data: object, *, source: str = "<shape set>") -> ShapeSet:
    """Validate one decoded shape-set JSON object and return it as a :class:`ShapeSet`.

    Expected: ``{"schema": "rmsnorm-shapes/1", "name": str, "description": str,
    "shapes": [[rows, width], ...]}`` with positive integers and no duplicate shape.

    Raises:
        BenchUsageError: naming the file and the field that is wrong.
    """
    if not isinstance(data, dict):
        raise BenchUsageError(f"{source}: a shape set must be a JSON object")
    if data.get("schema") != SHAPES_SCHEMA:
        raise BenchUsageError(
            f"{source}: schema must be {SHAPES_SCHEMA!r}; got {data.get('schema')!r}"
        )
    unknown = set(data) - {"schema", "name", "description", "shapes"}
    if unknown:
        raise BenchUsageError(f"{source}: unknown field(s) {sorted(unknown)}")
    name = data.get("name")
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise BenchUsageError(f"{source}: name must match [a-z][a-z0-9_]*; got {name!r}")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise BenchUsageError(f"{source}: description must be a string")
    raw = data.get("shapes")
    if not isinstance(raw, list) or not raw:
        raise BenchUsageError(f"{source}: shapes must be a non-empty list of [rows, width]")
    shapes: list[Shape] = []
    for index, item in enumerate(raw):
        where = f"{source}: shapes[{index}]"
        if not isinstance(item, list) or len(item) != 2:
            raise BenchUsageError(f"{where} must be [rows, width]; got {item!r}")
        shape = _check_shape_numbers(item[0], item[1], where)
        if shape in shapes:
            raise BenchUsageError(f"{where} duplicates {shape}")
        shapes.append(shape)
    return ShapeSet(name=name, description=description, shapes=tuple(shapes))


def load_shape_set(path: str | os.PathLike[str]) -> ShapeSet:
    """Read and validate one shape-set file.

    Raises:
        BenchUsageError: unreadable file, invalid JSON, or an invalid set.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise BenchUsageError(f"{path}: cannot read shape set ({err.strerror})") from err
    except json.JSONDecodeError as err:
        raise BenchUsageError(f"{path}: invalid JSON at line {err.lineno}: {err.msg}") from err
    shape_set = validate_shape_set(data, source=str(path))
    if shape_set.name != path.stem:
        raise BenchUsageError(f"{path}: name {shape_set.name!r} must equal the file stem")
    return shape_set


def load_shape_sets(directory: str | os.PathLike[str] = SHAPES_DIR) -> dict[str, ShapeSet]:
    """All ``*.json`` shape sets of ``directory`` by name."""
    directory = Path(directory)
    files = sorted(directory.glob("*.json"))
    if not files:
        raise BenchUsageError(f"no shape sets (*.json) in {directory}")
    return {path.stem: load_shape_set(path) for path in files}


def resolve_shapes(text: str | None, sets: dict[str, ShapeSet]) -> list[tuple[str, Shape]]:
    """Turn ``--shapes`` text into ``(set name, shape)`` pairs, in order, without duplicates.

    ``text`` is a comma-separated list of set names (``all`` = every default set) and
    ``ROWSxWIDTH`` shapes (these get the set name ``custom``). ``None`` means ``all``.

    Raises:
        BenchUsageError: an empty list, an unknown set name or malformed shape text.
    """
    tokens = ["all"] if text is None else [t.strip() for t in text.split(",")]
    if not tokens or any(not t for t in tokens):
        raise BenchUsageError(
            f"--shapes: empty item in {text!r}; give set names or ROWSxWIDTH, comma-separated"
        )
    chosen: list[tuple[str, Shape]] = []
    seen: set[tuple[str, Shape]] = set()

    def add(set_name: str, shape: Shape) -> None:
        if (set_name, shape) not in seen:
            seen.add((set_name, shape))
            chosen.append((set_name, shape))

    for token in tokens:
        if token == "all":
            for name in [n for n in DEFAULT_SETS if n in sets] + sorted(
                n for n in sets if n not in DEFAULT_SETS
            ):
                for shape in sets[name].shapes:
                    add(name, shape)
        elif token in sets:
            for shape in sets[token].shapes:
                add(token, shape)
        elif _SHAPE_RE.match(token):
            add("custom", parse_shape(token))
        else:
            known = ", ".join(["all", *sorted(sets)])
            raise BenchUsageError(
                f"--shapes: {token!r} is neither a shape ROWSxWIDTH (e.g. 4096x70) nor a known "
                f"set ({known})"
            )
    return chosen


def resolve_names(text: str | None, allowed: Sequence[str], option: str) -> list[str]:
    """Comma-separated names, each from ``allowed`` (``None``: all of them, in order)."""
    if text is None:
        return list(allowed)
    names = [t.strip() for t in text.split(",")]
    for name in names:
        if name not in allowed:
            raise BenchUsageError(f"{option}: {name!r} is not one of {', '.join(allowed)}")
    if not names:
        raise BenchUsageError(f"{option}: give at least one of {', '.join(allowed)}")
    return list(dict.fromkeys(names))


# --------------------------------------------------------------------------------------------
# Bytes, tolerances, parity
# --------------------------------------------------------------------------------------------


def traffic_bytes(shape: Shape, dtype: torch.dtype, *, impl: str = "ours") -> int:
    """Bytes one call must move at least (see ``BYTES_FORMULA``)."""
    itemsize = torch.empty((), dtype=dtype).element_size()
    elements = shape.rows * shape.width
    if impl == "copy":
        return 2 * elements * itemsize
    return 2 * elements * itemsize + shape.width * itemsize


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """Parity bounds against the float64 reference for one output dtype.

    An element passes when ``|y - ref| <= atol + rtol * |ref|``; the whole output also needs
    ``||y - ref|| / ||ref|| <= rel_l2``. The bf16/fp16 bounds allow two roundings to the output
    dtype (Liger's "llama" casting multiplies by the weight after rounding) plus fp32 reduction
    error; a wrong formula (no weight, sum instead of mean, no square) misses them by orders of
    magnitude.
    """

    atol: float
    rtol: float
    rel_l2: float


TOLERANCES: dict[str, Tolerance] = {
    "float32": Tolerance(atol=1e-5, rtol=1e-5, rel_l2=1e-5),
    "float16": Tolerance(atol=1e-3, rtol=2e-3, rel_l2=2e-3),
    "bfloat16": Tolerance(atol=1e-2, rtol=2e-2, rel_l2=1e-2),
}


@dataclasses.dataclass(frozen=True)
class Parity:
    """Outcome of comparing one output against the float64 reference."""

    passed: bool
    max_abs: float
    max_rel: float
    rel_l2: float
    worst_ratio: float  # max |err| / (atol + rtol |ref|); <= 1 passes
    bad_elements: int
    nonfinite: int
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def reference_rms_norm(
    x: torch.Tensor,
    weight: torch.Tensor,
    eps: float,
    *,
    row_start: int = 0,
    row_stop: int | None = None,
) -> torch.Tensor:
    """float64 RMSNorm of ``x[row_start:row_stop]`` (the values as stored, upcast exactly)."""
    x64 = x[row_start:row_stop].to(torch.float64)
    mean_square = (x64 * x64).mean(dim=-1, keepdim=True)
    return x64 * torch.rsqrt(mean_square + eps) * weight.to(torch.float64)


def check_parity(
    y: object,
    x: torch.Tensor,
    weight: torch.Tensor,
    eps: float,
    *,
    tolerance: Tolerance | None = None,
    chunk_elements: int = 1 << 24,
) -> Parity:
    """Compare an implementation's output ``y`` with the float64 reference of ``(x, weight)``.

    Works on any device (the reference is computed where ``x`` lives, ``chunk_elements`` at a
    time so a 2 GiB output never needs a 16 GiB float64 copy).

    Returns:
        A :class:`Parity`; ``passed`` is False for a wrong shape or dtype, any non-finite
        element, any element outside ``atol + rtol*|ref|``, or a relative L2 error over bound.
    """
    tol = tolerance or TOLERANCES[dtype_name(x.dtype)]
    nan = float("nan")
    if not isinstance(y, torch.Tensor):
        return Parity(
            False, nan, nan, nan, nan, 0, 0, f"output is {type(y).__name__}, not a tensor"
        )
    if tuple(y.shape) != tuple(x.shape):
        return Parity(
            False,
            nan,
            nan,
            nan,
            nan,
            0,
            0,
            f"output shape {tuple(y.shape)} != input shape {tuple(x.shape)}",
        )
    if y.dtype != x.dtype:
        return Parity(
            False,
            nan,
            nan,
            nan,
            nan,
            0,
            0,
            f"output dtype {dtype_name(y.dtype)} != input dtype {dtype_name(x.dtype)}",
        )
    width = x.shape[-1]
    x2d = x.reshape(-1, width)
    y2d = y.reshape(-1, width)
    rows = x2d.shape[0]
    step = max(1, chunk_elements // max(1, width))
    max_abs = 0.0
    max_rel = 0.0
    worst = 0.0
    bad = 0
    nonfinite = 0
    err_sq = 0.0
    ref_sq = 0.0
    for start in range(0, rows, step):
        stop = min(rows, start + step)
        ref = reference_rms_norm(x2d, weight, eps, row_start=start, row_stop=stop)
        out = y2d[start:stop].to(torch.float64)
        finite = torch.isfinite(out)
        nonfinite += int((~finite).sum().item())
        err = (out - ref).abs()
        err = torch.where(finite, err, torch.full_like(err, float("inf")))
        bound = tol.atol + tol.rtol * ref.abs()
        bad += int((err > bound).sum().item())
        if err.numel():
            max_abs = max(max_abs, float(err.max().item()))
            worst = max(worst, float((err / bound).max().item()))
            significant = ref.abs() > tol.atol
            if bool(significant.any()):
                max_rel = max(
                    max_rel, float((err[significant] / ref.abs()[significant]).max().item())
                )
        err_sq += float(torch.where(finite, out - ref, torch.zeros_like(ref)).square().sum().item())
        ref_sq += float(ref.square().sum().item())
    rel_l2 = math.sqrt(err_sq) / math.sqrt(ref_sq) if ref_sq > 0 else math.sqrt(err_sq)
    reasons = []
    if nonfinite:
        reasons.append(f"{nonfinite} non-finite element(s)")
    if bad:
        reasons.append(
            f"{bad} element(s) outside atol={tol.atol:g} + rtol={tol.rtol:g}*|ref| "
            f"(max abs error {max_abs:.3g})"
        )
    if rel_l2 > tol.rel_l2:
        reasons.append(f"relative L2 error {rel_l2:.3g} > {tol.rel_l2:g}")
    return Parity(
        passed=not reasons,
        max_abs=max_abs,
        max_rel=max_rel,
        rel_l2=rel_l2,
        worst_ratio=worst,
        bad_elements=bad,
        nonfinite=nonfinite,
        reason="; ".join(reasons) if reasons else "ok",
    )


def check_copy(y: object, x: torch.Tensor) -> Parity:
    """The copy ceiling must reproduce its input bit for bit."""
    nan = float("nan")
    if not isinstance(y, torch.Tensor) or y.shape != x.shape or y.dtype != x.dtype:
        return Parity(False, nan, nan, nan, nan, 0, 0, "copy output has the wrong shape or dtype")
    equal = bool(torch.equal(y, x))
    return Parity(
        equal,
        0.0 if equal else nan,
        0.0 if equal else nan,
        0.0 if equal else nan,
        0.0,
        0 if equal else -1,
        0,
        "ok" if equal else "copy differs from its input",
    )


def make_parity_input(
    shape: Shape, dtype: torch.dtype, device: torch.device | str, *, generator: torch.Generator
) -> torch.Tensor:
    """Fresh random rows with row scales spread over 0.1..10 (never zeros)."""
    x = torch.randn(
        shape.rows, shape.width, generator=generator, device=device, dtype=torch.float32
    )
    scales = torch.exp(
        torch.empty(shape.rows, 1, device=device, dtype=torch.float32).uniform_(
            math.log(0.1), math.log(10.0), generator=generator
        )
    )
    x.mul_(scales).add_(0.25 * scales)
    return x.to(dtype)


def make_weight(
    width: int, dtype: torch.dtype, device: torch.device | str, *, generator: torch.Generator
) -> torch.Tensor:
    """Asymmetric weights: magnitudes 0.5..2, random signs (a missing weight cannot hide)."""
    magnitude = torch.empty(width, device=device, dtype=torch.float32).uniform_(
        0.5, 2.0, generator=generator
    )
    sign = torch.where(torch.rand(width, device=device, generator=generator) < 0.3, -1.0, 1.0)
    return (magnitude * sign).to(dtype)


# --------------------------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class TimingStats:
    """Distribution of per-call times in microseconds."""

    n: int
    median_us: float
    p20_us: float
    p80_us: float
    min_us: float
    max_us: float
    mean_us: float
    std_us: float


def summarize(samples_us: Sequence[float]) -> TimingStats:
    """Median, p20, p80, min, max, mean, std of ``samples_us`` (linear interpolation).

    Raises:
        ValueError: no samples, or a non-finite or negative sample.
    """
    values = np.asarray(samples_us, dtype=np.float64)
    if values.size == 0:
        raise ValueError("samples_us must hold at least one timing")
    if not np.all(np.isfinite(values)) or np.any(values < 0):
        raise ValueError("samples_us must be finite and non-negative")
    p20, median, p80 = np.percentile(values, [20.0, 50.0, 80.0])
    return TimingStats(
        n=int(values.size),
        median_us=float(median),
        p20_us=float(p20),
        p80_us=float(p80),
        min_us=float(values.min()),
        max_us=float(values.max()),
        mean_us=float(values.mean()),
        std_us=float(values.std(ddof=1)) if values.size > 1 else 0.0,
    )


def gbps(nbytes: int, time_us: float) -> float:
    """Bytes over microseconds as GB/s (1e9 bytes per second)."""
    return nbytes / (time_us * 1e-6) / 1e9 if time_us > 0 else float("nan")


# --------------------------------------------------------------------------------------------
# Implementations
# --------------------------------------------------------------------------------------------

CallFn = Callable[[torch.Tensor, torch.Tensor, "torch.Tensor | None"], torch.Tensor]


@dataclasses.dataclass
class Prepared:
    """An implementation ready for one shape and dtype.

    ``call(x, weight, dst)`` returns the output; ``dst`` is a preallocated destination used by
    the copy ceiling only. ``steady()`` is entered around every timed region (torch.compile
    uses it to turn a recompilation into an error instead of a silent eager fallback).
    """

    call: CallFn
    compile_s: float | None = None
    needs_dst: bool = False
    steady: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext
    note: str = ""


class ImplementationUnavailable(RuntimeError):
    """The implementation cannot run here at all (module missing); recorded once, not per row."""


def _first_call_seconds(fn: Callable[[], Any], device: torch.device) -> float:
    torch.cuda.synchronize(device)
    start = time.perf_counter()
    fn()
    torch.cuda.synchronize(device)
    return time.perf_counter() - start


def _prepare_copy(shape: Shape, dtype: torch.dtype, eps: float, device: torch.device) -> Prepared:
    def call(x: torch.Tensor, weight: torch.Tensor, dst: torch.Tensor | None) -> torch.Tensor:
        if dst is None:  # the harness always passes one to needs_dst implementations
            raise ValueError("copy needs a destination buffer")
        return dst.copy_(x)

    return Prepared(call=call, needs_dst=True, note="device-to-device copy x -> y (ceiling)")


def _prepare_ours(shape: Shape, dtype: torch.dtype, eps: float, device: torch.device) -> Prepared:
    try:
        from kernels import rms_norm
        from kernels.rmsnorm import choose_config, sm_count_for
    except ImportError as err:  # pragma: no cover - the package is ours
        raise ImplementationUnavailable(f"kernels.rms_norm does not import: {err}") from err

    def call(x: torch.Tensor, weight: torch.Tensor, dst: torch.Tensor | None) -> torch.Tensor:
        return rms_norm(x, weight, eps)

    itemsize = torch.empty((), dtype=dtype).element_size()
    config = choose_config(shape.rows, shape.width, itemsize, sm_count_for(device))
    layout = (
        f"{config.path}: block {config.block}, rows/program {config.rows_per_program}, "
        f"{config.num_warps} warps, {config.grid(shape.rows)} programs"
        + (", early weight" if config.w_early and not config.loop else "")
        + (", runtime chunk loop" if config.loop and not config.unroll else "")
        + (", streaming stores" if config.loop and config.stream_store else "")
        + (", streaming x and y" if not config.loop and config.stream_store else "")
    )
    return Prepared(call=call, note=f"kernels.rms_norm ({layout})")


def _prepare_torch_eager(
    shape: Shape, dtype: torch.dtype, eps: float, device: torch.device
) -> Prepared:
    from torch.nn import functional

    normalized_shape = (shape.width,)

    def call(x: torch.Tensor, weight: torch.Tensor, dst: torch.Tensor | None) -> torch.Tensor:
        return functional.rms_norm(x, normalized_shape, weight, eps)

    return Prepared(call=call, note="torch.nn.functional.rms_norm")


def _raise_dynamo_limits() -> dict[str, int]:
    """Lift dynamo's recompile limits so no shape ever falls back to eager silently."""
    import torch._dynamo

    config = torch._dynamo.config
    raised = {}
    for name in (
        "cache_size_limit",
        "recompile_limit",
        "accumulated_cache_size_limit",
        "accumulated_recompile_limit",
    ):
        if hasattr(config, name):
            setattr(config, name, max(int(getattr(config, name)), 4096))
            raised[name] = int(getattr(config, name))
    return raised


def _prepare_torch_compile(
    shape: Shape, dtype: torch.dtype, eps: float, device: torch.device
) -> Prepared:
    import torch._dynamo
    from torch.nn import functional

    # A fresh dynamo state per shape: compiled exactly once for this static shape, and the
    # limits lifted as well, so a recompile can never hit a limit and fall back to eager.
    torch._dynamo.reset()
    _raise_dynamo_limits()
    normalized_shape = (shape.width,)

    def rms_norm_eager(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return functional.rms_norm(x, normalized_shape, weight, eps)

    compiled = torch.compile(rms_norm_eager, dynamic=False, fullgraph=True)

    def call(x: torch.Tensor, weight: torch.Tensor, dst: torch.Tensor | None) -> torch.Tensor:
        return compiled(x, weight)

    generator = torch.Generator(device=device).manual_seed(1234)
    example = make_parity_input(shape, dtype, device, generator=generator)
    weight = make_weight(shape.width, dtype, device, generator=generator)
    compile_s = _first_call_seconds(lambda: compiled(example, weight), device)

    def steady() -> contextlib.AbstractContextManager[Any]:
        set_stance = getattr(torch.compiler, "set_stance", None)
        if set_stance is None:  # pragma: no cover - torch < 2.6
            return contextlib.nullcontext()
        return set_stance("fail_on_recompile")

    return Prepared(
        call=call,
        compile_s=compile_s,
        steady=steady,
        note="torch.compile(F.rms_norm, dynamic=False, fullgraph=True), fresh per shape; "
        "timed under set_stance('fail_on_recompile')",
    )


def _prepare_liger(shape: Shape, dtype: torch.dtype, eps: float, device: torch.device) -> Prepared:
    try:
        from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    except Exception as err:  # ImportError, or a Liger that fails on this torch/triton
        raise ImplementationUnavailable(f"liger_kernel does not import: {err}") from err

    def call(x: torch.Tensor, weight: torch.Tensor, dst: torch.Tensor | None) -> torch.Tensor:
        # Liger's defaults (offset 0, casting_mode "llama"), the way LigerRMSNorm calls it.
        return LigerRMSNormFunction.apply(x, weight, eps)

    return Prepared(call=call, note="liger_kernel LigerRMSNormFunction (llama casting)")


PREPARERS: dict[str, Callable[[Shape, torch.dtype, float, torch.device], Prepared]] = {
    "copy": _prepare_copy,
    "ours": _prepare_ours,
    "torch_eager": _prepare_torch_eager,
    "torch_compile": _prepare_torch_compile,
    "liger": _prepare_liger,
}


def implementation_info(name: str) -> dict[str, Any]:
    """Version and availability of one implementation (without running it)."""
    info: dict[str, Any] = {"name": name}
    try:
        if name == "ours":
            module_name = "kernels.rmsnorm"
            import importlib

            module = importlib.import_module(module_name)
            source = Path(module.__file__ or "").read_bytes()
            info["source_sha256"] = hashlib.sha256(source).hexdigest()
            info["module"] = module_name
        elif name == "liger":
            import importlib.metadata

            import liger_kernel  # noqa: F401

            info["version"] = importlib.metadata.version("liger-kernel")
        elif name in ("torch_eager", "torch_compile"):
            info["version"] = torch.__version__
        info["available"] = True
    except Exception as err:
        info["available"] = False
        info["reason"] = f"{type(err).__name__}: {err}"
    return info


# --------------------------------------------------------------------------------------------
# Timing on the device
# --------------------------------------------------------------------------------------------


def _sleep_cycles(device: torch.device, microseconds: float) -> int:
    props = torch.cuda.get_device_properties(device)
    clock_khz = getattr(props, "clock_rate", 0) or 1_980_000  # kHz; H200 boost when unknown
    return max(1000, int(microseconds * clock_khz / 1000))


def time_events(
    call: Callable[[int], Any],
    count: int,
    *,
    samples: int,
    device: torch.device,
) -> list[float]:
    """Time ``call(i)`` one call per sample with CUDA events, ``i`` rotating over ``count``.

    A GPU sleep is queued before each start event, so the host work of the call (Python,
    guards, launch) finishes while the stream is still busy and never lands inside the events.
    """
    sleep = getattr(torch.cuda, "_sleep", None)
    cycles = _sleep_cycles(device, SLEEP_US_BEFORE_SAMPLE)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
    torch.cuda.synchronize(device)
    for index in range(samples):
        if sleep is not None:
            sleep(cycles)
        starts[index].record()
        call(index % count)
        ends[index].record()
    torch.cuda.synchronize(device)
    return [s.elapsed_time(e) * 1000.0 for s, e in zip(starts, ends, strict=True)]


def time_graph(
    call: Callable[[int], Any],
    count: int,
    *,
    launches: int,
    replays: int,
    device: torch.device,
) -> list[float]:
    """Capture ``launches`` calls (buffer ``i % count``) in one CUDA graph; time each replay.

    Returns per-launch microseconds (replay time / launches), one per replay. Outputs made
    during capture are kept alive until the capture ends, so every launch writes a distinct
    output buffer as it reads a distinct input.
    """
    stream = torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        for index in range(min(3, count)):
            call(index)
    torch.cuda.current_stream(device).wait_stream(stream)
    torch.cuda.synchronize(device)
    graph = torch.cuda.CUDAGraph()
    outputs = []
    with torch.cuda.graph(graph):
        for index in range(launches):
            outputs.append(call(index % count))
    del outputs
    graph.replay()  # warm-up replay
    torch.cuda.synchronize(device)
    sleep = getattr(torch.cuda, "_sleep", None)
    cycles = _sleep_cycles(device, SLEEP_US_BEFORE_SAMPLE)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(replays)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(replays)]
    for index in range(replays):
        if sleep is not None:
            sleep(cycles)
        starts[index].record()
        graph.replay()
        ends[index].record()
    torch.cuda.synchronize(device)
    result = [s.elapsed_time(e) * 1000.0 / launches for s, e in zip(starts, ends, strict=True)]
    del graph
    return result


def peak_extra_bytes(call: Callable[[], Any], device: torch.device) -> tuple[int, int]:
    """``(peak bytes allocated during one call above the start, bytes of its output)``."""
    torch.cuda.synchronize(device)
    base = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    out = call()
    torch.cuda.synchronize(device)
    peak = torch.cuda.max_memory_allocated(device) - base
    out_bytes = out.numel() * out.element_size() if isinstance(out, torch.Tensor) else 0
    return int(peak), int(out_bytes)


# --------------------------------------------------------------------------------------------
# Configuration and the run
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class BenchConfig:
    """What to run and how long to time each measurement."""

    shapes: list[tuple[str, Shape]]
    dtypes: list[str]
    impls: list[str]
    eps: float = 1e-6
    rep_ms: float = 60.0
    warmup_ms: float = 10.0
    seed: int = 0
    min_samples: int = MIN_SAMPLES
    max_samples: int = MAX_SAMPLES
    graph_bytes_threshold: int = GRAPH_BYTES_THRESHOLD
    device: str = "cuda"
    budget_s: float | None = None  # start no new shape x dtype after this many seconds
    rounds: int = 1  # timing rounds over all implementations (run-to-run spread)


def _l2_bytes(device: torch.device) -> tuple[int, str]:
    props = torch.cuda.get_device_properties(device)
    value = int(getattr(props, "L2_cache_size", 0) or 0)
    if value > 0:
        return value, "torch.cuda.get_device_properties().L2_cache_size"
    return FALLBACK_L2_BYTES, "fallback constant (device did not report L2_cache_size)"


def buffer_count(bytes_per_call: int, l2_bytes: int) -> int:
    """Distinct (input, output) buffers so that they sum to more than ``L2_FACTOR`` x L2."""
    return max(2, math.floor(L2_FACTOR * l2_bytes / max(1, bytes_per_call)) + 1)


def _status_for_exception(err: BaseException) -> str:
    return (
        "unsupported" if isinstance(err, (TypeError, ValueError, NotImplementedError)) else "error"
    )


def iter_benchmark(config: BenchConfig) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """Run the benchmark; yield ``(step, total, row)`` after each measurement.

    ``row`` is one result (a shape x dtype x implementation), the same dict that lands in
    ``results.json``'s ``results`` list (``pct_of_copy`` is filled in by :func:`finalize`).
    """
    device = torch.device(config.device)
    l2_bytes, _ = _l2_bytes(device)
    total = len(config.shapes) * len(config.dtypes) * len(config.impls)
    step = 0
    unavailable: dict[str, str] = {}
    generator = torch.Generator(device=device)
    started = time.perf_counter()
    for set_name, shape in config.shapes:
        for dtype_key in config.dtypes:
            dtype = DTYPES[dtype_key]
            elapsed = time.perf_counter() - started
            if config.budget_s is not None and elapsed > config.budget_s:
                for impl in config.impls:
                    step += 1
                    yield (
                        step,
                        total,
                        {
                            "set": set_name,
                            "rows": shape.rows,
                            "width": shape.width,
                            "dtype": dtype_key,
                            "impl": impl,
                            "status": "skipped",
                            "note": f"time budget of {config.budget_s:g} s spent ({elapsed:.0f} s)",
                        },
                    )
                continue
            generator.manual_seed(config.seed + 7919 * shape.rows + shape.width)
            rows_out = _bench_one_shape(
                config, device, l2_bytes, set_name, shape, dtype, generator, unavailable
            )
            for row in rows_out:
                step += 1
                yield step, total, row
            torch.cuda.empty_cache()


def _bench_one_shape(
    config: BenchConfig,
    device: torch.device,
    l2_bytes: int,
    set_name: str,
    shape: Shape,
    dtype: torch.dtype,
    generator: torch.Generator,
    unavailable: dict[str, str],
    preparers: dict[str, Callable[[Shape, torch.dtype, float, torch.device], Prepared]]
    | None = None,
) -> list[dict[str, Any]]:
    """Measure every implementation of ``config.impls`` on one shape and dtype.

    Every implementation is first prepared, checked for parity and measured for memory; then
    ``config.rounds`` timing rounds each time all of them, in :func:`round_order` (copy first in
    even rounds, last in odd ones), so the run-to-run spread of each implementation is measured
    in the same run (``round_medians_us``).

    ``preparers`` maps implementation names to their factories (default :data:`PREPARERS`);
    the tuning sweep passes its own (one per candidate launch configuration).
    """
    preparers = PREPARERS if preparers is None else preparers
    bytes_call = traffic_bytes(shape, dtype)
    count = buffer_count(bytes_call, l2_bytes)
    use_graph = bytes_call < config.graph_bytes_threshold
    if use_graph:
        count = min(count, MAX_GRAPH_LAUNCHES)
    xs = [
        torch.randn(
            shape.rows, shape.width, device=device, dtype=torch.float32, generator=generator
        )
        .add_(0.25)
        .to(dtype)
        for _ in range(count)
    ]
    weight = make_weight(shape.width, dtype, device, generator=generator)
    working_set = count * bytes_call
    rows: dict[str, dict[str, Any]] = {}
    ready: dict[str, _Ready] = {}
    for impl in config.impls:
        row: dict[str, Any] = {
            "set": set_name,
            "rows": shape.rows,
            "width": shape.width,
            "dtype": dtype_name(dtype),
            "impl": impl,
            "bytes": traffic_bytes(shape, dtype, impl=impl),
            "timing_mode": "cuda_graph" if use_graph else "events_per_call",
            "buffers": count,
            "working_set_bytes": working_set,
        }
        rows[impl] = row
        if impl in unavailable:
            row.update(status="unavailable", note=unavailable[impl])
            continue
        started = time.perf_counter()
        try:
            ready[impl] = _prepare_impl(
                config, device, preparers[impl], impl, shape, dtype, xs, weight, generator, row
            )
        except ImplementationUnavailable as err:
            unavailable[impl] = str(err)
            row.update(status="unavailable", note=str(err))
        except Exception as err:
            _record_failure(row, err, device)
        row["wall_s"] = time.perf_counter() - started
    # One launch count per shape: every implementation's replay carries the same fixed cost.
    launches = graph_launches([item.estimate_us for item in ready.values()], count)
    for round_index in range(config.rounds):
        for impl in round_order(list(ready), round_index):
            item = ready.get(impl)
            if item is None:
                continue
            row = rows[impl]
            started = time.perf_counter()
            try:
                samples = _time_impl(config, device, item, use_graph, row, launches)
            except Exception as err:
                _record_failure(row, err, device)
                del ready[impl]
                continue
            row.setdefault("samples_us", []).extend(round(v, 4) for v in samples)
            row.setdefault("round_medians_us", []).append(float(np.median(samples)))
            row["wall_s"] = row.get("wall_s", 0.0) + time.perf_counter() - started
    nbytes_by_impl = {impl: traffic_bytes(shape, dtype, impl=impl) for impl in rows}
    for impl, row in rows.items():
        if impl in ready and row.get("samples_us"):
            stats = summarize(row["samples_us"])
            row.update(dataclasses.asdict(stats))
            nbytes = nbytes_by_impl[impl]
            row["gbps"] = gbps(nbytes, stats.median_us)
            row["gbps_p20_time"] = gbps(nbytes, stats.p20_us)
            row["gbps_p80_time"] = gbps(nbytes, stats.p80_us)
            medians = row["round_medians_us"]
            row["round_spread_pct"] = 100.0 * (max(medians) - min(medians)) / min(medians)
            parity_ok = row["parity"]["passed"]
            row["status"] = "ok" if parity_ok else "wrong"
            if not parity_ok:
                row["note"] = f"parity failed: {row['parity']['reason']}"
        _progress_line(row)
    del xs, ready
    return list(rows.values())


def graph_launches(estimates_us: Sequence[float], count: int) -> int:
    """Launches per CUDA-graph replay for one shape, the same for all its implementations.

    Enough launches that the FASTEST implementation's replay lasts about
    ``GRAPH_REPLAY_TARGET_US`` (so every replay does), and at least one per input buffer;
    within ``[MIN_GRAPH_LAUNCHES, MAX_GRAPH_LAUNCHES]``.

    A replay's time holds a fixed cost besides its launches (the graph launch, the first
    kernel's ramp-up), and time per launch = replay / launches shares it out. When each
    implementation got its own count from its own first estimate, that share differed between
    implementations of one shape: the H200 records of 16:37-17:31 timed 65536x512 bf16 with
    12-36 launches for ``ours`` and 15-46 for torch.compile, and in all eight of them the
    implementation with more launches was the faster one (by up to 0.5%). The estimates of
    fast calls are the least reliable (host time can outlast the queued sleep), so the
    smallest one, usually the copy's, sets the count.
    """
    fastest = min((e for e in estimates_us if e > 0 and math.isfinite(e)), default=0.0)
    wanted = math.ceil(GRAPH_REPLAY_TARGET_US / fastest) if fastest > 0 else MIN_GRAPH_LAUNCHES
    return int(min(MAX_GRAPH_LAUNCHES, max(MIN_GRAPH_LAUNCHES, count, wanted)))


def round_order(impls: Sequence[str], round_index: int) -> list[str]:
    """The order in which timing round ``round_index`` times ``impls``: as given in even
    rounds, reversed in odd ones.

    Alternating the order (A B C, then C B A) gives every implementation the same mean position
    over two rounds, so a drift of the machine during one shape's rounds (clocks, temperature)
    and whatever the implementation timed just before leaves behind do not always favour the
    same one; with a fixed order ``ours`` always ran right after the copy.
    """
    order = list(impls)
    return order[::-1] if round_index % 2 else order


@dataclasses.dataclass
class _Ready:
    """A prepared implementation with its timed call and first time estimate."""

    prepared: Prepared
    call: Callable[[int], Any]
    count: int
    estimate_us: float


def _record_failure(row: dict[str, Any], err: Exception, device: torch.device) -> None:
    if isinstance(err, torch.cuda.OutOfMemoryError):
        row.update(status="error", note=f"out of memory: {str(err).splitlines()[0]}")
    else:
        row.update(status=_status_for_exception(err), note=f"{type(err).__name__}: {err}"[:500])
    with contextlib.suppress(Exception):
        torch.cuda.synchronize(device)


def _progress_line(row: dict[str, Any]) -> None:
    parts = [
        f"{row['set']:>12} {row['rows']:>6}x{row['width']:<6} {row['dtype']:>8} {row['impl']:>13}"
    ]
    if "median_us" in row:
        parts.append(f"{row['median_us']:10.2f} us  {row.get('gbps', float('nan')):7.0f} GB/s")
        if "round_medians_us" in row:
            parts.append("rounds " + "/".join(f"{m:.2f}" for m in row["round_medians_us"]))
    parts.append(row.get("status", "?"))
    if row.get("status") != "ok" and row.get("note"):
        parts.append(str(row["note"])[:120])
    print("  ".join(parts), file=sys.stderr, flush=True)


def _prepare_impl(
    config: BenchConfig,
    device: torch.device,
    preparer: Callable[[Shape, torch.dtype, float, torch.device], Prepared],
    impl: str,
    shape: Shape,
    dtype: torch.dtype,
    xs: list[torch.Tensor],
    weight: torch.Tensor,
    generator: torch.Generator,
    row: dict[str, Any],
) -> _Ready:
    """Prepare ``impl``, check its parity and memory, warm it up; results go into ``row``."""
    prepared = preparer(shape, dtype, config.eps, device)
    count = len(xs)
    dsts = [torch.empty_like(x) for x in xs] if prepared.needs_dst else None

    def call(index: int) -> torch.Tensor:
        return prepared.call(xs[index], weight, dsts[index] if dsts is not None else None)

    row["note"] = prepared.note
    if prepared.compile_s is not None:
        row["compile_s"] = prepared.compile_s
    else:
        row["first_call_s"] = _first_call_seconds(lambda: call(0), device)

    # Parity on fresh random input, inside the harness, before any timing.
    x_check = make_parity_input(shape, dtype, device, generator=generator)
    dst_check = torch.empty_like(x_check) if prepared.needs_dst else None
    with prepared.steady():
        y_check = prepared.call(x_check, weight, dst_check)
    torch.cuda.synchronize(device)
    if impl == "copy":
        parity = check_copy(y_check, x_check)
    else:
        parity = check_parity(y_check, x_check, weight, config.eps)
    del x_check, y_check, dst_check
    row["parity"] = parity.as_dict()

    with prepared.steady():
        peak, out_bytes = peak_extra_bytes(lambda: call(0), device)
        warm = time_events(call, count, samples=max(3, min(count, 20)), device=device)
    row["peak_bytes_per_call"] = peak
    row["output_bytes"] = out_bytes
    row["extra_bytes_beyond_output"] = peak - out_bytes if not prepared.needs_dst else peak
    return _Ready(prepared, call, count, max(0.5, float(np.median(warm))))


def _time_impl(
    config: BenchConfig,
    device: torch.device,
    item: _Ready,
    use_graph: bool,
    row: dict[str, Any],
    launches: int,
) -> list[float]:
    """One timing round of a prepared implementation; per-call microseconds.

    ``launches``: calls per CUDA-graph replay (:func:`graph_launches`, the same for every
    implementation of the shape); unused for event timing.
    """
    estimate_us = item.estimate_us
    with item.prepared.steady():
        if use_graph and row.get("timing_mode") == "cuda_graph":
            replay_us = estimate_us * launches
            replays = int(
                min(config.max_samples, max(config.min_samples, config.rep_ms * 1000.0 / replay_us))
            )
            try:
                samples = time_graph(
                    item.call, item.count, launches=launches, replays=replays, device=device
                )
                row["launches_per_sample"] = launches
                return samples
            except Exception as err:  # e.g. an implementation that synchronizes the host
                torch.cuda.synchronize(device)
                row["timing_mode"] = "events_per_call"
                row["note"] = (
                    f"{row.get('note', '')}; CUDA-graph capture failed "
                    f"({type(err).__name__}: {err})"
                )[:400]
        row["launches_per_sample"] = 1
        extra_warm = int(config.warmup_ms * 1000.0 / estimate_us)
        if extra_warm > 0:
            time_events(
                item.call, item.count, samples=min(extra_warm, config.max_samples), device=device
            )
        per_sample_us = estimate_us + SLEEP_US_BEFORE_SAMPLE
        n = int(
            min(config.max_samples, max(config.min_samples, config.rep_ms * 1000.0 / per_sample_us))
        )
        return time_events(item.call, item.count, samples=n, device=device)


def finalize(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Fill ``pct_of_copy`` (and its p20/p80 spread) from the copy row of the same shape/dtype.

    Only rows with ``status == "ok"`` get a percentage; a wrong result never does.
    """
    copy_gbps: dict[tuple[str, int, int, str], float] = {}
    for row in results:
        if row["impl"] == "copy" and row.get("status") == "ok":
            copy_gbps[(row["set"], row["rows"], row["width"], row["dtype"])] = row["gbps"]
    for row in results:
        key = (row["set"], row["rows"], row["width"], row["dtype"])
        if row.get("status") == "ok" and key in copy_gbps and copy_gbps[key] > 0:
            row["pct_of_copy"] = 100.0 * row["gbps"] / copy_gbps[key]
        else:
            row.pop("pct_of_copy", None)
    _fill_vs_best_alternative(results)
    return results


_ALTERNATIVES = ("torch_eager", "torch_compile", "liger")


def _fill_vs_best_alternative(results: list[dict[str, Any]]) -> None:
    """``speedup_vs_best_alt``: best alternative's median time / this row's median time."""
    best: dict[tuple[str, int, int, str], tuple[float, str]] = {}
    for row in results:
        if row["impl"] in _ALTERNATIVES and row.get("status") == "ok":
            key = (row["set"], row["rows"], row["width"], row["dtype"])
            if key not in best or row["median_us"] < best[key][0]:
                best[key] = (row["median_us"], row["impl"])
    for row in results:
        key = (row["set"], row["rows"], row["width"], row["dtype"])
        if row["impl"] == "ours" and row.get("status") == "ok" and key in best:
            row["best_alternative"] = best[key][1]
            row["speedup_vs_best_alt"] = best[key][0] / row["median_us"]


# --------------------------------------------------------------------------------------------
# Environment record
# --------------------------------------------------------------------------------------------

_SMI_FIELDS = (
    "name,driver_version,pci.bus_id,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,"
    "clocks.applications.graphics,power.draw,power.limit,temperature.gpu,pstate,"
    "memory.total,memory.used,utilization.gpu"
)


def nvidia_smi_query() -> dict[str, Any]:
    """One ``nvidia-smi --query-gpu`` reading (names -> values), or why there is none."""
    try:
        proc = subprocess.run(
            ["nvidia-smi", f"--query-gpu={_SMI_FIELDS}", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as err:
        return {"error": f"nvidia-smi not usable: {err}"}
    if proc.returncode != 0:
        return {"error": f"nvidia-smi exited {proc.returncode}: {proc.stderr.strip()[:200]}"}
    line = proc.stdout.strip().splitlines()[0] if proc.stdout.strip() else ""
    values = [v.strip() for v in line.split(",")]
    fields = _SMI_FIELDS.split(",")
    return dict(zip(fields, values, strict=False)) | {"read_at": _now()}


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def environment(device: torch.device | None) -> dict[str, Any]:
    """Versions and device identity; ``device`` None records the host only."""
    import importlib.metadata

    env: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
    }
    for package in ("triton", "liger-kernel", "matplotlib"):
        try:
            env[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            env[package] = None
    if device is not None and device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        l2, l2_source = _l2_bytes(device)
        env["device"] = {
            "name": props.name,
            "capability": f"sm_{props.major}{props.minor}",
            "multiprocessors": props.multi_processor_count,
            "total_memory_bytes": props.total_memory,
            "l2_bytes": l2,
            "l2_source": l2_source,
        }
    return env


# --------------------------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------------------------

CSV_FIELDS = (
    "set",
    "rows",
    "width",
    "dtype",
    "impl",
    "status",
    "timing_mode",
    "launches_per_sample",
    "buffers",
    "working_set_bytes",
    "bytes",
    "n",
    "median_us",
    "p20_us",
    "p80_us",
    "min_us",
    "max_us",
    "mean_us",
    "std_us",
    "gbps",
    "gbps_p20_time",
    "gbps_p80_time",
    "pct_of_copy",
    "speedup_vs_best_alt",
    "best_alternative",
    "compile_s",
    "first_call_s",
    "peak_bytes_per_call",
    "output_bytes",
    "extra_bytes_beyond_output",
    "parity_passed",
    "parity_max_abs",
    "parity_max_rel",
    "parity_rel_l2",
    "wall_s",
    "note",
)
_CSV_INT = {
    "rows",
    "width",
    "launches_per_sample",
    "buffers",
    "working_set_bytes",
    "bytes",
    "n",
    "peak_bytes_per_call",
    "output_bytes",
    "extra_bytes_beyond_output",
}
_CSV_STR = {"set", "dtype", "impl", "status", "timing_mode", "best_alternative", "note"}


def _csv_row(row: dict[str, Any]) -> dict[str, str]:
    flat = dict(row)
    parity = row.get("parity") or {}
    if parity:
        flat["parity_passed"] = parity.get("passed")
        flat["parity_max_abs"] = parity.get("max_abs")
        flat["parity_max_rel"] = parity.get("max_rel")
        flat["parity_rel_l2"] = parity.get("rel_l2")
    out: dict[str, str] = {}
    for field in CSV_FIELDS:
        value = flat.get(field)
        if value is None:
            out[field] = ""
        elif isinstance(value, bool):
            out[field] = "true" if value else "false"
        elif isinstance(value, float):
            out[field] = repr(value)  # repr parses back to the same float
        else:
            out[field] = str(value)
    return out


def write_csv(results: Iterable[dict[str, Any]], path: str | os.PathLike[str]) -> None:
    """One line per result, fields ``CSV_FIELDS``; floats repr-exact."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_FIELDS, lineterminator="\n")
        writer.writeheader()
        for row in results:
            writer.writerow(_csv_row(row))


def read_csv(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Parse a ``results.csv`` back (empty cells -> None, numbers -> int/float, bools)."""
    rows = []
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        if tuple(reader.fieldnames or ()) != CSV_FIELDS:
            raise ValueError(f"{path}: header does not match CSV_FIELDS")
        for raw in reader:
            row: dict[str, Any] = {}
            for field, text in raw.items():
                if text == "":
                    row[field] = None
                elif field in _CSV_STR:
                    row[field] = text
                elif field == "parity_passed":
                    row[field] = text == "true"
                elif field in _CSV_INT:
                    row[field] = int(text)
                else:
                    row[field] = float(text)
            rows.append(row)
    return rows


def build_report(
    config: BenchConfig,
    results: list[dict[str, Any]],
    *,
    command: str,
    env: dict[str, Any],
    smi_before: dict[str, Any],
    smi_after: dict[str, Any],
    started: str,
    wall_s: float,
    implementations: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    """The exact record written to ``results.json``."""
    return {
        "schema_version": SCHEMA_VERSION,
        "command": command,
        "started_utc": started,
        "wall_s": wall_s,
        "environment": env,
        "nvidia_smi_before": smi_before,
        "nvidia_smi_after": smi_after,
        "implementations": implementations,
        "protocol": {
            "bytes_formula": BYTES_FORMULA,
            "eps": config.eps,
            "seed": config.seed,
            "rep_ms": config.rep_ms,
            "warmup_ms": config.warmup_ms,
            "min_samples": config.min_samples,
            "max_samples": config.max_samples,
            "graph_bytes_threshold": config.graph_bytes_threshold,
            "l2_factor": L2_FACTOR,
            "graph_launches": [MIN_GRAPH_LAUNCHES, MAX_GRAPH_LAUNCHES],
            "graph_replay_target_us": GRAPH_REPLAY_TARGET_US,
            "rounds": config.rounds,
            "sleep_us_before_sample": SLEEP_US_BEFORE_SAMPLE,
            "timing": (
                "CUDA events. cuda_graph (calls under graph_bytes_threshold): one replay of "
                "launches_per_sample back-to-back calls per sample (inputs rotated over "
                "`buffers`, every launch writing its own output), time per launch = replay / "
                "launches; launches >= buffers and >= 2 ms of work for the fastest "
                "implementation of the shape, the same count for all its implementations (so "
                "the replay's fixed cost weighs the same on each). events_per_call (larger "
                "calls): one call per sample, inputs rotated, a GPU sleep queued before each "
                "start event. Every implementation is prepared, parity-checked and warmed up "
                "first; then `rounds` rounds time all implementations, in the order of `impls` in "
                "even rounds and reversed in odd ones (round_order), and the statistics pool "
                "the rounds (round_medians_us, round_spread_pct keep them apart)."
            ),
            "parity": (
                "fresh random input (row scales 0.1..10), output compared elementwise with a "
                "float64 reference: |y-ref| <= atol + rtol*|ref| and relative L2 <= rel_l2; "
                "copy must be bit-exact"
            ),
            "tolerances": {k: dataclasses.asdict(v) for k, v in TOLERANCES.items()},
            "memory": "peak_bytes_per_call = max_memory_allocated during one call - "
            "memory_allocated before it; extra_bytes_beyond_output subtracts the output",
        },
        "shapes": [
            {"set": name, "rows": shape.rows, "width": shape.width} for name, shape in config.shapes
        ],
        "dtypes": list(config.dtypes),
        "impls": list(config.impls),
        "results": results,
    }


def write_json(report: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Write ``report`` as JSON (NaN written as null) atomically."""
    path = Path(path)
    text = json.dumps(_json_safe(report), indent=1, allow_nan=False)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _json_safe(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


# Largest results.json read_json opens (the full H200 record is under 1 MiB).
MAX_REPORT_BYTES = 64 * 2**20

# Fields every result row carries, and their types.
_ROW_FIELDS: dict[str, type] = {
    "set": str,
    "rows": int,
    "width": int,
    "dtype": str,
    "impl": str,
    "status": str,
}
# Numbers an "ok" row must carry (finite, > 0) and ones it may carry (finite, >= 0).
_OK_ROW_NUMBERS = ("median_us", "gbps")
_OPTIONAL_ROW_NUMBERS = ("gbps_p20_time", "gbps_p80_time", "pct_of_copy")


def read_json(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a ``results.json`` back: schema version, and every result row's fields and numbers.

    Raises:
        ValueError: not a benchmark report of this schema, larger than ``MAX_REPORT_BYTES``, or
            a row with a missing or wrong field (the message names ``results[i].field``).
        OSError: the file cannot be read.
    """
    size = Path(path).stat().st_size
    if size > MAX_REPORT_BYTES:
        raise ValueError(
            f"{path}: {size} bytes; a benchmark report is at most {MAX_REPORT_BYTES} bytes"
        )
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 text ({err.reason})") from None
    if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"{path}: not a {SCHEMA_VERSION} report")
    if not isinstance(data.get("results"), list):
        raise ValueError(f"{path}: results must be a list")
    for index, row in enumerate(data["results"]):
        _check_row(row, f"{path}: results[{index}]")
    return data


def _check_row(row: object, where: str) -> None:
    if not isinstance(row, dict):
        raise ValueError(f"{where} must be an object; got {type(row).__name__}")
    for field, kind in _ROW_FIELDS.items():
        value = row.get(field)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ValueError(f"{where}.{field} must be a {kind.__name__}; got {value!r}")
    for field in ("rows", "width"):
        if row[field] < 1:
            raise ValueError(f"{where}.{field} must be >= 1; got {row[field]}")
    for field in (*_OK_ROW_NUMBERS, *_OPTIONAL_ROW_NUMBERS):
        value = row.get(field)
        if value is None and (row["status"] != "ok" or field in _OPTIONAL_ROW_NUMBERS):
            continue
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not number or not math.isfinite(value) or value < 0:
            raise ValueError(f"{where}.{field} must be a finite number >= 0; got {value!r}")
        if field in _OK_ROW_NUMBERS and row["status"] == "ok" and value <= 0:
            raise ValueError(f"{where}.{field} must be > 0 in an ok row; got {value!r}")


def markdown_table(results: list[dict[str, Any]], *, dtypes: Sequence[str] | None = None) -> str:
    """GB/s and % of copy per shape (rows) and implementation (columns), for the README."""
    impls = [i for i in IMPLEMENTATIONS if any(r["impl"] == i for r in results)]
    keys: list[tuple[str, int, int, str]] = []
    for row in results:
        key = (row["set"], row["rows"], row["width"], row["dtype"])
        if key not in keys and (dtypes is None or row["dtype"] in dtypes):
            keys.append(key)
    header = ["set", "shape", "dtype", *impls]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lookup = {(r["set"], r["rows"], r["width"], r["dtype"], r["impl"]): r for r in results}
    for key in keys:
        cells = [key[0], f"{key[1]}x{key[2]}", key[3]]
        for impl in impls:
            row = lookup.get((*key, impl))
            cells.append(_cell(row, impl))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _cell(row: dict[str, Any] | None, impl: str) -> str:
    if row is None:
        return "-"
    status = row.get("status")
    if status != "ok":
        return f"{status}" + (f" ({row['median_us']:.1f} us)" if "median_us" in row else "")
    time_text = (
        f"{row['median_us']:.2f} us" if row["median_us"] < 100 else f"{row['median_us']:.0f} us"
    )
    if impl == "copy":
        return f"{row['gbps']:.0f} GB/s, {time_text}"
    pct = row.get("pct_of_copy")
    pct_text = f" ({pct:.0f}%)" if pct is not None else ""
    return f"{row['gbps']:.0f}{pct_text}, {time_text}"


def write_plot(results: list[dict[str, Any]], path: str | os.PathLike[str]) -> str | None:
    """GB/s against width (one line per implementation, copy dashed) and % of copy per shape.

    Returns None on success or a note saying why no PNG was written (matplotlib missing).
    Rows whose status is not ``ok`` (a wrong result included) are never plotted.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as err:
        return f"no PNG: matplotlib is not importable ({type(err).__name__}: {err})"
    ok = [r for r in results if r.get("status") == "ok"]
    dtypes = [d for d in DTYPES if any(r["dtype"] == d for r in ok)]
    if not dtypes:
        return "no PNG: no successful result to plot"
    impls = [i for i in IMPLEMENTATIONS if any(r["impl"] == i for r in ok)]
    colors = {
        "copy": "black",
        "ours": "tab:red",
        "torch_eager": "tab:blue",
        "torch_compile": "tab:green",
        "liger": "tab:orange",
    }
    fig, axes = plt.subplots(2, len(dtypes), figsize=(7.5 * len(dtypes), 10), squeeze=False)
    for col, dtype_key in enumerate(dtypes):
        ax = axes[0][col]
        for impl in impls:
            pts = sorted(
                (
                    (r["width"], r["gbps"], r["rows"])
                    for r in ok
                    if r["dtype"] == dtype_key and r["impl"] == impl
                ),
            )
            if not pts:
                continue
            # One line through the widest-rows entry per width; every shape as a marker.
            per_width: dict[int, float] = {}
            rows_at: dict[int, int] = {}
            for width, value, rows in pts:
                if rows >= rows_at.get(width, 0):
                    per_width[width], rows_at[width] = value, rows
            widths = sorted(per_width)
            style = "--" if impl == "copy" else "-"
            ax.plot(
                widths,
                [per_width[w] for w in widths],
                style,
                color=colors.get(impl),
                label=f"{impl}" + (" (ceiling)" if impl == "copy" else ""),
                linewidth=1.6,
            )
            ax.scatter(
                [p[0] for p in pts], [p[1] for p in pts], s=12, color=colors.get(impl), alpha=0.6
            )
        ax.set_xscale("log", base=2)
        ax.set_xlabel("width (elements per row)")
        ax.set_ylabel("GB/s (x read + w read + y written)")
        ax.set_title(f"{dtype_key}: GB/s vs width (line: most rows per width)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)

        ax2 = axes[1][col]
        keys = []
        for r in ok:
            key = (r["set"], r["rows"], r["width"])
            if r["dtype"] == dtype_key and key not in keys:
                keys.append(key)
        bar_impls = [i for i in impls if i != "copy"]
        width_bar = 0.8 / max(1, len(bar_impls))
        for j, impl in enumerate(bar_impls):
            values = []
            for key in keys:
                match = [
                    r
                    for r in ok
                    if (r["set"], r["rows"], r["width"]) == key
                    and r["dtype"] == dtype_key
                    and r["impl"] == impl
                ]
                values.append(match[0].get("pct_of_copy", float("nan")) if match else float("nan"))
            ax2.bar(
                [k + j * width_bar for k in range(len(keys))],
                values,
                width_bar,
                color=colors.get(impl),
                label=impl,
            )
        ax2.axhline(100, color="black", linestyle="--", linewidth=1)
        ax2.axhline(90, color="grey", linestyle=":", linewidth=1)
        ax2.set_xticks([k + 0.4 - width_bar / 2 for k in range(len(keys))])
        ax2.set_xticklabels([f"{r}x{w}" for _, r, w in keys], rotation=70, fontsize=7)
        ax2.set_ylabel("% of copy GB/s (same shape)")
        ax2.set_title(f"{dtype_key}: % of copy per shape")
        ax2.grid(True, axis="y", alpha=0.3)
        ax2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one stderr line and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise BenchUsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="main.py bench",
        description="Benchmark the fused RMSNorm forward against torch eager, torch.compile, "
        "Liger-Kernel (when importable) and a device-to-device copy (needs CUDA).",
    )
    parser.add_argument(
        "--shapes",
        default=None,
        help="comma-separated shape sets (launch_bound, tails, llm, narrow, wide, "
        "all) and/or ROWSxWIDTH shapes; default: all",
    )
    parser.add_argument(
        "--dtypes",
        default=None,
        help="comma-separated from bfloat16,float16,float32; default: all three",
    )
    parser.add_argument(
        "--impls",
        default=None,
        help=f"comma-separated from {','.join(IMPLEMENTATIONS)}; default: all "
        "(copy is always measured: it is the ceiling)",
    )
    parser.add_argument(
        "--out", required=True, help="directory for results.json/.csv and bench.png"
    )
    parser.add_argument("--eps", type=float, default=1e-6, help="RMSNorm epsilon (default 1e-6)")
    parser.add_argument(
        "--rep-ms",
        type=float,
        default=60.0,
        help="timed device time per measurement in ms (default 60)",
    )
    parser.add_argument(
        "--warmup-ms",
        type=float,
        default=10.0,
        help="warm-up device time per measurement in ms (default 10)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="short timings (rep 15 ms, at least 5 samples) for a smoke run",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--shapes-dir", default=str(SHAPES_DIR), help="where the shape sets live")
    parser.add_argument("--no-plot", action="store_true", help="skip the PNG")
    parser.add_argument(
        "--rounds",
        type=int,
        default=2,
        help="timing rounds over all implementations, to measure the run-to-run spread (default 2)",
    )
    parser.add_argument(
        "--budget-s",
        type=float,
        default=None,
        help="start no new shape after this many seconds (the rest is recorded as skipped)",
    )
    return parser


def _config_from_args(args: argparse.Namespace) -> BenchConfig:
    if not (math.isfinite(args.eps) and 1e-12 <= args.eps <= 1e-2):
        raise BenchUsageError(f"--eps must be in [1e-12, 1e-2]; got {args.eps!r}")
    for option, value in (("--rep-ms", args.rep_ms), ("--warmup-ms", args.warmup_ms)):
        if not (math.isfinite(value) and 0 <= value <= 60_000):
            raise BenchUsageError(f"{option} must be in [0, 60000]; got {value!r}")
    sets = load_shape_sets(args.shapes_dir)
    shapes = resolve_shapes(args.shapes, sets)
    dtypes = resolve_names(args.dtypes, list(DTYPES), "--dtypes")
    impls = resolve_names(args.impls, IMPLEMENTATIONS, "--impls")
    if "copy" not in impls:
        impls.insert(0, "copy")
    impls = [i for i in IMPLEMENTATIONS if i in impls]
    config = BenchConfig(
        shapes=shapes,
        dtypes=dtypes,
        impls=impls,
        eps=args.eps,
        rep_ms=args.rep_ms,
        warmup_ms=args.warmup_ms,
        seed=args.seed,
        budget_s=args.budget_s,
        rounds=args.rounds,
    )
    if not 1 <= args.rounds <= 10:
        raise BenchUsageError(f"--rounds must be in [1, 10]; got {args.rounds}")
    if args.budget_s is not None and not (math.isfinite(args.budget_s) and args.budget_s > 0):
        raise BenchUsageError(f"--budget-s must be a positive number; got {args.budget_s!r}")
    if args.quick:
        config.rep_ms = min(config.rep_ms, 15.0)
        config.warmup_ms = min(config.warmup_ms, 3.0)
        config.min_samples = 5
    return config


def require_cuda() -> torch.device:
    """The CUDA device to benchmark on.

    Raises:
        CudaUnavailableError: no usable CUDA device (CPU-only torch, no driver, no GPU).
    """
    if not torch.cuda.is_available():
        build = "a CPU-only torch build" if torch.version.cuda is None else "no visible GPU"
        raise CudaUnavailableError(
            f"bench: needs a CUDA GPU; torch.cuda.is_available() is False ({build}, "
            f"torch {torch.__version__}). Run it on a machine with an NVIDIA GPU."
        )
    return torch.device("cuda", torch.cuda.current_device())


def run_benchmark(
    config: BenchConfig, out_dir: str | os.PathLike[str], *, command: str, plot: bool = True
) -> dict[str, Any]:
    """Run everything in ``config`` on the GPU and write the reports into ``out_dir``."""
    device = require_cuda()
    config.device = str(device)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = _now()
    t0 = time.perf_counter()
    smi_before = nvidia_smi_query()
    env = environment(device)
    implementations = {name: implementation_info(name) for name in config.impls}
    results = []
    partial = out_dir / "results.partial.jsonl"
    with open(partial, "w", encoding="utf-8") as handle:
        # One JSON line per result as it lands: a killed run still leaves its measurements.
        for _, _, row in iter_benchmark(config):
            results.append(row)
            handle.write(json.dumps(_json_safe(row)) + "\n")
            handle.flush()
    finalize(results)
    smi_after = nvidia_smi_query()
    report = build_report(
        config,
        results,
        command=command,
        env=env,
        smi_before=smi_before,
        smi_after=smi_after,
        started=started,
        wall_s=time.perf_counter() - t0,
        implementations=implementations,
    )
    report["plot"] = None
    if plot:
        note = write_plot(results, out_dir / "bench.png")
        report["plot"] = "bench.png" if note is None else note
    write_json(report, out_dir / "results.json")
    write_csv(results, out_dir / "results.csv")
    partial.unlink(missing_ok=True)
    return report


def bench_main(argv: list[str] | None = None) -> int:
    """``python main.py bench`` entry point.

    Returns:
        0: run complete, every implementation's output matched the reference;
        1: some implementation produced a wrong result (listed on stderr; still written);
        2: bad options (one stderr line) or no CUDA device.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as exc:  # --help printed its text
            return int(exc.code or 0)
        config = _config_from_args(args)
        require_cuda()
    except BenchUsageError as err:
        print(f"bench: error: {err}", file=sys.stderr)
        return 2
    except CudaUnavailableError as err:
        print(str(err), file=sys.stderr)
        return 2
    command = "python main.py bench " + " ".join(argv)
    report = run_benchmark(config, args.out, command=command, plot=not args.no_plot)
    wrong = [r for r in report["results"] if r.get("status") == "wrong"]
    out_dir = Path(args.out)
    print(markdown_table(report["results"]))
    print(
        f"wrote {out_dir / 'results.json'}, {out_dir / 'results.csv'}"
        + (
            f", {out_dir / 'bench.png'}"
            if report.get("plot") == "bench.png"
            else f" ({report.get('plot')})"
            if report.get("plot")
            else ""
        )
    )
    for row in wrong:
        print(
            f"WRONG RESULT: {row['impl']} {row['rows']}x{row['width']} {row['dtype']}: "
            f"{row['parity']['reason']}",
            file=sys.stderr,
        )
    return 1 if wrong else 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(bench_main())
