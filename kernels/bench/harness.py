"""The benchmark run: every shape x dtype x implementation, measured the same way.

For one shape and dtype the harness builds enough input buffers that the rotated working set is
more than twice the L2 cache, then for every implementation: prepares it, checks its output
against the float64 reference on fresh random input, measures the peak extra device memory of
one call and warms it up. Then ``rounds`` timing rounds time all prepared implementations, in
:func:`~kernels.bench.timing.round_order`, so each one's run-to-run spread is measured in the
same run. A wrong result is flagged (``status="wrong"``) and gets no "% of copy" figure; the
user's ``candidate`` is then not timed at all.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import importlib.metadata
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch

from kernels.bench import timing
from kernels.bench.impls import PREPARERS, ImplementationUnavailable, Prepared, Preparer
from kernels.bench.parity import check_copy, check_parity, make_parity_input, make_weight
from kernels.bench.shapes import DTYPES, Shape, dtype_name, traffic_bytes
from kernels.sandbox.usercode import KernelSpec

_ALTERNATIVES = ("torch_eager", "torch_compile", "liger", "quack")


class CudaUnavailableError(RuntimeError):
    """The benchmark needs a CUDA device and there is none."""


class _NotTimed(RuntimeError):
    """A wrong output of an implementation that is not timed when wrong (the note says why)."""


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
    min_samples: int = timing.MIN_SAMPLES
    max_samples: int = timing.MAX_SAMPLES
    graph_bytes_threshold: int = timing.GRAPH_BYTES_THRESHOLD
    device: str = "cuda"
    budget_s: float | None = None  # start no new shape x dtype after this many seconds
    rounds: int = 1  # timing rounds over all implementations (run-to-run spread)
    loop_samples: int = timing.LOOP_SAMPLES  # eager-loop samples per round (0: no loop figure)
    kernel: KernelSpec | None = None  # the user's kernel timed as "candidate" (--kernel)
    ncu: bool = False  # DRAM figures of ours from Nsight Compute after the timing (--ncu)


@dataclasses.dataclass
class _Ready:
    """A prepared implementation with its timed call and first time estimate."""

    prepared: Prepared
    call: Callable[[int], Any]  # runs the implementation on buffer i
    count: int
    estimate_us: float
    loop_estimate_us: float  # per call in a short eager loop, host included


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


def iter_benchmark(
    config: BenchConfig, preparers: dict[str, Preparer] | None = None
) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """Run the benchmark; yield ``(step, total, row)`` after each measurement.

    ``row`` is one result (a shape x dtype x implementation), the same dict that lands in
    ``results.json``'s ``results`` list (``pct_of_copy`` is filled in by :func:`finalize`).
    Once ``config.budget_s`` is spent, every later shape x dtype is yielded as ``skipped``.
    ``preparers``: as :func:`bench_one_shape`'s (``candidate`` needs one).
    """
    device = torch.device(config.device)
    l2_bytes, _ = timing.device_l2_bytes(device)
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
                note = f"time budget of {config.budget_s:g} s spent ({elapsed:.0f} s)"
                for impl in config.impls:
                    step += 1
                    row = {
                        "set": set_name,
                        "rows": shape.rows,
                        "width": shape.width,
                        "dtype": dtype_key,
                        "impl": impl,
                        "status": "skipped",
                        "note": note,
                    }
                    yield step, total, row
                continue
            generator.manual_seed(config.seed + 7919 * shape.rows + shape.width)
            rows_out = bench_one_shape(
                config, device, l2_bytes, set_name, shape, dtype, generator, unavailable, preparers
            )
            for row in rows_out:
                step += 1
                yield step, total, row
            torch.cuda.empty_cache()


def bench_one_shape(
    config: BenchConfig,
    device: torch.device,
    l2_bytes: int,
    set_name: str,
    shape: Shape,
    dtype: torch.dtype,
    generator: torch.Generator,
    unavailable: dict[str, str],
    preparers: dict[str, Preparer] | None = None,
) -> list[dict[str, Any]]:
    """Measure every implementation of ``config.impls`` on one shape and dtype.

    Every implementation is first prepared, checked for parity and measured for memory; then
    ``config.rounds`` timing rounds each time all of them, in
    :func:`~kernels.bench.timing.round_order` (copy first in even rounds, last in odd ones).

    Args:
        config: the run's settings (``shapes`` and ``dtypes`` are not read here).
        device: the CUDA device.
        l2_bytes: its L2 cache size (sets the buffer rotation).
        set_name: the shape set, recorded in each row.
        shape: the shape.
        dtype: the dtype.
        generator: seeded generator for inputs and the parity check.
        unavailable: implementations that cannot run here, with the reason; updated in place.
        preparers: implementation names to their factories (default
            :data:`~kernels.bench.impls.PREPARERS`); a tuning sweep passes its own.

    Returns:
        One result row per implementation, in ``config.impls`` order.
    """
    preparers = PREPARERS if preparers is None else preparers
    bytes_call = traffic_bytes(shape, dtype)
    count = timing.buffer_count(bytes_call, l2_bytes)
    use_graph = bytes_call < config.graph_bytes_threshold
    if use_graph:
        count = min(count, timing.MAX_GRAPH_LAUNCHES)
    xs = [
        torch.randn(
            shape.rows, shape.width, device=device, dtype=torch.float32, generator=generator
        )
        .add_(0.25)
        .to(dtype)
        for _ in range(count)
    ]
    weight = make_weight(shape.width, dtype, device, generator=generator)
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
            "working_set_bytes": count * bytes_call,
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
        except _NotTimed as err:
            row.update(status="wrong", note=str(err))
        except Exception as err:
            _record_failure(row, err, device)
        row["wall_s"] = time.perf_counter() - started
    _time_rounds(config, device, ready, rows, use_graph, count)
    _time_loops(config, device, ready, rows)
    for impl, row in rows.items():
        if impl in ready and row.get("samples_us"):
            _summarize_row(row, traffic_bytes(shape, dtype, impl=impl))
        _keep_label(row, getattr(preparers.get(impl), "label", ""))
        _progress_line(row)
    del xs, ready
    return list(rows.values())


def _in_round_order(
    ready: dict[str, _Ready], rows: dict[str, dict[str, Any]], index: int
) -> Iterator[tuple[str, _Ready, dict[str, Any]]]:
    """``(impl, prepared, row)`` of the implementations still ready, in
    :func:`~kernels.bench.timing.round_order` for round (or sample) ``index``."""
    for impl in timing.round_order(list(ready), index):
        item = ready.get(impl)
        if item is not None:
            yield impl, item, rows[impl]


def _time_rounds(
    config: BenchConfig,
    device: torch.device,
    ready: dict[str, _Ready],
    rows: dict[str, dict[str, Any]],
    use_graph: bool,
    count: int,
) -> None:
    """``config.rounds`` timing rounds of the prepared implementations; samples go into rows.

    An implementation whose timing fails is recorded as failed and dropped from ``ready``.
    """
    # One launch count per shape: every implementation's replay carries the same fixed cost.
    launches = timing.graph_launches([item.estimate_us for item in ready.values()], count)
    for round_index in range(config.rounds):
        for impl, item, row in _in_round_order(ready, rows, round_index):
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


def _time_loops(
    config: BenchConfig,
    device: torch.device,
    ready: dict[str, _Ready],
    rows: dict[str, dict[str, Any]],
) -> None:
    """The eager-loop samples of the prepared implementations, interleaved; into rows.

    ``config.rounds * config.loop_samples`` samples each, taken one implementation after the
    other and in :func:`~kernels.bench.timing.round_order` per sample, so a change of the
    host's state during the shape (clocks, another tenant) lands on all of them alike; the
    samples of each consecutive ``loop_samples`` make one round (``loop_round_medians_us``).
    One call count per sample for the whole shape (the closing synchronization is shared out
    alike). An implementation whose loop fails is recorded as failed and dropped.
    """
    if config.loop_samples <= 0 or not ready:
        return
    calls = timing.loop_calls([item.loop_estimate_us for item in ready.values()])
    by_round: dict[str, list[list[float]]] = {impl: [] for impl in ready}
    for sample in range(config.rounds * config.loop_samples):
        round_index = sample // config.loop_samples
        for impl, item, row in _in_round_order(ready, rows, sample):
            started = time.perf_counter()
            try:
                with item.prepared.steady():
                    value = timing.time_loop(
                        item.call, item.count, calls=calls, samples=1, device=device
                    )[0]
            except Exception as err:
                _record_failure(row, err, device)
                del ready[impl]
                continue
            while len(by_round[impl]) <= round_index:
                by_round[impl].append([])
            by_round[impl][round_index].append(value)
            row["loop_calls_per_sample"] = calls
            row.setdefault("loop_samples_us", []).append(round(value, 4))
            row["wall_s"] = row.get("wall_s", 0.0) + time.perf_counter() - started
    for impl in ready:
        rows[impl]["loop_round_medians_us"] = [float(np.median(r)) for r in by_round[impl] if r]


def _summarize_row(row: dict[str, Any], nbytes: int) -> None:
    """Statistics, GB/s, the rounds' spread and the status of a timed row."""
    stats = timing.summarize(row["samples_us"])
    row.update(dataclasses.asdict(stats))
    row["gbps"] = timing.gbps(nbytes, stats.median_us)
    row["gbps_p20_time"] = timing.gbps(nbytes, stats.p20_us)
    row["gbps_p80_time"] = timing.gbps(nbytes, stats.p80_us)
    medians = row["round_medians_us"]
    row["round_spread_pct"] = 100.0 * (max(medians) - min(medians)) / min(medians)
    if row.get("loop_samples_us"):
        loop = timing.summarize(row["loop_samples_us"])
        row.update({f"loop_{name}": value for name, value in dataclasses.asdict(loop).items()})
        row["loop_us"] = loop.median_us
        loop_medians = row["loop_round_medians_us"]
        row["loop_round_spread_pct"] = (
            100.0 * (max(loop_medians) - min(loop_medians)) / min(loop_medians)
        )
    parity_ok = row["parity"]["passed"]
    row["status"] = "ok" if parity_ok else "wrong"
    if not parity_ok:
        row["note"] = f"parity failed: {row['parity']['reason']}"


