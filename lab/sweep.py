"""Launch-layout sweep: candidate ``LaunchConfig`` layouts of the product kernels, timed like the
benchmark's implementations.

Each candidate :class:`kernels.layout.LaunchConfig` is launched through ``kernels.launcher.launch``
after ``kernels.launcher.validate`` (the product kernels, the product checks) and measured exactly
like an implementation of ``kernels.bench`` (same buffers rotated past 2x L2, same CUDA-graph or
event timing, parity against the float64 reference first), next to the copy ceiling, ``ours``
(the layout ``choose_config`` picks) and torch.compile. Output: one JSON file and a table on
stdout. Needs a CUDA device.

    python -m lab.sweep --out sweep.json [--rep-ms 25] [--only 32768x16384:float32]
    python -m lab.sweep --out sweep.json --sets llm,dev [--dtypes bfloat16]   (the rule's
        layout and its neighbours, :func:`neighbours`, on every shape of the sets)
    python -m lab.sweep --out sweep.json --sets dev --candidates layouts.json --references copy,ours
        (also the layouts a file names per case: [{"rows", "width", "dtype", "configs": [
        LaunchConfig fields...]}], e.g. another rule's choices)

Labels: ``tile_R{rows}_w{warps}[_wlate][_cs][_nopeel][_b{block}+{block2}]`` for the tile kernel
and ``loop_C{chunk}_w{warps}[_cs]`` for the column loop (``_cs`` streaming stores).

``--launch-counts 8,16,64`` also times the copy and ``ours`` of every case as CUDA-graph replays
of each of those launch counts and fits ``per_launch(L) = t + F / L``: ``F`` is the fixed cost of
one replay that the harness shares out over its launches (``launch_cost`` in the JSON).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import sys
import time
from typing import Any

import torch

from kernels import bench
from kernels.bench.harness import bench_one_shape
from kernels.bench.impls import Preparer
from kernels.bench.timing import device_l2_bytes
from kernels.geometry import kernel_constexprs, peel_elements, settled, vector_width
from kernels.launcher import launch, validate
from kernels.layout import LaunchConfig, block_for, choose_config

# Reference implementations measured next to the candidates of every case.
REFERENCES = ("copy", "ours", "torch_compile")

# (shape, dtype, candidate layouts, further bench implementations to time beside REFERENCES)
Case = tuple[bench.Shape, str, list[LaunchConfig], tuple[str, ...]]


def _loop(chunk: int, num_warps: int, *, stream: bool = False) -> LaunchConfig:
    return LaunchConfig(True, chunk, num_warps, stream_store=stream)


def _tile(warps: int, *, w_early: bool = True, peel: bool = True) -> LaunchConfig:
    return LaunchConfig(False, 0, warps, w_early=w_early, peel=peel)


def sweep_cases() -> list[Case]:
    """The cases: ``(shape, dtype, candidate layouts, further implementations)``.

    Odd widths of 3073-7001 on one-row tiles, peeled (head, aligned body, tail): 4 to 32 warps,
    the weight with x or after the reduction, and the unpeeled tile on the rule's warps. A
    tile's ``block`` of 0 is filled in per shape (next_power_of_2 of the width).
    """
    shapes = ((4096, 5125), (8192, 4097), (4096, 7001), (6144, 3073))
    layouts = [_tile(warps, w_early=early) for warps in (4, 8, 16, 32) for early in (True, False)]
    return [
        (
            bench.Shape(rows, width),
            dtype_key,
            [
                dataclasses.replace(c, block=block_for(width))
                for c in (*layouts, _tile(4 if dtype_key != "float32" else 16, peel=False))
            ],
            (),
        )
        for rows, width in shapes
        for dtype_key in ("bfloat16", "float32")
    ]


def neighbours(config: LaunchConfig, width: int, itemsize: int) -> list[LaunchConfig]:
    """``config`` (the rule's layout for a shape) and the layouts one step from it.

    Tiles: half and twice the warps, the weight's load moved, half and twice the rows per
    program (multi-row tiles), and a per-row column loop of half-row chunks (rows of 2048
    lanes or more). Column loops: half and twice the warps, half and twice the chunk, the
    stores streaming or not, and the one-row tile (rows of up to 8192 lanes). Only layouts
    the launcher takes for the width, each once.
    """
    lanes = block_for(width)
    steps = [config]
    warps = [w for w in (config.num_warps // 2, config.num_warps * 2) if 1 <= w <= 32]
    steps += [dataclasses.replace(config, num_warps=w) for w in warps]
    if config.loop:
        for chunk in (config.block // 2, config.block * 2):
            if 256 <= chunk <= min(lanes, 32768):
                steps.append(dataclasses.replace(config, block=chunk))
        steps.append(dataclasses.replace(config, stream_store=not config.stream_store))
        if lanes <= 8192:
            steps.append(LaunchConfig(False, lanes, max(2, min(16, lanes * itemsize // 2048))))
    else:
        steps.append(dataclasses.replace(config, w_early=not config.w_early))
        if config.rows_per_program > 1:
            for rows in (config.rows_per_program // 2, config.rows_per_program * 2):
                steps.append(dataclasses.replace(config, rows_per_program=rows))
        elif lanes >= 2048:
            warps_loop = max(4, min(32, lanes * itemsize // 2048))
            steps.append(_loop(lanes // 2, warps_loop, stream=True))
    kept: dict[str, LaunchConfig] = {}
    for step in steps:
        try:  # a split body launches where the row is peeled: the width's own case
            kernel_constexprs(step, width, 1, 1, 16 // itemsize)
        except ValueError:
            continue
        kept.setdefault(label(step), step)
    return list(kept.values())


def set_cases(set_names: list[str], dtypes: list[str], sm_count: int = 132) -> list[Case]:
    """A case per shape of the named shape sets and dtype: the :func:`neighbours` of the rule's
    layout (the rule's own is ``ours``, a reference of every case), to see where the rule is one
    step from better on shapes it was not chosen on (the held-out set)."""
    sets = bench.load_shape_sets()
    cases: list[Case] = []
    for shape in bench.resolve_shapes(",".join(set_names), sets):
        for dtype_key in dtypes:
            itemsize = torch.empty((), dtype=bench.DTYPES[dtype_key]).element_size()
            rule = choose_config(shape[1].rows, shape[1].width, itemsize, sm_count)
            steps = neighbours(rule, shape[1].width, itemsize)[1:]
            cases.append((shape[1], dtype_key, steps, ()))
    return cases


def with_candidates(cases: list[Case], entries: Any) -> list[Case]:
    """``cases`` with the layouts of ``entries`` (parsed ``--candidates`` JSON) added to the case
    of their shape and dtype (a case of its own when no case has them), each label once.

    Raises:
        ValueError: an entry that is not ``{"rows", "width", "dtype", "configs"}`` with
            LaunchConfig fields, or a layout the launcher refuses for the width.
    """
    if not isinstance(entries, list):
        raise ValueError("--candidates must hold a JSON list of cases")
    by_key = {(case[0].rows, case[0].width, case[1]): case for case in cases}
    order = list(by_key)
    for index, entry in enumerate(entries):
        try:
            key = (int(entry["rows"]), int(entry["width"]), str(entry["dtype"]))
            configs = [LaunchConfig(**fields) for fields in entry["configs"]]
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"--candidates entry {index}: {err}") from None
        if key[2] not in bench.DTYPES:
            raise ValueError(f"--candidates entry {index}: unknown dtype {key[2]!r}")
        itemsize = bench.DTYPES[key[2]].itemsize
        vec = vector_width(key[1], key[1], key[1], itemsize)
        for config in configs:  # as the launcher launches it on contiguous rows
            peel = peel_elements(config, key[1], vec, key[1], key[1], itemsize)
            kernel_constexprs(settled(config, key[1], peel), key[1], vec, 1, peel)
        shape, dtype_key, old, extra = by_key.get(
            key, (bench.Shape(key[0], key[1]), key[2], [], ())
        )
        kept = {label(c): c for c in old}
        for config in configs:
            kept.setdefault(label(config), config)
        new = list(kept.values())
        if key not in by_key:
            order.append(key)
        by_key[key] = (shape, dtype_key, new, extra)
    return [by_key[key] for key in order]


def label(config: LaunchConfig) -> str:
    """The candidate's name in the results (see the module docstring)."""
    cs = "_cs" if config.stream_store else ""
    if config.loop:
        parts = f"_p{config.row_parts}" if config.row_parts > 1 else ""
        return f"loop_C{config.block}_w{config.num_warps}{cs}{parts}"
    late = "" if config.w_early else "_wlate"
    peel = "" if config.peel else "_nopeel"
    split = f"_b{config.block}+{config.block2}" if config.block2 else ""
    return f"tile_R{config.rows_per_program}_w{config.num_warps}{late}{cs}{peel}{split}"


def _preparer(config: LaunchConfig) -> Preparer:
    def prepare(
        shape: bench.Shape, dtype: torch.dtype, eps: float, device: torch.device
    ) -> bench.Prepared:
        def call(x: torch.Tensor, weight: torch.Tensor, dst: torch.Tensor | None) -> torch.Tensor:
            checked = validate(x, weight, eps)
            out = torch.empty_like(x)
            launch(checked.x2d, weight, out.view(-1, checked.width), checked.eps, config=config)
            return out

        return bench.Prepared(call=call, note=label(config))

    return prepare


def _compile_slice(items: list[tuple[int, int, str, dict[str, Any]]]) -> list[str]:
    """Launch each ``(rows, width, dtype, LaunchConfig fields)`` once (a child of
    :func:`precompile`): Triton compiles it into the shared cache. Returns the failures."""
    device = bench.require_cuda()
    failures: list[str] = []
    for rows, width, dtype_key, fields in items:
        try:
            x = torch.randn(rows, width, device=device).to(bench.DTYPES[dtype_key])
            weight = torch.ones(width, device=device, dtype=x.dtype)
            out = torch.empty_like(x)
            checked = validate(x, weight, 1e-6)
            launch(checked.x2d, weight, out, checked.eps, config=LaunchConfig(**fields))
            torch.cuda.synchronize(device)
        except Exception as err:  # a layout that fails is reported, the others still compile
            failures.append(f"{rows}x{width}:{dtype_key} {fields}: {type(err).__name__}: {err}")
        finally:
            torch.cuda.empty_cache()
    return failures


def precompile(cases: list[Case], jobs: int) -> list[str]:
    """Compile every candidate of ``cases`` (and the rule's own layout) in ``jobs`` processes
    before any timing, so the sweep's single timing process loads each kernel from Triton's
    cache instead of compiling hundreds of layouts one after another. Returns the failures."""
    items: list[tuple[int, int, str, dict[str, Any]]] = []
    for shape, dtype_key, candidates, _ in cases:
        itemsize = bench.DTYPES[dtype_key].itemsize
        rule = choose_config(shape.rows, shape.width, itemsize)
        for config in (rule, *candidates):
            items.append((shape.rows, shape.width, dtype_key, dataclasses.asdict(config)))
    if not items:
        return []
    jobs = max(1, min(jobs, len(items)))
    slices = [items[index::jobs] for index in range(jobs)]
    started = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(jobs) as pool:
        failures = [line for part in pool.map(_compile_slice, slices) for line in part]
    print(
        f"precompile: {len(items)} launches in {jobs} processes, {len(failures)} failed, "
        f"{time.perf_counter() - started:.0f} s",
        file=sys.stderr,
        flush=True,
    )
    for line in failures:
        print(f"precompile: {line[:300]}", file=sys.stderr)
    return failures


def _selected(only: str, cases: list[Case] | None = None) -> list[Case]:
    wanted = {item.strip() for item in only.split(",") if item.strip()}
    return [
        case
        for case in (sweep_cases() if cases is None else cases)
        if not wanted or f"{case[0].rows}x{case[0].width}:{case[1]}" in wanted
    ]


def run_sweep(
    rep_ms: float,
    budget_s: float,
    only: str = "",
    rounds: int = 1,
    cases: list[Case] | None = None,
    references: tuple[str, ...] = REFERENCES,
) -> list[dict[str, Any]]:
    """Time every candidate of the selected cases (``only``: ``RxW:dtype,...``; all when empty;
    ``cases``: these instead of :func:`sweep_cases`).

    No case starts after ``budget_s`` seconds. Returns the finalized result rows.
    """
    device = bench.require_cuda()
    l2_bytes, _ = device_l2_bytes(device)
    generator = torch.Generator(device=device)
    results: list[dict[str, Any]] = []
    started = time.perf_counter()
    for shape, dtype_key, candidates, extra in _selected(only, cases):
        if time.perf_counter() - started > budget_s:
            print(f"sweep: budget spent, skipping {shape} {dtype_key}", file=sys.stderr)
            continue
        preparers = {name: bench.PREPARERS[name] for name in (*references, *extra)}
        for config in candidates:
            preparers[label(config)] = _preparer(config)
        config_run = bench.BenchConfig(
            shapes=[("sweep", shape)],
            dtypes=[dtype_key],
            impls=list(preparers),
            rep_ms=rep_ms,
            warmup_ms=5.0,
            device=str(device),
            rounds=rounds,
            loop_samples=0,  # a layout sweep compares device times only
        )
        generator.manual_seed(17 + shape.rows + shape.width)
        rows = bench_one_shape(
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

    ``t`` is the time of one launch without the replay's fixed cost ``F`` (microseconds).

    Raises:
        ValueError: fewer than two launch counts.
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
    l2_bytes, _ = device_l2_bytes(device)
    generator = torch.Generator(device=device)
    out: list[dict[str, Any]] = []
    for shape, dtype_key, _, _ in _selected(only):
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


def _print_table(results: list[dict[str, Any]]) -> None:
    print("\nsweep (median us, GB/s, % of copy):")
    for row in results:
        head = f"{row['rows']:>6}x{row['width']:<6} {row['dtype']:>8} {row['impl']:>26}"
        if row.get("status") == "ok":
            print(
                f"{head} {row['median_us']:9.2f} {row['gbps']:7.0f} "
                f"{row.get('pct_of_copy', 0):6.1f}%"
            )
        else:
            print(f"{head} {row.get('status')} {str(row.get('note', ''))[:80]}")


def main(argv: list[str] | None = None) -> int:
    """``python -m lab.sweep``; exit 2 on bad options before any device is touched."""
    parser = argparse.ArgumentParser(prog="python -m lab.sweep")
    parser.add_argument("--out", required=True, help="JSON file for the sweep results")
    parser.add_argument("--rep-ms", type=float, default=25.0)
    parser.add_argument("--budget-s", type=float, default=150.0)
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated RxW:dtype cases to run; 'candidates': the cases the --candidates "
        "file names",
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="timing rounds per case (order alternates)"
    )
    parser.add_argument(
        "--sets",
        default="",
        help="comma-separated shape sets: sweep the rule's layout and its neighbours on every "
        "shape of them (e.g. heldout) instead of the built-in cases",
    )
    parser.add_argument(
        "--dtypes", default="bfloat16,float16,float32", help="dtypes of the --sets cases"
    )
    parser.add_argument(
        "--candidates",
        default="",
        help="JSON file of further layouts per case: "
        '[{"rows", "width", "dtype", "configs": [LaunchConfig fields...]}]',
    )
    parser.add_argument(
        "--references",
        default=",".join(REFERENCES),
        help="implementations timed beside the candidates of every case (default: %(default)s)",
    )
    parser.add_argument(
        "--precompile",
        type=int,
        default=0,
        help="compile every candidate in this many processes before timing (0: compile as "
        "each is first timed)",
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
    cases = None
    if args.sets:
        try:
            dtypes = bench.resolve_names(args.dtypes, list(bench.DTYPES), "--dtypes")
            cases = set_cases(args.sets.split(","), dtypes)
        except bench.BenchUsageError as err:
            parser.error(str(err))
    try:
        references = tuple(
            bench.resolve_names(args.references, list(bench.PREPARERS), "--references")
        )
        if args.candidates:
            with open(args.candidates, encoding="utf-8") as handle:
                entries = json.load(handle)
            cases = with_candidates(sweep_cases() if cases is None else cases, entries)
            if args.only == "candidates":
                args.only = ",".join(f"{e['rows']}x{e['width']}:{e['dtype']}" for e in entries)
        elif args.only == "candidates":
            parser.error("--only candidates needs --candidates")
    except (bench.BenchUsageError, OSError, ValueError) as err:
        parser.error(str(err))
    started = time.perf_counter()
    if args.precompile > 0:
        precompile(_selected(args.only, cases), args.precompile)
    results = run_sweep(args.rep_ms, args.budget_s, args.only, args.rounds, cases, references)
    report: dict[str, Any] = {
        "schema_version": "rmsnorm-bench-sweep/1",
        "environment": bench.environment(bench.require_cuda()),
        "wall_s": time.perf_counter() - started,
        "results": results,
    }
    if counts:
        report["launch_cost"] = launch_cost(sorted(set(counts)), args.only)
    bench.write_json(report, args.out)
    _print_table(results)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
