"""The command line: ``python main.py bench`` and ``python -m kernels.bench``.

Usage errors are one stderr line and exit status 2 (argparse's own included); without a CUDA
device the run says so on one line and exits 2 before writing anything. ``--kernel
FILE.py:FUNCTION`` adds the user's kernel as ``candidate`` (:mod:`kernels.bench.candidate`):
a spec or file that is not a kernel exits 2, a kernel that fails its preflight exits 1, each
with one line naming ``--kernel`` and nothing written.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from kernels.bench import harness, ncu
from kernels.bench.candidate import CANDIDATE, Candidate, CandidateError, prepare_candidate
from kernels.bench.harness import BenchConfig
from kernels.bench.impls import DISPLAY_ORDER, IMPLEMENTATIONS, PREPARERS, implementation_info
from kernels.bench.plot import write_plot
from kernels.bench.report import (
    build_report,
    json_safe,
    markdown_table,
    write_csv,
    write_json,
)
from kernels.bench.shapes import (
    DTYPES,
    SHAPES_DIR,
    BenchUsageError,
    load_shape_sets,
    resolve_names,
    resolve_shapes,
)
from kernels.bench.timing import LOOP_SAMPLES, MAX_LOOP_SAMPLES
from kernels.sandbox.usercode import KernelSpecError, parse_kernel_spec


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one stderr line and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise BenchUsageError(message)


def build_parser() -> argparse.ArgumentParser:
    """The ``bench`` option parser; its usage errors raise :class:`BenchUsageError`."""
    parser = _Parser(
        prog="main.py bench",
        description="Benchmark the fused RMSNorm forward against torch eager, torch.compile, "
        "Liger-Kernel and QuACK (each when importable) and a device-to-device copy (needs CUDA).",
    )
    parser.add_argument(
        "--shapes",
        default=None,
        help="comma-separated shape sets (launch_bound, tails, llm, narrow, wide, heldout, dev, "
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
        "(copy is always measured: it is the ceiling; candidate too when --kernel is given)",
    )
    parser.add_argument(
        "--kernel",
        default=None,
        metavar="FILE.py:FUNCTION",
        help="also time your own kernel as 'candidate': FUNCTION(x, weight, eps, out=None) -> y. "
        "It must first pass a preflight in a child process (import, parity on a small input "
        "per dtype, no out-of-bounds store); then it is imported into the benchmark's process",
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
        "--loop-samples",
        type=int,
        default=LOOP_SAMPLES,
        help="eager-loop samples per round and implementation (per-call time with the host "
        f"included; 0: none; default {LOOP_SAMPLES})",
    )
    parser.add_argument(
        "--ncu",
        action="store_true",
        help="after the timing, profile ours (and the --kernel candidate) once per shape and "
        "dtype with Nsight Compute "
        "(ncu on the PATH, --clock-control none) and record its DRAM bytes read and written "
        "and DRAM throughput as %% of peak in the row's 'dram' (or why there are none); "
        "ncu replays each kernel, so this adds seconds per shape",
    )
    parser.add_argument(
        "--budget-s",
        type=float,
        default=None,
        help="start no new shape after this many seconds (the rest is recorded as skipped)",
    )
    return parser


def config_from_args(args: argparse.Namespace) -> BenchConfig:
    """Check the parsed options and turn them into a :class:`BenchConfig`.

    The copy is always added (it is the ceiling); implementations run in display order.

    Raises:
        BenchUsageError: an option out of range, an unknown name, a bad shape or shape set.
    """
    if not (math.isfinite(args.eps) and 1e-12 <= args.eps <= 1e-2):
        raise BenchUsageError(f"--eps must be in [1e-12, 1e-2]; got {args.eps!r}")
    for option, value in (("--rep-ms", args.rep_ms), ("--warmup-ms", args.warmup_ms)):
        if not (math.isfinite(value) and 0 <= value <= 60_000):
            raise BenchUsageError(f"{option} must be in [0, 60000]; got {value!r}")
    sets = load_shape_sets(args.shapes_dir)
    shapes = resolve_shapes(args.shapes, sets)
    dtypes = resolve_names(args.dtypes, list(DTYPES), "--dtypes")
    kernel = None
    if args.kernel is not None:
        try:
            kernel = parse_kernel_spec(args.kernel)
        except KernelSpecError as err:
            raise BenchUsageError(str(err)) from None
    impls = (
        list(IMPLEMENTATIONS)
        if args.impls is None
        else resolve_names(args.impls, [*IMPLEMENTATIONS, CANDIDATE], "--impls")
    )
    if CANDIDATE in impls and kernel is None:
        raise BenchUsageError("--impls: candidate is the kernel of --kernel FILE.py:FUNCTION")
    impls = ["copy", *impls, *([CANDIDATE] if kernel is not None else [])]
    impls = [i for i in DISPLAY_ORDER if i in impls]
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
        loop_samples=args.loop_samples,
        kernel=kernel,
        ncu=args.ncu,
    )
    if not 0 <= args.loop_samples <= MAX_LOOP_SAMPLES:
        raise BenchUsageError(
            f"--loop-samples must be in [0, {MAX_LOOP_SAMPLES}]; got {args.loop_samples}"
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


def run_benchmark(
    config: BenchConfig,
    out_dir: str | os.PathLike[str],
    *,
    command: str,
    plot: bool = True,
    candidate: Candidate | None = None,
) -> dict[str, Any]:
    """Run everything in ``config`` on the GPU and write the reports into ``out_dir``.

    Each result is appended to ``results.partial.jsonl`` as it lands, so a killed run still
    leaves its measurements; the file is removed once ``results.json`` and ``.csv`` exist.

    Args:
        config: what to run.
        out_dir: where ``results.json``, ``results.csv`` and ``bench.png`` go.
        command: the command line recorded in the report.
        plot: whether to write ``bench.png``.
        candidate: the ``--kernel`` kernel, preflighted and imported (needed when
            ``config.impls`` has ``candidate``).

    Returns:
        The report as written to ``results.json``.

    Raises:
        CudaUnavailableError: no CUDA device.
        ValueError: ``candidate`` in ``config.impls`` but no ``candidate`` given.
    """
    if CANDIDATE in config.impls and candidate is None:
        raise ValueError("config.impls has candidate: pass the prepared candidate")
    device = harness.require_cuda()
    config.device = str(device)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = harness.utc_now()
    t0 = time.perf_counter()
    smi_before = harness.nvidia_smi_query()
    env = harness.environment(device)
    implementations = {
        name: implementation_info(name) for name in config.impls if name != CANDIDATE
    }
    preparers = dict(PREPARERS)
    if candidate is not None:
        implementations[CANDIDATE] = candidate.info()
        preparers[CANDIDATE] = candidate.preparer()
    results = []
    partial = out_dir / "results.partial.jsonl"
    with open(partial, "w", encoding="utf-8") as handle:
        for _, _, row in harness.iter_benchmark(config, preparers):
            results.append(row)
            handle.write(json.dumps(json_safe(row)) + "\n")
            handle.flush()
    if config.ncu:  # after every timing: ncu's replays never share the device with one
        kernel = None if config.kernel is None else f"{config.kernel.path}:{config.kernel.function}"
        ncu.attach_dram(results, eps=config.eps, device_type=device.type, kernel=kernel)
    harness.finalize(results)
    smi_after = harness.nvidia_smi_query()
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
    if config.ncu:
        report["protocol"]["dram"] = ncu.PROTOCOL
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

    Args:
        argv: the options (default ``sys.argv[1:]``).

    Returns:
        0: run complete, every implementation's output matched the reference;
        1: some implementation produced a wrong result (listed on stderr; still written), or
        the ``--kernel`` candidate failed its preflight (one stderr line; nothing written);
        2: bad options, a ``--kernel`` that is not a kernel (one stderr line) or no CUDA device.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as exc:  # --help printed its text
            return int(exc.code or 0)
        config = config_from_args(args)
        harness.require_cuda()
        candidate = None
        if config.kernel is not None:
            candidate = prepare_candidate(config.kernel, config.dtypes, config.eps)
    except BenchUsageError as err:
        print(f"bench: error: {err}", file=sys.stderr)
        return 2
    except harness.CudaUnavailableError as err:
        print(str(err), file=sys.stderr)
        return 2
    except CandidateError as err:
        print(f"bench: {'error' if err.exit_code == 2 else 'FAILED'}: {err}", file=sys.stderr)
        return err.exit_code
    if config.ncu and shutil.which("ncu") is None:
        print("bench: --ncu: ncu is not on the PATH; each ours row's dram says so", file=sys.stderr)
    command = "python main.py bench " + " ".join(argv)
    report = run_benchmark(
        config, args.out, command=command, plot=not args.no_plot, candidate=candidate
    )
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