def _keep_label(row: dict[str, Any], label: str) -> None:
    """Lead the row's note with ``label`` (a candidate's file, function and sha256), whatever
    replaced the note since (a failure, a parity verdict)."""
    note = str(row.get("note") or "")
    if label and not note.startswith(label):
        row["note"] = f"{label}; {note}" if note else label


def _status_for_exception(err: BaseException) -> str:
    return (
        "unsupported" if isinstance(err, (TypeError, ValueError, NotImplementedError)) else "error"
    )


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
    preparer: Preparer,
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
        row["first_call_s"] = timing.first_call_seconds(lambda: call(0), device)

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
    if not parity.passed and not prepared.time_if_wrong:
        raise _NotTimed(f"parity failed: {parity.reason}; not timed")

    with prepared.steady():
        peak, out_bytes = timing.peak_extra_bytes(lambda: call(0), device)
        warm = timing.time_events(call, count, samples=max(3, min(count, 20)), device=device)
        loop_probe = timing.time_loop(
            call, count, calls=timing.LOOP_PROBE_CALLS, samples=1, device=device
        )
    row["peak_bytes_per_call"] = peak
    row["output_bytes"] = out_bytes
    row["extra_bytes_beyond_output"] = peak - out_bytes if not prepared.needs_dst else peak
    return _Ready(prepared, call, count, max(0.5, float(np.median(warm))), loop_probe[0])


