"""Launch-configuration sweep for ``kernels.rmsnorm_fast`` on the shapes that miss their targets.

Each candidate :class:`kernels.rmsnorm_fast.FastConfig` is measured exactly like an
implementation of ``kernels.bench`` (same buffers rotated past 2x L2, same CUDA-graph or event
timing, parity against the float64 reference first), next to the copy ceiling, ``ours`` and the
default :func:`choose_config` layout (``fast_auto``). Output: one JSON file and a table on stdout.

    python3 -m kernels.bench_sweep --out sweep.json [--rep-ms 25]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

import torch

from kernels import bench
from kernels.rmsnorm_fast import FastConfig, rms_norm_fast


def _rows(block: int, rows_per_program: int, num_warps: int) -> FastConfig:
    return FastConfig("rows", block, rows_per_program, num_warps, 0)


def _cols(chunk: int, num_warps: int, programs: int) -> FastConfig:
    return FastConfig("cols", chunk, 1, num_warps, programs)


def sweep_cases() -> list[tuple[bench.Shape, str, list[FastConfig]]]:
    """(shape, dtype, candidates): the issue-5 target shapes where the layout matters most."""
    s = bench.Shape
    return [
        (s(1, 4096), "bfloat16", [_rows(4096, 1, w) for w in (4, 8, 16, 32)]),
        (
            s(4096, 70),
            "bfloat16",
            [_rows(128, r, w) for r, w in ((1, 1), (2, 1), (4, 2), (4, 4), (8, 4), (16, 4))],
        ),
        (
            s(65536, 128),
            "bfloat16",
            [_rows(128, r, w) for r, w in ((8, 2), (16, 4), (32, 4), (32, 8), (64, 8), (64, 16))],
        ),
        (
            s(65536, 512),
            "bfloat16",
            [_rows(512, r, w) for r, w in ((2, 4), (4, 4), (8, 4), (8, 8), (16, 8), (16, 16))],
        ),
        (s(65536, 128), "float32", [_rows(128, r, w) for r, w in ((16, 4), (32, 8), (64, 8))]),
        (
            s(16384, 4096),
            "bfloat16",
            [_rows(4096, 1, 4), _rows(4096, 1, 8), _rows(4096, 1, 16), _rows(4096, 2, 16)],
        ),
        (s(32768, 4096), "float32", [_rows(4096, 1, 8), _rows(4096, 1, 16), _rows(4096, 1, 32)]),
        (
            s(32768, 16384),
            "bfloat16",
            [_rows(16384, 1, 16), _rows(16384, 1, 32), _cols(4096, 8, 528), _cols(8192, 16, 264)],
        ),
        (
            s(16384, 16384),
            "float32",
            [_rows(16384, 1, 16), _rows(16384, 1, 32), _cols(4096, 16, 264), _cols(4096, 16, 132)],
        ),
        (
            s(2048, 65536),
            "bfloat16",
            [
                _cols(8192, 16, 132),
                _cols(8192, 16, 264),
                _cols(4096, 8, 264),
                _cols(4096, 8, 528),
                _cols(16384, 32, 132),
                _cols(8192, 16, 2048),
                _cols(2048, 4, 1056),
            ],
        ),
        (
            s(2048, 65536),
            "float32",
            [
                _cols(4096, 16, 132),
                _cols(4096, 8, 264),
                _cols(8192, 32, 132),
                _cols(4096, 16, 2048),
            ],
        ),
        (
            s(2048, 32768),
            "bfloat16",
            [_rows(32768, 1, 32), _cols(8192, 16, 264), _cols(4096, 8, 528), _cols(8192, 16, 2048)],
        ),
    ]


def _label(config: FastConfig) -> str:
    if config.kind == "rows":
        return f"rows_R{config.rows_per_program}_w{config.num_warps}"
    return f"cols_C{config.block}_w{config.num_warps}_P{config.programs}"


def _fast_preparer(
    config: FastConfig | None,
) -> Callable[[bench.Shape, torch.dtype, float, torch.device], bench.Prepared]:
    def prepare(
        shape: bench.Shape, dtype: torch.dtype, eps: float, device: torch.device
    ) -> bench.Prepared:
        def call(x: torch.Tensor, weight: torch.Tensor, dst: torch.Tensor | None) -> torch.Tensor:
            return rms_norm_fast(x, weight, eps, config=config)

        return bench.Prepared(call=call, note=_label(config) if config else "choose_config")

    return prepare


def run_sweep(rep_ms: float, budget_s: float) -> list[dict[str, Any]]:
    device = bench.require_cuda()
    l2_bytes, _ = bench._l2_bytes(device)
    generator = torch.Generator(device=device)
    results: list[dict[str, Any]] = []
    started = time.perf_counter()
    for shape, dtype_key, candidates in sweep_cases():
        if time.perf_counter() - started > budget_s:
            print(f"sweep: budget spent, skipping {shape} {dtype_key}", file=sys.stderr)
            continue
        preparers = {
            "copy": bench.PREPARERS["copy"],
            "ours": bench.PREPARERS["ours"],
            "fast_auto": _fast_preparer(None),
        }
        for config in candidates:
            preparers[_label(config)] = _fast_preparer(config)
        config_run = bench.BenchConfig(
            shapes=[("sweep", shape)],
            dtypes=[dtype_key],
            impls=list(preparers),
            rep_ms=rep_ms,
            warmup_ms=5.0,
            device=str(device),
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernels.bench_sweep")
    parser.add_argument("--out", required=True, help="JSON file for the sweep results")
    parser.add_argument("--rep-ms", type=float, default=25.0)
    parser.add_argument("--budget-s", type=float, default=150.0)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    results = run_sweep(args.rep_ms, args.budget_s)
    report = {
        "schema_version": "rmsnorm-bench-sweep/1",
        "environment": bench.environment(bench.require_cuda()),
        "wall_s": time.perf_counter() - started,
        "results": results,
    }
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
