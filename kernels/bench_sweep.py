"""Launch-layout sweep of ``kernels.rms_norm``'s kernels on the shapes that miss their targets.

Each candidate :class:`kernels.rmsnorm.LaunchConfig` is launched through ``kernels.rmsnorm.launch``
after ``kernels.rmsnorm.validate`` (the product kernels, the product checks) and measured exactly
like an implementation of ``kernels.bench`` (same buffers rotated past 2x L2, same CUDA-graph or
event timing, parity against the float64 reference first), next to the copy ceiling, ``ours``
(:func:`kernels.rmsnorm.choose_config`'s layout) and torch.compile. Output: one JSON file and a
table on stdout.

    python3 -m kernels.bench_sweep --out sweep.json [--rep-ms 25]

Sweeps 1-3 (docs/benchmarks/sweeps/) were run with the former ``kernels.rmsnorm_fast``; their
labels map onto LaunchConfig as ``rows_R{rows_per_program}_w{num_warps}`` (tile kernel) and
``cols_C{chunk}_w{num_warps}_P{programs}`` (column loop). Sweeps 4-7 label the product kernel's
configs ``tile_R{rows}_w{warps}[_wlate]`` and ``loop_C{chunk}_w{warps}_P{programs}`` with
``_rt`` (runtime chunk loop), ``_cs`` (streaming stores), ``_r{n}`` (register cap); ``P0`` is
one program per row; sweeps 9-10 add ``_cs`` to tile labels (streaming hints). ``_masked``
(sweeps 12-13, 22) is ``even=False``. Sweeps 17-21 add
``probe_R{rows}_w{warps}[_i64][_cs][_rtw][_1p][_xplain][_wplain][_wearly]``, Inductor's layout
as a diagnostic kernel (:mod:`kernels.bench_probe`). The cases below are the
last sweep run (23); earlier ones are in git history.

``--launch-counts 8,16,64`` also times the copy and ``ours`` of every case as CUDA-graph replays
of each of those launch counts and fits ``per_launch(L) = t + F / L``: ``F`` is the fixed cost of
one replay that the harness shares out over its launches (``launch_cost`` in the JSON).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable
from typing import Any

import torch

from kernels import bench
from kernels.bench_probe import Probe, probe_launch
from kernels.rmsnorm import LaunchConfig, choose_config, launch, validate


def _tile(
    block: int, rows_per_program: int, num_warps: int, *, w_early: bool = True, regs: int = 0
) -> LaunchConfig:
    return LaunchConfig(False, block, num_warps, rows_per_program, 0, w_early, max_registers=regs)


def _loop(
    chunk: int,
    num_warps: int,
    programs: int = 0,
    *,
    rows: int = 1,
    unroll: bool = True,
    stream: bool = False,
    regs: int = 0,
) -> LaunchConfig:
    return LaunchConfig(
        True,
        chunk,
        num_warps,
        rows,
        programs,
        unroll=unroll,
        stream_store=stream,
        max_registers=regs,
    )


# Reference implementations measured next to the candidates of every case.
REFERENCES = ("copy", "ours", "torch_compile")


Candidate = LaunchConfig | Probe


def _masked_twin(rows: int, width: int, itemsize: int) -> LaunchConfig:
    """``choose_config``'s layout with the tile kernel's column masks kept (``even=False``)."""
    return dataclasses.replace(choose_config(rows, width, itemsize), even=False)


def sweep_cases() -> list[tuple[bench.Shape, str, list[Candidate], tuple[str, ...]]]:
    """Sweep 23: fp32 rows of 16384. 32768x16384 fp32 was 0.04% behind torch.compile in the
    19:02 record (1001.12 against 1000.70 us) and 0.01% in its reproduction, both at 101% of the
    copy; 16384x16384 fp32 a tie. Ours there is the column loop, one row per program, 8192-lane
    chunks in a runtime loop on 32 warps, streaming stores. Predicted: Inductor's pick
    (``ALTS_CASES``) is 16 warps; 16 warps and/or plain stores move ours by < 0.1%, which
    decides whether these ties can be won at all. Sweeps 14-22 are in git history (22: commit
    267447a)."""
    candidates: dict[tuple[int, int, str], list[Candidate]] = {
        (rows, 16384, "float32"): [
            _loop(8192, 16, unroll=False, stream=True),
            _loop(8192, 16, unroll=False),
            _loop(8192, 32, unroll=False),
            _loop(4096, 16, unroll=False, stream=True),
            _loop(16384, 32, stream=True),
        ]
        for rows in (32768, 16384)
    }
    return [
        (bench.Shape(rows, width), dtype_key, configs, ())
        for (rows, width, dtype_key), configs in candidates.items()
    ]


def _label(config: Candidate) -> str:
    if isinstance(config, Probe):
        return config.label
    regs = f"_r{config.max_registers}" if config.max_registers else ""
    if config.loop:
        rt = "" if config.unroll else "_rt"
        cs = "_cs" if config.stream_store else ""
        cs += "" if config.even else "_masked"
        blocks = f"_R{config.rows_per_program}" if config.rows_per_program > 1 else ""
        return f"loop_C{config.block}_w{config.num_warps}_P{config.programs}{rt}{cs}{regs}{blocks}"
    late = "" if config.w_early else "_wlate"
    cs = "_cs" if config.stream_store else ""
    cs += "" if config.even else "_masked"
    return f"tile_R{config.rows_per_program}_w{config.num_warps}{late}{cs}{regs}"


def _preparer(
    config: Candidate,
) -> Callable[[bench.Shape, torch.dtype, float, torch.device], bench.Prepared]:
    def prepare(
        shape: bench.Shape, dtype: torch.dtype, eps: float, device: torch.device
    ) -> bench.Prepared:
        if isinstance(config, Probe):
            probe = config

            def call_probe(
                x: torch.Tensor, weight: torch.Tensor, dst: torch.Tensor | None
            ) -> torch.Tensor:
                return probe_launch(x, weight, torch.empty_like(x), eps, probe)

            return bench.Prepared(call=call_probe, note=probe.label)

        def call(x: torch.Tensor, weight: torch.Tensor, dst: torch.Tensor | None) -> torch.Tensor:
            checked = validate(x, weight, eps)
            out = torch.empty_like(x)
            launch(checked.x2d, weight, out.view(-1, checked.width), checked.eps, config=config)
            return out

        return bench.Prepared(call=call, note=_label(config))

    return prepare


def run_sweep(
    rep_ms: float, budget_s: float, only: str = "", rounds: int = 1
) -> list[dict[str, Any]]:
    device = bench.require_cuda()
    l2_bytes, _ = bench._l2_bytes(device)
    generator = torch.Generator(device=device)
    results: list[dict[str, Any]] = []
    started = time.perf_counter()
    wanted = {item.strip() for item in only.split(",") if item.strip()}
    for shape, dtype_key, candidates, extra in sweep_cases():
        if wanted and f"{shape.rows}x{shape.width}:{dtype_key}" not in wanted:
            continue
        if time.perf_counter() - started > budget_s:
            print(f"sweep: budget spent, skipping {shape} {dtype_key}", file=sys.stderr)
            continue
        preparers = {name: bench.PREPARERS[name] for name in REFERENCES}
        for name in extra:
            preparers[name] = bench.PREPARERS[name]
        for config in candidates:
            preparers[_label(config)] = _preparer(config)
        config_run = bench.BenchConfig(
            shapes=[("sweep", shape)],
            dtypes=[dtype_key],
            impls=list(preparers),
            rep_ms=rep_ms,
            warmup_ms=5.0,
            device=str(device),
            rounds=rounds,
        )
        generator.manual_seed(17 + shape.rows + shape.width)
        rows = bench._bench_one_shape(
            config_run,
            device,
            l2_bytes,
            "sweep",
            shape,
            bench.DTYPES[dtype_key],
            generator,
            {},
            preparers,
        )
        bench.finalize(rows)
        results.extend(rows)
        torch.cuda.empty_cache()
    return results


def fit_launch_cost(per_launch_us: dict[int, float]) -> tuple[float, float]:
    """Least-squares ``(t, F)`` of ``per_launch(L) = t + F / L`` over launch counts ``L``.

    ``t`` is the time of one launch without the replay's fixed cost ``F`` (microseconds). Needs
    at least two distinct counts.
    """
    if len(per_launch_us) < 2:
        raise ValueError(f"fit_launch_cost needs >= 2 launch counts; got {sorted(per_launch_us)}")
    xs = [1.0 / count for count in per_launch_us]
    ys = list(per_launch_us.values())
    mean_x = sum(xs) / len(xs)
    mean_y = sum(ys) / len(ys)
    var_x = sum((x - mean_x) ** 2 for x in xs)
    fixed = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / var_x
    return mean_y - fixed * mean_x, fixed


def _launch_cost_of(
    impl: str,
    shape: bench.Shape,
    dtype_key: str,
    xs: list[torch.Tensor],
    weight: torch.Tensor,
    counts: list[int],
    replays: int,
    device: torch.device,
) -> dict[str, Any]:
    prepared = bench.PREPARERS[impl](shape, bench.DTYPES[dtype_key], 1e-6, device)
    dsts = [torch.empty_like(x) for x in xs] if prepared.needs_dst else None

    def call(index: int) -> Any:
        return prepared.call(xs[index], weight, dsts[index] if dsts is not None else None)

    per_launch: dict[int, float] = {}
    for launches in counts:
        samples = bench.time_graph(call, len(xs), launches=launches, replays=replays, device=device)
        per_launch[launches] = float(sorted(samples)[len(samples) // 2])
    t, fixed = fit_launch_cost(per_launch)
    print(
        f"launch cost {shape.rows}x{shape.width} {dtype_key} {impl}: "
        + " ".join(f"L{k}={v:.3f}" for k, v in per_launch.items())
        + f"  t={t:.3f} us F={fixed:.2f} us",
        file=sys.stderr,
        flush=True,
    )
    return {
        "rows": shape.rows,
        "width": shape.width,
        "dtype": dtype_key,
        "impl": impl,
        "buffers": len(xs),
        "per_launch_median_us": {str(k): v for k, v in per_launch.items()},
        "fit_t_us": t,
        "fit_fixed_us": fixed,
    }


def launch_cost(counts: list[int], only: str = "", replays: int = 25) -> list[dict[str, Any]]:
    """Per-launch time of the copy and ``ours`` at each launch count, and the fitted ``t, F``."""
    device = bench.require_cuda()
    l2_bytes, _ = bench._l2_bytes(device)
    generator = torch.Generator(device=device)
    wanted = {item.strip() for item in only.split(",") if item.strip()}
    out: list[dict[str, Any]] = []
    for shape, dtype_key, _, _ in sweep_cases():
        if wanted and f"{shape.rows}x{shape.width}:{dtype_key}" not in wanted:
            continue
        dtype = bench.DTYPES[dtype_key]
        count = min(bench.buffer_count(bench.traffic_bytes(shape, dtype), l2_bytes), min(counts))
        generator.manual_seed(23 + shape.rows + shape.width)
        xs = [
            torch.randn(shape.rows, shape.width, device=device, generator=generator).to(dtype)
            for _ in range(count)
        ]
        weight = bench.make_weight(shape.width, dtype, device, generator=generator)
        for impl in ("copy", "ours"):
            out.append(_launch_cost_of(impl, shape, dtype_key, xs, weight, counts, replays, device))
        torch.cuda.empty_cache()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernels.bench_sweep")
    parser.add_argument("--out", required=True, help="JSON file for the sweep results")
    parser.add_argument("--rep-ms", type=float, default=25.0)
    parser.add_argument("--budget-s", type=float, default=150.0)
    parser.add_argument("--only", default="", help="comma-separated RxW:dtype cases to run")
    parser.add_argument(
        "--rounds", type=int, default=1, help="timing rounds per case (order alternates)"
    )
    parser.add_argument(
        "--launch-counts",
        default="",
        help="comma-separated CUDA-graph launch counts for the launch-cost fit (e.g. 8,16,64)",
    )
    args = parser.parse_args(argv)
    if not 1 <= args.rounds <= 10:
        parser.error(f"--rounds must be in [1, 10]; got {args.rounds}")
    try:
        counts = [int(item) for item in args.launch_counts.split(",") if item.strip()]
    except ValueError:
        parser.error(f"--launch-counts must be comma-separated integers: {args.launch_counts!r}")
    in_range = all(1 <= c <= bench.MAX_GRAPH_LAUNCHES for c in counts)
    if counts and (len(set(counts)) < 2 or not in_range):
        parser.error(
            f"--launch-counts needs >= 2 distinct counts in [1, {bench.MAX_GRAPH_LAUNCHES}]; "
            f"got {args.launch_counts!r}"
        )
    started = time.perf_counter()
    results = run_sweep(args.rep_ms, args.budget_s, args.only, args.rounds)
    report: dict[str, Any] = {
        "schema_version": "rmsnorm-bench-sweep/1",
        "environment": bench.environment(bench.require_cuda()),
        "wall_s": time.perf_counter() - started,
        "results": results,
    }
    if counts:
        report["launch_cost"] = launch_cost(sorted(set(counts)), args.only)
    bench.write_json(report, args.out)
    print("\nsweep (median us, GB/s, % of copy):")
    for row in results:
        if row.get("status") == "ok":
            print(
                f"{row['rows']:>6}x{row['width']:<6} {row['dtype']:>8} {row['impl']:>26} "
                f"{row['median_us']:9.2f} {row['gbps']:7.0f} {row.get('pct_of_copy', 0):6.1f}%"
            )
        else:
            print(
                f"{row['rows']:>6}x{row['width']:<6} {row['dtype']:>8} {row['impl']:>26} "
                f"{row.get('status')} {str(row.get('note', ''))[:80]}"
            )
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