def _time_impl(
    config: BenchConfig,
    device: torch.device,
    item: _Ready,
    use_graph: bool,
    row: dict[str, Any],
    launches: int,
) -> list[float]:
    """One timing round of a prepared implementation; per-call microseconds.

    ``launches``: calls per CUDA-graph replay (the same for every implementation of the
    shape); unused for event timing. An implementation that cannot be captured in a graph
    (one that synchronizes the host) is timed with events instead, and its note says so.
    """
    estimate_us = item.estimate_us
    with item.prepared.steady():
        if use_graph and row.get("timing_mode") == "cuda_graph":
            replay_us = estimate_us * launches
            replays = int(
                min(config.max_samples, max(config.min_samples, config.rep_ms * 1000.0 / replay_us))
            )
            try:
                samples = timing.time_graph(
                    item.call, item.count, launches=launches, replays=replays, device=device
                )
                row["launches_per_sample"] = launches
                return samples
            except Exception as err:
                torch.cuda.synchronize(device)
                row["timing_mode"] = "events_per_call"
                row["note"] = (
                    f"{row.get('note', '')}; CUDA-graph capture failed "
                    f"({type(err).__name__}: {err})"
                )[:400]
        row["launches_per_sample"] = 1
        extra_warm = int(config.warmup_ms * 1000.0 / estimate_us)
        if extra_warm > 0:
            timing.time_events(
                item.call, item.count, samples=min(extra_warm, config.max_samples), device=device
            )
        per_sample_us = estimate_us + timing.SLEEP_US_BEFORE_SAMPLE
        n = int(
            min(config.max_samples, max(config.min_samples, config.rep_ms * 1000.0 / per_sample_us))
        )
        return timing.time_events(item.call, item.count, samples=n, device=device)


def _shape_key(row: dict[str, Any]) -> tuple[str, int, int, str]:
    return (row["set"], row["rows"], row["width"], row["dtype"])


def finalize(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Fill ``pct_of_copy`` from the copy row of the same shape/dtype, and the best alternative.

    Only rows with ``status == "ok"`` get a percentage; a wrong result never does.
    ``speedup_vs_best_alt`` (on ``ours`` and ``candidate`` rows) is the fastest correct
    alternative's median time over this row's; ``loop_speedup_vs_best_alt`` the same for the
    eager-loop time (``best_loop_alternative`` names who has it).

    Args:
        results: the run's rows; updated in place.

    Returns:
        ``results``.
    """
    copy_gbps: dict[tuple[str, int, int, str], float] = {}
    for row in results:
        if row["impl"] == "copy" and row.get("status") == "ok":
            copy_gbps[_shape_key(row)] = row["gbps"]
    for row in results:
        key = _shape_key(row)
        if row.get("status") == "ok" and key in copy_gbps and copy_gbps[key] > 0:
            row["pct_of_copy"] = 100.0 * row["gbps"] / copy_gbps[key]
        else:
            row.pop("pct_of_copy", None)
    best = _fastest_alternatives(results, "median_us")
    best_loop = _fastest_alternatives(results, "loop_us")
    ours = {_shape_key(r): r for r in results if r["impl"] == "ours" and r.get("status") == "ok"}
    for row in results:
        if row["impl"] not in ("ours", "ours_invariant", "candidate") or row.get("status") != "ok":
            continue
        key = _shape_key(row)
        if row["impl"] == "ours_invariant" and key in ours:
            # what the batch-invariant mode costs: its time over the default's
            row["cost_vs_ours"] = row["median_us"] / ours[key]["median_us"]
            if "loop_us" in row and "loop_us" in ours[key]:
                row["loop_cost_vs_ours"] = row["loop_us"] / ours[key]["loop_us"]
        if key in best:
            row["best_alternative"] = best[key][1]
            row["speedup_vs_best_alt"] = best[key][0] / row["median_us"]
        if key in best_loop and "loop_us" in row:
            row["best_loop_alternative"] = best_loop[key][1]
            row["loop_speedup_vs_best_alt"] = best_loop[key][0] / row["loop_us"]
    return results


def _fastest_alternatives(
    results: list[dict[str, Any]], field: str
) -> dict[tuple[str, int, int, str], tuple[float, str]]:
    """Per shape key, the smallest ``field`` among correct alternatives and who has it."""
    best: dict[tuple[str, int, int, str], tuple[float, str]] = {}
    for row in results:
        key = _shape_key(row)
        if row["impl"] not in _ALTERNATIVES or row.get("status") != "ok" or field not in row:
            continue
        if key not in best or row[field] < best[key][0]:
            best[key] = (row[field], row["impl"])
    return best


_SMI_FIELDS = (
    "name,driver_version,pci.bus_id,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,"
    "clocks.applications.graphics,power.draw,power.limit,temperature.gpu,pstate,"
    "memory.total,memory.used,utilization.gpu"
)


def utc_now() -> str:
    """The current UTC time, ISO 8601 to the second."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


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
    return dict(zip(fields, values, strict=False)) | {"read_at": utc_now()}


def environment(device: torch.device | None) -> dict[str, Any]:
    """Versions and device identity; ``device`` None records the host only."""
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
        l2, l2_source = timing.device_l2_bytes(device)
        env["device"] = {
            "name": props.name,
            "capability": f"sm_{props.major}{props.minor}",
            "multiprocessors": props.multi_processor_count,
            "total_memory_bytes": props.total_memory,
            "l2_bytes": l2,
            "l2_source": l2_source,
        }
    return env
